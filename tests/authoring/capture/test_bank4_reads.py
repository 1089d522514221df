"""Which bank-4 words a captured kernel reads (authoring/capture/cubins.py: ``bank4_reads``), in
every spelling nvdisasm gives a constant operand: ``c[0x4][0x10]``, read as halves with a space
and a select (``c[0x4] [0x18].H1_H1``), an offset of 0x8000 or more printed negative."""
from __future__ import annotations

from warpboard.authoring.capture.cubins import bank4_reads


def test_every_spelling_of_a_bank4_read_counts():
    listing = ("MOV R0, c[0x4][0x10] ;\n"
               "HADD2 R0, R1, -|c[0x4] [0x18].H1_H1| ;\n"
               "IADD3 R0, R0, c[0x4][-0x10], RZ ;\n"
               "MOV R1, c[0x0][0x20] ;\n")
    assert bank4_reads(listing) == {0x10, 0x18, 0xFFF0}


def test_a_register_index_reads_the_whole_bank():
    assert bank4_reads("HMUL2 R0, R1, c[0x4] [R2+0x4].H0_H0 ;") is None
    assert bank4_reads("LDC R0, c[0x4][UR4] ;") is None
