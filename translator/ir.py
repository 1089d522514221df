"""The IR: decoded instructions (frozen, with their opcode table entry and resolved
targets), basic blocks, and the program of one kernel with its helper functions.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ops, regs
from .errors import ProgramError, SassSyntaxError, UnsupportedInstruction
from .sass import Operand, RawInstruction, Section, parse_listing

TARGET_OPS = ("BRA", "CALL", "BSSY", "RET")


@dataclass(frozen=True)
class Inst:
    """One decoded instruction: what to do (spec, modifiers, operands) and where it came from."""
    pc: int
    opcode: str
    base: str
    mods: frozenset[str]
    guard: Operand | None
    ops: tuple[Operand, ...]
    target: int | None
    spec: ops.OpSpec
    text: str
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def next_pc(self) -> int:
        return self.pc + 16


@dataclass(frozen=True)
class Block:
    """A straight run of instructions entered only at its first; the unit of one step."""
    pc: int
    insts: tuple[Inst, ...]

    @property
    def end_pc(self) -> int:
        return self.insts[-1].next_pc

    @property
    def quiet(self) -> bool:
        """Whether no other thread can observe or affect how this block runs: no collective,
        no waiting, no shared memory, atomics or strong (volatile) loads. In turns mode a
        thread runs quiet blocks on its own, between turns."""
        return all(_quiet(i) for i in self.insts)


@dataclass
class Program:
    """One kernel ready to translate: instructions by pc, blocks, and its execution mode."""
    name: str
    insts: list[Inst]
    blocks: dict[int, Block] = field(default_factory=dict)
    entry: int = 0

    @property
    def turns(self) -> bool:
        """Whether the program must run in turns: it has a collective or a barrier, or a
        thread may wait on another (a spin loop), which needs the fair turn order."""
        return any(i.spec.turns for i in self.insts) or self.may_spin

    @property
    def may_spin(self) -> bool:
        """A YIELD/NANOSLEEP, or a loop that re-reads memory another thread may write:
        shared loads, strong (volatile) global loads or atomics between a backward branch
        and its target."""
        if any(i.base in ("YIELD", "NANOSLEEP") for i in self.insts):
            return True
        for branch in self.insts:
            if branch.base == "BRA" and branch.target is not None and branch.target <= branch.pc:
                body = (i for i in self.insts if branch.target <= i.pc <= branch.pc)
                if any(_rereads_memory(i) for i in body):
                    return True
        return False

    @property
    def uses_shared(self) -> bool:
        """Whether an instruction reads or writes shared memory."""
        return any(getattr(i.spec.sem, "space", None) == "shared" for i in self.insts)

    @property
    def mode(self) -> str:
        return "turns" if self.turns else "free"

    @property
    def reachable(self) -> dict[int, Block]:
        """The blocks control can reach from the entry (padding NOPs and the closing
        self-branch are not emitted). A return goes to the instruction after a CALL."""
        seen, todo = set(), [self.entry]
        returns = [i.next_pc for i in self.insts if i.base == "CALL"]
        while todo:
            pc = todo.pop()
            if pc in seen or pc not in self.blocks:
                continue
            seen.add(pc)
            todo.extend(_successors(self.blocks[pc], returns))
        return {pc: b for pc, b in self.blocks.items() if pc in seen}


def _successors(block: Block, returns: list[int]) -> list[int]:
    last = block.insts[-1]
    conditional = last.guard is not None or any(o.kind in ("pred", "upred") for o in last.ops)
    if last.base == "EXIT":
        return [last.next_pc] if last.guard is not None else []
    if last.base == "RET":
        return returns + ([last.next_pc] if last.guard is not None else [])
    if last.base in ("BRA", "CALL"):
        falls = conditional or last.base == "CALL" or last.mods & {"DIV", "CONV"}
        return [last.target] + ([last.next_pc] if falls else [])
    return [last.next_pc]


def _quiet(i: "Inst") -> bool:
    if i.spec.turns or i.spec.role in ("collective", "sync") or i.mods & {"DIV", "CONV"}:
        return False
    if i.spec.role == "memory":
        return i.base in ("LDG", "STG", "LD", "ST") and "STRONG" not in i.mods
    return i.base not in ("BREAK", "YIELD", "NANOSLEEP")


def _rereads_memory(i: "Inst") -> bool:
    return i.base in ("LDS", "ATOMS", "ATOMG", "ATOM") or (i.base in ("LDG", "LD") and "STRONG" in i.mods)


def decode(raw: RawInstruction, labels: dict[str, int]) -> Inst:
    """Look an instruction up in the opcode table and resolve its target."""
    base, *mods = raw.opcode.split(".")
    spec = ops.lookup(base)
    where = f"{raw.file}:{raw.line}"
    if spec is None:
        raise UnsupportedInstruction(f"{where}: unknown opcode {raw.opcode}", raw.opcode)
    bad = [m for m in mods if m not in spec.mods]
    if bad:
        raise UnsupportedInstruction(
            f"{where}: unsupported modifier .{bad[0]} of {base} in '{raw.text}'", raw.opcode)
    guard = None
    if raw.guard:
        neg = raw.guard.startswith("!")
        name = raw.guard.lstrip("!")
        kind, value = regs.CONSTANT.get(name) or ("upred" if name.startswith("UP") else "pred", int(name[-1]))
        guard = Operand(kind, raw.guard, name=name, value=value, inv=neg)
    target = _target(raw, base, labels, where)
    return Inst(raw.pc, raw.opcode, base, frozenset(mods), guard, raw.operands, target, spec,
                raw.text, raw.file, raw.line)


def _target(raw: RawInstruction, base: str, labels: dict[str, int], where: str) -> int | None:
    if base not in TARGET_OPS:
        return None
    for o in raw.operands:
        if o.kind == "label":
            if o.name not in labels:
                raise ProgramError(f"{where}: unknown label {o.name} in '{raw.text}'")
            return labels[o.name]
    for o in reversed(raw.operands):      # cuobjdump prints targets as addresses
        if o.kind == "imm":
            return o.value
    if base == "RET":
        return 0
    raise ProgramError(f"{where}: {raw.opcode} without a target in '{raw.text}'")


def split_blocks(insts: list[Inst], entry: int) -> dict[int, Block]:
    """Cut the program where control can enter or leave, and around instructions that wait."""
    leaders = {entry}
    for i in insts:
        if i.target is not None and i.base != "RET":
            leaders.add(i.target)
        if i.spec.ends_block:
            leaders.add(i.next_pc)
        if i.spec.role == "sync":
            leaders.add(i.pc)
    blocks: dict[int, Block] = {}
    run: list[Inst] = []
    for i in insts:
        if i.pc in leaders and run:
            blocks[run[0].pc] = Block(run[0].pc, tuple(run))
            run = []
        run.append(i)
    if run:
        blocks[run[0].pc] = Block(run[0].pc, tuple(run))
    return blocks


def build_program(section: Section, name: str | None = None) -> Program:
    """Decode a whole section (kernel and helpers) and cut it into blocks."""
    insts = [decode(raw, section.labels) for raw in section.instructions]
    for a, b in zip(insts, insts[1:]):
        if b.pc != a.pc + 16:
            raise ProgramError(f"{b.where}: address /*{b.pc:04x}*/ does not follow /*{a.pc:04x}*/")
    if not insts:
        raise ProgramError(f"kernel {section.name}: no instructions")
    pcs = {i.pc for i in insts}
    for i in insts:
        if i.target is not None and i.base != "RET" and i.target not in pcs:
            raise ProgramError(f"{i.where}: target {i.target:#x} is outside kernel {section.name}")
    entry = insts[0].pc
    return Program(name or section.name, insts, split_blocks(insts, entry), entry)


def load_program(text: str, kernel: str | None = None, file: str = "<listing>", first_line: int = 1) -> Program:
    """Parse a listing and build the program of one kernel (the only one when not named)."""
    sections = parse_listing(text, file, first_line)
    if kernel is None:
        if len(sections) != 1:
            raise ProgramError(f"{file}: {len(sections)} kernels in the listing; name one of {sorted(sections)}")
        kernel = next(iter(sections))
    if kernel not in sections:
        raise ProgramError(f"{file}: no kernel {kernel} in the listing (has {', '.join(sorted(sections))})")
    return build_program(sections[kernel], kernel)


__all__ = ["Inst", "Block", "Program", "decode", "build_program", "load_program", "SassSyntaxError"]
