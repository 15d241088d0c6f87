"""What a pod needs to reach the pipeline root's store for what the launcher does not copy.

The task that writes examples puts them in the store itself, and the tasks that read
them read them there (``examples_in_store``); the daily pipeline's tasks read artifacts
of earlier runs too (SpanWindow's members). KFP's launcher copies none of these. With
the pipeline root in MinIO or SeaweedFS (KFP's default,
``minio://mlpipeline/v2/artifacts``) a task reaches them itself,
through S3, with the credentials KFP's own launcher uses: the
``mlpipeline-minio-artifact`` Secret's ``accesskey`` and ``secretkey``
(backend/src/v2/config/env.go:41-44), and the store's endpoint, given at compile
time or found at run time as the launcher finds it (``root_store``); or those of the
Secret the namespace's ``kfp-launcher`` ConfigMap names (k8s/). They reach the pod
under the project's own names (``object_stores.ARTIFACT_ENDPOINT``,
``ARTIFACT_KEYS``), which only the reading of those artifacts applies: the AWS
SDKs' own names would send the task's other s3:// paths to the pipeline root's
store. An ``s3://`` root in AWS read with the pod's own role needs neither
(``compile --artifact-secret none``).
"""

from __future__ import annotations

import dataclasses

from tfrecord_pipelines.components.storage.object_stores import ARTIFACT_ENDPOINT, ARTIFACT_KEYS

DEFAULT_SECRET = "mlpipeline-minio-artifact"
# The Secret's keys of KFP's own Secret: the access key's, the secret key's.
DEFAULT_KEYS = ("accesskey", "secretkey")
# The example an endpoint's error names (KFP 2.16's store; root_store has each release's).
EXAMPLE_ENDPOINT = "http://seaweedfs.kubeflow:9000"


@dataclasses.dataclass(frozen=True)
class ArtifactStoreAccess:
    """The Secret holding the store's keys (its name, and the names of its access key's and
    secret key's entries), and the store's S3 endpoint; None: each task finds it as the
    launcher in its pod does (``root_store``), as no literal fits every KFP release."""

    secret: str = DEFAULT_SECRET
    endpoint: str | None = None
    keys: tuple[str, str] = DEFAULT_KEYS

    @classmethod
    def parse(cls, secret: str, endpoint: str | None) -> ArtifactStoreAccess:
        """From ``NAME`` (KFP's entry names) or ``NAME:ACCESS_KEY_ENTRY,SECRET_KEY_ENTRY``."""
        name, sep, entries = secret.partition(":")
        keys = tuple(entries.split(",")) if sep else DEFAULT_KEYS
        if len(keys) != 2 or not all(keys):
            raise ValueError(
                f"Artifact secret {secret!r} must be NAME or "
                "NAME:ACCESS_KEY_ENTRY,SECRET_KEY_ENTRY, e.g. "
                "tfrecord-pipelines-s3-credentials:AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY."
            )
        return cls(secret=name, endpoint=endpoint, keys=keys)

    def __post_init__(self):
        if self.endpoint is not None and not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(
                f"Artifact store endpoint {self.endpoint!r} must be a URL, e.g. {EXAMPLE_ENDPOINT}."
            )

    def secret_env(self):
        """The Secret's keys as the pod's variables (a platform_spec.SecretEnv)."""
        from tfrecord_pipelines.kubeflow.platform_spec import SecretEnv

        return SecretEnv(self.secret, tuple(zip(self.keys, ARTIFACT_KEYS, strict=True)))

    def environment(self) -> dict[str, str]:
        """The variables every container gets: the endpoint, when compile was given one."""
        return {ARTIFACT_ENDPOINT: self.endpoint} if self.endpoint else {}
