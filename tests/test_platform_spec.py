"""The Kubernetes placement options, the PlatformSpec document, and reading it back as KFP does."""

import copy

import pytest
from google.protobuf import json_format
from kfp.kubernetes import kubernetes_executor_config_pb2

from tfrecord_pipelines.kubeflow.platform_spec import (
    PlatformSpecError,
    SecretEnv,
    TaskPlacement,
    Toleration,
    VolumeMount,
    checked_document,
    executor_label,
    parse_node_selector,
    platform_spec,
    read_back,
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


GPU_PLACEMENT = TaskPlacement(
    node_selector={"pool": "gpu"},
    tolerations=(Toleration("nvidia.com/gpu"), Toleration("team", "NoExecute", "ml")),
    volumes=(VolumeMount("tf-cache", "/cache"),),
)


def _document() -> dict:
    return copy.deepcopy(checked_document(SPEC, {"Trainer": GPU_PLACEMENT}))


def _trainer(document: dict) -> dict:
    return document["platforms"]["kubernetes"]["deploymentSpec"]["executors"]["Trainer_executor"]


def test_the_written_document_reads_back_as_the_placements_on_both_backends():
    assert read_back(SPEC, _document()) == {"Trainer_executor": GPU_PLACEMENT}
    assert checked_document(SPEC, {"Trainer": TaskPlacement()}) == {}


def _with(change) -> dict:
    document = _document()
    change(document)
    return document


@pytest.mark.parametrize(
    "document, message",
    [
        (
            _with(lambda d: d["platforms"]["kubernetes"].update(deploymentSpecs={})),
            "does not parse, so KFP would ignore it",
        ),
        (
            {"platforms": {"k8s": _document()["platforms"]["kubernetes"]}},
            "no 'kubernetes' platform, so KFP would ignore it",
        ),
        (
            _with(
                lambda d: d["platforms"]["kubernetes"]["deploymentSpec"]["executors"].update(
                    Pusher_executor={}
                )
            ),
            "'Pusher_executor' is no component's executor label",
        ),
        (
            _with(lambda d: _trainer(d).update(nodeSelectors={"labels": {"pool": "gpu"}})),
            "is not a KubernetesExecutorConfig; KFP's driver would drop",
        ),
        (
            _with(lambda d: _trainer(d)["pvcMount"][0].pop("constant")),
            "names claim '' for backend 2.4 and 'tf-cache' for 2.5",
        ),
        (
            _with(lambda d: _trainer(d)["pvcMount"][0].update(constant="old-cache")),
            "names claim 'old-cache' for backend 2.4 and 'tf-cache' for 2.5",
        ),
        (
            _with(
                lambda d: _trainer(d)["nodeSelector"].update(
                    nodeSelectorJson={"componentInputParameter": "selector"}
                )
            ),
            "nodeSelectorJson is read by backend 2.5 and ignored by 2.4",
        ),
        (
            _with(
                lambda d: _trainer(d)["tolerations"][0].update(
                    tolerationJson={"componentInputParameter": "tolerations"}
                )
            ),
            "uses tolerationJson, which backend 2.5 reads and 2.4 ignores",
        ),
    ],
    ids=[
        "does-not-parse",
        "no-kubernetes",
        "unknown-executor",
        "unknown-field",
        "pvc-name-only-in-the-new-field",
        "pvc-names-differ",
        "node-selector-json",
        "toleration-json",
    ],
)
def test_what_the_backend_would_drop_or_read_differently_is_refused(document, message):
    with pytest.raises(PlatformSpecError, match=message):
        read_back(SPEC, document)


def test_a_pvc_named_only_in_the_old_field_reads_the_same_on_both_backends():
    document = _with(lambda d: _trainer(d)["pvcMount"][0].pop("pvcNameParameter"))
    assert read_back(SPEC, document)["Trainer_executor"].volumes == GPU_PLACEMENT.volumes


def test_a_secret_as_variables_reads_back_the_same_on_both_backends():
    placement = TaskPlacement(
        secret_env=(SecretEnv("mlpipeline-minio-artifact", (("accesskey", "AWS_ACCESS_KEY_ID"),)),)
    )
    document = checked_document(SPEC, {"Trainer": placement})
    [secret] = _trainer(document)["secretAsEnv"]
    # Backend 2.4 reads secretName; 2.5 secretNameParameter first: both are written.
    assert secret["secretName"] == "mlpipeline-minio-artifact"
    assert secret["secretNameParameter"]["runtimeValue"]["constant"] == secret["secretName"]
    assert read_back(SPEC, document) == {"Trainer_executor": placement}
    secret["secretName"] = "another"
    with pytest.raises(PlatformSpecError, match="names 'another' for backend 2.4"):
        read_back(SPEC, document)
