"""Where the repository's parts are, for tests that read them."""
from pathlib import Path

from warpboard.harness.case.model import load_case

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases"
FIXTURES = ROOT / "tests" / "fixtures"


def library_case(case_id: str):
    """A case of the library, loaded (``vote/vote_uni``)."""
    from warpboard.harness.case.model import (
        load_case,  # paths stays importable without the package
    )
    return load_case(CASES / f"{case_id}.toml", CASES)
