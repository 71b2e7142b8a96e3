/* Windowed-ABI helpers for the self-test under QEMU (run-windowed.sh): the entry the start
   code calls, the exits, PRID (the sim machine runs one core: 0), and what core refers to
   that compiler-builtins does not provide for this target here (32-bit multiply, atomic
   loads: plain loads on one core). */
unsigned selftest_main(void);
static void sim_exit(int code) {
    register int a2 __asm__("a2") = 1;
    register int a3 __asm__("a3") = code;
    __asm__ volatile("simcall" : : "r"(a2), "r"(a3));
    for (;;) {}
}
int windowed_main(void) { return (int)selftest_main(); }
void abort(void) { sim_exit(98); }
unsigned __neuron_read_prid(void) { return 0; }
int __mulsi3(int a, int b) { return a * b; }
unsigned char __atomic_load_1(const volatile void *p, int order) { (void)order; return *(const volatile unsigned char *)p; }
unsigned short __atomic_load_2(const volatile void *p, int order) { (void)order; return *(const volatile unsigned short *)p; }
unsigned __atomic_load_4(const volatile void *p, int order) { (void)order; return *(const volatile unsigned *)p; }
void selftest_exit(unsigned code) { sim_exit((int)code); }
