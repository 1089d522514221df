"""Cubins made by hand: a little-endian ELF64 with the sections a test names, for the readers of
`harness/case/cubin.py`."""
import struct

from warpboard.harness.case import cubin


def make_elf(sections: dict[str, bytes], syms, rels) -> bytes:
    """A little-endian ELF64 with ``sections``, a symbol table and .rel.nv.constant4."""
    names = list(sections) + [".symtab", ".strtab", ".rel.nv.constant4", ".shstrtab"]
    strtab = b"\0" + b"".join(s[0].encode() + b"\0" for s in syms)
    symtab = bytes(24)
    for k, (name, section, value, size) in enumerate(syms):
        name_off = strtab.index(name.encode() + b"\0")
        shndx = 1 + names.index(section) if section else 0
        symtab += struct.pack("<IBBHQQ", name_off, 0, 0, shndx, value, size)
    sym_index = {s[0]: k + 1 for k, s in enumerate(syms)}
    rel = b"".join(struct.pack("<QQ", off, sym_index[name] << 32 | cubin.R_CUDA_64) for off, name in rels)
    shstr = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    bodies = list(sections.values()) + [symtab, strtab, rel, shstr]
    kinds = [1] * len(sections) + [2, 3, 9, 3]
    links = [0] * len(sections) + [2 + names.index(".strtab") - 1, 0, 0, 0]
    data, offsets = bytearray(64), []
    for body in bodies:
        offsets.append(len(data))
        data += body
    shoff = len(data)
    data += bytes(64)
    for k, body in enumerate(bodies):
        name_off = shstr.index(names[k].encode() + b"\0")
        entsize = {2: 24, 9: 16}.get(kinds[k], 0)          # symbols, REL relocations
        data += struct.pack("<IIQQQQIIQQ", name_off, kinds[k], 0, 0, offsets[k], len(body), links[k], 0, 1, entsize)
    data[:4] = b"\x7fELF"
    data[4], data[5] = 2, 1
    struct.pack_into("<Q", data, 0x28, shoff)
    struct.pack_into("<HHH", data, 0x3A, 64, len(bodies) + 1, len(bodies))
    return bytes(data)
