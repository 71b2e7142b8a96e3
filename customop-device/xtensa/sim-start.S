/* Windowed-ABI start code and window vectors for qemu-system-xtensa -M sim -cpu de212 (the
   open counterpart of the vendor's LSP, for tests). de212 has the windowed option with 32
   physical address registers and its vectors at VECBASE 0x60000000, the start of the sim
   machine's RAM (QEMU's core-de212 configuration). The lx106 assembler lacks the windowed
   and special-register instructions, so they are written as their encodings (Xtensa ISA:
   WSR RSR-format, S32E/L32E RRI4, RFWO/RFWU, CALLX8). The program's entry is
   `windowed_main` (called with callx8); its a2 leaves through semihosting SYS_exit. */
    .macro WSR at, sr
    .byte (\at << 4), \sr, 0x13
    .endm
    .macro RSYNC
    .byte 0x10, 0x20, 0x00
    .endm
    .macro S32E at, as, off
    .byte (\at << 4), (((\off + 64) / 4) << 4) | \as, 0x49
    .endm
    .macro L32E at, as, off
    .byte (\at << 4), (((\off + 64) / 4) << 4) | \as, 0x09
    .endm
    .macro RFWO
    .byte 0x00, 0x34, 0x00
    .endm
    .macro RFWU
    .byte 0x00, 0x35, 0x00
    .endm

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
    /* 0x00 WindowOverflow4: spill a0-a3 of the frame below to its base save area. */
    S32E 0, 5, -16
    S32E 1, 5, -12
    S32E 2, 5, -8
    S32E 3, 5, -4
    RFWO
    .org 0x40
    /* WindowUnderflow4 */
    L32E 0, 5, -16
    L32E 1, 5, -12
    L32E 2, 5, -8
    L32E 3, 5, -4
    RFWU
    .org 0x80
    /* WindowOverflow8 */
    S32E 0, 9, -16
    L32E 0, 1, -12
    S32E 1, 9, -12
    S32E 2, 9, -8
    S32E 3, 9, -4
    S32E 4, 0, -32
    S32E 5, 0, -28
    S32E 6, 0, -24
    S32E 7, 0, -20
    RFWO
    .org 0xC0
    /* WindowUnderflow8 */
    L32E 1, 9, -12
    L32E 0, 9, -16
    L32E 7, 1, -12
    L32E 2, 9, -8
    L32E 3, 9, -4
    L32E 4, 7, -32
    L32E 5, 7, -28
    L32E 6, 7, -24
    L32E 7, 7, -20
    RFWU
    .org 0x100
    /* WindowOverflow12 */
    S32E 0, 13, -16
    L32E 0, 1, -12
    S32E 1, 13, -12
    S32E 2, 13, -8
    S32E 3, 13, -4
    S32E 4, 0, -48
    S32E 5, 0, -44
    S32E 6, 0, -40
    S32E 7, 0, -36
    S32E 8, 0, -32
    S32E 9, 0, -28
    S32E 10, 0, -24
    S32E 11, 0, -20
    RFWO
    .org 0x140
    /* WindowUnderflow12 */
    L32E 1, 13, -12
    L32E 0, 13, -16
    L32E 11, 1, -12
    L32E 2, 13, -8
    L32E 3, 13, -4
    L32E 4, 11, -48
    L32E 5, 11, -44
    L32E 6, 11, -40
    L32E 7, 11, -36
    L32E 8, 11, -32
    L32E 9, 11, -28
    L32E 10, 11, -24
    L32E 11, 11, -20
    RFWU
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
    l32r    a1, .Lstack
    /* The root frame's base save area names a caller stack pointer above it, so a window
       overflow that spills the root has an extra save area to write a4-a7 to. */
    l32r    a2, .Lcaller_sp
    addi    a3, a1, -16
    s32i    a2, a3, 4
    movi    a2, 1
    WSR 2, 73          /* WINDOWSTART = 1 */
    movi    a2, 0
    WSR 2, 72          /* WINDOWBASE = 0 */
    RSYNC
    movi    a2, 0x4
    slli    a2, a2, 16  /* PS.WOE */
    addi    a2, a2, 0x20 /* PS.UM, INTLEVEL 0, EXCM 0 */
    WSR 2, 230         /* PS */
    RSYNC
    l32r    a8, .Lmain
    .byte 0xe0, 0x08, 0x00   /* callx8 a8 */
    mov     a3, a10
    movi    a2, 1
    simcall
4:  j 4b
