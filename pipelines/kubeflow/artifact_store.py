"""What a pod needs to read earlier runs' artifacts from the pipeline root's store.

The daily pipeline's tasks read artifacts of earlier runs (SpanWindow's members),
which KFP's launcher does not stage. With the pipeline root in MinIO (KFP's
default, ``minio://mlpipeline/v2/artifacts``) a task reads them itself, through
S3, with the credentials KFP's own launcher uses: the ``mlpipeline-minio-artifact``
Secret's ``accesskey`` and ``secretkey`` (backend/src/v2/config/env.go:41-44),
given to the pod as the AWS SDKs' variables, and the store's endpoint; or those
of the Secret the namespace's ``kfp-launcher`` ConfigMap names (k8s/).
"""

from __future__ import annotations

import dataclasses

from tfrecord_pipelines.components.storage.object_stores import AWS_ENDPOINTS

DEFAULT_SECRET = "mlpipeline-minio-artifact"
# The Secret's keys of KFP's own Secret: the access key's, the secret key's.
DEFAULT_KEYS = ("accesskey", "secretkey")
# The AWS SDKs' variables the two keys are given as.
_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
# KFP 2.4-2.14's MinIO Service (2.15 and later: http://seaweedfs.kubeflow:9000).
DEFAULT_ENDPOINT = "http://minio-service.kubeflow:9000"
# The AWS SDKs' general endpoint variable, which object_stores reads too.
ENDPOINT_VARIABLE = AWS_ENDPOINTS[-1]


@dataclasses.dataclass(frozen=True)
class ArtifactStoreAccess:
    """The Secret holding the store's keys (its name, and the names of its access key's and
    secret key's entries), and the store's S3 endpoint."""

    secret: str = DEFAULT_SECRET
    endpoint: str = DEFAULT_ENDPOINT
    keys: tuple[str, str] = DEFAULT_KEYS

    @classmethod
    def parse(cls, secret: str, endpoint: str) -> ArtifactStoreAccess:
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
        if not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(
                f"Artifact store endpoint {self.endpoint!r} must be a URL, e.g. {DEFAULT_ENDPOINT}."
            )

    def secret_env(self):
        """The Secret's keys as the pod's variables (a platform_spec.SecretEnv)."""
        from tfrecord_pipelines.kubeflow.platform_spec import SecretEnv

        return SecretEnv(self.secret, tuple(zip(self.keys, _VARIABLES, strict=True)))

    def environment(self) -> dict[str, str]:
        """The variables every container gets."""
        return {ENDPOINT_VARIABLE: self.endpoint}
