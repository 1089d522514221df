"""Listings in the text forms of sm86-semantics.md §1, for the front-end tests: two kernels in
nvdisasm -c form (the first calls a helper that follows it in its section) and one in
cuobjdump -sass form."""
# Two kernels in nvdisasm -c form; the first calls a helper that follows it in its section.
NVDISASM = """\
\t.target\tsm_86

//--------------------- .text.first             --------------------------
\t.section\t.text.first,"ax",@progbits
\t.sectioninfo\t@"SHI_REGISTERS=12"
        .global         first
first:
.text.first:
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   ISETP.NE.U32.AND P0, PT, R0.reuse, RZ, PT ;
        /*0030*/                   BSSY B0, `(.L_x_1) ;
        /*0040*/               @P0 BRA `(.L_x_0) ;
        /*0050*/              @!P0 IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x160] ;
        /*0060*/              @!PT LDS RZ, [RZ] ;
        /*0070*/              @UP0 LDG.E R4, [R2.64] ;
        /*0080*/                   LDS R5, [R7.X4+0x200] ;
        /*0090*/                   LDG.E R6, desc[UR4][R2.64+0x10] ;
.L_x_2:
        /*00a0*/                   MOV R10, 0x0 ;
        /*00b0*/                   CALL.REL.NOINC `($__internal_0_$__helper) ;
.L_x_0:
        /*00c0*/                   BSYNC B0 ;
.L_x_1:
        /*00d0*/                   VOTEU.ANY UR4, UPT, PT ;
        /*00e0*/                   EXIT ;
        .weak           $__internal_0_$__helper
        .type           $__internal_0_$__helper,@function
$__internal_0_$__helper:
        /*00f0*/                   IADD3 R11, -R10, URZ, RZ ;
        /*0100*/                   RET.REL.NODEC R10 `(first) ;
.L_x_3:
        /*0110*/                   BRA `(.L_x_3);
        /*0120*/                   NOP;
.L_x_9:

//--------------------- .text.second            --------------------------
\t.section\t.text.second,"ax",@progbits
second:
.text.second:
        /*0000*/                   S2R R0, SR_LANEID ;
        /*0010*/                   EXIT ;
.L_x_4:
        /*0020*/                   BRA `(.L_x_4);
"""

# cuobjdump -sass: encodings in comments, absolute branch targets, a bare RET target.
CUOBJDUMP = """\

Fatbin elf code:
================
arch = sm_86
code version = [1,7]
host = linux
compile_size = 64bit

\tcode for sm_86
\t\tFunction : add_one
\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM86 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM86)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;                   /* 0x00000a0000017a02 */
                                                                            /* 0x000fe40000000f00 */
        /*0010*/                   BSSY B0, 0x60 ;                          /* 0x0000004000007945 */
                                                                            /* 0x000fe20003800000 */
        /*0020*/              @!P0 BRA 0x50 ;                               /* 0x0000002000008947 */
                                                                            /* 0x000fea0003800000 */
        /*0030*/                   CALL.REL.NOINC 0x80 ;                    /* 0x0000004000007944 */
                                                                            /* 0x000fea0003c00000 */
        /*0040*/                   BRA 0x50 ;                               /* 0x0000000000007947 */
                                                                            /* 0x000fea0003800000 */
        /*0050*/                   BSYNC B0 ;                               /* 0x0000000000007941 */
                                                                            /* 0x000fea0003800000 */
        /*0060*/                   EXIT ;                                   /* 0x000000000000794d */
                                                                            /* 0x000fea0003800000 */
        /*0070*/                   BRA 0x70;                                /* 0xfffffff000007947 */
                                                                            /* 0x000fc0000383ffff */
        /*0080*/                   RET.REL.NODEC R4 0x0 ;                   /* 0xffffff7004007950 */
                                                                            /* 0x000fea0003c3ffff */
\t\t..........

\t\tFunction : other
\t.headerflags\t@"EF_CUDA_SM86"
        /*0000*/                   EXIT ;                                   /* 0x000000000000794d */
                                                                            /* 0x000fea0003800000 */
\t\t..........
"""


def line_of(text: str, needle: str) -> int:
    """1-based line of the only line containing ``needle``."""
    hits = [k + 1 for k, line in enumerate(text.splitlines()) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def by_pc(program, pc):
    """The instruction of ``program`` at ``pc``."""
    return next(i for i in program.insts if i.pc == pc)


def kernel_text(*body: str) -> str:
    """A one-kernel listing ``first`` of the given instruction lines, at pcs 0, 0x10, ..."""
    lines = ["first:", ".text.first:"]
    lines += [f"        /*{16 * k:04x}*/                   {b} ;" for k, b in enumerate(body)]
    return "\n".join(lines) + "\n"
