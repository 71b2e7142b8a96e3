/* stack-low-water.c: a QEMU TCG plugin (plugin API v1) used by hand for D126's
   measurements; not built or shipped by the project. It records, for one core's run, the
   lowest address of the local stack (0x4E000000..0x50000000, layout.rs) any load or store
   touched, the instruction that did, and a ring of the `entry` and `retw` instructions
   executed before it, from which the calls live at that moment (and their frames, from
   each `entry`'s immediate) can be rebuilt.

   Build, against the QEMU tree `make pool-qemu` leaves:
     Q=target/customop/xtensa-q7-none-elf/qemu-build/src
     gcc -shared -fPIC -O2 -I $Q/include/qemu $(pkg-config --cflags glib-2.0) \
         docs/diagnostics/stack-low-water.c -o stack-low-water.so
   Use: a wrapper script named by NRT_POOL_QEMU that runs the real qemu-system-xtensa with
   `"$@" -plugin ./stack-low-water.so,out=FILE`, then one `nrt-pool run` of a Pool image.
   FILE gets, per QEMU process, "low ADDR depth N pc PC" and the ring (an `entry` is its
   PC with the frame in bits 40-55; a return has bit 63 set). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>
QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;
#define RING 8192
static uint64_t ring[RING]; static unsigned pos;
static uint64_t snap[RING]; static unsigned snap_pos;
static uint64_t low = UINT64_MAX, low_pc;
static const char *out;
static void on_exec(unsigned int vcpu, void *ud) { ring[pos++ % RING] = (uint64_t)(uintptr_t)ud; }
static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *ud) {
    if (vaddr >= 0x4E000000ull && vaddr < 0x50000000ull && vaddr < low) {
        low = vaddr; low_pc = (uint64_t)(uintptr_t)ud;
        memcpy(snap, ring, sizeof ring); snap_pos = pos;
    }
}
static void on_tb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        const uint8_t *b = qemu_plugin_insn_data(insn);
        size_t sz = qemu_plugin_insn_size(insn);
        int is_entry = sz == 3 && (b[0] & 0x3f) == 0x36 && (b[1] & 0x0f) == 0x1;
        int is_ret = (sz == 2 && b[0] == 0x1d && b[1] == 0xf0) || (sz == 3 && b[0] == 0x90 && b[1] == 0x00 && b[2] == 0x00);
        if (is_entry) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)(pc | ((uint64_t)(((b[2] << 4) | (b[1] >> 4)) * 8) << 40)));
        if (is_ret) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)(pc | (1ull << 63)));
        qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, (void *)(uintptr_t)pc);
    }
}
static void at_end(qemu_plugin_id_t id, void *p) {
    FILE *f = fopen(out, "a");
    if (!f) return;
    fprintf(f, "low %#" PRIx64 " depth %" PRIu64 " pc %#" PRIx64 "\n", low, 0x50000000ull - low, low_pc);
    unsigned n = snap_pos < RING ? snap_pos : RING;
    for (unsigned i = 0; i < n; i++) fprintf(f, "%#" PRIx64 "\n", snap[(snap_pos - n + i) % RING]);
    fclose(f);
}
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    out = argc > 0 ? argv[0] + 4 : "/tmp/sp/low2.txt";
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb);
    qemu_plugin_register_atexit_cb(id, at_end, NULL);
    return 0;
}
