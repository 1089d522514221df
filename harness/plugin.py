"""pytest plugin entry point (``pytest11``); collection of case files comes with the scoreboard plugin."""
