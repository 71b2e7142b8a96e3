/* A QEMU TCG plugin that records which bytes of device memory an emulated Pool core reads
   and writes during one kernel (checking mode's race check: issue #42, D101). Every load
   and store between `begin` (the board's board_kernel_begin) and `end`
   (board_kernel_returned) that goes through a translation window (the machine's
   nrt_pool_soc_of says which SoC byte it reaches, dynamic windows included) marks its
   bytes in a bitmap per 4 KiB SoC page, with the first instruction that read and that wrote
   the page; at `end` the pages go to `out` (then they are cleared for the next kernel).
   A kernel is recorded only when the file `out`.on exists as it begins (the engine arms
   the launches it traces; the others run with the plugin idle, so a checked call's
   launches share cores started once).
   The record, for each touched page, little-endian:
     u64 SoC page address, u32 first reading PC, u32 first writing PC (0: none),
     512 bytes read bitmap, 512 bytes write bitmap (bit i of byte j: byte 8*j+i of the page).

   usage: -plugin libnrt-pool-access.so,out=FILE,begin=ADDR,end=ADDR */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define PAGE 4096u
#define BITMAP (PAGE / 8)

/* The nrt-pool machine's window lookup (exported by its QEMU: build-qemu.sh). */
extern uint64_t nrt_pool_soc_of(uint64_t local);

struct page {
    uint64_t addr;
    uint32_t read_pc, write_pc;
    uint8_t read[BITMAP], write[BITMAP];
    struct page *next; /* hash chain */
};

#define BUCKETS 65536u
static struct page *table[BUCKETS];
static struct page **touched; /* in the order first touched */
static size_t count, room;
static char *out;
static char *armed;
static uint64_t begin_pc, end_pc;
static int active;

static struct page *last; /* the page of the last access: most accesses hit it again */

static struct page *page_of(uint64_t addr) {
    uint64_t key = addr / PAGE;
    if (last && last->addr == key * PAGE) return last;
    struct page **slot = &table[key % BUCKETS];
    for (struct page *p = *slot; p; p = p->next)
        if (p->addr == key * PAGE) return last = p;
    struct page *p = calloc(1, sizeof *p);
    if (!p) abort();
    p->addr = key * PAGE;
    p->next = *slot;
    *slot = p;
    if (count == room) {
        room = room ? room * 2 : 1024;
        touched = realloc(touched, room * sizeof *touched);
        if (!touched) abort();
    }
    touched[count++] = p;
    last = p;
    return p;
}

static void on_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    (void)vcpu;
    if (!active) return;
    unsigned size = 1u << qemu_plugin_mem_size_shift(info);
    int store = qemu_plugin_mem_is_store(info);
    uint32_t pc = (uint32_t)(uintptr_t)udata;
    /* One window lookup an access (a window's span is page-aligned, so the bytes of an
       access that stays in its page lie in the same window). */
    uint64_t base = nrt_pool_soc_of(vaddr);
    for (unsigned k = 0; k < size; k++) {
        uint64_t a = (vaddr + k) % PAGE >= vaddr % PAGE && base != UINT64_MAX ? base + k
                                                                                 : nrt_pool_soc_of(vaddr + k);
        if (a == UINT64_MAX) continue;
        struct page *p = page_of(a);
        uint32_t o = a % PAGE;
        uint8_t *bits = store ? p->write : p->read;
        bits[o / 8] |= (uint8_t)(1u << (o % 8));
        uint32_t *first = store ? &p->write_pc : &p->read_pc;
        if (!*first) *first = pc;
    }
}

static void on_begin(unsigned int vcpu, void *data) {
    (void)vcpu;
    (void)data;
    FILE *f = fopen(armed, "r");
    active = f != NULL;
    if (f) fclose(f);
}

static void clear(void) {
    for (size_t i = 0; i < count; i++) free(touched[i]);
    count = 0;
    last = NULL;
    memset(table, 0, sizeof table);
}

static void on_end(unsigned int vcpu, void *data) {
    (void)vcpu;
    (void)data;
    if (!active) return;
    active = 0;
    char partial[4096];
    snprintf(partial, sizeof partial, "%s.partial", out);
    FILE *f = fopen(partial, "wb");
    if (f) {
        for (size_t i = 0; i < count; i++) {
            struct page *p = touched[i];
            uint32_t pcs[2] = {p->read_pc, p->write_pc};
            fwrite(&p->addr, sizeof p->addr, 1, f);
            fwrite(pcs, sizeof pcs, 1, f);
            fwrite(p->read, BITMAP, 1, f);
            fwrite(p->write, BITMAP, 1, f);
        }
        if (fclose(f) == 0) rename(partial, out);
    }
    clear();
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    uint64_t pc = qemu_plugin_tb_vaddr(tb);
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        void *at = (void *)(uintptr_t)qemu_plugin_insn_vaddr(insn);
        qemu_plugin_register_vcpu_mem_cb(insn, on_access, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, at);
    }
    if (pc == begin_pc) qemu_plugin_register_vcpu_tb_exec_cb(tb, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
    if (pc == end_pc) qemu_plugin_register_vcpu_tb_exec_cb(tb, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) out = strdup(argv[i] + 4);
        else if (strncmp(argv[i], "begin=", 6) == 0) begin_pc = strtoull(argv[i] + 6, NULL, 0);
        else if (strncmp(argv[i], "end=", 4) == 0) end_pc = strtoull(argv[i] + 4, NULL, 0);
        else {
            fprintf(stderr, "nrt-pool access plugin: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if (out) {
        size_t n = strlen(out) + 4;
        armed = malloc(n);
        if (!armed) abort();
        snprintf(armed, n, "%s.on", out);
    }
    if (!out || !begin_pc || !end_pc) {
        fprintf(stderr, "nrt-pool access plugin: out=, begin= and end= are required\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    return 0;
}
