"""Worker targets that misbehave on purpose, for the cell-isolation tests."""
import os
import time

from harness.engine import worker_run


def misbehave(case_path, root, index, device_id, options):
    """Crash or hang on the cases named so; run every other case normally."""
    if "crash_me" in case_path:
        os._exit(7)
    if "hang_me" in case_path:
        time.sleep(3600)
    return worker_run(case_path, root, index, device_id, options)
