/*
 * A small ext-ISA-style library for the Xtensa toolchain tests: kernels reached through a
 * .kernel_info_table, function pointers and data pointers in data (R_XTENSA_RELATIVE),
 * literal-pool addresses in text, and a .bss. Built with gcc-xtensa-lx106 and linked
 * -shared with split.ld; the prelinked result is compared with a static GNU ld link.
 */
typedef void (*kernel_fn)(int *args);

struct kernel_info {
    unsigned char key[4]; /* big-endian (opcode | spec << 8): bytes 0, 0, spec, opcode */
    kernel_fn entry;      /* little-endian entry address */
};

static int scratch[64];
static int calls;
static const char banner[] = "gpsimd open test library";
static const char *messages[] = { banner, banner + 6, "iota", "reduce" };
static int *cursor = &scratch[3];

static void iota(int *args) {
    for (int i = 0; i < args[0] && i < 64; i++) scratch[i] = i;
    calls++;
}

static void reduce(int *args) {
    int sum = 0;
    for (int i = 0; i < args[0] && i < 64; i++) sum += scratch[i];
    args[1] = sum + *cursor + (int)messages[args[2] & 3][0];
    calls++;
}

static void extended(int *args) {
    kernel_fn table[2] = { iota, reduce };
    table[args[0] & 1](args + 1);
}

__attribute__((used, section(".kernel_info_table")))
static const struct kernel_info kernel_info_table[] = {
    { { 0, 0, 0, 65 }, iota },
    { { 0, 0, 0, 69 }, reduce },
    { { 0, 0, 0, 0xF0 }, extended },
    { { 0, 0, 7, 0xF0 }, extended },
};

void _start(void) {
    int args[3] = { 8, 0, 1 };
    iota(args);
    reduce(args);
}
