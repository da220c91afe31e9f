"""``python -m ding`` is the ``ding`` command."""
import sys

from ding.entry.cli import main

sys.exit(main())
