"""``python -m tfrecord_pipelines``: the command-line interface."""

import sys

from tfrecord_pipelines.cli.main import main

sys.exit(main())
