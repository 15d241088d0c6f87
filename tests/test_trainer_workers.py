"""The Trainer's place among a TFJob's workers, from the TF_CONFIG the operator sets."""

from __future__ import annotations

import json

import pytest

from tfrecord_pipelines.components.trainer.workers import Workers


def _tf_config(workers: int, index: int, **cluster) -> dict[str, str]:
    # As the operator writes it: every worker's Service, this pod's type and index.
    addresses = [f"job-worker-{i}.team-a.svc:2222" for i in range(workers)]
    config = {
        "cluster": {"worker": addresses, **cluster},
        "task": {"type": "worker", "index": index},
        "environment": "cloud",
    }
    return {"TF_CONFIG": json.dumps(config)}


def test_without_tf_config_the_trainer_is_the_only_worker():
    assert Workers.from_environment({}) == Workers(count=1, index=0)
    assert Workers().is_chief
    assert Workers().own_files(["b", "a"]) == ["a", "b"]


def test_each_worker_reads_its_own_shards_and_together_they_read_all():
    files = [f"gs://b/Split-train/data-{i:05d}-of-00007.gz" for i in (3, 0, 6, 1, 5, 2, 4)]
    shares = [Workers.from_environment(_tf_config(3, i)).own_files(files) for i in range(3)]
    assert [len(s) for s in shares] == [3, 2, 2]
    assert sorted(f for share in shares for f in share) == sorted(files)
    assert [Workers.from_environment(_tf_config(3, i)).is_chief for i in range(3)] == [
        True, False, False,
    ]  # fmt: skip


def test_fewer_shards_than_workers_is_refused_in_one_line():
    with pytest.raises(
        ValueError, match="^2 train shard.s. for 3 trainer workers: .* at least 3 shards$"
    ):
        Workers(count=3, index=2).own_files(["a", "b"])


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"TF_CONFIG": "{not json"}, "TF_CONFIG is not a JSON object"),
        (_tf_config(2, 0, chief=["job-chief-0:2222"]), "names chief besides workers"),
        (_tf_config(2, 0, ps=["p:1"], evaluator=["e:1"]), "names evaluator, ps besides"),
        (_tf_config(2, 2), "is not one of its 2 worker"),
        ({"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief"}})},
         "is not one of its 1 worker"),
    ],
)  # fmt: skip
def test_a_tf_config_the_trainer_cannot_follow_fails_in_one_line(environ, message):
    with pytest.raises(ValueError, match=message) as raised:
        Workers.from_environment(environ)
    assert "\n" not in str(raised.value)
