"""Semantics of the float instructions nvcc emits around integer division: I2F, MUFU.RCP, F2I.

Values stay 32-bit words (IEEE binary32 bit patterns); the back ends convert. Only the
forms listed here are supported; anything else is UNSUPPORTED with its opcode.
"""
from __future__ import annotations

from .ctx import Ctx
from .sem_alu import unsupported

ROUNDING = {"RN": "rn", "RP": "rp", "RM": "rm", "RZ": "rz", "TRUNC": "rz", "FLOOR": "rm", "CEIL": "rp"}
INT_TYPES = {"U32": False, "S32": True}


def _rounding(i, default: str) -> str:
    return next((ROUNDING[m] for m in i.mods if m in ROUNDING), default)


def _int_type(i) -> bool:
    if i.mods & {"U64", "S64", "U16", "S16", "U8", "S8", "F64", "F16"}:
        raise unsupported(i, "only 32-bit integers and floats")
    return next((INT_TYPES[m] for m in i.mods if m in INT_TYPES), True)


def i2f(x: Ctx, i):
    """I2F[.U32|.S32][.RN|.RP|.RM|.RZ] Rd, Ra: integer to float, rounded as told."""
    x.write(i.ops[0], x.i2f(x.read(i.ops[1]), _int_type(i), _rounding(i, "rn")))


def f2i(x: Ctx, i):
    """F2I[.FTZ][.U32|.S32][.TRUNC|.FLOOR|.CEIL][.NTZ] Rd, Ra: float to integer, saturating."""
    x.write(i.ops[0], x.f2i(x.read(i.ops[1]), _int_type(i), _rounding(i, "rn")))


def mufu(x: Ctx, i):
    """MUFU.RCP Rd, Ra: the reciprocal (the hardware's is within an ulp; ours is IEEE 1/x)."""
    if "RCP" not in i.mods:
        raise unsupported(i, "MUFU other than .RCP")
    x.write(i.ops[0], x.rcp(x.read(i.ops[1])))
