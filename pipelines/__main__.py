"""``python -m tfrecord_pipelines``: the command-line interface."""

import sys

from tfrecord_pipelines.components import deferred_inits

# The command's own process: the package inits of TFX's components, KFP and Kubernetes
# run only when used (deferred_inits); a library import of the package changes nothing.
deferred_inits.defer_package_inits()

from tfrecord_pipelines.cli.main import main  # noqa: E402

sys.exit(main())
