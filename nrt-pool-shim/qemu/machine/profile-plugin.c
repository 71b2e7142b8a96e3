/* A QEMU TCG plugin that counts the instructions an emulated Pool core executes during
   one kernel, by the translated block each lies in (nrt-pool run --profile; issue #28,
   docs/decisions.md D83). Each block gets an inline counter (no call per block); when the
   core reaches `begin` (the board's board_kernel_begin, just before the kernel) every
   counter is noted, and when it reaches `end` (board_kernel_returned) the blocks' counts
   since `begin` go to `out`, one line per block start: "PC INSNS EXECUTIONS" in hex (the
   host names the functions from the image's symbols). A later kernel writes the file
   again.

   With `mark=ADDR` (the runtime's customop_copy_mark, which logs each tensor copy: D120),
   each of the kernel's first `marks` entries to it closes a segment: the file then goes on
   with "@ INSNS" (the instructions executed since `begin` when the copy began) and the
   segment's own block lines (the blocks executed since the previous mark), so the host
   can place each copy on the kernel's time axis with what ran between copies.

   With `stackmark=ADDR+SIZE` (the runtime's customop_hbm_stack_mark: D121) the plugin counts
   the kernel's loads and stores in its HBM stack: that function's first two accesses load
   the stack's lowest and highest byte, which gives the range (a plugin of this QEMU
   cannot read registers); every other access in it counts. The file then begins with
   "s N" (the kernel's accesses there, hex) and each "@" line carries its segment's count
   after the instructions.

   usage: -plugin libnrt-pool-profile.so,out=FILE,begin=ADDR,end=ADDR[,mark=ADDR,marks=N]
          [,stackmark=ADDR+SIZE] */
#include <inttypes.h>
#include <stdarg.h>
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
    uint64_t at_mark; /* at the last mark (or begin) */
};

static struct block **blocks;
static size_t count, room;
static char *out;
static uint64_t begin_pc, end_pc, mark_pc, marks_max, stack_mark_pc, stack_mark_end;

/* The kernel's HBM stack [stack_lo, stack_lo + stack_span) (span 0: none), the accesses
   the stack mark has shown so far this call (0-2), and the accesses counted there: in all,
   and at the last copy mark. */
static uint64_t stack_lo, stack_span, stack_seen, stack_accesses, stack_at_mark;

/* Instructions executed on the core (an inline counter), and their number at `begin`. */
static uint64_t total, total_at_begin;

/* The segments written so far this kernel, and how many marks they close. */
static char *segments;
static size_t segments_len, segments_room;
static uint64_t marks;

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

static void append(const char *fmt, ...) {
    char line[80];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) abort();
    if (segments_len + (size_t)n + 1 > segments_room) {
        segments_room = segments_room ? segments_room * 2 : 65536;
        while (segments_len + (size_t)n + 1 > segments_room) segments_room *= 2;
        segments = realloc(segments, segments_room);
        if (!segments) abort();
    }
    memcpy(segments + segments_len, line, (size_t)n + 1);
    segments_len += (size_t)n;
}

static void on_begin(unsigned int vcpu, void *data) {
    (void)vcpu;
    (void)data;
    for (size_t i = 0; i < count; i++) blocks[i]->at_begin = blocks[i]->at_mark = blocks[i]->executions;
    total_at_begin = total;
    segments_len = 0;
    marks = 0;
    stack_span = 0;
    stack_accesses = stack_at_mark = 0;
}

static void on_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    (void)vcpu;
    (void)info;
    (void)udata;
    if (vaddr - stack_lo < stack_span) stack_accesses++;
}

static void on_stack_mark(unsigned int vcpu, void *data) {
    (void)vcpu;
    (void)data;
    stack_seen = 0;
}

static void on_stack_mark_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    (void)vcpu;
    (void)info;
    (void)udata;
    if (stack_seen == 0) {
        stack_lo = vaddr;
        stack_span = 0;
    } else if (stack_seen == 1 && vaddr >= stack_lo) {
        stack_span = vaddr - stack_lo + 1;
    }
    stack_seen++;
}

static void on_mark(unsigned int vcpu, void *data) {
    (void)vcpu;
    (void)data;
    if (marks >= marks_max) return;
    marks++;
    append("@ %" PRIx64 " %" PRIx64 "\n", total - total_at_begin, stack_accesses - stack_at_mark);
    stack_at_mark = stack_accesses;
    for (size_t i = 0; i < count; i++) {
        struct block *b = blocks[i];
        uint64_t n = b->executions - b->at_mark;
        if (n) append("%" PRIx64 " %" PRIx64 " %" PRIx64 "\n", b->pc, b->insns, n);
        b->at_mark = b->executions;
    }
}

static void on_end(unsigned int vcpu, void *data) {
    (void)vcpu;
    (void)data;
    char partial[4096];
    snprintf(partial, sizeof partial, "%s.partial", out);
    FILE *f = fopen(partial, "w");
    if (!f) return;
    if (stack_mark_pc) fprintf(f, "s %" PRIx64 "\n", stack_accesses);
    for (size_t i = 0; i < count; i++) {
        uint64_t n = blocks[i]->executions - blocks[i]->at_begin;
        if (n) fprintf(f, "%" PRIx64 " %" PRIx64 " %" PRIx64 "\n", blocks[i]->pc, blocks[i]->insns, n);
    }
    if (segments_len) fwrite(segments, 1, segments_len, f);
    if (fclose(f) == 0) rename(partial, out);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    uint64_t pc = qemu_plugin_tb_vaddr(tb);
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct block *b = new_block(pc, n);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->executions, 1);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total, n);
    /* The marker blocks are the board's and the runtime's: whether each counts itself
       does not matter (the runtime's copy path is priced by its counts, not its
       instructions). */
    if (pc == begin_pc)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
    if (pc == end_pc)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
    if (mark_pc && pc == mark_pc)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
    if (stack_mark_pc) {
        if (pc == stack_mark_pc)
            qemu_plugin_register_vcpu_tb_exec_cb(tb, on_stack_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
        for (size_t i = 0; i < n; i++) {
            struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
            uint64_t at = qemu_plugin_insn_vaddr(insn);
            int marking = at >= stack_mark_pc && at < stack_mark_end;
            qemu_plugin_register_vcpu_mem_cb(insn, marking ? on_stack_mark_access : on_access,
                                             QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
        }
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) out = strdup(argv[i] + 4);
        else if (strncmp(argv[i], "begin=", 6) == 0) begin_pc = strtoull(argv[i] + 6, NULL, 0);
        else if (strncmp(argv[i], "end=", 4) == 0) end_pc = strtoull(argv[i] + 4, NULL, 0);
        else if (strncmp(argv[i], "mark=", 5) == 0) mark_pc = strtoull(argv[i] + 5, NULL, 0);
        else if (strncmp(argv[i], "marks=", 6) == 0) marks_max = strtoull(argv[i] + 6, NULL, 0);
        else if (strncmp(argv[i], "stackmark=", 10) == 0) {
            /* ADDR+SIZE: the function's start and its length */
            char *plus;
            stack_mark_pc = strtoull(argv[i] + 10, &plus, 0);
            stack_mark_end = *plus == '+' ? stack_mark_pc + strtoull(plus + 1, NULL, 0) : stack_mark_pc;
        }
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
