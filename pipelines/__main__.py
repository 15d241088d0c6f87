"""``python -m pipelines``: the command-line interface."""

import sys

from pipelines.cli import main

sys.exit(main())
