"""Where a local run keeps its outputs."""

from __future__ import annotations

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class LocalLayout:
    """Where a local run keeps its outputs, all under one output folder.

    Attributes:
      output_dir: the folder everything goes under.
      name: the pipeline name; each pipeline gets its own sub-folders.
    """

    output_dir: str
    name: str

    @property
    def pipeline_root(self) -> str:
        """Component artifacts: ``<output>/pipeline_root/<name>/<Component>/<output>/<id>``."""
        return os.path.join(self.output_dir, "pipeline_root", self.name)

    @property
    def metadata_path(self) -> str:
        """The SQLite ML Metadata store of this pipeline's runs."""
        return os.path.join(self.output_dir, "metadata", self.name, "metadata.db")

    @property
    def serving_dir(self) -> str:
        """Pushed models, one numbered version folder each."""
        return os.path.join(self.output_dir, "serving_model", self.name)
