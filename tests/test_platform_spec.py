"""Parsing the Kubernetes placement options and building the PlatformSpec document."""

import pytest
from google.protobuf import json_format
from kfp.kubernetes import kubernetes_executor_config_pb2

from pipelines.platform_spec import (
    TaskPlacement,
    Toleration,
    VolumeMount,
    executor_label,
    parse_node_selector,
    platform_spec,
)

# The shape of a compiled TFX spec, reduced to what the executor lookup reads.
SPEC = {
    "root": {"dag": {"tasks": {"Trainer": {"componentRef": {"name": "Trainer"}}}}},
    "components": {"Trainer": {"executorLabel": "Trainer_executor"}},
}


def test_toleration_without_a_value_tolerates_any_value():
    toleration = Toleration.parse("nvidia.com/gpu:NoSchedule").to_proto()
    assert (toleration.key, toleration.operator, toleration.value, toleration.effect) == (
        "nvidia.com/gpu",
        "Exists",
        "",
        "NoSchedule",
    )


def test_toleration_with_a_value_must_equal_it():
    toleration = Toleration.parse("dedicated=ml-gpu:NoExecute").to_proto()
    assert (toleration.key, toleration.operator, toleration.value, toleration.effect) == (
        "dedicated",
        "Equal",
        "ml-gpu",
        "NoExecute",
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("nvidia.com/gpu", "must be KEY\\[=VALUE\\]:EFFECT"),
        ("nvidia.com/gpu:Never", "effect 'Never' must be one of NoSchedule"),
        ("bad key!:NoSchedule", "key 'bad key!' is not a Kubernetes label key"),
    ],
)
def test_bad_tolerations_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        Toleration.parse(text)


def test_volume_mount_writes_the_claim_in_both_fields_kfp_reads():
    mount = VolumeMount.parse("tf-cache:/cache").to_proto()
    assert mount.constant == "tf-cache"
    assert mount.pvc_name_parameter.runtime_value.constant.string_value == "tf-cache"
    assert mount.mount_path == "/cache"


@pytest.mark.parametrize(
    "text, message",
    [
        ("tf-cache", "must be CLAIM:/mount/path"),
        ("tf-cache:cache", "Mount path 'cache' must be absolute"),
        ("TF_Cache:/cache", "claim 'TF_Cache' is not a Kubernetes object name"),
    ],
)
def test_bad_volumes_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        VolumeMount.parse(text)


def test_node_selector_parses_repeated_key_values():
    assert parse_node_selector(["pool=gpu", "nvidia.com/gpu.product=H100"]) == {
        "pool": "gpu",
        "nvidia.com/gpu.product": "H100",
    }
    with pytest.raises(ValueError, match="Node selector 'pool' must be KEY=VALUE"):
        parse_node_selector(["pool"])


def test_platform_spec_keys_configs_by_executor_label_and_skips_empty_placements():
    placement = TaskPlacement(
        node_selector={"pool": "gpu"}, tolerations=(Toleration("nvidia.com/gpu"),)
    )
    spec = platform_spec(SPEC, {"Trainer": placement})
    executors = spec.platforms["kubernetes"].deployment_spec.executors
    assert list(executors) == ["Trainer_executor"]
    config = json_format.ParseDict(
        json_format.MessageToDict(executors["Trainer_executor"]),
        kubernetes_executor_config_pb2.KubernetesExecutorConfig(),
    )
    assert dict(config.node_selector.labels) == {"pool": "gpu"}
    assert config.tolerations[0].operator == "Exists"
    assert not platform_spec(SPEC, {"Trainer": TaskPlacement()}).platforms


def test_unknown_component_is_named():
    with pytest.raises(ValueError, match="The pipeline has no task 'Pusher': \\['Trainer'\\]"):
        executor_label(SPEC, "Pusher")
