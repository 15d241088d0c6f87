"""A compiled Kubeflow Pipelines package, checked before it is sent: its root, name, PlatformSpec.

Each check fails with a ``ValueError`` naming what the server or its launcher
would refuse or, worse, silently ignore.
"""

from __future__ import annotations

import yaml

# The object stores KFP v2's launcher stages artifacts from and to; the
# components' entry point (tfrecord_pipelines.kubeflow.kfp_executor) maps them for TensorFlow.
_OBJECT_STORE_SCHEMES = ("gs://", "s3://", "minio://")


def check_pipeline_root(pipeline_root: str) -> None:
    """Checks that KFP's launcher can stage artifacts under ``pipeline_root``.

    Args:
      pipeline_root: the URI the run's artifacts go under.

    Raises:
      ValueError: if it is not a gs://, s3:// or minio:// URI (KFP v2's
        launcher opens only object stores, not local paths or volumes).
    """
    if not pipeline_root.startswith(_OBJECT_STORE_SCHEMES) or not pipeline_root.split("://")[1]:
        raise ValueError(
            f"Pipeline root {pipeline_root!r} must be an object store URI that KFP's launcher "
            "opens: gs://BUCKET/root, s3://BUCKET/root or minio://BUCKET/root."
        )


def pipeline_name(package_path: str) -> str:
    """Returns the pipeline's name, ``pipelineInfo.name`` of a compiled YAML.

    Args:
      package_path: a local KFP v2 YAML (a PipelineSpec, optionally followed by
        a PlatformSpec document).

    Raises:
      ValueError: if the file is missing, not YAML, or not a KFP v2 pipeline.
    """
    if not package_path.endswith((".yaml", ".yml")):
        raise ValueError(f"Pipeline package {package_path!r} must be a .yaml or .yml file.")
    try:
        with open(package_path) as f:
            spec = next(yaml.safe_load_all(f), None)
    except OSError as e:
        raise ValueError(f"Cannot read pipeline package {package_path!r}: {e.strerror}.") from e
    except yaml.YAMLError as e:
        raise ValueError(f"Pipeline package {package_path!r} is not valid YAML: {e}") from e
    name = spec.get("pipelineInfo", {}).get("name") if isinstance(spec, dict) else None
    if not name:
        raise ValueError(
            f"{package_path!r} is not a compiled KFP v2 pipeline (no pipelineInfo.name); "
            "write one with `python -m tfrecord_pipelines compile`."
        )
    return name


def check_platform_spec(package_path: str) -> None:
    """Checks that KFP applies the package's PlatformSpec document as written.

    The API server ignores a PlatformSpec it cannot parse, and the driver drops
    fields it does not know, so a hand-edited or stale package would run
    without its GPU node selector, tolerations or volumes and nobody would be
    told. See ``tfrecord_pipelines.kubeflow.platform_spec.read_back``.

    Args:
      package_path: a compiled KFP v2 YAML (``pipeline_name`` accepts it).

    Raises:
      ValueError: naming what the backend would ignore or read differently.
    """
    from tfrecord_pipelines.kubeflow.platform_spec import PlatformSpecError, read_back

    with open(package_path) as f:
        spec, *others = yaml.safe_load_all(f)
    others = [doc for doc in others if doc is not None]
    if len(others) > 1:
        raise ValueError(
            f"{package_path!r} has {len(others)} documents after the PipelineSpec; KFP reads "
            "one PlatformSpec."
        )
    for document in others:
        try:
            read_back(spec, document)
        except PlatformSpecError as e:
            raise ValueError(f"{package_path}: {e}") from e
