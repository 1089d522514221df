"""An SM86 assembler: listing text (what ``nvdisasm -c`` prints) to the 128-bit instruction
words, with encoding tables learned from nvcc's own code.

- ``words``: the 128-bit layout, the words a ``-hex`` listing shows, nvdisasm on raw words
- ``forms``: an instruction's form (the tables' key) and its fields' numbers
- ``table``: the learned tables (``sm86_forms.json``) and the encoding arithmetic
- ``training``, ``fit``, ``explore``, ``learn``: compiling the training code, fitting each
  form with nvdisasm as the judge, the forms one modifier away, writing the tables
- ``encode``: :func:`assemble`; ``roundtrip``: the words read back by nvdisasm;
  ``coverage``: how much of a set of listings the tables encode; ``cli``: ``warpboard assemble``

See README.md beside this file.
"""
from .encode import AssemblerError, assemble
from .roundtrip import roundtrip

__all__ = ["AssemblerError", "assemble", "roundtrip"]
