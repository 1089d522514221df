"""A translator that is a command: the board writes one request (JSON) to its standard input
and reads one answer (JSON) from its standard output, per case and device.

Request (``protocol`` 1)::

    {"protocol": 1, "case": "vote/vote_uni", "kernel": "_Z4votePj",
     "listing": "<the SM86 SASS listing, nvdisasm's text>",
     "launch": {"grid": [1, 1, 1], "block": [64, 1, 1], "shared_bytes": 1024},
     "abi": {"bindings": {"ctrl": 0, "heap": 1, "printf": 2}, "ctrl_words": {...},
             "buffer_address": {"hi": 32512, "lo": 268435456}, "definition": "translator/abi.py"},
     "device": {"id": ..., "name": ..., "driver": ..., "driver_info": ..., "subgroup_size": 16,
                "real_subgroup": 16, "features": [...], "subgroup_operations": [...]}}

Answer: ``{"spirv": "<base64 of the module>", "entry": "main", "bindings": {"ctrl": 0,
"heap": 1}, "mode": "..."}`` (``bindings``: where the shader expects each buffer of the
ABI, a permutation of 0..n-1; ``entry`` and ``mode`` optional), or ``{"unsupported": "why"}``.
The shader follows ``translator/abi.py``: the launch's constant banks, the buffer table and
the status words in ``ctrl``, every buffer in ``heap``. A command that exits non-zero, prints
no JSON or gives a module that is not SPIR-V is an ERROR cell with its standard error.
"""
from __future__ import annotations

import base64
import json
import shlex
import subprocess

from warpboard.translator import Shader, UnsupportedInstruction, abi

from ...vk.probe import real_subgroup

PROTOCOL = 1
TIMEOUT_S = 120
BINDINGS = ("ctrl", "heap", "printf")


class ExternalError(RuntimeError):
    """An external translator that did not answer as the protocol says."""


def request(prep, info) -> dict:
    """The protocol's request for one prepared case on one device."""
    case, launch = prep.case, prep.launch
    return {
        "protocol": PROTOCOL, "case": case.id, "kernel": prep.program.name, "listing": case.listing_text,
        "launch": {"grid": list(launch.grid), "block": list(launch.block), "shared_bytes": case.shared_bytes},
        "abi": {"bindings": {name: k for k, name in enumerate(BINDINGS)},
                "ctrl_words": {"status": abi.STATUS, "budget": abi.BUDGET, "buffer_table": abi.TABLE,
                               "constant_banks": abi.CBANK, "total": abi.CTRL_WORDS},
                "buffer_address": {"hi": abi.BUFFER_HI, "lo": abi.BUFFER_LO},
                "definition": "translator/abi.py"},
        "device": {"id": getattr(info, "id", ""), "name": info.name, "driver": info.driver_name,
                   "driver_info": info.driver_info, "subgroup_size": info.subgroup_size,
                   "real_subgroup": real_subgroup(info), "features": sorted(info.features),
                   "subgroup_operations": sorted(info.subgroup_operations)},
    }


def _answer(name: str, text: str) -> dict:
    try:
        answer = json.loads(text)
    except ValueError as exc:
        raise ExternalError(f"translator {name!r} printed no JSON answer ({exc}): {text[:200]!r}") from None
    if not isinstance(answer, dict) or not ("spirv" in answer or "unsupported" in answer):
        raise ExternalError(f"translator {name!r}: the answer needs 'spirv' or 'unsupported': {text[:200]!r}")
    return answer


def _bindings(name: str, given) -> tuple[str, ...]:
    given = given or {n: k for k, n in enumerate(BINDINGS)}
    order = sorted(given, key=given.get)
    if set(order) - set(BINDINGS) or sorted(given.values()) != list(range(len(given))) or \
            not {"ctrl", "heap"} <= set(order):
        raise ExternalError(f"translator {name!r}: bindings {given} are not ctrl and heap (and printf) "
                            f"at 0..{len(given) - 1}")
    return tuple(order)


class External:
    """A translator run as a command (see the module's docstring)."""

    def __init__(self, name: str, command: str):
        self.name, self.command = name, command

    def translate(self, prep, info, mode: str | None = None) -> Shader:
        try:
            proc = subprocess.run(shlex.split(self.command), input=json.dumps(request(prep, info)),
                                  capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ExternalError(f"translator {self.name!r} ({self.command}): {exc}") from None
        if proc.returncode != 0:
            raise ExternalError(f"translator {self.name!r} exited with {proc.returncode}: "
                                f"{proc.stderr.strip()[-600:] or 'no message'}")
        answer = _answer(self.name, proc.stdout)
        if "unsupported" in answer:
            raise UnsupportedInstruction(f"{self.name}: {answer['unsupported']}", "translator")
        try:
            spirv = base64.b64decode(answer["spirv"], validate=True)
        except (ValueError, TypeError) as exc:
            raise ExternalError(f"translator {self.name!r}: 'spirv' is not base64: {exc}") from None
        if len(spirv) < 20 or spirv[:4] != b"\x03\x02\x23\x07":
            raise ExternalError(f"translator {self.name!r}: the module is not SPIR-V ({len(spirv)} bytes)")
        launch = prep.launch
        return Shader(spirv, str(answer.get("mode") or "external"), tuple(launch.block), prep.case.shared_bytes,
                      prep.program.name, len(prep.program.insts), entry=str(answer.get("entry") or "main"),
                      bindings=_bindings(self.name, answer.get("bindings")))
