"""Floating-point statements of a generated kernel (knob ``float``), exact by construction.

A GPU and the CPU model agree on a float program only if no result depends on choices the
CUDA rules leave to the compiler. The one such choice in plain arithmetic is contraction:
nvcc fuses ``a * b + c`` into one FFMA (one rounding), g++ does not (two). So the float
variables ``f0`` and ``f1`` only ever hold integers of magnitude at most 2048 (every
statement ends in a clamp or a floor), where products and sums are exact and contraction
cannot show. What is not exact is correctly rounded on both sides and then made an integer
again: IEEE division (nvcc's default ``-prec-div``, with its slow-path subroutine),
square root (``-prec-sqrt``), conversions from 32-bit integers, binary64 division and
products, each followed by ``floorf``, ``rintf``, ``truncf`` or ``ceilf``. The rule
breaks that C++ leaves undefined (a float-to-int conversion out of range, a division by
zero) are checked by the CPU model's sanitizer.

The statements cover FADD/FMUL/FFMA, FMNMX, FSETP, FSEL, I2F/F2I in both signednesses,
FRND, MUFU.RCP/RSQ with their refinement and slow paths, the binary64 unit (DADD, DMUL,
the division subroutine, F2F) and 32-bit float shuffles.
"""
from __future__ import annotations

from . import leaves

FVARS = ("f0", "f1")
LIMIT = "2048.0f"
DECLARATION = "float f0 = (float)(int)(a0 % 4096u) - 2048.0f, f1 = (float)lane;"


def clamp(x: str) -> str:
    return f"fminf(fmaxf({x}, -{LIMIT}), {LIMIT})"


def small(g) -> str:
    """A float integer in -8..8 (a factor that keeps a product exact)."""
    rng = g.rng
    if rng.random() < 0.5:
        return f"{rng.randint(-8, 8)}.0f"
    return f"((float)(int)({rng.choice(leaves.VARS)} % 17u) - 8.0f)"


def fatom(g) -> str:
    """A float integer of magnitude at most 2048."""
    rng = g.rng
    r = rng.random()
    if r < 0.5:
        return rng.choice(FVARS)
    if r < 0.8:
        return f"((float)(int)({rng.choice(leaves.VARS)} % 4096u) - 2048.0f)"
    return small(g)


def emit_float(g, ctx, mask: str) -> None:
    rng, f, v = g.rng, g.rng.choice(FVARS), g.rng.choice(leaves.VARS)
    kind = rng.choice(("arith", "fma", "div", "sqrt", "round", "to_int", "compare", "from_int",
                       "double", "shfl"))
    g.features.add(f"float-{kind}".replace("_", "-"))
    d = ctx.depth
    if kind == "arith":
        op = rng.choice(("+", "-", "*", "min", "max"))
        a = fatom(g)
        value = f"f{op}({f}, {a})" if op in ("min", "max") else f"{f} {op} {a}"
        g.emit(d, f"{f} = {clamp(value)};")
    elif kind == "fma":
        g.emit(d, f"{f} = {clamp(f'{fatom(g)} * {fatom(g)} + {fatom(g)}')};")
    elif kind == "div":
        divisor = rng.choice((f"((float)({v} % 9u) + 1.0f)", f"((float)(int)({v} % 9u) - 4.5f)"))
        g.emit(d, f"{f} = {clamp(f'floorf({f} / {divisor})')};")
    elif kind == "sqrt":
        g.emit(d, f"{f} = floorf(sqrtf(fabsf({f})) * {rng.choice(('8.0f', '1.0f', '32.0f'))});")
    elif kind == "round":
        func = rng.choice(("rintf", "truncf", "ceilf", "floorf"))
        g.emit(d, f"{f} = {func}({f} * {rng.choice(('0.25f', '0.5f', '0.125f', '-0.75f'))});")
    elif kind == "to_int":
        g.emit(d, rng.choice((
            f"{v} += (unsigned)(int){f};",
            f"{v} ^= __float_as_uint(fabsf({f})) >> {rng.randrange(8, 24)};",
            f"{v} = {v} * 3u + (unsigned)fabsf({f});")))
    elif kind == "compare":
        other = fatom(g)
        g.emit(d, rng.choice((
            f"{v} = {v} * 5u + ({f} < {other} ? 1u : 0u) + ({f} == {other} ? 4u : 0u);",
            f"{f} = {f} >= {other} ? {other} : {f} - 1.0f;" if other in FVARS else
            f"{f} = {f} >= {other} ? {other} : {clamp(f'{f} + {small(g)}')};")))
    elif kind == "from_int":
        g.emit(d, rng.choice((
            f"{f} = fminf((float){v}, {LIMIT});",
            f"{f} = {clamp(f'(float)(int){v}')};",
            f"{f} = {clamp(f'(float)(short){v}')};")))
    elif kind == "double":
        g.emit(d, rng.choice((
            f"{f} = (float)fmin(fmax(floor((double){v} / {rng.randint(3, 13)}.0 + (double){f}), -2048.0), 2048.0);",
            f"{f} = (float)fmin(floor((double){v} * 0.{rng.randint(1, 999):03d}), 2048.0);",
            f"{v} += (unsigned)(long long)floor((double)(int){v} / (double)({f} - 4096.0f));")))
    else:
        _shfl(g, ctx, mask, f)


def _shfl(g, ctx, mask: str, f: str) -> None:
    """A float through a shuffle (its bits, as the warp moves them); a source lane outside
    the mask leaves ``f`` as it is."""
    rng = g.rng
    mode = rng.choice(tuple(leaves.SHFL))
    func, code = leaves.SHFL[mode]
    b = f"{rng.randrange(32)}u" if mode in ("idx", "xor") else f"{rng.randrange(1, 32)}u"
    bn, rn = g.fresh("b"), g.fresh("r")
    g.emit(ctx.depth, f"const unsigned {bn} = {b};")
    g.emit(ctx.depth, f"const float {rn} = {func}({mask}, {rng.choice(FVARS)}, {bn});")
    g.emit(ctx.depth, f"{f} = ((({mask}) >> wb_src({code}u, lane, {bn}, 32u)) & 1u) ? "
                      f"{clamp(f'{f} + {rn}')} : {f};")

