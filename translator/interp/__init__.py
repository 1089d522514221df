"""The CPU reference interpreter: the machine that runs a launch turn by turn (machine), one
thread's view of the vocabulary (thread), and what waiting instructions decide (waits)."""
