"""A small SPIR-V module builder: binary words, sections in the spec's order (§2.4), cached
type and constant ids, and structured control flow helpers.

Only what the emitter needs; validated by ``spirv-val`` in the tests.
"""
from __future__ import annotations

import struct
from functools import lru_cache

from .enums import Control, Scope
from .enums import MemorySemantics as Sem

# opcodes (SPIR-V 1.3 unified spec, §3.49)
OP = dict(
    Name=5, Extension=10, ExtInstImport=11, ExtInst=12, MemoryModel=14, EntryPoint=15, ExecutionMode=16, Capability=17,
    TypeVoid=19, TypeBool=20, TypeInt=21, TypeVector=23, TypeArray=28, TypeRuntimeArray=29, TypeStruct=30,
    TypePointer=32, TypeFunction=33, ConstantTrue=41, ConstantFalse=42, Constant=43, ConstantComposite=44,
    CompositeConstruct=80,
    ConstantNull=46,
    Function=54, FunctionParameter=55, FunctionEnd=56, FunctionCall=57, Variable=59, Load=61, Store=62, AccessChain=65, Decorate=71,
    MemberDecorate=72, VectorExtractDynamic=77, CompositeExtract=81, ConvertFToU=109, ConvertFToS=110, ConvertSToF=111,
    ConvertUToF=112, UConvert=113, SConvert=114, FConvert=115, Bitcast=124, FAdd=129, FSub=131, FMul=133, FDiv=136,
    All=155, IsNan=156,
    FOrdLessThan=184, FOrdGreaterThanEqual=190, TypeFloat=22,
    IAdd=128, ISub=130, IMul=132, UDiv=134, UMod=137, UMulExtended=151,
    LogicalEqual=164, LogicalNotEqual=165, LogicalOr=166, LogicalAnd=167, LogicalNot=168, Select=169,
    IEqual=170, INotEqual=171, UGreaterThan=172, SGreaterThan=173, UGreaterThanEqual=174,
    SGreaterThanEqual=175, ULessThan=176, SLessThan=177, ULessThanEqual=178, SLessThanEqual=179,
    ShiftRightLogical=194, ShiftRightArithmetic=195, ShiftLeftLogical=196, BitwiseOr=197, BitwiseXor=198,
    BitwiseAnd=199, Not=200, BitReverse=204, BitCount=205, ControlBarrier=224, MemoryBarrier=225,
    AtomicLoad=227, AtomicStore=228, AtomicExchange=229, AtomicCompareExchange=230,
    AtomicIAdd=234, AtomicISub=235, AtomicSMin=236, AtomicUMin=237, AtomicSMax=238, AtomicUMax=239,
    AtomicAnd=240, AtomicOr=241, AtomicXor=242, LoopMerge=246, SelectionMerge=247, Label=248,
    Branch=249, BranchConditional=250, Switch=251, Return=253,
    GroupNonUniformElect=333, GroupNonUniformBroadcastFirst=338, GroupNonUniformBallot=339, GroupNonUniformAll=334, GroupNonUniformAny=335, GroupNonUniformBroadcast=337, GroupNonUniformShuffle=345, GroupNonUniformIAdd=349,
    GroupNonUniformUMin=354, GroupNonUniformUMax=357, GroupNonUniformBitwiseOr=360, GroupNonUniformBitwiseXor=361,
)

OP_LOAD, OP_STORE = OP["Load"], OP["Store"]

# enumerants
STORAGE = dict(Input=1, Uniform=2, Workgroup=4, Private=6, Function=7, StorageBuffer=12)
DECORATION = dict(Block=2, ArrayStride=6, BuiltIn=11, Volatile=21, Coherent=23, Binding=33,
                  DescriptorSet=34, Offset=35, NoContraction=42)
BUILTIN = dict(NumWorkgroups=24, WorkgroupId=26, LocalInvocationId=27, LocalInvocationIndex=29,
               SubgroupSize=36, NumSubgroups=38, SubgroupId=40, SubgroupLocalInvocationId=41)
CAPABILITY = dict(Shader=1, Int64=11, Int64Atomics=12, GroupNonUniform=61, GroupNonUniformVote=62, GroupNonUniformArithmetic=63,
                  GroupNonUniformBallot=64, GroupNonUniformShuffle=65)
GLSL = dict(RoundEven=2, Trunc=3, Floor=8, Ceil=9, Sin=13, Cos=14, Tanh=21, Exp=27, Exp2=29, Log2=30, Sqrt=31, InverseSqrt=32,
            FindSMsb=74, FindUMsb=75)
VOLATILE_ACCESS = 0x1
VERSION_1_3 = 0x00010300


@lru_cache(maxsize=4096)
def _string(s: str) -> tuple[int, ...]:
    data = s.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return struct.unpack(f"<{len(data) // 4}I", data)


class Module:
    """A compute module under construction; ``assemble()`` gives the binary."""

    SECTIONS = ("capability", "ext", "import", "model", "entry", "mode", "debug", "annotation", "global", "code")

    def __init__(self, int64: bool = True):
        """``int64``: declare the 64-bit integer type up front (a shader for a device with
        ``shaderInt64``); a module without it needs no ``Int64`` capability and has no
        :meth:`u64` (the device probe's, and shaders whose 64-bit values are pairs of words)."""
        self.bound = 1
        self.sections: dict[str, list[int]] = {s: [] for s in self.SECTIONS}
        self._types: dict[tuple, int] = {}
        self._consts: dict[tuple, int] = {}
        self.interface: list[int] = []
        self._glsl: int | None = None
        self._capabilities: set[str] = set()
        self._extensions: set[str] = set()
        self.value_of: dict[int, int | bool] = {}     # constant id -> its value (for folding)
        # every module uses these three
        self._bool = self._type(("bool",), "TypeBool")
        self._u32 = self._type(("int", 32), "TypeInt", 32, 0)
        self._u64 = self._type(("int", 64), "TypeInt", 64, 0) if int64 else None

    # ------------------------------------------------------------------ raw emission
    def new_id(self) -> int:
        self.bound += 1
        return self.bound - 1

    def extension(self, name: str) -> None:
        """Declare a SPIR-V extension (once)."""
        if name not in self._extensions:
            self._extensions.add(name)
            self.emit_mixed("ext", "Extension", name)

    def capability(self, name: str) -> None:
        """Declare a capability (once)."""
        if name not in self._capabilities:
            self._capabilities.add(name)
            self.emit("capability", "Capability", CAPABILITY[name])

    def emit(self, section: str, opcode: str, *operands: int) -> None:
        """One instruction whose operands are all single words."""
        out = self.sections[section]
        out.append((len(operands) + 1) << 16 | OP[opcode])
        out.extend(operands)

    def emit_mixed(self, section: str, opcode: str, *operands) -> None:
        """One instruction whose operands may be strings (nul-padded words) or word sequences."""
        words: list[int] = []
        for o in operands:
            if isinstance(o, int):
                words.append(o)
            elif isinstance(o, str):
                words.extend(_string(o))
            else:
                words.extend(o)
        self.emit(section, opcode, *words)

    def assemble(self) -> bytes:
        words = [0x07230203, VERSION_1_3, 0, self.bound, 0]
        for s in self.SECTIONS:
            words.extend(self.sections[s])
        return struct.pack(f"<{len(words)}I", *words)

    # ------------------------------------------------------------------ types and constants
    def _type(self, key: tuple, opcode: str, *operands) -> int:
        if key not in self._types:
            tid = self.new_id()
            self.emit("global", opcode, tid, *operands)
            self._types[key] = tid
        return self._types[key]

    def void(self): return self._type(("void",), "TypeVoid")

    def bool(self): return self._bool
    def u32(self): return self._u32

    def f32(self):
        return self._type(("float", 32), "TypeFloat", 32)

    def u64(self):
        if self._u64 is None:
            raise ValueError("this module has no 64-bit integers (Module(int64=False))")
        return self._u64

    def struct(self, *members):
        """A plain struct of the given member types (the result of OpUMulExtended, ...)."""
        return self._type(("struct", *members), "TypeStruct", *members)

    def vec(self, elem, n): return self._type(("vec", elem, n), "TypeVector", elem, n)
    def func_type(self, ret, *params): return self._type(("fn", ret, *params), "TypeFunction", ret, *params)
    def pointer(self, storage, t): return self._type(("ptr", storage, t), "TypePointer", STORAGE[storage], t)

    def array(self, elem, n, stride=None):
        key = ("array", elem, n, stride)
        if key not in self._types:
            self._types[key] = self._type(key, "TypeArray", elem, self.const(self.u32(), n))
            if stride:
                self.decorate(self._types[key], "ArrayStride", stride)
        return self._types[key]

    def runtime_array(self, elem, stride):
        key = ("rtarray", elem, stride)
        if key not in self._types:
            self._types[key] = self._type(key, "TypeRuntimeArray", elem)
            self.decorate(self._types[key], "ArrayStride", stride)
        return self._types[key]

    def const(self, t: int, value: int) -> int:
        key = (t, value)
        cid = self._consts.get(key)
        if cid is None:
            cid = self.bound
            self.bound += 1
            if t == self._u64:
                self.sections["global"] += (5 << 16 | OP["Constant"], t, cid, value & 0xFFFFFFFF,
                                            (value >> 32) & 0xFFFFFFFF)
            else:
                self.sections["global"] += (4 << 16 | OP["Constant"], t, cid, value & 0xFFFFFFFF)
            self._consts[key] = cid
            self.value_of[cid] = value
        return cid

    def const_vec(self, t: int, elem: int, values: tuple[int, ...]) -> int:
        """A constant vector of integer constants (ids cached like scalars)."""
        key = ("v", t, values)
        cid = self._consts.get(key)
        if cid is None:
            parts = [self.const(elem, v) for v in values]
            cid = self.new_id()
            self.emit("global", "ConstantComposite", t, cid, *parts)
            self._consts[key] = cid
        return cid

    def const_bool(self, value: bool) -> int:
        key = ("b", bool(value))
        cid = self._consts.get(key)
        if cid is None:
            cid = self.new_id()
            self.emit("global", "ConstantTrue" if value else "ConstantFalse", self.bool(), cid)
            self._consts[key] = cid
            self.value_of[cid] = bool(value)
        return cid

    # ------------------------------------------------------------------ globals
    def decorate(self, target, name, *args):
        self.emit("annotation", "Decorate", target, DECORATION[name], *args)

    def name(self, target, text):
        words = _string(text)
        self.sections["debug"] += ((len(words) + 2) << 16 | OP["Name"], target, *words)

    def global_var(self, ptr_type, storage, name=None) -> int:
        vid = self.new_id()
        self.emit("global", "Variable", ptr_type, vid, STORAGE[storage])
        if name:
            self.name(vid, name)
        if storage in ("Input", "Output"):      # SPIR-V 1.3: the interface lists only these
            self.interface.append(vid)
        return vid

    def storage_buffer(self, binding: int, name: str, elem: int | None = None) -> int:
        """A ``buffer { uint words[]; }`` at set 0, the given binding; ``elem`` = :meth:`u64`
        gives a ``uint64_t`` view of the same buffer (for 64-bit atomics)."""
        elem = self.u32() if elem is None else elem
        stride = 8 if elem == self._u64 else 4
        arr = self.runtime_array(elem, stride)
        key = ("ssbo-struct", stride)
        if key not in self._types:
            st = self._type(key, "TypeStruct", arr)
            self.decorate(st, "Block")
            self.emit("annotation", "MemberDecorate", st, 0, DECORATION["Offset"], 0)
        st = self._types[key]
        var = self.global_var(self.pointer("StorageBuffer", st), "StorageBuffer", name)
        self.decorate(var, "DescriptorSet", 0)
        self.decorate(var, "Binding", binding)
        self.decorate(var, "Coherent")
        return var

    def builtin(self, name: str, t: int) -> int:
        var = self.global_var(self.pointer("Input", t), "Input", name)
        self.decorate(var, "BuiltIn", BUILTIN[name])
        return var

    def glsl(self) -> int:
        if self._glsl is None:
            self._glsl = self.new_id()
            self.emit_mixed("import", "ExtInstImport", self._glsl, "GLSL.std.450")
        return self._glsl


class _If:
    """The selection construct of :meth:`Function.if_` (a class: entered thousands of times
    per module, cheaper than a generator-based context manager)."""
    __slots__ = ("f", "cond", "merge")

    def __init__(self, f: "Function", cond: int):
        self.f, self.cond = f, cond

    def __enter__(self) -> None:
        f, m = self.f, self.f.m
        then, self.merge = m.bound, m.bound + 1
        m.bound += 2
        f.body += (3 << 16 | OP["SelectionMerge"], self.merge, Control.NONE,
                   4 << 16 | OP["BranchConditional"], self.cond, then, self.merge, 2 << 16 | OP["Label"], then)

    def __exit__(self, *exc) -> None:
        self.f.body += (2 << 16 | OP["Branch"], self.merge, 2 << 16 | OP["Label"], self.merge)


class Function:
    """A function returning nothing (``main`` or a helper it calls): the current block, local
    variables and structured control flow; ``params`` are the parameters' ids."""
    __slots__ = ("m", "fid", "param_types", "params", "locals", "body", "entry_label")

    def __init__(self, module: Module, param_types: tuple[int, ...] = ()):
        self.m = module
        self.fid = module.new_id()
        self.param_types = param_types
        self.params = [module.new_id() for _ in param_types]
        self.locals: list[int] = []
        self.body: list[int] = []
        self.entry_label = module.new_id()

    def op(self, opcode: str, result_type: int | None, *operands) -> int | None:
        body = self.body
        if result_type is None:
            body.append((len(operands) + 1) << 16 | OP[opcode])
            body.extend(operands)
            return None
        m = self.m
        rid = m.bound
        m.bound += 1
        body.append((len(operands) + 3) << 16 | OP[opcode])
        body.append(result_type)
        body.append(rid)
        body.extend(operands)
        return rid

    def local(self, t: int, name: str | None = None, init: int | None = None) -> int:
        vid = self.m.new_id()
        ptr = self.m.pointer("Function", t)
        self.locals.extend([(5 if init is not None else 4) << 16 | OP["Variable"], ptr, vid, STORAGE["Function"]]
                           + ([init] if init is not None else []))
        if name:
            self.m.name(vid, name)
        return vid

    def label(self, lid: int) -> None:
        self.op("Label", None, lid)

    def load(self, t, ptr, volatile=False):
        m = self.m
        rid = m.bound
        m.bound += 1
        if volatile:
            self.body += (5 << 16 | OP_LOAD, t, rid, ptr, VOLATILE_ACCESS)
        else:
            self.body += (4 << 16 | OP_LOAD, t, rid, ptr)
        return rid

    def store(self, ptr, value, volatile=False):
        if volatile:
            self.body += (4 << 16 | OP_STORE, ptr, value, VOLATILE_ACCESS)
        else:
            self.body += (3 << 16 | OP_STORE, ptr, value)

    def if_(self, cond: int) -> "_If":
        """``with f.if_(cond): ...`` emits ``if (cond) { ... }`` as a selection construct."""
        return _If(self, cond)

    def if_else(self, cond: int, then, otherwise) -> None:
        """``if (cond) then() else otherwise()`` as a selection construct."""
        m = self.m
        yes, no, merge = m.new_id(), m.new_id(), m.new_id()
        self.op("SelectionMerge", None, merge, Control.NONE)
        self.op("BranchConditional", None, cond, yes, no)
        for label, body in ((yes, then), (no, otherwise)):
            self.label(label)
            body()
            self.op("Branch", None, merge)
        self.label(merge)

    def open_loop(self) -> tuple[int, int, int]:
        """A loop construct's header, and its body begun: (header, continue block, merge block);
        the caller ends the body with a branch to the continue block, where the back edge goes."""
        m = self.m
        head, body, cont, merge = (m.new_id() for _ in range(4))
        self.op("Branch", None, head)
        self.label(head)
        self.op("LoopMerge", None, merge, cont, Control.NONE)
        self.op("Branch", None, body)
        self.label(body)
        return head, cont, merge

    def count_loop(self, k, limit: int, body, first: int | None = None, step: int = 1,
                   control: int = Control.NONE) -> None:
        """``for (i = first; i < limit; i += step) body(i)`` as a structured loop; ``first`` is an
        id (default: the constant 0), ``k`` makes the 32-bit constants, as the loop needs them;
        ``control`` is the LoopMerge's (e.g. DontUnroll). The counter is set by a store, not as
        the variable's initializer, so the loop starts again each time control reaches it."""
        m = self.m
        u32, bool_ = m.u32(), m.bool()
        i = self.local(u32)
        self.store(i, first if first is not None else k(0))
        header, block, cont, merge = (m.new_id() for _ in range(4))
        self.op("Branch", None, header)
        self.label(header)
        cur = self.load(u32, i)
        go = self.op("ULessThan", bool_, cur, k(limit))
        self.op("LoopMerge", None, merge, cont, control)
        self.op("BranchConditional", None, go, block, merge)
        self.label(block)
        body(cur)
        self.op("Branch", None, cont)
        self.label(cont)
        self.store(i, self.op("IAdd", u32, cur, k(step)))
        self.op("Branch", None, header)
        self.label(merge)

    def call(self, fn: "Function", *args) -> None:
        self.op("FunctionCall", self.m.void(), fn.fid, *args)

    def barrier(self) -> None:
        """Workgroup execution and memory barrier over shared and buffer memory."""
        u32 = self.m.u32()
        self.op("ControlBarrier", None, self.m.const(u32, Scope.Workgroup), self.m.const(u32, Scope.Workgroup),
                self.m.const(u32, Sem.AcquireRelease | Sem.WorkgroupMemory | Sem.UniformMemory))

    def finish(self) -> None:
        """Append the function to the module, with its locals in the entry block."""
        void = self.m.void()
        head = [5 << 16 | OP["Function"], void, self.fid, 0, self.m.func_type(void, *self.param_types)]
        for t, pid in zip(self.param_types, self.params):
            head += [3 << 16 | OP["FunctionParameter"], t, pid]
        head += [2 << 16 | OP["Label"], self.entry_label]
        self.m.sections["code"].extend(head + self.locals + self.body + [1 << 16 | OP["Return"],
                                                                         1 << 16 | OP["FunctionEnd"]])
