/* Start code for the self-test image (call0 ABI): the reset vector jumps to RAM, the stack
   is set at the top of RAM, .bss is cleared, selftest_main runs, and its result leaves
   through semihosting (SYS_exit: a2 = 1, a3 = code, simcall). */
    .section .reset, "ax"
    .global _reset
_reset:
    movi    a2, 0x60
    slli    a2, a2, 24
    jx      a2

    /* 0x60000000: over the literal pool to the start code. */
    .section .entry_jump, "ax"
    .global _entry_jump
_entry_jump:
    j       _start_selftest

    .section .start, "ax"
    .align  4
    .global _start_selftest
    .literal_position
    .literal .Lstack, 0x67fffff0
    .literal .Lbss_start, _bss_start
    .literal .Lbss_end, _bss_end
    .literal .Lmain, selftest_main
_start_selftest:
    l32r    a1, .Lstack
    l32r    a3, .Lbss_start
    l32r    a4, .Lbss_end
    movi    a5, 0
1:  bgeu    a3, a4, 2f
    s32i    a5, a3, 0
    addi    a3, a3, 4
    j       1b
2:  l32r    a0, .Lmain
    callx0  a0
    mov     a3, a2
    movi    a2, 1
    simcall
3:  j       3b

    .text
    .align  4
    .global selftest_exit
selftest_exit:
    mov     a3, a2
    movi    a2, 1
    simcall
4:  j       4b

/* A call0 core has no S32C1I: the atomic loads core refers to are plain loads. */
    .global __atomic_load_1
__atomic_load_1:
    l8ui    a2, a2, 0
    ret
    .global __atomic_load_2
__atomic_load_2:
    l16ui   a2, a2, 0
    ret
    .global __atomic_load_4
__atomic_load_4:
    l32i    a2, a2, 0
    ret

/* compiler_builtins' math and the runtime's fatal paths end here. */
    .global abort
abort:
    movi    a2, 98
    j       selftest_exit

/* The sim machine runs one core: core 0 (the archive reads PRID on the device). */
    .global __neuron_read_prid
__neuron_read_prid:
    movi    a2, 0
    ret
