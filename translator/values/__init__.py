"""The words themselves, shared by the interpreter (which runs them) and the emitter (which
folds constants with them): integer arithmetic (intops), IEEE formats rounded once (floatops),
MUFU's approximations as the chip gives them (mufuops), and vprintf's records (vprintf)."""
