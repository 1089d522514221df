"""The ``warpboard`` command: the composition root that wires :mod:`harness` and :mod:`reports`.

Nothing below imports this package; it alone knows both the engine and the reports.
"""
