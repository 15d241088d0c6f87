"""The learning task that Transform and Trainer share through ``custom_config``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

CLASSIFICATION = "classification"
REGRESSION = "regression"
PROBLEMS = (CLASSIFICATION, REGRESSION)

# Key under which the task travels inside a component's custom_config.
CUSTOM_CONFIG_KEY = "task"


def transformed_name(key: str) -> str:
    """Returns the name Transform gives its output for raw feature ``key``."""
    return f"{key}_xf"


def vocabulary_name(key: str) -> str:
    """Returns the file name of the vocabulary Transform computes for ``key``."""
    return f"{key}_vocab"


@dataclasses.dataclass(frozen=True)
class Task:
    """What to learn from the examples, and from which of their features.

    Attributes:
      label: name of the feature to predict.
      problem: ``classification`` (the label's distinct values become classes
        through a vocabulary, string or integer labels alike) or ``regression``
        (the label is read as a float).
      image_feature: the feature holding encoded images (JPEG, PNG, GIF,
        BMP), if any: the model is then a convolutional network on it, its
        bytes pass through Transform unchanged and the Trainer decodes them
        in its input pipeline. Image tasks are classifications.
      inputs: the features the model reads. None: every schema feature but
        the label (tabular data); an image task's default is the image alone,
        so that what describes an image file (its class name, file name,
        size) never feeds the model.
      multi_valued: features holding several values per row (Parquet lists):
        strings become a bag of vocabulary indices, numbers of a fixed count
        a vector; a variable count of numbers is an error.
    """

    label: str
    problem: str = CLASSIFICATION
    image_feature: str | None = None
    inputs: tuple[str, ...] | None = None
    multi_valued: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.label:
            raise ValueError("Task.label must name a column, got an empty string.")
        if self.problem not in PROBLEMS:
            raise ValueError(
                f"Task.problem must be one of {', '.join(PROBLEMS)}, got {self.problem!r}."
            )
        inputs = self.inputs
        if inputs is None and self.image_feature:
            inputs = (self.image_feature,)
        # Tuples, also when read back from JSON lists.
        object.__setattr__(self, "inputs", None if inputs is None else tuple(inputs))
        object.__setattr__(self, "multi_valued", tuple(self.multi_valued))
        if self.inputs is not None:
            if not self.inputs:
                raise ValueError("Task.inputs must name at least one feature (None: all).")
            if self.label in self.inputs:
                raise ValueError(
                    f"Task.inputs holds the label {self.label!r}: a model must not read "
                    "what it predicts."
                )
        if self.image_feature:
            if self.image_feature not in self.inputs:
                raise ValueError(
                    f"Task.image_feature {self.image_feature!r} is not among the inputs "
                    f"{list(self.inputs)}."
                )
            if self.problem != CLASSIFICATION:
                raise ValueError("An image task must be a classification.")

    def model_inputs(self, features: Iterable[str]) -> list[str]:
        """Returns the features the model reads, given the schema's ``features``.

        Raises:
          ValueError: if an input the task names is not among ``features``.
        """
        features = list(features)
        if self.inputs is None:
            return sorted(f for f in features if f != self.label)
        missing = [f for f in self.inputs if f not in features]
        if missing:
            raise ValueError(
                f"Input feature(s) {', '.join(map(repr, missing))} not in the schema; "
                f"features are: {', '.join(sorted(features))}."
            )
        return sorted(self.inputs)

    @property
    def is_classification(self) -> bool:
        return self.problem == CLASSIFICATION

    def to_custom_config(self) -> dict[str, Any]:
        """Returns the JSON-serializable custom_config that carries this task."""
        return {CUSTOM_CONFIG_KEY: dataclasses.asdict(self)}

    @classmethod
    def from_custom_config(cls, custom_config: dict[str, Any] | None) -> Task:
        """Reads the task back from a component's custom_config.

        Raises:
          ValueError: if the custom_config carries no task.
        """
        if not custom_config or CUSTOM_CONFIG_KEY not in custom_config:
            raise ValueError(
                f"custom_config has no {CUSTOM_CONFIG_KEY!r} entry; build it with "
                "Task.to_custom_config()."
            )
        return cls(**custom_config[CUSTOM_CONFIG_KEY])
