/* Windowed-ABI start code and window vectors for qemu-system-xtensa -M sim -cpu de212 (the
   open counterpart of the vendor's LSP, for tests). de212 has the windowed option with 32
   physical address registers and its vectors at VECBASE 0x60000000, the start of the sim
   machine's RAM (QEMU's core-de212 configuration). The lx106 assembler lacks the windowed
   and special-register instructions, so they are written as their encodings (Xtensa ISA:
   WSR RSR-format, S32E/L32E RRI4, RFWO/RFWU, CALLX8). The program's entry is
   `windowed_main` (called with callx8); its a2 leaves through semihosting SYS_exit. */
    .include "window-vectors.inc"

    .section .reset, "ax"
    .global _reset
_reset:
    movi    a2, 0x60
    slli    a2, a2, 24
    addmi   a2, a2, 0x400
    jx      a2

    .section .vectors, "ax"
    .global _vectors
_vectors:
    .org 0
    WINDOW_VECTORS
    .org 0x300
    /* Kernel/user/double exceptions: exit 99 through semihosting. */
1:  movi a2, 1
    movi a3, 99
    simcall
    j 1b
    .org 0x340
2:  movi a2, 1
    movi a3, 99
    simcall
    j 2b
    .org 0x3C0
3:  movi a2, 1
    movi a3, 99
    simcall
    j 3b

    .section .entry_jump, "ax"
    j _pool_start

    .section .start, "ax"
    .align 4
    .literal_position
    .literal .Lstack, 0x67ffffc0
    .literal .Lcaller_sp, 0x67fffff0
    .literal .Lmain, windowed_main
    .global _pool_start
_pool_start:
    WINDOWED_ROOT .Lstack, .Lcaller_sp
    WINDOWED_PS
    l32r    a8, .Lmain
    .byte 0xe0, 0x08, 0x00   /* callx8 a8 */
    mov     a3, a10
    movi    a2, 1
    simcall
4:  j 4b
