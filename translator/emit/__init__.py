"""The SPIR-V back end: the emitter (blocks, module set-up), its context (the vocabulary as
SPIR-V), memory, printf and block outcomes; the soft float (float/); and one sub-package per
translation strategy, registered in :data:`translator.emit.emitter.STRATEGIES`."""
