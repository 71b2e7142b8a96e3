/* A QEMU TCG plugin that counts the instructions an emulated Pool core executes during
   one kernel, by the translated block each lies in (nrt-pool run --profile; issue #28,
   docs/decisions.md D83). Each block gets an inline counter (no call per block); when the
   core reaches `begin` (the board's board_kernel_begin, just before the kernel) every
   counter is noted, and when it reaches `end` (board_kernel_returned) the blocks' counts
   since `begin` go to `out`, one line per block start: "PC INSNS EXECUTIONS" in hex (the
   host names the functions from the image's symbols). A later kernel writes the file
   again.

   usage: -plugin libnrt-pool-profile.so,out=FILE,begin=ADDR,end=ADDR */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct block {
    uint64_t pc;
    uint64_t insns;
    uint64_t executions; /* the inline counter */
    uint64_t at_begin;
};

static struct block **blocks;
static size_t count, room;
static char *out;
static uint64_t begin_pc, end_pc;

static struct block *new_block(uint64_t pc, uint64_t insns) {
    if (count == room) {
        room = room ? room * 2 : 4096;
        blocks = realloc(blocks, room * sizeof *blocks);
        if (!blocks) abort();
    }
    struct block *b = calloc(1, sizeof *b);
    if (!b) abort();
    b->pc = pc;
    b->insns = insns;
    blocks[count++] = b;
    return b;
}

static void on_begin(unsigned int vcpu, void *data) {
    (void)vcpu;
    (void)data;
    for (size_t i = 0; i < count; i++) blocks[i]->at_begin = blocks[i]->executions;
}

static void on_end(unsigned int vcpu, void *data) {
    (void)vcpu;
    (void)data;
    char partial[4096];
    snprintf(partial, sizeof partial, "%s.partial", out);
    FILE *f = fopen(partial, "w");
    if (!f) return;
    for (size_t i = 0; i < count; i++) {
        uint64_t n = blocks[i]->executions - blocks[i]->at_begin;
        if (n) fprintf(f, "%" PRIx64 " %" PRIx64 " %" PRIx64 "\n", blocks[i]->pc, blocks[i]->insns, n);
    }
    if (fclose(f) == 0) rename(partial, out);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    uint64_t pc = qemu_plugin_tb_vaddr(tb);
    struct block *b = new_block(pc, qemu_plugin_tb_n_insns(tb));
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->executions, 1);
    /* The two marker blocks are the board's: whether each counts itself does not matter. */
    if (pc == begin_pc)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
    if (pc == end_pc)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) out = strdup(argv[i] + 4);
        else if (strncmp(argv[i], "begin=", 6) == 0) begin_pc = strtoull(argv[i] + 6, NULL, 0);
        else if (strncmp(argv[i], "end=", 4) == 0) end_pc = strtoull(argv[i] + 4, NULL, 0);
        else {
            fprintf(stderr, "nrt-pool profile plugin: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if (!out || !begin_pc || !end_pc) {
        fprintf(stderr, "nrt-pool profile plugin: out=, begin= and end= are required\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    return 0;
}
