"""Where the repository's parts are, for tests that read them."""
from functools import lru_cache
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


@lru_cache(maxsize=1)
def _library() -> tuple:
    from warpboard.harness.case.model import discover_cases
    return tuple(discover_cases(CASES))


def library_cases() -> list:
    """Every case of the library (``discover_cases(CASES)``), loaded once a process: the
    library's files do not change while the tests run, and the cases are frozen."""
    return list(_library())
