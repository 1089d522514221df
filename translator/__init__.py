"""SM86 SASS listing -> IR -> SPIR-V compute shader, and the CPU reference interpreter.

The stages, lowest first (imports only go down; see translator/README.md):

- ``errors``, ``abi``, ``target``: what every stage may raise; the memory layout shared with the
  harness; what a shader is translated for (the device's features, limits and subgroups)
- ``values/``: the words themselves (integers, floats, MUFU, vprintf), for both back ends
- ``spirv/``: the SPIR-V module builder and its enumerants
- ``isa/``: the opcode table, the vocabulary semantics are written in, registers, semantics
- ``sass/``: listing text <-> instructions
- ``ir/``: decoded programs, basic blocks, the lane order, the turn key
- ``interp/`` and ``emit/``: the two back ends, side by side; ``emit/`` holds one sub-package
  per translation strategy

Code outside the translator uses only the names below.
"""
from . import abi
from .emit.emitter import DEFAULT_STRATEGY, STRATEGIES, Shader, translate, warp_subgroups_used
from .target import Target
from .emit.strategy import Strategy, register
from .errors import TRAP, BadPc, Fault, Livelock, ProgramError, SassSyntaxError, TranslatorError, UnsupportedInstruction
from .interp.machine import Interpreter as ScalarInterpreter
from .interp.machine import Memory
from .interp.vector import VectorInterpreter as Interpreter   # the same results as ScalarInterpreter, its oracle
from .ir.constants import ConstantRead, constant_reads
from .ir.program import Program, decode, load_program
from .sass.listing import ANONYMOUS, parse_listing
from .sass.operands import clear_caches
from .sass.printer import spell_instructions
from . import spirv
from .spirv import workgroup_bytes
from .values import vprintf
from .values.vprintf import PrintfOutput, PrintfRecord

__all__ = ["abi", "vprintf", "spirv", "translate", "Target", "Shader", "STRATEGIES", "DEFAULT_STRATEGY", "Strategy", "register", "warp_subgroups_used", "Interpreter", "ScalarInterpreter", "Memory", "Program",
           "decode", "load_program", "parse_listing", "spell_instructions", "ANONYMOUS", "clear_caches", "PrintfOutput",
           "PrintfRecord", "ConstantRead", "constant_reads", "TranslatorError", "SassSyntaxError", "UnsupportedInstruction", "ProgramError",
           "Fault", "Livelock", "BadPc", "TRAP", "workgroup_bytes"]
