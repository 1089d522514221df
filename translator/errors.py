"""Errors of the translator; each message starts with ``file:line:`` where there is one."""


class TranslatorError(Exception):
    """Base of every error the translator raises on purpose."""


class SassSyntaxError(TranslatorError):
    """A line of the listing is not SASS as nvdisasm or cuobjdump print it; raised when its
    kernel is asked for, so the other kernels of the listing still load."""


class UnsupportedInstruction(TranslatorError):
    """The listing is well formed but uses an opcode or form the opcode table lacks."""

    def __init__(self, message: str, opcode: str):
        super().__init__(message)
        self.opcode = opcode


class ProgramError(TranslatorError):
    """The program is inconsistent: a missing label, a branch out of the kernel, ..."""


# ---------------------------------------------------------------- how a run ends early
# Raised by the interpreter, reported by the shader as status codes (translator.abi); the
# harness decides what each means for a cell.

class Fault(TranslatorError):
    """A load or store outside every buffer (global) or outside shared memory, or an indirect
    branch to a pc it does not name."""


class Livelock(TranslatorError):
    """The step budget was spent; names the pcs and threads still running."""


class BadPc(TranslatorError):
    """A thread jumped to an address that starts no block."""


TRAP = ("a trap (BPT.TRAP: __trap(), a failed assert, or grid.sync() in a launch that is not "
        "cooperative); the chip ends the launch with an error")
"""What a FAULT says when a thread executed BPT.TRAP, on either back end."""
