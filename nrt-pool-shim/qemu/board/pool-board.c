/* The board of an emulated Pool core under QEMU's nrt-pool machine (docs/decisions.md
   D56, D63): what the vendor's firmware does around an op image, over a byte channel to
   the host instead of the Pool queues. Device memory is the engine's, shared: the board
   pins the SBUF, hbm_scratch and data scratch windows at boot, and reaches any other SoC
   address through window 7 (the runtime uses 3, 5 and 6). The host
   (nrt-pool-shim/qemu, protocol.rs) talks through semihosting on two inherited file
   descriptors: commands arrive on fd 3, replies and the kernel's stdio leave on fd 4.
   Every message is a header {u32 tag, u32 len} and len bytes, little-endian.

   host -> core: BOOT {entry_func, switch_stack_or_call_wrapper, register_funcs,
                       data scratch SoC lo/hi, data_scratch_size, hbm_scratch lo/hi,
                       hbm_scratch_size, SBUF pin SoC lo/hi, HBM pin SoC lo/hi, cores, core,
                       metadata (0 or the image's `const char *f(void)` giving its schema
                       or op list)}
                 RUN {u32 kernel, u32 cores}   QUIT {}
                 GUARDS {u32 n; n SoC page addresses (u64)}: pages no window shows
                 DEBUG {}: the next RUN waits for a debugger (board_debug_wait)
   core -> host: READY {u32 entry status, u32 count, u32 metadata length; count
                        NUL-terminated names; the metadata text}
                 DONE {u32 status}  OUT {u32 fd; bytes}
                 FAULT (pool-board.S)  FATAL {the runtime's message}

   The board and the kernels it runs share the core's local stack: 8 KiB of RAM ending at
   0x50000000 with no memory below it (nrt-pool.c), so a stack that outgrows it faults
   instead of writing elsewhere. The runtime's stack switch (switch_stack_or_call_wrapper)
   learns its limit from neuron_host_stack and moves a kernel whose STACK_SIZE does not
   fit onto an HBM block, whose lowest page the board then guards (guard slot 31). */

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned int usize;

enum { SYS_exit = 1, SYS_read = 3, SYS_write = 4 };
enum { CMD_FD = 3, RSP_FD = 4 };
enum { CMD_BOOT = 1, CMD_RUN = 3, CMD_QUIT = 5, CMD_GUARDS = 6, CMD_DEBUG = 7 };
enum { RSP_READY = 1, RSP_DONE = 2, RSP_OUT = 4, RSP_FAULT = 5, RSP_FATAL = 6 };
/* Exit statuses the host reads: the channel closed or spoke nonsense, or a fatal error. */
enum { EXIT_CHANNEL = 96, EXIT_PROTOCOL = 97, EXIT_FATAL = 70 };

#define MAX_KERNELS 256

struct boot {
    u32 entry_func, call_wrapper, register_funcs;
    u32 scratch_lo, scratch_hi, data_scratch_size;
    u32 hbm_lo, hbm_hi, hbm_size;
    u32 sbuf_pin_lo, sbuf_pin_hi, hbm_pin_lo, hbm_pin_hi;
    u32 cores, core;
    u32 metadata;
};

/* The machine's window registers (nrt-pool.c). */
#define REG(off) (*(volatile u32 *)(0x00100000u + (off)))
#define MEM_WINDOW_LO(n) REG(0x200 + 8 * (n))
#define MEM_WINDOW_HI(n) REG(0x204 + 8 * (n))
#define PIN_LO(k) REG(0x300 + 8 * (k))
#define PIN_HI(k) REG(0x304 + 8 * (k))
#define GUARD_LO(g) REG(0x400 + 8 * (g))
#define GUARD_HI(g) REG(0x404 + 8 * (g))
#define SHOWN(w) REG(0x900 + 4 * (w))
/* Guard registers take effect when this is written (one memory map change per set). */
#define GUARDS_APPLY REG(0x600)
enum { GUARDS = 32, DMA_WINDOW = 7, PIN_SBUF = 0, PIN_HBM = 1, PIN_DATARAM = 2 };
/* The host's tensor guards take slots 0-30; the HBM stack's guard page slot 31. */
enum { HOST_GUARDS = GUARDS - 1, STACK_GUARD = GUARDS - 1 };
#define LOCAL_STACK_LIMIT 0x4FFFE000u
/* Where window 7 and the data scratch pin show memory. */
#define DMA_LOCAL 0x0B000000u
#define DATARAM_LOCAL 0x00080000u
#define WINDOW_BYTES 0x01000000u

/* SUNDA_UCODE_LIB as a 32-bit core lays it out (36 bytes). */
struct handoff {
    usize size;
    void *handle;
    u32 (*register_name)(void *, const char *);
    void *(*get_libc_fn)(const char *);
    void *(*get_data_scratch)(void **, usize *);
    void *(*get_hbm_scratch)(u64 *, usize *);
    void *(*get_dma_queue)(u32 *, u32 *);
    void *register_v2;
    void *register_v3;
};

typedef int (*wrapper_fn)(void);
typedef u32 (*register_cb)(void *, const char *, wrapper_fn);

static struct boot boot;
static struct {
    const char *name;
    wrapper_fn fn;
} kernels[MAX_KERNELS];
static u32 kernel_count;

static int simcall(int n, int a, int b, int c) {
    register int a2 __asm__("a2") = n;
    register int a3 __asm__("a3") = a;
    register int a4 __asm__("a4") = b;
    register int a5 __asm__("a5") = c;
    __asm__ volatile("simcall" : "+r"(a2), "+r"(a3) : "r"(a4), "r"(a5) : "memory");
    return a2;
}

static void __attribute__((noreturn)) board_exit(int code) {
    for (;;) simcall(SYS_exit, code, 0, 0);
}

static void read_full(void *p, u32 n) {
    char *c = p;
    while (n > 0) {
        int r = simcall(SYS_read, CMD_FD, (int)c, (int)n);
        if (r <= 0) board_exit(EXIT_CHANNEL);
        c += r;
        n -= (u32)r;
    }
}

static void write_full(const void *p, u32 n) {
    const char *c = p;
    while (n > 0) {
        int r = simcall(SYS_write, RSP_FD, (int)c, (int)n);
        if (r <= 0) board_exit(EXIT_CHANNEL);
        c += r;
        n -= (u32)r;
    }
}

static void send(u32 tag, const void *a, u32 na, const void *b, u32 nb) {
    u32 h[2] = {tag, na + nb};
    write_full(h, sizeof h);
    if (na) write_full(a, na);
    if (nb) write_full(b, nb);
}

static u32 read_u32(void) {
    u32 v;
    read_full(&v, 4);
    return v;
}

static usize length(const char *s) {
    usize n = 0;
    while (s[n]) n++;
    return n;
}

static int same(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

/* ---- the services the runtime resolves through get_libc_fn ----
   The core id comes from PRID, as on hardware; the core count of a launch from the host;
   DMA copies through the pinned windows. */

static int svc_write(int fd, const void *buf, usize len) {
    if (len == 0) return 0;
    if (fd != 1 && fd != 2) return -1;
    u32 f = (u32)fd;
    send(RSP_OUT, &f, 4, buf, len);
    return (int)len;
}

/* The runtime's fatal error: its message, then the call stack that led here, through
   the fault path (an illegal instruction: pool-board.S records the frames and ends the
   core; the host takes the stack of the FAULT record that follows a FATAL one). */
static void svc_fault(const char *msg, usize len) {
    send(RSP_FATAL, msg, len, 0, 0);
    __asm__ volatile("ill");
    board_exit(EXIT_FATAL);
}

/* ---- the call stack of a fault ----

   pool-board.S saves a0 and a1 of each of the 16 register quads (slot i: quad
   (WINDOWBASE + i) mod 16) with WINDOWBASE and WINDOWSTART, fills the fault record's 16
   words, then calls board_fault_walk on a stack of its own. The walk follows the windowed
   ABI: a frame's a0 is its return address (the top two bits the caller's call size in
   quads, the rest the low 30 bits of the PC), a1 its stack pointer. A caller whose quad is
   still live (its WINDOWSTART bit, not wrapped around) keeps a0 and a1 in the register
   file; once one was spilled, every older one was too, and the window overflow handlers
   left its a0 and a1 16 and 12 bytes below its callee's stack pointer. A load that faults
   on the way (a corrupt stack pointer) re-enters the fault path, which sends the frames
   found so far. */
enum { FAULT_WORDS = 16, MAX_FRAMES = 32, QUADS = 16 };
struct window_dump {
    u32 quad[QUADS][2];
    u32 windowbase, windowstart;
};
extern u32 board_fault_record[FAULT_WORDS + 1 + MAX_FRAMES];
extern struct window_dump board_fault_windows;
void board_fault_walk(void);

/* The 1 GiB holding the op images and the board's code. */
static int code_address(u32 pc) { return pc >= 0x84000000u && pc < 0x89000000u; }

void board_fault_walk(void) {
    const struct window_dump *d = &board_fault_windows;
    volatile u32 *count = &board_fault_record[FAULT_WORDS];
    volatile u32 *frames = count + 1;
    /* The faulting instruction: EPC (word 4), or DEPC (word 6) for a double exception,
       whose frames were being spilled or refilled: the PC alone then. */
    int window = board_fault_record[2] == 3;
    u32 pc = window ? board_fault_record[6] : board_fault_record[4];
    u32 n = 0;
    frames[n++] = pc;
    *count = n;
    if (window) return;
    u32 wb = d->windowbase % QUADS, ws = d->windowstart;
    u32 quad = wb, seen = 0, live = 1;
    u32 a0 = d->quad[0][0], sp = d->quad[0][1];
    while (n < MAX_FRAMES) {
        u32 inc = a0 >> 30;
        u32 caller = (a0 & 0x3fffffffu) | (pc & 0xc0000000u);
        if (inc == 0 || !code_address(caller)) break;
        frames[n++] = caller;
        *count = n;
        u32 cq = (quad - inc) % QUADS, ca0, csp;
        seen += inc;
        if (live && seen < QUADS && (ws >> cq) & 1) {
            u32 slot = (cq - wb) % QUADS;
            ca0 = d->quad[slot][0];
            csp = d->quad[slot][1];
        } else {
            live = 0;
            if (sp & 3 || sp < 16) break;
            ca0 = ((volatile u32 *)sp)[-4];
            csp = ((volatile u32 *)sp)[-3];
        }
        /* Stacks grow down: a caller's stack pointer lies above its callee's (a kernel on
           an HBM stack ends the walk where it was switched to). */
        if (csp <= sp) break;
        pc = caller;
        a0 = ca0;
        sp = csp;
        quad = cq;
    }
}

static u32 svc_cpu_count(void) { return boot.cores; }

/* The launch's stack, for the fault record (pool-board.S reads it): STACK_SIZE and the SoC
   page guarding an HBM stack (0: the kernel runs on the local stack). */
struct stack_info {
    u32 size, guard_lo, guard_hi;
};
struct stack_info board_stack;

/* The runtime's stack switch says what stack a launch runs on: `size` (its STACK_SIZE) and
   `guard`, the SoC page below an HBM stack (0: the local stack). The board guards that
   page and returns the local stack's limit (its lowest address). */
static u32 svc_stack(u32 size, u32 guard_lo, u32 guard_hi) {
    board_stack.size = size;
    board_stack.guard_lo = guard_lo;
    board_stack.guard_hi = guard_hi;
    GUARD_HI(STACK_GUARD) = guard_hi;
    GUARD_LO(STACK_GUARD) = (guard_lo | guard_hi) ? (guard_lo & ~0xfffu) | 1 : 0;
    GUARDS_APPLY = 1;
    return LOCAL_STACK_LIMIT;
}

/* DMA between local memory and SoC memory, as the host's engine serves it, through window
   7 one 16 MiB block at a time: 0, or -1 for an address no device memory backs. */
static int svc_dma(void *local, u64 soc, _Bool to_local, u32 n) {
    char *near = local;
    while (n > 0) {
        u64 block = soc & ~(u64)(WINDOW_BYTES - 1);
        u32 off = (u32)(soc - block);
        u32 chunk = WINDOW_BYTES - off < n ? WINDOW_BYTES - off : n;
        __asm__ volatile("memw" ::: "memory");
        MEM_WINDOW_HI(DMA_WINDOW) = (u32)(block >> 32);
        MEM_WINDOW_LO(DMA_WINDOW) = (u32)block;
        __asm__ volatile("memw" ::: "memory");
        if (SHOWN(DMA_WINDOW) < off + chunk) return -1;
        char *far = (char *)(DMA_LOCAL + off);
        for (u32 i = 0; i < chunk; i++) {
            if (to_local) near[i] = far[i];
            else far[i] = near[i];
        }
        near += chunk;
        soc += chunk;
        n -= chunk;
    }
    return 0;
}

static void *get_libc_fn(const char *name) {
    if (same(name, "neuron_host_write")) return (void *)svc_write;
    if (same(name, "neuron_host_fault")) return (void *)svc_fault;
    if (same(name, "neuron_host_cpu_count")) return (void *)svc_cpu_count;
    if (same(name, "neuron_host_dma")) return (void *)svc_dma;
    if (same(name, "neuron_host_stack")) return (void *)svc_stack;
    return 0;
}

static void *get_data_scratch(void **addr, usize *size) {
    *addr = (void *)DATARAM_LOCAL;
    *size = boot.data_scratch_size;
    return 0;
}

static void *get_hbm_scratch(u64 *addr, usize *size) {
    *addr = ((u64)boot.hbm_hi << 32) | boot.hbm_lo;
    *size = boot.hbm_size;
    return 0;
}

static void *get_dma_queue(u32 *m2s, u32 *s2m) {
    *m2s = boot.core * 0x100;
    *s2m = boot.core * 0x100 + 0x80;
    return 0;
}

static u32 on_name(void *handle, const char *name) {
    (void)handle;
    (void)name;
    return 0;
}

static u32 on_func(void *handle, const char *name, wrapper_fn fn) {
    (void)handle;
    if (kernel_count < MAX_KERNELS) {
        kernels[kernel_count].name = name;
        kernels[kernel_count].fn = fn;
        kernel_count++;
    }
    return 0;
}

static void pin(u32 k, u32 lo, u32 hi) {
    PIN_HI(k) = hi;
    PIN_LO(k) = lo;
}

static void start(void) {
    static struct handoff h;
    pin(PIN_SBUF, boot.sbuf_pin_lo, boot.sbuf_pin_hi);
    pin(PIN_HBM, boot.hbm_pin_lo, boot.hbm_pin_hi);
    pin(PIN_DATARAM, boot.scratch_lo, boot.scratch_hi);
    h.size = sizeof h;
    h.handle = &h;
    h.register_name = on_name;
    h.get_libc_fn = get_libc_fn;
    h.get_data_scratch = get_data_scratch;
    h.get_hbm_scratch = get_hbm_scratch;
    h.get_dma_queue = get_dma_queue;
    u32 status = ((u32(*)(struct handoff *))boot.entry_func)(&h);
    if (status == 0) ((u32(*)(register_cb))boot.register_funcs)(on_func);
    u32 names = 0;
    for (u32 i = 0; i < kernel_count; i++) names += length(kernels[i].name) + 1;
    const char *meta = boot.metadata ? ((const char *(*)(void))boot.metadata)() : "";
    u32 meta_len = length(meta);
    u32 ready[5] = {RSP_READY, 12 + names + meta_len, status, kernel_count, meta_len};
    write_full(ready, sizeof ready);
    for (u32 i = 0; i < kernel_count; i++) write_full(kernels[i].name, length(kernels[i].name) + 1);
    if (meta_len) write_full(meta, meta_len);
}

/* Whether SoC page `page` is guarded (a tensor's end, or the HBM stack's guard). */
static int guarded(u64 page) {
    for (u32 g = 0; g < GUARDS; g++) {
        u32 lo = GUARD_LO(g);
        if ((lo & 1) && (((u64)GUARD_HI(g) << 32) | (lo & ~0xfffu)) == page) return 1;
    }
    return 0;
}

/* For a debugger (nrt-pool gdb's nrt-data command): a copy of up to 256 bytes of device
   memory from SoC address `soc`, read through the board's own window 7, so the windows
   the kernel's runtime programs are left as they are. The copy stops at a guard page (a
   tensor's end: the rest stays zero). The copy and the bytes copied (0 where no memory
   is) are left in nrt_pool_debug_read_copy and nrt_pool_debug_read_len: gdb's inferior
   calls on windowed cores can read a return value from the wrong register window, so the
   debugger reads these instead of what the call returns. */
char nrt_pool_debug_read_copy[256];
volatile u32 nrt_pool_debug_read_len;
void *nrt_pool_debug_read(u64 soc, u32 n);
void *nrt_pool_debug_read(u64 soc, u32 n) {
    char *copy = nrt_pool_debug_read_copy;
    if (n > sizeof nrt_pool_debug_read_copy) n = sizeof nrt_pool_debug_read_copy;
    for (u32 i = 0; i < sizeof nrt_pool_debug_read_copy; i++) copy[i] = 0;
    nrt_pool_debug_read_len = 0;
    u32 done = 0;
    while (done < n) {
        u64 at = soc + done;
        u32 left = 0x1000u - (u32)(at & 0xfffu);
        u32 take = n - done < left ? n - done : left;
        if (guarded(at & ~(u64)0xfffu)) break;
        if (svc_dma(copy + done, at, 1, take) != 0) break;
        done += take;
    }
    /* A guard at the very first byte still shows the (zeroed) copy, as before. */
    nrt_pool_debug_read_len = done ? done : (guarded(soc & ~(u64)0xfffu) ? n : 0);
    return nrt_pool_debug_read_len ? copy : 0;
}

/* Called just before a kernel: where a profile of it begins (the TCG plugin's `begin`). */
void __attribute__((noinline)) board_kernel_begin(void);
void __attribute__((noinline)) board_kernel_begin(void) { __asm__ volatile(""); }

/* Called when a kernel has returned: a debugger's breakpoint here ends its `continue`
   (nrt-pool gdb sets one; the core then waits for the next launch). */
void __attribute__((noinline)) board_kernel_returned(int status);
void __attribute__((noinline)) board_kernel_returned(int status) { __asm__ volatile("" ::"r"(status)); }

/* Set by DEBUG: the next kernel waits until a debugger attached through QEMU's gdb stub
   clears it (nrt-pool gdb does), spinning where the stub can stop the core. */
volatile u32 board_debug_wait;

int board_main(void) {
    u32 h[2];
    read_full(h, 8);
    if (h[0] != CMD_BOOT || h[1] != sizeof boot) board_exit(EXIT_PROTOCOL);
    read_full(&boot, sizeof boot);
    start();
    for (;;) {
        read_full(h, 8);
        switch (h[0]) {
        case CMD_RUN: {
            if (h[1] != 8) board_exit(EXIT_PROTOCOL);
            u32 k = read_u32();
            boot.cores = read_u32();
            if (k >= kernel_count) board_exit(EXIT_PROTOCOL);
            while (board_debug_wait) {
            }
            /* The launcher calls switch_stack_or_call_wrapper itself with its STACK_SIZE, as
               the vendor's generated launchers do. */
            board_kernel_begin();
            int rc = kernels[k].fn();
            board_kernel_returned(rc);
            u32 status = (u32)rc;
            send(RSP_DONE, &status, 4, 0, 0);
            break;
        }
        case CMD_GUARDS: {
            if (h[1] < 4) board_exit(EXIT_PROTOCOL);
            u32 n = read_u32();
            if (n > HOST_GUARDS || h[1] != 4 + 8 * n) board_exit(EXIT_PROTOCOL);
            for (u32 g = 0; g < HOST_GUARDS; g++) {
                u32 page[2] = {0, 0};
                if (g < n) read_full(page, 8);
                GUARD_HI(g) = page[1];
                GUARD_LO(g) = g < n ? (page[0] & ~0xfffu) | 1 : 0;
            }
            GUARDS_APPLY = 1;
            break;
        }
        case CMD_DEBUG:
            if (h[1] != 0) board_exit(EXIT_PROTOCOL);
            board_debug_wait = 1;
            break;
        case CMD_QUIT:
            board_exit(0);
        default:
            board_exit(EXIT_PROTOCOL);
        }
    }
}
