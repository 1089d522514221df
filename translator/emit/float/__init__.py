"""Floats as integer SPIR-V words, bit-exact on every device: the soft float (soft), its
128-bit significands (wide), and MUFU on the device's binary32 functions (mufu)."""
