"""``warpboard fuzz``: random divergent CUDA kernels, a CPU model of CUDA semantics for their
expected words, and campaigns that report per-device agreement (see README.md here)."""
