"""The semantics of every opcode, written once against :class:`translator.isa.ctx.Ctx`:
integer and logic (alu), binary32/64 (float), packed binary16 and bfloat16 (half), memory (mem),
warp collectives, waits and control flow (warp)."""
