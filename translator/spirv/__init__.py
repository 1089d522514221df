"""A SPIR-V module builder (sections in spec order, cached types and constants, structured
if and loop helpers), the enumerants it speaks, by name, and what a finished module asks of a
device (its workgroup memory)."""
from .builder import GLSL, Function, Module
from .inspect import workgroup_bytes

__all__ = ["GLSL", "Function", "Module", "workgroup_bytes"]
