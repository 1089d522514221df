"""The feature mix of a fuzz campaign: statement weights, nesting depth, launch shapes.

A knob file is TOML (see ``default.toml`` beside this module, which holds the defaults):

    [program]
    max_depth = 3                 # nesting of if / switch / loop
    top_statements = [6, 12]      # statements at the kernel's top level (inclusive range)
    block_statements = [1, 4]     # statements in a branch, case or loop body
    block_sizes = [32, 48, 64, 100, 128]   # threads per block (1-D), 1..1024, partial warps welcome
    grids = [1, 2, 3]             # blocks per grid, 1..8 (big_blocks.toml: blocks of 256..1024)
    batch = 20                    # kernels per nvcc / g++ call
    split_masks = 0               # percent of warp collectives whose mask splits the lanes
                                  # there in two groups by a lane bit (each group its own mask)

    [weights]                     # relative frequency of each statement kind (0 turns it off)
    if_lane = 3
    ...
    div16 = 1                     # division flavours in expressions: div32, div16, div64

Unknown keys are errors that name the file and the key. A program is a function of its seed
and the knobs: the same knob values give the same programs.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from warpboard.harness.case.toml_text import tomllib

DEFAULT_FILE = Path(__file__).with_name("default.toml")

STATEMENT_KINDS = (
    "assign", "trace", "if_lane", "if_data", "switch_lane", "switch_data", "loop_lane",
    "loop_uniform", "exit", "vote", "shfl", "match", "reduce", "syncwarp", "block_barrier",
    "exchange_block", "exchange_warp", "atomic", "float",
)
# weights of the division flavours inside expressions (0 leaves one out)
EXPRESSION_KINDS = ("div32", "div16", "div64")


class KnobError(ValueError):
    """A knob file that cannot be used (the message names the file and the key)."""


@dataclass(frozen=True)
class Knobs:
    """Everything besides the seed that decides a program."""
    weights: dict[str, int] = field(default_factory=dict)
    max_depth: int = 3
    top_statements: tuple[int, int] = (6, 12)
    block_statements: tuple[int, int] = (1, 4)
    block_sizes: tuple[int, ...] = (32, 64, 128)
    grids: tuple[int, ...] = (1, 2, 3)
    batch: int = 20
    split_masks: int = 0

    def weight(self, kind: str) -> int:
        return self.weights.get(kind, 0)


_PROGRAM_KEYS = [f.name for f in fields(Knobs) if f.name != "weights"]


def _range(path: Path, key: str, value) -> tuple[int, int]:
    if (not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, int) for v in value)
            or not 0 <= value[0] <= value[1]):
        raise KnobError(f"{path}: program.{key}: give [low, high] with 0 <= low <= high")
    return (value[0], value[1])


def _ints(path: Path, key: str, value, low: int, high: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or not all(
            isinstance(v, int) and low <= v <= high for v in value):
        raise KnobError(f"{path}: program.{key}: give a non-empty list of integers in {low}..{high}")
    return tuple(value)


def parse(data: dict, path: Path, base: Knobs | None = None) -> Knobs:
    """Knobs from a parsed knob file; keys left out keep ``base``'s values."""
    knobs = base or Knobs()
    unknown = set(data) - {"program", "weights"}
    if unknown:
        raise KnobError(f"{path}: unknown table {sorted(unknown)[0]!r} (allowed: program, weights)")
    prog = data.get("program", {})
    for key in prog:
        if key not in _PROGRAM_KEYS:
            raise KnobError(f"{path}: unknown key 'program.{key}' (allowed: {', '.join(_PROGRAM_KEYS)})")
    changes: dict = {}
    for key in ("max_depth", "batch"):
        if key in prog:
            if not isinstance(prog[key], int) or prog[key] < (0 if key == "max_depth" else 1):
                raise KnobError(f"{path}: program.{key}: give a {'non-negative' if key == 'max_depth' else 'positive'} integer")
            changes[key] = prog[key]
    if "split_masks" in prog:
        if not isinstance(prog["split_masks"], int) or not 0 <= prog["split_masks"] <= 100:
            raise KnobError(f"{path}: program.split_masks: give a percentage, an integer in 0..100")
        changes["split_masks"] = prog["split_masks"]
    for key in ("top_statements", "block_statements"):
        if key in prog:
            changes[key] = _range(path, key, prog[key])
    if "block_sizes" in prog:
        changes["block_sizes"] = _ints(path, "block_sizes", prog["block_sizes"], 1, 1024)
    if "grids" in prog:
        changes["grids"] = _ints(path, "grids", prog["grids"], 1, 8)
    weights = dict(knobs.weights)
    for key, value in data.get("weights", {}).items():
        if key not in STATEMENT_KINDS + EXPRESSION_KINDS:
            raise KnobError(f"{path}: unknown key 'weights.{key}' "
                            f"(allowed: {', '.join(STATEMENT_KINDS + EXPRESSION_KINDS)})")
        if not isinstance(value, int) or value < 0:
            raise KnobError(f"{path}: weights.{key}: give a non-negative integer")
        weights[key] = value
    return replace(knobs, weights=weights, **changes)


def load(path: str | Path | None = None) -> Knobs:
    """The defaults (``default.toml``), overridden by the knob file ``path`` if given."""
    knobs = parse(_read(DEFAULT_FILE), DEFAULT_FILE)
    if path is not None:
        knobs = parse(_read(Path(path)), Path(path), knobs)
    return knobs


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise KnobError(f"{path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise KnobError(f"{path}: {e}") from None
