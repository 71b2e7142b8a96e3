/* Start code and vectors of an emulated Pool core under QEMU's nrt-pool machine
   (nrt-pool-shim/qemu/machine/nrt-pool.c, -cpu de212; the open counterpart of the vendor's
   firmware and LSP; docs/decisions.md D56, D63). Reset jumps to the start code, which sets
   up the register window and the stack and calls `board_main` (pool-board.c). The board's
   code lies at 0x88000000, in the same 1 GiB as the op images at 0x84000000: a windowed
   return keeps the top two bits of the PC (they carry the call's window increment in the
   return address), so a call between the image and the board must not cross a 1 GiB
   boundary. An exception the board does not handle (anything but window
   overflow/underflow) writes a fault record to the host channel and ends the core:
   [tag 5, len 188][kind, EXCCAUSE, EPC1, EXCVADDR, DEPC, PS, PRID, ACCESS, SOC lo, SOC hi,
   STACK_SIZE, HBM stack guard SoC lo, hi, a1][frame count, up to 32 PCs of the call stack,
   innermost first: pool-board.c walks it], then exit status 99. STACK_SIZE and the guard are the
   launch's stack (pool-board.c, board_stack: its STACK_SIZE and, when it runs on an HBM
   stack, the SoC page guarding it; 0 on the local stack), so the host can tell a stack
   overflow from another fault, with a1, the stack pointer of the code that faulted.
   kind: 1 kernel, 2 user, 3 double exception; 4-9 a debug exception
   or an interrupt of level kind - 2 (then EXCCAUSE's place holds DEBUGCAUSE and EPC1's the
   level's EPC). ACCESS and SOC are the machine's note of its last bus error (LAST_ACCESS:
   1 read, 2 write, bit 8 set when a window spans the address, then LAST_SOC is the SoC
   address it stands for); they describe the fault when EXCCAUSE is 14 or 15 (PIF address
   errors, what an access where the core has no memory raises). */
    .include "window-vectors.inc"

    .set SYS_exit, 1
    .set SYS_write, 4
    .set RSP_FD, 4          /* the core's channel to the host (pool-board.c) */
    .set TAG_FAULT, 5
    /* The fault record: 16 words (tag, length, the 14 above), a frame count and up to
       MAX_FRAMES PCs of the call stack (pool-board.c walks it). */
    .set MAX_FRAMES, 32
    .set RECORD_BYTES, 68 + 4 * MAX_FRAMES
    .set WALK_STACK_BYTES, 1024
    .set EXCSAVE1, 209
    .set EXCSAVE2, 210
    .set EXCSAVE3, 211
    .set EXCSAVE4, 212

    /* ROTW 1 and ROTW -1 (the lx106 assembler lacks them) */
    .macro ROTW1
    .byte 0x10, 0x80, 0x40
    .endm
    .macro ROTW_BACK
    .byte 0xF0, 0x80, 0x40
    .endm

    .section .reset, "ax"
    .global _reset
_reset:
    movi    a2, 0x88
    slli    a2, a2, 24
    jx      a2

    .section .vectors, "ax"
    .global _vectors
_vectors:
    .org 0
    WINDOW_VECTORS
    /* Debug and high-priority interrupt vectors (levels 2-7; the debug level is one of
       them: a `break`, as __builtin_trap emits, lands here). a3 = EPC of the level. */
    .org 0x180
    RSR 3, 178              /* EPC2 */
    movi    a2, 4
    j       board_fault_high
    .org 0x1C0
    RSR 3, 179              /* EPC3 */
    movi    a2, 5
    j       board_fault_high
    .org 0x200
    RSR 3, 180              /* EPC4 */
    movi    a2, 6
    j       board_fault_high
    .org 0x240
    RSR 3, 181              /* EPC5 */
    movi    a2, 7
    j       board_fault_high
    .org 0x280
    RSR 3, 182              /* EPC6 */
    movi    a2, 8
    j       board_fault_high
    .org 0x2C0
    RSR 3, 183              /* EPC7 */
    movi    a2, 9
    j       board_fault_high
    /* A kernel or user exception: an alloca exception (EXCCAUSE 5) is served, as the
       vendor's firmware does (D123); any other is a fault. a0 waits in EXCSAVE1. */
    .org 0x300
    WSR 0, EXCSAVE1
    RSR 0, 232              /* EXCCAUSE */
    bnei    a0, 5, 1f
    j       board_alloca
1:  RSR 0, EXCSAVE1
    movi    a2, 1           /* kernel exception */
    j       board_fault_vector
    .org 0x340
    WSR 0, EXCSAVE1
    RSR 0, 232              /* EXCCAUSE */
    bnei    a0, 5, 1f
    j       board_alloca
1:  RSR 0, EXCSAVE1
    movi    a2, 2           /* user exception */
    j       board_fault_vector
    .org 0x3C0
    movi    a2, 3           /* double exception: a window spill or refill faulted */
    j       board_fault_vector

    /* a2 = kind (1 kernel, 2 user, 3 double). Never returns: the registers of the
       interrupted frame are not needed any more. The vectors above touch a2 and a3 only
       (the faulting frame's own registers); the register file is saved before anything
       else is written, for the call stack. */
    .org 0x400
.Lrecord:
    .word   board_fault_record
.Lbus_error:
    .word   0x00100800              /* the machine's LAST_ACCESS register */
.Lstack_info:
    .word   board_stack
.Lwindows:
    .word   board_fault_windows
.Lwalking:
    .word   board_fault_walking
.Lwalk_stack:
    .word   board_fault_stack + WALK_STACK_BYTES - 16
.Lwalk:
    .word   board_fault_walk
    /* The alloca exception: a MOVSP (a variable-length array, alloca) ran while the
       frame of its function's caller was spilled to the stack, so MOVSP cannot carry that
       frame's save area along. Served as the Xtensa ISA intends: the caller's registers
       are loaded back (its window underflow, run from here), after which the MOVSP runs
       again and succeeds. On entry a0 is in EXCSAVE1 and EPC1 is the MOVSP. The
       caller's window lies 1, 2 or 3 quads below (call4, call8, call12: the top two bits
       of the function's return address in its a0); PS.OWB is set to this window so the
       underflow's RFWU comes back to it. */
board_alloca:
    RSR 0, 72               /* WINDOWBASE */
    ROTW_BACK               /* one quad down: this window's a0-a3 are a4-a7 there */
    RSR 2, 230              /* PS */
    extui   a3, a2, 8, 4    /* PS.OWB */
    xor     a3, a3, a4      /* the bits that differ from WINDOWBASE */
    RSR 4, EXCSAVE1         /* the function's a0 back in place */
    slli    a3, a3, 8
    xor     a2, a2, a3
    WSR 2, 230              /* PS.OWB = WINDOWBASE */
    RSYNC
    bbsi    a4, 31, 1f
    j       _vectors + 0x40         /* call4: WindowUnderflow4 */
1:  ROTW_BACK
    bbsi    a8, 30, 2f
    j       _vectors + 0xC0         /* call8: WindowUnderflow8 */
2:  ROTW_BACK
    j       _vectors + 0x140        /* call12: WindowUnderflow12 */

    /* A debug or high-priority interrupt: kind = level + 2, cause = DEBUGCAUSE, EPC1's
       place holds the level's EPC (in a3). */
board_fault_high:
    WSR 3, EXCSAVE3
    RSR 3, 233              /* DEBUGCAUSE */
    WSR 3, EXCSAVE4
    j       board_fault_common

    .global board_fault_vector
board_fault_vector:
    RSR 3, 232              /* EXCCAUSE */
    WSR 3, EXCSAVE4
    RSR 3, 177              /* EPC1 */
    WSR 3, EXCSAVE3
board_fault_common:
    /* A fault while walking the stack (a bad stack pointer) sends what the walk found. */
    l32r    a3, .Lwalking
    l32i    a3, a3, 0
    bnez    a3, .Lsend
    WSR 2, EXCSAVE2         /* kind */
    /* a0 and a1 of every quad of the register file (de212: 64 registers, 16 quads),
       starting with the faulting frame's: slot i holds quad (WINDOWBASE + i) mod 16. Each rotation leaves the next slot's
       address in the next window's a2 (a quad's a2 is not kept). */
    l32r    a2, .Lwindows
    s32i    a0, a2, 0
    s32i    a1, a2, 4
    RSR 3, 72               /* WINDOWBASE */
    s32i    a3, a2, 128
    RSR 3, 73               /* WINDOWSTART */
    s32i    a3, a2, 132
    addi    a6, a2, 8
    .rept 15
    ROTW1
    s32i    a0, a2, 0
    s32i    a1, a2, 4
    addi    a6, a2, 8
    .endr
    ROTW1                   /* back to the faulting frame */
    RSR 2, EXCSAVE2
    l32r    a3, .Lrecord
    RSR 4, EXCSAVE4
    s32i    a4, a3, 12
    RSR 4, EXCSAVE3
    s32i    a4, a3, 16
    movi    a4, TAG_FAULT
    s32i    a4, a3, 0
    movi    a4, RECORD_BYTES - 8
    s32i    a4, a3, 4
    s32i    a1, a3, 60
    s32i    a2, a3, 8
    RSR 4, 238              /* EXCVADDR */
    s32i    a4, a3, 20
    RSR 4, 192              /* DEPC */
    s32i    a4, a3, 24
    RSR 4, 230              /* PS */
    s32i    a4, a3, 28
    RSR 4, 235              /* PRID */
    s32i    a4, a3, 32
    l32r    a5, .Lbus_error
    l32i    a4, a5, 0               /* LAST_ACCESS */
    s32i    a4, a3, 36
    l32i    a4, a5, 8               /* LAST_SOC lo */
    s32i    a4, a3, 40
    l32i    a4, a5, 12              /* LAST_SOC hi */
    s32i    a4, a3, 44
    l32r    a5, .Lstack_info
    l32i    a4, a5, 0               /* STACK_SIZE */
    s32i    a4, a3, 48
    l32i    a4, a5, 4               /* HBM stack guard lo */
    s32i    a4, a3, 52
    l32i    a4, a5, 8               /* HBM stack guard hi */
    s32i    a4, a3, 56
    movi    a4, 0
    s32i    a4, a3, 64              /* no frames yet */
    /* Walk the call stack in C (pool-board.c) on a stack of its own, as ordinary code:
       the saved register file is the only live frame state it reads, so the window
       holds just this frame (WINDOWSTART = 1 << WINDOWBASE) and exceptions are on. */
    l32r    a4, .Lwalking
    movi    a5, 1
    s32i    a5, a4, 0
    RSR 4, 72
    ssl     a4
    sll     a5, a5
    WSR 5, 73
    l32r    a1, .Lwalk_stack
    WINDOWED_PS
    l32r    a8, .Lwalk
    .byte 0xe0, 0x08, 0x00  /* callx8 a8 */
.Lsend:
    movi    a2, SYS_write
    l32r    a4, .Lrecord
    movi    a3, RSP_FD
    movi    a5, RECORD_BYTES
    simcall
    movi    a2, SYS_exit
    movi    a3, 99
    simcall
2:  j 2b

    .section .entry_jump, "ax"
    j _pool_start

    .section .start, "ax"
    .align 4
    .literal_position
    /* The local stack: the top of the machine's 8 KiB stack RAM (0x4FFFE000-0x50000000),
       with no memory below it (nrt-pool.c). */
    .literal .Lstack, 0x4fffffc0
    .literal .Lcaller_sp, 0x4ffffff0
    .literal .Lmain, board_main
    .global _pool_start
_pool_start:
    WINDOWED_ROOT .Lstack, .Lcaller_sp
    isync
    dsync
    WINDOWED_PS
    /* The FPU (coprocessor 0) on: kernels' single-precision arithmetic runs on it (D86). */
    movi    a2, 1
    .byte 0x20, 0xe0, 0x13  /* wsr a2, cpenable (the lx106 assembler lacks the register) */
    rsync
    movi    a0, 0           /* the root: a call stack's walk ends here */
    l32r    a8, .Lmain
    .byte 0xe0, 0x08, 0x00  /* callx8 a8 */
    mov     a3, a10
    movi    a2, SYS_exit
    simcall
1:  j 1b

    .section .bss
    .align 4
    .global board_fault_record
board_fault_record:
    .space RECORD_BYTES
    .global board_fault_windows
board_fault_windows:
    .space 136
    .global board_fault_walking
board_fault_walking:
    .space 4
    .align 16
board_fault_stack:
    .space WALK_STACK_BYTES
