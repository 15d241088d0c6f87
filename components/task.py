"""The learning task that Transform and Trainer share through ``custom_config``."""

from __future__ import annotations

import dataclasses
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
    """What to learn from the examples.

    Attributes:
      label: name of the column to predict; every other schema feature is an input.
      problem: ``classification`` (the label's distinct values become classes
        through a vocabulary, string or integer labels alike) or ``regression``
        (the label is read as a float).
    """

    label: str
    problem: str = CLASSIFICATION

    def __post_init__(self):
        if not self.label:
            raise ValueError("Task.label must name a column, got an empty string.")
        if self.problem not in PROBLEMS:
            raise ValueError(
                f"Task.problem must be one of {', '.join(PROBLEMS)}, got {self.problem!r}."
            )

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
