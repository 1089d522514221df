"""Listing text <-> instructions: the lexer of nvdisasm's and cuobjdump's listings (listing), their
operands (operands), and the printer that spells an instruction back as nvdisasm does (printer)."""
