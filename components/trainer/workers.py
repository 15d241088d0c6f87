"""The Trainer's place among the workers that train one model, read from ``TF_CONFIG``.

The Kubeflow Training Operator sets ``TF_CONFIG`` in each pod of a TFJob
(kubeflow/trainer v1.9.4, pkg/controller.v1/tensorflow/tensorflow.go,
genTFConfigJSONStr): ``cluster.worker`` lists every worker's address,
``task`` names this pod's type and index. A TrainJob's pods (Kubeflow Trainer
v2) get the same, written by the Trainer's task from each pod's completion
index (``kubeflow.train_job``). The Trainer's job has workers only; worker 0 is
MultiWorkerMirroredStrategy's chief, which alone writes the model. Without
``TF_CONFIG`` the Trainer is the only worker.

Each worker reads whole shards, its own: the sorted train files dealt out by
index, so the workers together read every file once, and none reads another's.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence

TF_CONFIG = "TF_CONFIG"
WORKER = "worker"


@dataclasses.dataclass(frozen=True)
class Workers:
    """How many workers train the model, and which one this process is."""

    count: int = 1
    index: int = 0

    @property
    def is_chief(self) -> bool:
        """Worker 0: the one that writes the model and the run's reports."""
        return self.index == 0

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Workers:
        """This process's place, from ``TF_CONFIG``; one worker when it is unset.

        Raises:
          ValueError: ``TF_CONFIG`` is not JSON, names roles besides workers, or a task
            that is not one of its workers; in one line.
        """
        raw = environ.get(TF_CONFIG, "").strip()
        if not raw:
            return cls()
        try:
            config = json.loads(raw)
            cluster, task = config.get("cluster", {}), config.get("task", {})
        except (ValueError, AttributeError):
            raise ValueError(f"TF_CONFIG is not a JSON object: {raw[:80]!r}") from None
        others = sorted(role for role in cluster if role != WORKER)
        if others:
            raise ValueError(
                f"TF_CONFIG names {', '.join(others)} besides workers: the Trainer trains "
                "with MultiWorkerMirroredStrategy on workers alone, worker 0 its chief"
            )
        addresses = cluster.get(WORKER) or []
        kind, index = task.get("type"), task.get("index")
        if kind != WORKER or not isinstance(index, int) or not 0 <= index < len(addresses):
            raise ValueError(
                f"TF_CONFIG's task {task!r} is not one of its {len(addresses)} worker(s)"
            )
        return cls(count=len(addresses), index=index)

    def own_files(self, files: Sequence[str]) -> list[str]:
        """This worker's share of FILES: the sorted files dealt out by worker index.

        Raises:
          ValueError: fewer files than workers (a worker would have none), in one line.
        """
        ordered = sorted(files)
        if self.count == 1:
            return ordered
        if len(ordered) < self.count:
            raise ValueError(
                f"{len(ordered)} train shard(s) for {self.count} trainer workers: each worker "
                f"reads whole shards of its own; convert the train split into at least "
                f"{self.count} shards"
            )
        return ordered[self.index :: self.count]
