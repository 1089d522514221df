"""The IR: decoded instructions (frozen, with their opcode table entry and resolved
targets), basic blocks, and the program of one kernel with its helper functions.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from ..abi import local_frame_bytes
from ..errors import ProgramError, SassSyntaxError, UnsupportedInstruction
from ..isa import ops, regs
from ..sass.listing import Operand, RawInstruction, Section, parse_listing
from .order import LaneOrder


@dataclass(frozen=True)
class Inst:
    """One decoded instruction: what to do (spec, modifiers, operands) and where it came from."""
    pc: int
    opcode: str
    base: str
    mods: frozenset[str]
    mod_list: tuple[str, ...]       # the modifiers in the listing's order (F2F.F16.F32 is not F2F.F32.F16)
    guard: Operand | None
    ops: tuple[Operand, ...]
    target: int | None
    spec: ops.OpSpec
    text: str
    file: str
    line: int
    targets: tuple[int, ...] = ()   # an indirect branch's possible pcs (BRX: its BRANCH_TARGETS)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def next_pc(self) -> int:
        return self.pc + 16

    @property
    def destinations(self) -> tuple[int, ...]:
        """Every pc it may send control to, its fall-through aside: its target, or the
        targets an indirect branch names."""
        return self.targets or ((self.target,) if self.target is not None else ())

    # what the opcode table says of this instruction, with its modifiers
    waits = property(lambda self: self.spec.waits is not None)
    exchanges = property(lambda self: self.spec.exchanges(self.mods))
    tests_divergence = property(lambda self: self.spec.tests_divergence(self.mods))
    rereads_memory = property(lambda self: self.spec.rereads(self.mods))
    quiet = property(lambda self: self.spec.quiet(self.mods))

    @property
    def conditional(self) -> bool:
        """Whether it may or may not take effect, thread by thread: a guard, a predicate operand,
        or a test of divergence."""
        return self.guard is not None or any(o.kind in ("pred", "upred") for o in self.ops) or self.tests_divergence


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
        """Whether, by its instructions alone, no other thread can observe or affect how this
        block runs: no collective, no waiting, no shared memory, atomics or strong (volatile)
        loads. Program.quiet adds the order of plain global accesses between lanes."""
        return all(i.quiet for i in self.insts)


@dataclass
class Program:
    """One kernel ready to translate: instructions by pc, blocks, and its execution mode."""
    name: str
    insts: list[Inst]
    blocks: dict[int, Block] = field(default_factory=dict)
    entry: int = 0
    block: tuple[int, int, int] | None = None    # the launch's block shape, where known

    def for_block(self, block) -> "Program":
        """This program for a launch of that block shape (the lane-order analysis depends on
        it: SR_TID.X tells the lanes of a warp apart only in some shapes)."""
        block = tuple(block)
        return self if self.block == block else replace(self, block=block)

    @cached_property
    def order(self):
        """Where the lanes of a warp must see each other's memory accesses in order
        (:class:`translator.ir.order.LaneOrder`)."""
        return LaneOrder(self)

    def quiet(self, block: Block) -> bool:
        """Whether a thread may run this block on its own, between turns: quiet by its
        instructions (Block.quiet) and without an ordering point (translator.ir.order)."""
        return block.quiet and not self.order.points_in(block)

    @property
    def turns(self) -> bool:
        """Whether the program must run in turns: it has a collective or a barrier, a thread
        may wait on another (a spin loop), which needs the fair turn order, or its lanes need
        their memory accesses ordered (an ordering point needs a barrier)."""
        return any(i.spec.turns for i in self.insts) or self.may_spin or bool(self.order.points)

    @property
    def collectives(self) -> bool:
        """Whether an instruction takes what the other lanes of its warp hold (VOTE, SHFL,
        MATCH, REDUX, BRA.DIV, R2UR's test; not BSSY, which only names a region)."""
        return any(i.exchanges and not i.spec.region for i in self.insts)

    @property
    def may_spin(self) -> bool:
        """A YIELD/NANOSLEEP, or a loop that re-reads memory another thread may write
        (:attr:`spin_reads`)."""
        return any(i.spec.yields for i in self.insts) or bool(self.spin_reads)

    @cached_property
    def spin_reads(self) -> frozenset[int]:
        """The pcs of the instructions a loop may wait on: shared loads, strong (volatile)
        global loads or atomics between a backward branch and its target."""
        found = set()
        for branch in self.insts:
            if branch.spec.flow != "jump":
                continue
            for target in (t for t in branch.destinations if t <= branch.pc):
                found.update(i.pc for i in self.insts if target <= i.pc <= branch.pc and i.rereads_memory)
        return frozenset(found)

    @cached_property
    def local_bytes(self) -> int:
        """Each thread's local memory (LDL/STL), from the frames its prologues take."""
        return local_frame_bytes(self.insts)

    @property
    def calls_external(self) -> bool:
        """Whether it calls a function outside the kernel (vprintf): its launch then has a
        printf buffer (abi.PRINTF_*)."""
        return any(i.spec.external for i in self.insts)

    @property
    def uses_shared(self) -> bool:
        """Whether an instruction reads or writes shared memory, or may through a generic address."""
        return (any(i.spec.space == "shared" for i in self.insts)
                or any(space in ("shared", "generic") for space in self.order.generic.values()))

    @property
    def uses_local(self) -> bool:
        """Whether an instruction reads or writes the thread's local memory (LDL/STL), or may
        through a generic address (where the thread has a local window)."""
        return (any(i.spec.space == "local" for i in self.insts)
                or self.local_bytes > 0 and any(space in ("local", "generic") for space in self.order.generic.values()))

    def generic_target(self, inst) -> str:
        """Where a generic access (LD/ST/ATOM) may go, as far as its address shows
        (translator.ir.order.generic_target): "global", "shared", "local", or "generic" (any)."""
        return self.order.generic.get(inst.pc, "generic")

    @property
    def mode(self) -> str:
        return "turns" if self.turns else "free"

    @property
    def reachable(self) -> dict[int, Block]:
        """The blocks control can reach from the entry (padding NOPs and the closing
        self-branch are not emitted). A return goes to the instruction after a CALL."""
        seen, todo = set(), [self.entry]
        returns = [i.next_pc for i in self.insts if i.spec.flow == "call"]
        while todo:
            pc = todo.pop()
            if pc in seen or pc not in self.blocks:
                continue
            seen.add(pc)
            todo.extend(_successors(self.blocks[pc], returns))
        return {pc: b for pc, b in self.blocks.items() if pc in seen}

    def successors(self, block: Block) -> list[int]:
        """Where control may go after the block (a return: after every CALL)."""
        return _successors(block, [i.next_pc for i in self.insts if i.spec.flow == "call"])

    @cached_property
    def cyclic(self) -> frozenset[int]:
        """The reachable blocks that lie on a cycle of the control flow (a loop's blocks):
        those in a strongly connected component of more than one block, or that branch to
        themselves (Tarjan's algorithm, without recursion)."""
        graph = {pc: [s for s in self.successors(b) if s in self.blocks] for pc, b in self.reachable.items()}
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        stack, on_stack, found = [], set(), set()
        for root in graph:
            if root in index:
                continue
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            work = [(root, iter(graph[root]))]
            while work:
                pc, successors = work[-1]
                nxt = next(successors, None)
                if nxt is not None:
                    if nxt not in index:
                        index[nxt] = low[nxt] = len(index)
                        stack.append(nxt)
                        on_stack.add(nxt)
                        work.append((nxt, iter(graph[nxt])))
                    elif nxt in on_stack:
                        low[pc] = min(low[pc], index[nxt])
                    continue
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[pc])
                if low[pc] == index[pc]:        # pc roots a component: pop it
                    component = []
                    while not component or component[-1] != pc:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    if len(component) > 1 or pc in graph[pc]:
                        found.update(component)
        return frozenset(found)


def _successors(block: Block, returns: list[int]) -> list[int]:
    last = block.insts[-1]
    guarded = [last.next_pc] if last.guard is not None else []
    flow = last.spec.flow
    if flow == "exit":                           # EXIT Pp, like a guard, lets some threads on
        return [last.next_pc] if last.conditional else []
    if flow == "return":
        return returns + guarded
    if flow in ("jump", "call"):
        falls = flow == "call" or last.conditional
        return list(last.destinations) + ([last.next_pc] if falls else [])
    return [last.next_pc]


def decode(raw: RawInstruction, labels: dict[str, int]) -> Inst:
    """Look an instruction up in the opcode table and resolve its target."""
    base, *mods = raw.opcode.split(".")
    spec = ops.lookup_form(base, raw.operands)
    where = f"{raw.file}:{raw.line}"
    if spec is None and base in ops.NOT_TRANSLATED:
        raise UnsupportedInstruction(f"{where}: {raw.opcode} is not translated: {ops.NOT_TRANSLATED[base]}",
                                     raw.opcode)
    if spec is None:
        raise UnsupportedInstruction(f"{where}: unknown opcode {raw.opcode}", raw.opcode)
    bad = [m for m in mods if m not in spec.mods]
    if bad:
        raise UnsupportedInstruction(
            f"{where}: unsupported modifier .{bad[0]} of {base} in '{raw.text}'", raw.opcode)
    _check_constants(raw, mods, where)
    _check_annotations(raw, spec, where)
    guard = None
    if raw.guard:
        neg = raw.guard.startswith("!")
        name = raw.guard.lstrip("!")
        kind, value = regs.CONSTANT.get(name) or ("upred" if name.startswith("UP") else "pred", int(name[-1]))
        guard = Operand(kind, raw.guard, name=name, value=value, inv=neg)
    target = _target(raw, spec, labels, where)
    return Inst(raw.pc, raw.opcode, base, frozenset(mods), tuple(mods), guard, raw.operands, target, spec,
                raw.text, raw.file, raw.line, _table_targets(raw, spec, labels, where))


_READ_WIDTHS = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8}


def _check_constants(raw: RawInstruction, mods: list[str], where: str) -> None:
    """A constant-bank operand's offset must be aligned for its read: the width the modifiers
    give (.U8/.S8 one byte, .U16/.S16 two, .64 eight: only constant loads carry those beside
    a constant operand), else a word."""
    width = next((w for m, w in _READ_WIDTHS.items() if m in mods), 4)
    for o in raw.operands:
        if o.kind == "cbank" and o.offset % width:
            raise SassSyntaxError(f"{where}: constant bank offset {o.offset:#x} in {o.text} is not aligned "
                                  f"to the {8 * width}-bit read of '{raw.text}'")


def _check_annotations(raw: RawInstruction, spec: ops.OpSpec, where: str) -> None:
    """An annotation nvdisasm prints may only be ignored where it cannot change where control
    goes: an unknown one on a control transfer, or branch targets on an instruction that takes
    none, is refused."""
    unknown = raw.unknown_annotations
    if unknown and spec.flow != "next":
        raise UnsupportedInstruction(f'{where}: unknown annotation (*"{unknown[0]}"*) on a control '
                                     f"transfer in '{raw.text}'", raw.opcode)
    if raw.branch_targets and spec.target != "table":
        raise ProgramError(f"{where}: branch targets on {raw.opcode}, which does not branch "
                           f"through a register, in '{raw.text}'")


def _table_targets(raw: RawInstruction, spec: ops.OpSpec, labels: dict[str, int], where: str) -> tuple[int, ...]:
    """The pcs an indirect branch names in its BRANCH_TARGETS annotation (labels, or
    addresses), in the listing's order; one without them cannot be translated."""
    if spec.target != "table":
        return ()
    if not raw.branch_targets:
        raise UnsupportedInstruction(f"{where}: {raw.opcode} without a BRANCH_TARGETS annotation: the listing "
                                     f"does not say where it may go, in '{raw.text}'", raw.opcode)
    pcs = []
    for name in raw.branch_targets:
        if name in labels:
            pcs.append(labels[name])
        elif name.startswith("0x"):
            pcs.append(int(name, 16))
        else:
            raise ProgramError(f"{where}: unknown label {name} in the branch targets of '{raw.text}'")
    return tuple(pcs)


def _target(raw: RawInstruction, spec: ops.OpSpec, labels: dict[str, int], where: str) -> int | None:
    if spec.target in (None, "table"):
        return None
    for o in raw.operands:
        if o.kind == "label":
            if o.name not in labels:
                raise ProgramError(f"{where}: unknown label {o.name} in '{raw.text}'")
            return labels[o.name]
    for o in reversed(raw.operands):      # cuobjdump prints targets as addresses
        if o.kind == "imm":
            return o.value
    if spec.target == "offset":
        return 0
    raise ProgramError(f"{where}: {raw.opcode} without a target in '{raw.text}'")


def split_blocks(insts: list[Inst], entry: int) -> dict[int, Block]:
    """Cut the program where control can enter or leave, and around instructions that wait."""
    leaders = {entry}
    for i in insts:
        leaders.update(i.destinations if i.spec.target in ("pc", "table") else ())
        if i.spec.ends_block:
            leaders.add(i.next_pc)
        if i.waits:
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


def build_program(section: Section, name: str | None = None, block=None) -> Program:
    """Decode a whole section (kernel and helpers) and cut it into blocks; ``block`` is the
    launch's block shape, where known."""
    insts = [decode(raw, section.labels) for raw in section.instructions]
    for a, b in zip(insts, insts[1:]):
        if b.pc != a.pc + 16:
            raise ProgramError(f"{b.where}: address /*{b.pc:04x}*/ does not follow /*{a.pc:04x}*/")
    if not insts:
        raise ProgramError(f"kernel {section.name}: no instructions")
    pcs = {i.pc for i in insts}
    for i in insts:
        outside = [t for t in i.destinations if t not in pcs] if i.spec.target in ("pc", "table") else []
        if outside:
            raise ProgramError(f"{i.where}: target {outside[0]:#x} is outside kernel {section.name}")
    entry = insts[0].pc
    return Program(name or section.name, insts, split_blocks(insts, entry), entry,
                   tuple(block) if block is not None else None)


def load_program(text: str, kernel: str | None = None, file: str = "<listing>", first_line: int = 1,
                 block=None) -> Program:
    """Parse a listing and build the program of one kernel (the only one when not named),
    for a launch of block shape ``block`` where known."""
    sections = parse_listing(text, file, first_line)
    if kernel is None:
        if len(sections) != 1:
            raise ProgramError(f"{file}: {len(sections)} kernels in the listing; name one of {sorted(sections)}")
        kernel = next(iter(sections))
    if kernel not in sections:
        raise ProgramError(f"{file}: no kernel {kernel} in the listing (has {', '.join(sorted(sections))})")
    return build_program(sections[kernel], kernel, block)


__all__ = ["Inst", "Block", "Program", "decode", "build_program", "load_program", "SassSyntaxError"]
