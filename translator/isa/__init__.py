"""The SM86 instruction set as data: the opcode table (ops), the vocabulary the semantics are
written in (ctx), constant and special registers (regs, sregs) and the semantics, one function
per opcode (sem/)."""
