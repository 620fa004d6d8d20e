"""``python -m humming`` runs the CLI."""

import sys

from humming.cli import main

sys.exit(main())
