"""Authoring cases on a machine with nvcc (and, for chip truth, an NVIDIA GPU): the CUDA
toolchain, ``new-case`` (a case from CUDA source), ``record-truth`` (the chip's words), ``capture``
(every launch of a real program), ``corpus`` (code bases compiled and classified). It uses the
runner (``warpboard.harness``) and is used by the command line; the runner never imports it."""
