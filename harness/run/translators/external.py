"""A translator that is a command: the board writes one request (JSON) to its standard input
and reads one answer (JSON) from its standard output, per case and device.

Request (``protocol`` 2; ``compatible`` 1: a translator written for protocol 1 reads it as
before, since protocol 2 only adds ``code``, ``params`` and ``constant_banks``)::

    {"protocol": 2, "compatible": 1, "case": "vote/vote_uni", "kernel": "_Z4votePj",
     "listing": "<the SM86 SASS listing, nvdisasm's text>",
     "code": {"arch": "SM86", "words": "<base64: 16 bytes per instruction, the low 64-bit word
              then the high one with the control bits, little-endian, as in .text.<kernel>>",
              "instructions": 40, "branch_targets": {"0x110": [416, 432]}} or null where the
              case has no words (``branch_targets``: where each indirect branch, BRX, may go,
              as the cubin's .nv.info tables say; nvdisasm prints them as an annotation),
     "params": [{"offset": 352, "size": 8, "kind": "u64", "buffer": "out"},
                {"offset": 360, "size": 4, "kind": "u32", "value": 7}],
     "constant_banks": {"0": "<base64 of bank 0 as the launch holds it: block, grid, the
                        windows, the parameters from offset 0x160>", "3": "<base64>", ...},
     "launch": {"grid": [1, 1, 1], "block": [64, 1, 1], "shared_bytes": 1024},
     "abi": {"bindings": {"ctrl": 0, "heap": 1, "printf": 2}, "ctrl_words": {...},
             "buffer_address": {"hi": 32512, "lo": 268435456}, "definition": "translator/abi.py"},
     "device": {"id": ..., "name": ..., "driver": ..., "driver_info": ..., "subgroup_size": 16,
                "real_subgroup": 16, "features": [...], "subgroup_operations": [...],
                "max_shared_memory": 32768}}

Answer: ``{"spirv": "<base64 of the module>", "entry": "main", "bindings": {"ctrl": 0,
"heap": 1}, "mode": "...", "scratch_words": 0}`` (``bindings``: where the shader expects each
buffer of the ABI, a permutation of 0..n-1; ``scratch_words``: words of heap each workgroup
needs after the case's buffers, zeroed, where ``ctrl[abi.SCRATCH]`` says; ``entry``, ``mode``
and ``scratch_words`` optional), or ``{"unsupported": "why"}``.
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

PROTOCOL = 2
COMPATIBLE = 1          # the oldest protocol whose translators read this request unchanged
TIMEOUT_S = 120
BINDINGS = ("ctrl", "heap", "printf")


class ExternalError(RuntimeError):
    """An external translator that did not answer as the protocol says."""


def request(prep, info) -> dict:
    """The protocol's request for one prepared case on one device."""
    case, launch = prep.case, prep.launch
    return {
        "protocol": PROTOCOL, "compatible": COMPATIBLE, "case": case.id, "kernel": prep.program.name,
        "listing": case.listing_text, "code": _code(prep), "params": params_layout(case),
        "constant_banks": _banks(prep.cbank),
        "launch": {"grid": list(launch.grid), "block": list(launch.block), "shared_bytes": case.shared_bytes},
        "abi": {"bindings": {name: k for k, name in enumerate(BINDINGS)},
                "ctrl_words": {"status": abi.STATUS, "budget": abi.BUDGET, "buffer_table": abi.TABLE,
                               "constant_banks": abi.CBANK, "total": abi.CTRL_WORDS},
                "buffer_address": {"hi": abi.BUFFER_HI, "lo": abi.BUFFER_LO},
                "definition": "translator/abi.py"},
        "device": {"id": getattr(info, "id", ""), "name": info.name, "driver": info.driver_name,
                   "driver_info": info.driver_info, "subgroup_size": info.subgroup_size,
                   "real_subgroup": real_subgroup(info), "features": sorted(info.features),
                   "subgroup_operations": sorted(info.subgroup_operations),
                   "max_shared_memory": getattr(info, "max_shared_memory", None)},
    }


def _code(prep) -> dict | None:
    case = prep.case
    if case.words is None:
        return None
    tables = {f"{i.pc:#x}": list(i.targets) for i in prep.program.insts if i.spec.target == "table"}
    return {"arch": "SM86", "words": base64.b64encode(case.words).decode(),
            "instructions": len(case.words) // 16, "branch_targets": tables}


def params_layout(case) -> list[dict]:
    """Where each kernel parameter sits in constant bank 0 (as a cubin's parameter table
    says: from abi.PARAM_BASE, each aligned to its size): offset, size, kind, and the buffer
    it points to or its value."""
    out, offset = [], abi.PARAM_BASE
    for p in case.params:
        kind = "u64" if p.kind == "buffer" else p.kind
        size = abi.PARAM_BYTES[kind]
        offset = (offset + size - 1) // size * size
        entry = {"offset": offset, "size": size, "kind": kind}
        entry.update({"buffer": p.value, "buffer_offset": p.offset} if p.kind == "buffer" else {"value": p.value})
        out.append(entry)
        offset += size
    return out


def _banks(cbank: bytes) -> dict[str, str]:
    """Each constant bank that holds anything, base64 (bank 0 always)."""
    out = {}
    for k in range(abi.NUM_BANKS):
        start, size = abi.bank_start(k), abi.bank_bytes(k)
        data = cbank[start:start + size]
        if k == 0 or any(data):
            out[str(k)] = base64.b64encode(data).decode()
    return out


def _answer(name: str, text: str) -> dict:
    try:
        answer = json.loads(text)
    except ValueError as exc:
        raise ExternalError(f"translator {name!r} printed no JSON answer ({exc}): {text[:200]!r}") from None
    if not isinstance(answer, dict) or not ("spirv" in answer or "unsupported" in answer):
        raise ExternalError(f"translator {name!r}: the answer needs 'spirv' or 'unsupported': {text[:200]!r}")
    return answer


def _scratch(name: str, given) -> int:
    if not isinstance(given, int) or isinstance(given, bool) or not 0 <= given <= 1 << 24:
        raise ExternalError(f"translator {name!r}: scratch_words {given!r} is not a count of words (0 to 2^24)")
    return given


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
                      bindings=_bindings(self.name, answer.get("bindings")),
                      scratch_words=_scratch(self.name, answer.get("scratch_words", 0)))
