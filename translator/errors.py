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
