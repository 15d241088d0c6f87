"""TFX artifact types that Kubeflow Pipelines' UI draws, titled as KFP's own system types.

KFP's UI (frontend ``MetricsVisualizations.tsx``) finds what to draw by the
ML Metadata type name of a task's outputs, which the launcher takes from the
artifact's schema title (backend ``metadata/client.go``,
``SchemaToArtifactType``), and reads the artifact's custom properties:

- ``system.Metrics``: every custom property but ``display_name`` is a row of
  its scalar table;
- ``system.ClassificationMetrics``: ``confusionMatrix`` and
  ``confidenceMetrics`` (the ROC curve), in the layout the KFP SDK's
  ``log_confusion_matrix`` and ``log_roc_curve`` write;
- ``system.HTML`` and ``system.Markdown``: the file at the artifact's URI
  (a file, not a folder: these are TFX value artifacts, whose URI is the file).

A TFX component that outputs these types compiles, through TFX's Kubeflow V2
compiler, to outputs with these titles; the executor's custom properties
become the executor output's metadata, which the launcher records as the
custom properties the UI reads. The UI shows an artifact only when it has a
``display_name``, which the launcher sets to the output's name.
"""

from __future__ import annotations

from collections.abc import Sequence

from tfx.types.artifact import Artifact
from tfx.types.value_artifact import ValueArtifact

from tfrecord_pipelines.components.storage import filesystem

CONFUSION_MATRIX_KEY = "confusionMatrix"
CONFIDENCE_METRICS_KEY = "confidenceMetrics"


class Metrics(Artifact):
    """Scalar metrics, one number per custom property (KFP's ``system.Metrics``)."""

    TYPE_NAME = "system.Metrics"


class ClassificationMetrics(Artifact):
    """A confusion matrix and a ROC curve in custom properties (KFP's
    ``system.ClassificationMetrics``)."""

    TYPE_NAME = "system.ClassificationMetrics"


class _Text(ValueArtifact):
    """A UTF-8 text file at the artifact's URI."""

    def encode(self, value: str) -> bytes:
        return value.encode("utf-8")

    def decode(self, serialized_value: bytes) -> str:
        return serialized_value.decode("utf-8")


class Markdown(_Text):
    """A Markdown page the UI renders (``system.Markdown``)."""

    TYPE_NAME = "system.Markdown"


class Html(_Text):
    """A self-contained HTML page the UI shows in a frame (``system.HTML``)."""

    TYPE_NAME = "system.HTML"


UI_TYPES = (Metrics, ClassificationMetrics, Markdown, Html)


def log_metric(artifact: Artifact, name: str, value: float) -> None:
    """One row of a Metrics artifact's table, as the KFP SDK's ``Metrics.log_metric``."""
    artifact.set_float_custom_property(name, float(value))


def log_text_metric(artifact: Artifact, name: str, text: str) -> None:
    """One row of a Metrics artifact's table holding text (KFP's UI shows any custom
    property's value, quoted)."""
    artifact.set_string_custom_property(name, text)


def log_confusion_matrix(
    artifact: Artifact, categories: Sequence[str], rows: Sequence[Sequence[float]]
) -> None:
    """The confusion matrix (rows: actual class, columns: predicted class), in the layout of
    the KFP SDK's ``ClassificationMetrics.log_confusion_matrix``."""
    if len(rows) != len(categories) or any(len(row) != len(categories) for row in rows):
        raise ValueError(
            f"A confusion matrix of {len(categories)} categories needs "
            f"{len(categories)} rows of {len(categories)} counts."
        )
    artifact.set_json_value_custom_property(
        CONFUSION_MATRIX_KEY,
        {
            "annotationSpecs": [{"displayName": str(c)} for c in categories],
            "rows": [{"row": [float(n) for n in row]} for row in rows],
        },
    )


def log_roc_curve(
    artifact: Artifact,
    false_positive_rates: Sequence[float],
    true_positive_rates: Sequence[float],
    thresholds: Sequence[float],
) -> None:
    """The ROC curve's points, in the layout of the KFP SDK's ``log_roc_curve``."""
    if not len(false_positive_rates) == len(true_positive_rates) == len(thresholds):
        raise ValueError("A ROC curve needs as many true and false positive rates as thresholds.")
    artifact.set_json_value_custom_property(
        CONFIDENCE_METRICS_KEY,
        [
            {"confidenceThreshold": float(t), "recall": float(r), "falsePositiveRate": float(f)}
            for f, r, t in zip(false_positive_rates, true_positive_rates, thresholds, strict=True)
        ],
    )


def write_text(artifact: Artifact, text: str) -> None:
    """Writes a Markdown or HTML artifact's page at its URI."""
    with filesystem.open_file(artifact.uri, "w") as f:
        f.write(text)
