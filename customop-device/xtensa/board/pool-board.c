/* The board of an emulated Pool core under QEMU (docs/decisions.md D56): what the vendor's
   firmware does around an op image, over a byte channel to the host instead of the Pool
   queues. The host (nrt-pool-shim/qemu, protocol.rs) loads the op image with QEMU and talks
   through semihosting on two inherited file descriptors: commands arrive on fd 3, replies
   and the kernel's stdio leave on fd 4. Every message is a header {u32 tag, u32 len} and
   len bytes, little-endian.

   host -> core: BOOT {entry_func, switch_stack_or_call_wrapper, register_funcs,
                       data_scratch, data_scratch_size, hbm_scratch lo/hi, hbm_scratch_size,
                       cores, core, metadata (0 or the image's `const char *f(void)` giving
                       its schema or op list)}
                 LOAD {u32 address; bytes}   RUN {u32 kernel, u32 cores}
                 DUMP {u32 address, u32 n}   QUIT {}
   core -> host: READY {u32 entry status, u32 count, u32 metadata length; count
                        NUL-terminated names; the metadata text}
                 DONE {u32 status}  DATA {bytes}  OUT {u32 fd; bytes}
                 FAULT (pool-board.S)  FATAL {the runtime's message} */

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned int usize;

enum { SYS_exit = 1, SYS_read = 3, SYS_write = 4 };
enum { CMD_FD = 3, RSP_FD = 4 };
enum { CMD_BOOT = 1, CMD_LOAD = 2, CMD_RUN = 3, CMD_DUMP = 4, CMD_QUIT = 5 };
enum { RSP_READY = 1, RSP_DONE = 2, RSP_DATA = 3, RSP_OUT = 4, RSP_FAULT = 5, RSP_FATAL = 6 };
/* Exit statuses the host reads: the channel closed or spoke nonsense, or a fatal error. */
enum { EXIT_CHANNEL = 96, EXIT_PROTOCOL = 97, EXIT_FATAL = 70 };

#define MAX_KERNELS 256

struct boot {
    u32 entry_func, call_wrapper, register_funcs;
    u32 data_scratch, data_scratch_size;
    u32 hbm_lo, hbm_hi, hbm_size;
    u32 cores, core;
    u32 metadata;
};

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

static void svc_fault(const char *msg, usize len) {
    send(RSP_FATAL, msg, len, 0, 0);
    board_exit(EXIT_FATAL);
}

static u32 svc_cpu_count(void) { return boot.cores; }

/* The core's view of SoC memory: the pinned HBM and SBUF windows (0 outside them). */
static char *local_of(u64 soc, u32 n) {
    const u64 span = 64ull << 20, hbm = 0x4000000000ull, sbuf = 0x5000000000ull;
    if (soc >= hbm && soc + n <= hbm + span) return (char *)(0x84000000u + (u32)(soc - hbm));
    if (soc >= sbuf && soc + n <= sbuf + span) return (char *)(0x80000000u + (u32)(soc - sbuf));
    return 0;
}

/* DMA between local memory and SoC memory, as the host's engine serves it: 0, or -1 for an
   address no window shows. */
static int svc_dma(void *local, u64 soc, _Bool to_local, u32 n) {
    char *far = local_of(soc, n), *near = local;
    if (!far) return -1;
    for (u32 i = 0; i < n; i++) {
        if (to_local) near[i] = far[i];
        else far[i] = near[i];
    }
    return 0;
}

static void *get_libc_fn(const char *name) {
    if (same(name, "neuron_host_write")) return (void *)svc_write;
    if (same(name, "neuron_host_fault")) return (void *)svc_fault;
    if (same(name, "neuron_host_cpu_count")) return (void *)svc_cpu_count;
    if (same(name, "neuron_host_dma")) return (void *)svc_dma;
    return 0;
}

static void *get_data_scratch(void **addr, usize *size) {
    *addr = (void *)boot.data_scratch;
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

static void start(void) {
    static struct handoff h;
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

int board_main(void) {
    u32 h[2];
    read_full(h, 8);
    if (h[0] != CMD_BOOT || h[1] != sizeof boot) board_exit(EXIT_PROTOCOL);
    read_full(&boot, sizeof boot);
    start();
    for (;;) {
        read_full(h, 8);
        switch (h[0]) {
        case CMD_LOAD: {
            if (h[1] < 4) board_exit(EXIT_PROTOCOL);
            u32 at = read_u32();
            read_full((void *)at, h[1] - 4);
            break;
        }
        case CMD_RUN: {
            if (h[1] != 8) board_exit(EXIT_PROTOCOL);
            u32 k = read_u32();
            boot.cores = read_u32();
            if (k >= kernel_count) board_exit(EXIT_PROTOCOL);
            int rc = ((int (*)(u32, u32))boot.call_wrapper)((u32)kernels[k].fn, 0);
            u32 status = (u32)rc;
            send(RSP_DONE, &status, 4, 0, 0);
            break;
        }
        case CMD_DUMP: {
            if (h[1] != 8) board_exit(EXIT_PROTOCOL);
            u32 at = read_u32();
            u32 n = read_u32();
            send(RSP_DATA, (const void *)at, n, 0, 0);
            break;
        }
        case CMD_QUIT:
            board_exit(0);
        default:
            board_exit(EXIT_PROTOCOL);
        }
    }
}
