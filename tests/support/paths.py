"""Where the repository's parts are, for tests that read them."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases"
FIXTURES = ROOT / "tests" / "fixtures"
