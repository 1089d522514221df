"""``python -m warpboard``: the same as the ``warpboard`` command."""
import sys

from .cli import main

sys.exit(main())
