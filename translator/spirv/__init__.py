"""A SPIR-V module builder (sections in spec order, cached types and constants, structured
if and loop helpers) and the enumerants it speaks, by name."""
from .builder import GLSL, Function, Module

__all__ = ["GLSL", "Function", "Module"]
