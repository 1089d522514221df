"""``python -m warpboard``: the same as the ``warpboard`` command."""
import sys

from warpboard.cli import main

sys.exit(main())
