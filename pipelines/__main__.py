"""``python -m pipelines``: the command-line interface."""

import sys

from pipelines.cli.main import main

sys.exit(main())
