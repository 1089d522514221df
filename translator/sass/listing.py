"""SM86 SASS text -> kernels of instructions with their file and line.

Reads what ``nvdisasm -c`` and ``cuobjdump -sass`` print: address comments, labels, guards,
modifiers, the encoding comments of cuobjdump, and several kernels in one file. The parser
knows syntax only; which opcodes exist is the opcode table's business (:mod:`translator.isa.ops`),
so a well-formed line with an opcode or operand form nothing implements parses, and decoding
reports it as unsupported.

Parsing is one pass over the lines (labels bind forward to the next instruction of their
kernel), and each kernel's instructions are parsed when that kernel is asked for: a line that
is not SASS is an error of its kernel alone (:class:`Listing`).

nvdisasm ends some instruction lines with annotations taken from the cubin's info sections,
``(*"..."*)`` before the ``;``. They are kept on the instruction, in order: ``BRANCH_TARGETS``
(the labels an indirect ``BRX`` may go to, the only ones it names with data) as
:attr:`RawInstruction.branch_targets`, every one as :attr:`RawInstruction.annotations`.
``SpillRefill`` (a register spilled to or refilled from local memory) and the others in
:data:`INFORMATIVE_ANNOTATIONS` say nothing an instruction's operands do not; what an unknown
one means is decoding's business (``translator.ir.program`` refuses one on a control transfer).
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ..errors import SassSyntaxError
from .operands import Malformed, Operand, parse_operands

ANONYMOUS = "<anonymous>"      # the kernel of a bare listing, with no section or function line
BRANCH_TARGETS = "BRANCH_TARGETS"
# annotations that add nothing to an instruction's meaning: a spill or refill of a register
# (LDL/STL), a call through a register (its target is in the register)
INFORMATIVE_ANNOTATIONS = frozenset({"SpillRefill", "INDIRECT_CALL"})


@dataclass(frozen=True)
class RawInstruction:
    """An instruction line: where it is and what it says, before decoding."""
    pc: int
    guard: str | None          # "P0", "!P0", "UP0", "!PT" or None
    opcode: str                # full mnemonic with modifiers: "ISETP.NE.U32.AND"
    operands: tuple[Operand, ...]
    text: str                  # the instruction text, without address, annotations and ';'
    file: str
    line: int
    annotations: tuple[str, ...] = ()       # the texts inside (*"..."*), in order
    branch_targets: tuple[str, ...] = ()    # BRANCH_TARGETS: the labels (or addresses) it names

    @property
    def unknown_annotations(self) -> tuple[str, ...]:
        """Annotations that are neither BRANCH_TARGETS nor known to be informative."""
        known = INFORMATIVE_ANNOTATIONS | {BRANCH_TARGETS}
        return tuple(a for a in self.annotations if annotation_kind(a) not in known)


@dataclass
class Function:
    """One symbol of a listing: a kernel or a helper that follows it in its section."""
    name: str
    start: int
    file: str
    line: int


@dataclass
class Section:
    """A .text section (nvdisasm) or ``Function :`` block (cuobjdump): one kernel, its helper
    functions, their instructions and labels. ``span`` is its range of lines in the listing
    text (0-based, end exclusive), from its header to the next kernel's header."""
    name: str
    instructions: list[RawInstruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    functions: list[Function] = field(default_factory=list)
    span: tuple[int, int] = (0, 0)
    file: str = "<listing>"
    error: SassSyntaxError | None = None
    bodies: list[tuple[int, str, int]] = field(default_factory=list, repr=False)  # (pc, text, line), unparsed


class Listing(Mapping[str, Section]):
    """The kernels of a listing by name, in the listing's order. Looking a kernel up parses
    its instructions (once) and raises its :class:`SassSyntaxError` if a line of it is not
    SASS; the other kernels are unaffected. Names, spans and labels need no parsing."""

    def __init__(self, sections: dict[str, Section]):
        self._sections = sections

    def __getitem__(self, name: str) -> Section:
        section = self._sections[name]
        if section.bodies:
            _parse_bodies(section)
        if section.error is not None:
            raise section.error
        return section

    def __iter__(self) -> Iterator[str]:
        return iter(self._sections)

    def __len__(self) -> int:
        return len(self._sections)

    def __contains__(self, name: object) -> bool:
        return name in self._sections

    def span(self, name: str) -> tuple[int, int]:
        """The lines of kernel ``name`` in the text (0-based, end exclusive), unparsed."""
        return self._sections[name].span

    def errors(self) -> dict[str, SassSyntaxError]:
        """Every kernel that does not parse, with its (first) error."""
        out = {}
        for name in self._sections:
            try:
                self[name]
            except SassSyntaxError as err:
                out[name] = err
        return out


_ADDR = re.compile(r"/\*([0-9a-fA-F]{4,})\*/\s*(.*)$")
_LABEL = re.compile(r"([.$\w][\w.$@]*)\s*:$")
_SECTION = re.compile(r"\.section\s+\.text\.([\w.$]+)")
_CUOBJ_FUNC = re.compile(r"Function\s*:\s*([\w.$]+)")
_ENCODING = re.compile(r"/\*\s*0x[0-9a-fA-F]+\s*\*/")
_GUARD = re.compile(r"@(!?U?P[0-6T])\s+")
_OPCODE = re.compile(r"[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*")
_ANNOTATION = re.compile(r'\s*\(\*"([^"*]*)"\*\)\s*$')
_TARGET_NAME = re.compile(r"[.$\w][\w.$@]*$")


def parse_listing(text: str, file: str = "<listing>", first_line: int = 1) -> Listing:
    """The kernels of a listing, keyed by name (see :class:`Listing`).

    ``first_line`` is the line of ``text`` within ``file`` (for listings inline in a case).
    """
    return _Scanner(file, first_line).scan(text.splitlines())


class _Scanner:
    """One pass over the lines: kernel headers, instruction lines and labels. A label binds to
    the next instruction of its kernel, or to -1 when the kernel ends first."""

    def __init__(self, file: str, first_line: int):
        self.file, self.first_line = file, first_line
        self.sections: dict[str, Section] = {}
        self.current: Section | None = None
        self.pending: list[tuple[str, int]] = []      # labels waiting for their instruction

    def scan(self, lines: list[str]) -> Listing:
        for index, raw in enumerate(lines):
            line = raw.strip()
            if line.startswith("/*"):
                m = _ADDR.match(line)
                if m:
                    self.instruction(int(m.group(1), 16), m.group(2), index)
                continue                    # an encoding comment on its own line
            if "//" in line:
                line = line.split("//", 1)[0].rstrip()
            if line:
                self.directive(line, index)
        self.close(len(lines))
        return Listing(self.sections)

    def directive(self, line: str, index: int) -> None:
        m = _SECTION.match(line) or _CUOBJ_FUNC.match(line)
        if m:
            self.open(m.group(1), index)
            return
        m = _LABEL.match(line) if line.endswith(":") else None
        if m is None:
            return
        name = m.group(1)
        kernel = name[len(".text."):] if name.startswith(".text.") else None
        if kernel and (self.current is None or self.current.name != kernel):
            self.open(kernel, index)         # a listing without its .section lines
        if self.current is not None:
            self.pending.append((name, index))

    def open(self, name: str, index: int) -> None:
        """Start kernel ``name`` at line ``index``; the kernel before it ends there."""
        self.close(index)
        self.current = self.sections.setdefault(name, Section(name, span=(index, index), file=self.file))

    def close(self, index: int) -> None:
        """End the current kernel before line ``index``: its dangling labels bind to nothing."""
        if self.current is None:
            return
        self.bind(-1)
        self.current.span = (self.current.span[0], index)

    def bind(self, pc: int) -> None:
        for name, index in self.pending:
            self.current.labels[name] = pc
            if pc >= 0 and not name.startswith(".L") and not name.startswith(".text."):
                self.current.functions.append(Function(name, pc, self.file, self.first_line + index))
        self.pending.clear()

    def instruction(self, pc: int, body: str, index: int) -> None:
        if self.current is None:
            self.open(ANONYMOUS, 0)
        self.bind(pc)
        self.current.bodies.append((pc, body, self.first_line + index))


def _parse_bodies(section: Section) -> None:
    """Parse a kernel's instruction lines; the first that is not SASS becomes its error."""
    bodies, section.bodies = section.bodies, []
    for pc, body, line in bodies:
        try:
            section.instructions.append(parse_instruction(pc, body, section.file, line))
        except SassSyntaxError as err:
            section.error = err
            return


def parse_instruction(pc: int, body: str, file: str, line: int) -> RawInstruction:
    """One instruction from the text after its address comment (``@!P0 BRA `(.L_x_0) ;``)."""
    where = f"{file}:{line}"
    body = _ENCODING.sub("", body).strip() if "/*" in body else body.strip()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    annotations, body = _annotations(body, where)
    if not body:
        raise SassSyntaxError(f"{where}: empty instruction at /*{pc:04x}*/")
    guard = None
    if body.startswith("@"):
        m = _GUARD.match(body)
        if m:
            guard = m.group(1)
            body = body[m.end():]
    opcode, *rest = body.split(None, 1)
    if not _OPCODE.fullmatch(opcode):
        raise SassSyntaxError(f"{where}: malformed opcode {opcode!r} in {body!r}")
    try:
        operands = parse_operands(rest[0] if rest else "")
    except Malformed as bad:
        raise SassSyntaxError(f"{where}: {bad} in {body!r}") from None
    text = (f"@{guard} " if guard else "") + body
    return RawInstruction(pc, guard, opcode, operands, text, file, line, annotations,
                          _branch_targets(annotations, where))


def annotation_kind(annotation: str) -> str:
    """The first word of an annotation: ``BRANCH_TARGETS``, ``SpillRefill``, ..."""
    return (annotation.split(None, 1) or [""])[0]


def _annotations(body: str, where: str) -> tuple[tuple[str, ...], str]:
    """The ``(*"..."*)`` annotations at the end of an instruction's text, and the text before
    them; an unclosed one is an error."""
    found: list[str] = []
    while body.endswith("*)"):
        m = _ANNOTATION.search(body)
        if m is None:
            break
        found.insert(0, m.group(1).strip())
        body = body[:m.start()].rstrip()
    if "(*" in body or "*)" in body:
        raise SassSyntaxError(f"{where}: malformed annotation in {body!r}")
    return tuple(found), body


def _branch_targets(annotations: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The labels a ``BRANCH_TARGETS .L_x_1,.L_x_2`` annotation names (none without one)."""
    lists = [a for a in annotations if annotation_kind(a) == BRANCH_TARGETS]
    if not lists:
        return ()
    if len(lists) > 1:
        raise SassSyntaxError(f"{where}: two {BRANCH_TARGETS} annotations")
    names = tuple(t.strip() for t in lists[0][len(BRANCH_TARGETS):].split(","))
    bad = [n for n in names if not _TARGET_NAME.match(n)]
    if bad:
        raise SassSyntaxError(f"{where}: malformed branch target {bad[0]!r} in (*\"{lists[0]}\"*)")
    return names


__all__ = ["ANONYMOUS", "BRANCH_TARGETS", "INFORMATIVE_ANNOTATIONS", "Function", "Listing", "Operand",
           "RawInstruction", "Section", "annotation_kind", "parse_instruction", "parse_listing"]
