"""``python -m prism_memory``: the ``prism-memory`` command line."""

import sys

from .cli import main

sys.exit(main())
