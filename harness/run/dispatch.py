"""One case, one launch: lay out memory by the ABI, run on a Vulkan device or the CPU
reference interpreter, and hand back the buffers and what the shader reported.
"""
from __future__ import annotations

import os
import struct
import time
import dataclasses
from dataclasses import dataclass, field

from warpboard.translator import (
    DEFAULT_STRATEGY,
    TRAP,
    BadPc,
    Fault,
    Interpreter,
    Livelock,
    Memory,
    PrintfOutput,
    Program,
    STRATEGIES,
    Shader,
    Target,
    abi,
    constant_reads,
    load_program,
    translate,
    vprintf,
)

from ..case.model import Case, CaseError
from ..vk.probe import warps
from . import cache
from .devices import is_lavapipe
from .results import Outcome

INTERPRETER_OUTCOME = {Fault: Outcome.FAULT, Livelock: Outcome.LIVELOCK, BadPc: Outcome.BAD_PC}


@dataclass
class Prepared:
    """A case turned into what a dispatch needs. ``buffers`` are the case's, then (where the
    case has strings) empty slots up to abi.GLOBAL_DATA_SLOT and its global data."""
    case: Case
    program: Program
    launch: abi.Launch
    cbank: bytes
    buffers: list[bytes]
    budget: int


@dataclass
class RawRun:
    """What came back from one launch, before any comparison."""
    buffers: list[bytes]
    outcome: Outcome = Outcome.OK
    detail: str = ""
    counters: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    mode: str = ""
    printf: PrintfOutput | None = None      # the vprintf calls, where the program makes any

    def memory(self) -> "GlobalMemory":
        """The global memory the launch left (buffers and global data), for %s and formats."""
        return GlobalMemory(self.buffers)


@dataclass
class GlobalMemory:
    """Global memory after a launch, by address (see abi.buffer_address)."""
    buffers: list[bytes]

    def string(self, addr: int, limit: int = vprintf.MAX_FORMAT_BYTES) -> bytes | None:
        """The NUL-terminated bytes at ``addr`` (at most ``limit``), None outside every buffer."""
        k, off = (addr >> 32) - abi.BUFFER_HI, (addr & 0xFFFFFFFF) - abi.BUFFER_LO
        if not 0 <= k < len(self.buffers) or not 0 <= off < len(self.buffers[k]):
            return None
        data = self.buffers[k][off:off + limit]
        end = data.find(b"\0")
        return data if end < 0 else data[:end]


def prepare(case: Case, budget: int | None = None) -> Prepared:
    """Parse and decode the case's kernel and build its constant bank and buffers; a CaseError
    where the kernel reads a constant the case does not give (:func:`check_constants`)."""
    program = load_program(case.listing_text, case.kernel, str(case.listing_path), case.listing_line, case.block)
    check_constants(case, program)
    launch = abi.Launch(case.grid, case.block)
    names = [b.name for b in case.buffers]
    params = [("u64", abi.buffer_address(names.index(p.value)) + p.offset) if p.kind == "buffer" else (p.kind, p.value)
              for p in case.params]
    buffers = [struct.pack(f"<{b.words}I", *b.init) for b in case.buffers]
    if case.strings:
        buffers += [b""] * (abi.GLOBAL_DATA_SLOT - len(buffers)) + [case.global_data]
    return Prepared(case, program, launch, abi.constant_bank(launch, params, case.constants), buffers,
                    budget or case.step_budget or abi.DEFAULT_BUDGET)


def check_constants(case: Case, program: Program) -> None:
    """Every read of constant banks 1-4 starts in a word the case's ``[[constants]]`` give (a
    register-indexed read: in a bank it gives at all). Bank 0 is the launch's (abi). The rest of
    a pair past a table's end reads 0, as past the end of a cubin's bank section; a read that
    starts outside every table would be a silent 0, so it is an error naming the instruction."""
    given: dict[int, set[int]] = {}
    for bank, offset, words in case.constants:
        given.setdefault(bank, set()).update(offset + 4 * k for k in range(len(words)))
    for read in constant_reads(program.insts):
        if read.bank == 0:
            continue
        have = given.get(read.bank, set())
        if (read.offset is None and have) or (read.offset is not None and read.offset & ~3 in have):
            continue
        at = "at an offset held in a register" if read.offset is None else f"at {read.offset:#x}"
        raise CaseError(
            f"{read.where}: '{read.text}' reads constant bank {read.bank} {at}, which {case.path} does not "
            f"give (it would read 0): add a [[constants]] table (bank = {read.bank}) with the words the "
            f"kernel's cubin holds there, or make the case with `warpboard new-case`, which reads the "
            f"banks from the cubin")


SHADER_FEATURES = frozenset({"shaderInt64", "shaderBufferInt64Atomics", "shaderMaximalReconvergence"})
"""The device features a translated shader's form depends on (the rest it never uses)."""


def translate_case(prep: Prepared, mode: str | None = None, target: Target = Target(),
                   strategy: str = DEFAULT_STRATEGY, use_cache: bool = True) -> tuple[Shader, float]:
    """The case's shader for ``target`` (translator.translate; from the SPIR-V cache when it
    has it) and the seconds it took; ``strategy``: one of translator.STRATEGIES."""
    start = time.perf_counter()
    case, program = prep.case, prep.program
    if target.features is not None:         # only those the shader's form depends on
        target = dataclasses.replace(target, features=frozenset(target.features) & SHADER_FEATURES)
    key = cache.spirv_key(case.listing_text, program.name, prep.launch.block, case.shared_bytes, mode,
                          target, strategy) if use_cache else None
    spirv = cache.load_spirv(key) if key else None
    facts = cache.load_shader_facts(key) if spirv is not None else None
    if facts is not None and "scratch_words" in facts:
        shader = Shader(spirv, facts["mode"], prep.launch.block, case.shared_bytes, program.name,
                        len(program.insts), cached=True, warp_subgroups=facts["warp_subgroups"],
                        subgroup_size=facts["subgroup_size"], scratch_words=facts["scratch_words"])
    else:
        shader = translate(program, prep.launch.block, case.shared_bytes, mode, target, strategy)
        if key:
            cache.store_spirv(key, shader.spirv)
            cache.store_shader_facts(key, {"mode": shader.mode, "warp_subgroups": shader.warp_subgroups,
                                           "subgroup_size": shader.subgroup_size,
                                           "scratch_words": shader.scratch_words})
    return shader, time.perf_counter() - start


def device_target(info, block: tuple[int, int, int], strategy: str = DEFAULT_STRATEGY) -> Target:
    """What a device (its :class:`harness.vk.info.DeviceInfo`) offers a shader of ``strategy``
    for a launch of ``block``: its features and workgroup-memory limit; collectives on
    subgroups where the strategy may and the subgroups are warps (:func:`warps_are_subgroups`);
    tight loops where the strategy may and the driver allows (:func:`tight_loops_allowed`);
    runs of a self-loop's passes on a GPU."""
    record = STRATEGIES[strategy]
    return Target(features=frozenset(info.features),
                  warp_subgroups=record.warp_subgroups and warps_are_subgroups(info, block),
                  tight_loops=record.tight_loops and tight_loops_allowed(info),
                  pass_runs=info.device_type != "cpu",
                  workgroup_limit=info.max_shared_memory)


def tight_loops_allowed(info) -> bool:
    """Whether a block that branches to itself may loop in its own case of the shader
    (translator.translate's ``tight_loops``): not on llvmpipe, which stops a shader's loops
    after 65,535 iterations of all of them together and passes over every case of a switch,
    masked, so each loop in a case would count on every step (translator.abi.DEFAULT_BUDGET)."""
    return not is_lavapipe(info)


def warps_are_subgroups(info, block: tuple[int, int, int] | None = None) -> bool:
    """Whether a device's subgroups can stand for warps: collectives then skip workgroup
    memory and barriers. The device must have vote, ballot, shuffle and arithmetic in compute
    shaders, and its probe (harness.vk.probe) must have found 32 real lanes in local-index
    order, as it comes or with full subgroups of 32 asked for; a reported size of 32 alone is
    not enough (llvmpipe at 1024 bits reports 32 and runs 16). For a launch of ``block``
    whose one warp fits in one subgroup (no more threads than the probe's real lanes, in
    local-index order: lavapipe-w16 and a block of 16) the subgroup is that warp too. A
    description without a probe falls back to the reported size. ``WARPBOARD_WARP_SUBGROUPS=off``
    keeps collectives in workgroup memory everywhere."""
    if os.environ.get("WARPBOARD_WARP_SUBGROUPS", "on") == "off":
        return False
    if "compute" not in info.subgroup_stages or \
            not {"vote", "ballot", "shuffle", "arithmetic"} <= set(info.subgroup_operations):
        return False
    facts = getattr(info, "probe", None)
    if facts is None:
        return info.subgroup_size == 32
    if warps(info)[0]:
        return True
    threads = block[0] * block[1] * block[2] if block is not None else None
    return threads is not None and threads <= min(32, facts.get("real") or 0) and bool(facts.get("lanes_in_order"))


def subgroup_request(info, block: tuple[int, int, int]) -> tuple[bool, int] | None:
    """What a pipeline whose collectives are subgroup operations asks the device for: full
    subgroups of 32 where the probe needed them (full only where the block's x is a multiple
    of 32, as Vulkan requires), nothing where the subgroups are warps as they come."""
    request = warps(info)[1] if getattr(info, "probe", None) is not None else None
    if request is None:
        return None
    return (block[0] % request[1] == 0, request[1])


def heap_offsets(buffers: list[bytes]) -> list[int]:
    """Each buffer's byte offset in the heap: packed in order, each on an 8-byte boundary (a
    64-bit atomic runs on a ``uint64_t`` view of the heap), so a gap of one word may follow."""
    offsets, at = [], 0
    for data in buffers:
        offsets.append(at)
        at += (len(data) + 7) // 8 * 8
    return offsets


def heap_bytes(buffers: list[bytes]) -> bytes:
    """The heap: the buffers at :func:`heap_offsets`, gaps zero."""
    return b"".join(data + bytes(-len(data) % 8) for data in buffers) or bytes(8)


def control_words(prep: Prepared) -> bytes:
    """The ctrl buffer: status, counters, buffer table, budget and the constant banks."""
    ctrl = [0] * abi.CTRL_WORDS
    ctrl[abi.BUDGET] = prep.budget
    for k, (data, offset) in enumerate(zip(prep.buffers, heap_offsets(prep.buffers))):
        ctrl[abi.TABLE + 2 * k] = offset // 4
        ctrl[abi.TABLE + 2 * k + 1] = len(data)
    ctrl[abi.CBANK:] = struct.unpack(f"<{len(prep.cbank) // 4}I", prep.cbank)
    return struct.pack(f"<{abi.CTRL_WORDS}I", *ctrl)


def run_vulkan(device, prep: Prepared, shader: Shader, timeout_s: float = 60.0, dispatches: int = 1) -> RawRun:
    """Dispatch on an open :class:`harness.vk.Device` and split the heap back into buffers; a
    shader whose collectives are subgroup operations gets the subgroups it needs
    (:func:`subgroup_request`). ``dispatches`` > 1: that many back to back on the same
    buffers (harness.vk.Device.run), for a load, not for the results."""
    if len(prep.buffers) > abi.MAX_BUFFERS:
        raise ValueError(f"{len(prep.buffers)} buffers; the ABI has room for {abi.MAX_BUFFERS}")
    heap, ctrl = heap_bytes(prep.buffers), control_words(prep)
    if shader.scratch_words:        # each workgroup's bookkeeping after the buffers (translator.emit.turns.storage)
        scratch = shader.scratch_words * prep.launch.blocks
        ctrl = ctrl[:4 * abi.SCRATCH] + struct.pack("<I", len(heap) // 4) + ctrl[4 * abi.SCRATCH + 4:]
        heap += bytes(4 * scratch)
    by_name = {"ctrl": ctrl, "heap": heap}
    if prep.program.calls_external:
        words = vprintf.buffer_words()
        by_name["printf"] = struct.pack(f"<{len(words)}I", *words)
    names = [n for n in shader.bindings if n in by_name]
    if names != list(shader.bindings[:len(names)]) or len(names) != len(by_name):
        raise ValueError(f"the shader binds {list(shader.bindings)}; this launch needs {sorted(by_name)}")
    bound = [by_name[n] for n in names]
    start = time.perf_counter()
    if shader.warp_subgroups:
        subgroups = subgroup_request(device.info, prep.launch.block)
    elif shader.subgroup_size and device.full_subgroups(shader.subgroup_size) is None:
        subgroups = (prep.launch.block[0] % shader.subgroup_size == 0, shader.subgroup_size)
    else:
        subgroups = None
    back = dict(zip(names, device.run(shader.spirv, bound, groups=prep.launch.grid, subgroups=subgroups,
                                      timeout_s=timeout_s, entry=shader.entry, dispatches=dispatches)))
    ctrl_out, heap_out = back["ctrl"], back["heap"]
    printf_out = [back["printf"]] if "printf" in back else []
    elapsed = time.perf_counter() - start
    words = struct.unpack(f"<{abi.CTRL_WORDS}I", ctrl_out[:abi.CTRL_WORDS * 4])
    out = [bytes(heap_out[offset:offset + len(data)])
           for data, offset in zip(prep.buffers, heap_offsets(prep.buffers))]
    run = RawRun(out, mode=shader.mode, timings={"run_s": elapsed, **getattr(device, "last_timings", {})})
    if printf_out:
        run.printf = vprintf.decode(bytes(printf_out[0]))
    run.counters = {"turns": words[abi.TURNS], "steps": words[abi.STEPS], "barriers": words[abi.BARRIERS],
                    "instructions": words[abi.INSTRUCTIONS]}
    status = words[abi.STATUS]
    if status != abi.OK:
        run.outcome = Outcome.from_shader(status)
        run.detail = _describe_status(prep, status, words)
    return run


def _describe_status(prep: Prepared, status: int, words) -> str:
    pc, thread = words[abi.STATUS_PC], words[abi.STATUS_THREAD]
    per_block = prep.launch.threads_per_block
    where = f"thread {thread} (block {thread // per_block}, warp {thread % per_block // 32} lane {thread % 32})"
    inst = next((i for i in prep.program.insts if i.pc == pc), None)
    at = f"pc {pc:#06x}" + (f" ({inst.where}: {inst.text})" if inst else "")
    if status == abi.FAULT:
        addr = words[abi.STATUS_ADDR_HI] << 32 | words[abi.STATUS_ADDR_LO]
        if inst is not None and inst.targets:
            return f"{where} at {at}: branch to {addr:#x}, which is not one of its branch targets"
        if inst is not None and inst.spec.name == "BPT":
            return f"{where} at {at}: {TRAP}"
        return f"{where} at {at}: access at {addr:#x} outside every buffer"
    if status == abi.LIVELOCK:
        counted = words[abi.STATUS_STEPS]       # the stuck thread's own steps (turns: its workgroup's turns)
        why = (f"step budget of {prep.budget} spent" if counted >= prep.budget else
               f"the driver ended the shader loop after {counted} of {prep.budget} steps")
        return f"{why}; {where} still running at {at}"
    if status == abi.NOT_WARPS:
        return (f"{where}: the shader was translated for subgroups that are warps (32 invocations, "
                f"in invocation order) and this device's are not")
    if status == abi.BAD_PC:
        return f"{where} jumped to {pc:#x}, which starts no instruction block"
    return f"{where} at {at}: the shader reported status {status}, which the ABI does not define"


def run_interpreter(prep: Prepared, per_warp: bool = False) -> RawRun:
    """Run the CPU reference interpreter on copies of the buffers; ``per_warp``: each warp
    takes its own turns, as the shader does where a device's subgroups are warps."""
    buffers = [bytearray(b) for b in prep.buffers]
    start = time.perf_counter()
    run = RawRun([], mode=prep.program.mode)
    machine = Interpreter(prep.program, prep.launch, Memory(buffers), prep.cbank, prep.case.shared_bytes,
                          prep.budget, per_warp)
    try:
        stats = machine.run()
        run.counters = {"turns": stats.turns, "steps": stats.steps, "instructions": stats.instructions}
    except (Fault, Livelock, BadPc) as exc:
        run.outcome, run.detail = INTERPRETER_OUTCOME[type(exc)], str(exc)
    run.printf = machine.printf if prep.program.calls_external else None   # what it printed before a fault too
    run.timings = {"run_s": time.perf_counter() - start}
    run.buffers = [bytes(b) for b in buffers]
    return run
