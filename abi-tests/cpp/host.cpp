// Plays the host for an op library built on libneuroncustomop.a: loads it, hands it the
// handoff block and host services (fake SoC memory, a data scratch area), collects its
// kernels through register_funcs, writes argument blobs and runs every kernel, checking
// the outputs against values computed here. Exit 0 and "PASS" when all hold.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <string>
#include <vector>

#include "neuron_customop.hpp"

static const unsigned long long SOC_BASE = 0x4000000000ull;
static const size_t SOC_SIZE = 192u << 20;
static unsigned char *soc;
static void *scratch;
static uint32_t current_cpu;
static int checks;

#define CHECK(c, ...)                                                      \
    do {                                                                   \
        checks++;                                                          \
        if (!(c)) {                                                        \
            fprintf(stderr, "FAIL %s:%d %s: ", __FILE__, __LINE__, #c);    \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

static void *host_map(unsigned long long a, unsigned long long len) {
    if (a < SOC_BASE || a + len > SOC_BASE + SOC_SIZE) return nullptr;
    return soc + (a - SOC_BASE);
}
static uint32_t host_cpu_id() { return current_cpu; }
static int32_t host_dma(void *local, unsigned long long a, bool to_local, uint32_t n) {
    void *p = host_map(a, n);
    if (!p) return -1;
    if (to_local) memcpy(local, p, n); else memcpy(p, local, n);
    return 0;
}
static void host_fault(const char *msg, size_t len) {
    fprintf(stderr, "device fault: %.*s\n", int(len), msg);
    exit(3);
}
static ptrdiff_t host_write(int, const void *, size_t len) { return ptrdiff_t(len); }

static void *resolve(const char *name) {
    std::string n(name);
    if (n == "neuron_host_map") return (void *)host_map;
    if (n == "neuron_host_cpu_id") return (void *)host_cpu_id;
    if (n == "neuron_host_dma") return (void *)host_dma;
    if (n == "neuron_host_fault") return (void *)host_fault;
    if (n == "neuron_host_write") return (void *)host_write;
    return nullptr;
}
static void *data_scratch(void **a, size_t *n) { *a = scratch; *n = NEURON_DATA_SCRATCH_MIN_SIZE; return nullptr; }
static void *hbm_scratch(unsigned long long *a, size_t *n) { *a = SOC_BASE; *n = 2u << 20; return nullptr; }

static std::vector<std::string> registered;
static uint32_t on_register(void *, const char *name) { registered.push_back(name); return 0; }

struct Kernel { std::string name; int (*fn)(); };
static std::vector<Kernel> kernels;
static SUNDA_UCODE_LIB_STATUS on_func(void *handle, const char *name, int (*fn)()) {
    CHECK(handle == (void *)0x51, "library handle passed back");
    kernels.push_back({name, fn});
    return SUNDA_UCODE_LIB_SUCCESS;
}

static NeuronArgTensor hbm_tensor(uint8_t dtype, unsigned long long addr, std::vector<uint16_t> dims) {
    NeuronArgTensor t;
    memset(&t, 0, sizeof t);
    t.location = 2;
    t.dtype = dtype;
    uint32_t n = 1;
    for (size_t i = 0; i < dims.size(); i++) { t.framework_shape.inline_shape8d[i] = dims[i]; n *= dims[i]; }
    t.storage.hbm.addr = addr;
    t.storage.hbm.num_elem = n;
    return t;
}

static NeuronArgBlob *blob() { return (NeuronArgBlob *)((char *)scratch + NEURON_ARG_BLOB_OFFSET); }

static void launch(const char *name, std::vector<NeuronArgTensor> args, NeuronArgTensor out) {
    NeuronArgBlob *b = blob();
    memset(b, 0, sizeof *b);
    b->magic = NEURON_ARG_BLOB_MAGIC;
    b->num_args = uint32_t(args.size());
    for (size_t i = 0; i < args.size(); i++) { b->args[i] = args[i]; b->types[i] = NEURON_ARG_TYPE_TENSOR; }
    b->output = out;
    for (auto &k : kernels)
        if (k.name == name) { CHECK(k.fn() == 0, "%s launcher result", name); return; }
    CHECK(false, "no kernel %s", name);
}

static float *f32at(unsigned long long a) { return (float *)host_map(a, 4); }

int main(int argc, char **argv) {
    CHECK(argc == 2 || argc == 3, "usage: host LIBOP.so [fault]");
    soc = (unsigned char *)mmap(nullptr, SOC_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(soc != MAP_FAILED, "mmap");
    CHECK(posix_memalign(&scratch, 64, NEURON_DATA_SCRATCH_MIN_SIZE) == 0, "scratch");
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(lib, "dlopen: %s", dlerror());
    auto entry = (uint32_t(*)(const SUNDA_UCODE_LIB *))dlsym(lib, "entry_func");
    auto reg = (SUNDA_UCODE_LIB_STATUS(*)(SUNDA_UCODE_LIB_STATUS(*)(void *, const char *, int (*)())))dlsym(
        lib, "_Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE");
    CHECK(entry && reg, "the op library exports entry_func and register_funcs");

    SUNDA_UCODE_LIB host;
    memset(&host, 0, sizeof host);
    host.sizeof_ncore_ucode_lib = sizeof host;
    host.library_handle = (void *)0x51;
    host.register_ext_isa_fn = on_register;
    host.get_libc_fn = resolve;
    host.get_data_scratch = data_scratch;
    host.get_hbm_scratch = hbm_scratch;
    SUNDA_UCODE_LIB small = host;
    small.sizeof_ncore_ucode_lib = sizeof host - 1;
    CHECK(entry(&small) == SUNDA_UCODE_LIB_FAILURE_ABI_MISMATCH, "short handoff block refused");
    CHECK(entry(&host) == SUNDA_UCODE_LIB_SUCCESS, "entry_func");
    CHECK(registered.size() == 3 && registered[0] == "axpb" && registered[2] == "tcm_scale", "registration by name");
    CHECK(reg(on_func) == SUNDA_UCODE_LIB_SUCCESS && kernels.size() == 3, "register_funcs");

    if (argc == 3) {
        // A launch with one argument too few: the kernel's third pull is a device fault.
        const unsigned long long X = SOC_BASE + (100u << 20);
        launch("axpb", {hbm_tensor(10, X, {4}), hbm_tensor(10, X, {1})}, hbm_tensor(10, X + 64, {4}));
        CHECK(false, "the launch should have faulted");
    }

    // axpb over 5000 floats that straddle a 16 MiB window boundary (outside the pinned HBM scratch window).
    const unsigned long long X = SOC_BASE + (80u << 20) - 4096, A = SOC_BASE + (100u << 20), B = A + 64, OUT = A + 4096;
    for (int i = 0; i < 5000; i++) f32at(X)[i] = float(i) * 0.25f;
    *f32at(A) = 3.0f;
    *(int32_t *)host_map(B, 4) = -7;
    launch("axpb", {hbm_tensor(10, X, {50, 100}), hbm_tensor(10, A, {1}), hbm_tensor(8, B, {1})}, hbm_tensor(10, OUT, {5000}));
    for (int i = 0; i < 5000; i++) CHECK(f32at(OUT)[i] == float(i) * 0.25f * 3.0f - 7, "axpb[%d] = %g", i, f32at(OUT)[i]);

    // transpose 3x4 -> 4x3, returned through the runtime's copy.
    const unsigned long long T = SOC_BASE + (110u << 20), S = T + 256, D = T + 512;
    for (int i = 0; i < 12; i++) f32at(T)[i] = float(i);
    launch("transpose", {hbm_tensor(10, T, {3, 4}), hbm_tensor(10, S, {4, 3})}, hbm_tensor(10, D, {4, 3}));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) CHECK(f32at(D)[j * 3 + i] == float(i * 4 + j), "transpose[%d][%d]", j, i);

    // tcm_scale on each of the 8 cores, each taking its slice of 8 x 256 floats.
    const unsigned long long Y = SOC_BASE + (120u << 20), YO = Y + 8192 * 4;
    for (int i = 0; i < 2048; i++) f32at(Y)[i] = float(i);
    for (uint32_t c = 0; c < 8; c++) {
        current_cpu = c;
        launch("tcm_scale", {hbm_tensor(10, Y, {8, 256})}, hbm_tensor(10, YO, {8, 256}));
    }
    for (int i = 0; i < 2048; i++) {
        float want = i % 256 == 0 ? float(i / 256) : float(i) * 2;
        CHECK(f32at(YO)[i] == want, "tcm_scale[%d] = %g, want %g", i, f32at(YO)[i], want);
    }
    printf("PASS: %d checks\n", checks);
    return 0;
}
