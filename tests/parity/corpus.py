"""The parity corpus: ordinary C++ an op author writes, one kernel per case,
each labelled with the class that can make host cores and the device build differ
("control" where they must agree). Every kernel takes x = [0, 1, ..., 15] (float32) and
returns eight int32 values through `out8` (or faults); the runner compares the two builds'
bytes and faults and whether `--check=parity` names a difference.

Your own ops join the corpus the same way: a (name, class, body) triple whose body fills
`int r[8]` from `in` (an accessor over x)."""

PRELUDE = r"""
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include <torch/torch.h>

static torch::Tensor out8(const int *r) {
    torch::Tensor y = torch::empty({8}, torch::kInt);
    auto o = y.accessor<int, 1>();
    for (int i = 0; i < 8; i++) o[i] = r[i];
    return y;
}
static int bits(float f) { int b; memcpy(&b, &f, 4); return b; }
static int deep(int n, volatile int *up) {
    volatile int pad[64];
    pad[0] = n;
    pad[1] = up ? up[0] : 0;
    return n == 0 ? 0 : 1 + deep(n - 1, pad) + (pad[1] - pad[1]);
}
struct WithLong { char c; long l; };
struct WithWide { char c; long long x; double d; };
struct CharBits { char v : 4; char w : 4; };
"""

# (name, class, body): the body sees `in` (accessor<float, 1> over x) and fills `int r[8]`.
CASES = [
    # ---- controls: both builds compute these alike ----
    ("float_math", "control", "r[0] = bits(expf(in[1])); r[1] = bits(tanhf(in[2] / 3)); r[2] = bits(sqrtf(in[7])); r[3] = bits(logf(in[9])); r[4] = bits(sinf(in[5]));"),
    ("subnormal", "control", "float t = 1e-40f * in[3]; r[0] = bits(t); r[1] = bits(t * 0.5f); r[2] = t > 0;"),
    ("fused", "control", "r[0] = bits(fmaf(in[3], 0.1f, in[7])); r[1] = bits(in[3] * 0.1f + in[7]);"),
    ("wide_struct", "control", "r[0] = sizeof(WithWide); r[1] = offsetof(WithWide, x); r[2] = offsetof(WithWide, d); r[3] = alignof(int64_t) == 8;"),
    ("shift32", "control", "unsigned s = (unsigned)in[5]; r[0] = 1u << s; r[1] = (int)(0x80000000u >> s); r[2] = -64 >> (int)in[3];"),
    ("statics", "control", "static int calls = 0; calls++; r[0] = calls > 0; r[1] = (int)in[4];"),
    ("memcpy_local", "control", "unsigned char b[16]; for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i]; int v; memcpy(&v, b + 1, 4); r[0] = v;"),
    ("char_sum", "control", "int acc = 0; for (int i = 0; i < 1000; i++) { char c = (i * 7 + (int)in[i % 16]) & 0xff; acc += c; } r[0] = acc;"),
    ("char_bits", "control", "CharBits b; b.v = (int)in[15]; b.w = (int)in[9]; r[0] = b.v; r[1] = b.w; r[2] = (char)(int)in[15] < 0;"),
    ("misaligned_ptr", "control", "unsigned char b[16]; for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i]; const int *p = (const int *)(b + (int)in[1]); r[0] = *p;"),
    ("big_locals", "control", "volatile char a[65536]; volatile char b[32768]; for (int i = 0; i < 65536; i += 512) a[i] = (char)i; for (int i = 0; i < 32768; i += 512) b[i] = a[i]; r[0] = b[512];"),
    ("recursion", "control", "r[0] = deep(1000 + (int)in[0], nullptr);"),
    # ---- the C data model: 32-bit long, size_t and pointers on the device ----
    ("long_acc", "data model", "long acc = 0; for (int i = 0; i < 100000; i++) acc += (long)in[i % 16] * 100000; long long w = acc; r[0] = (int)w; r[1] = (int)(w >> 32);"),
    ("sizes", "data model", "r[0] = sizeof(long); r[1] = sizeof(size_t); r[2] = sizeof(void *); r[3] = sizeof(long double); r[4] = sizeof(wchar_t); r[5] = sizeof(ptrdiff_t); r[6] = sizeof(WithLong);"),
    ("size_t_wrap", "data model", "size_t a = (size_t)in[1] - (size_t)in[2]; r[0] = (int)(a >> 16); r[1] = a > 0xffffffffu;"),
    ("limits", "data model", "long long big = 1LL << 40; long v = (long)big; r[0] = v == 0; r[1] = LONG_MAX > 2147483647LL; r[2] = (int)(ULONG_MAX >> 31);"),
    ("strtol_big", "data model", "long v = strtol(\"4000000000\", nullptr, 10); r[0] = v == LONG_MAX; r[1] = (int)v; r[2] = (int)labs((long)in[3] * -1000000000L);"),
    ("printf_long", "data model", "long v = (long)in[3] * 1000000000L; printf(\"v=%ld size=%zu\\n\", v, sizeof(v)); r[0] = 1;"),
    # ---- arithmetic corners (undefined in C, the two machines answer differently) ----
    ("float_to_u8", "arithmetic", "uint8_t u = (uint8_t)(-in[1]); r[0] = u; r[1] = (unsigned)(-in[2]);"),
    ("nan_to_int", "arithmetic", "float z = in[0] / in[0]; r[0] = (int)z; r[1] = (int)(in[15] * 1e10f); r[2] = (int)(-in[15] * 1e10f);"),
    ("int_min_div", "arithmetic", "int a = INT_MIN + (int)in[0]; int b = -(int)in[1]; r[0] = a / b; r[1] = a % b;"),
    ("llong_min_div", "arithmetic", "long long a = LLONG_MIN + (long long)in[0]; long long b = -(long long)in[1]; long long q = a / b; r[0] = (int)q; r[1] = (int)(q >> 32); r[2] = (int)(a % b);"),
    ("shift_width", "arithmetic", "unsigned s = (unsigned)in[15] * 2 + 2; r[0] = (int)(1u << s); r[1] = (int)(0xf0f0f0f0u >> s);"),
    ("clz_zero", "arithmetic", "r[0] = __builtin_clz((unsigned)in[0]); r[1] = __builtin_ctz((unsigned)in[0]);"),
    ("nan_sign", "arithmetic", "float z = in[0] / in[0]; r[0] = bits(z); r[1] = bits(-z);"),
    ("signed_wrap", "arithmetic", "int n = 0; for (int i = INT_MAX - 10 + (int)in[0]; i > 0 && n < 100; i++) n++; r[0] = n;"),
    ("overlap_copy", "arithmetic", "char b[32]; for (int i = 0; i < 32; i++) b[i] = (char)(i + (int)in[0]); memcpy(b + 1, b, 24); for (int i = 0; i < 8; i++) r[i] = b[i * 3];"),
    # ---- alignment the compiler sees (a constant offset into a local buffer) ----
    ("misaligned_const", "alignment", "unsigned char b[16]; for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i]; r[0] = *(int *)(b + 1);"),
    # ---- other shapes of the same mistake: widths, stores, globals, casts users write ----
    ("misaligned_u16", "alignment", "alignas(8) unsigned char b[16]; for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i]; r[0] = *(uint16_t *)(b + 3);"),
    ("misaligned_store", "alignment", "alignas(8) unsigned char b[16] = {0}; *(int *)(b + 1) = 0x01020304 + (int)in[0]; r[0] = b[1]; r[1] = b[4];"),
    ("misaligned_i64", "alignment", "alignas(8) unsigned char b[16]; for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i]; int64_t v = *(int64_t *)(b + 2); r[0] = (int)v; r[1] = (int)(v >> 32);"),
    ("double_at_4", "alignment", "alignas(8) unsigned char b[16] = {0}; double d = in[3]; memcpy(b + 4, &d, 8); r[0] = bits((float)*(double *)(b + 4));"),
    ("misaligned_global", "alignment", "alignas(8) static unsigned char g[16]; for (int i = 0; i < 16; i++) g[i] = (unsigned char)in[i]; r[0] = *(int *)(g + 1);"),
    ("reinterpret_floats", "alignment", "alignas(8) unsigned char b[16]; for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i]; const float *f = reinterpret_cast<const float *>(b + 2); r[0] = bits(f[0]);"),
    ("misaligned_store_ptr", "alignment", "alignas(8) unsigned char b[16] = {0}; int *p = (int *)(b + (int)in[3]); *p = 7; r[0] = b[3];"),
    # Loops: the device compiler's knowledge depends on its own passes (D105). Byte-moved on
    # the device (an induction variable it knows is 2 mod 4): host cores fault, flagged.
    ("misaligned_loop_known", "alignment", "unsigned char b[40]; for (int i = 0; i < 40; i++) b[i] = (unsigned char)in[i % 16]; unsigned s = 0; for (int i = 0; i < 4; i++) s += *(uint32_t *)(b + 4 * i + 2); r[0] = (int)s;"),
    # A `long` index over odd halfwords: the device loses track and faults, as host cores do.
    ("misaligned_loop_lost", "alignment", "char b[64]; for (long i = 0; i < 16; i++) *(float *)&b[4 * i] = in[i] * 2.0f; unsigned s = 0; for (int i = 0; i < 8; i++) s += *(unsigned short *)(b + 2 * i + 1); r[0] = (int)s;"),
    ("packed_member", "control", "struct __attribute__((packed)) P { char c; int i; short s; }; P p; p.c = 1; p.i = (int)in[9] * 1000; p.s = (short)in[4]; r[0] = p.i; r[1] = p.s; r[2] = sizeof(P);"),
    # ---- the C and C++ libraries: the device's libc and libc++ against glibc and libstdc++ ----
    ("sort_ties", "C++ library", "std::vector<std::pair<int, int>> v; for (int i = 0; i < 40; i++) v.push_back({(i * 7) % 3, i + (int)in[0]}); std::sort(v.begin(), v.end(), [](auto a, auto b) { return a.first < b.first; }); for (int i = 0; i < 8; i++) r[i] = v[i].second;"),
    ("map_order", "C++ library", "std::unordered_map<int, int> m; for (int i = 0; i < 20; i++) m[i * 37 + (int)in[0]] = i; int k = 0; for (auto &e : m) { if (k < 8) r[k] = e.first; k++; }"),
    ("hash", "C++ library", "r[0] = (int)std::hash<int>{}(12345 + (int)in[0]); r[1] = (int)std::hash<std::string>{}(std::string(\"gpsimd\"));"),
    ("malloc_align", "C library", "void *p = malloc(3 + (int)in[0]); r[0] = (int)((uintptr_t)p % 16); r[1] = (int)((uintptr_t)p % 8); free(p);"),
    ("getenv_home", "C library", "r[0] = getenv(\"HOME\") != nullptr; r[1] = getenv(\"PATH\") != nullptr;"),
]


def group(cases, size=10):
    """The cases in libraries of at most `size` ops (the guide's limit per library)."""
    return [cases[i:i + size] for i in range(0, len(cases), size)]


def sources(ns, cases):
    """(kernels, shapes) C++ sources of one library."""
    kernels = PRELUDE
    shapes = ('#include <torch/torch.h>\n#include "torchneuron/register.h"\n'
              "torch::Tensor eight(torch::Tensor x) { return torch::empty({8}, torch::kInt); }\n"
              f"NEURON_LIBRARY({ns}, m) {{\n")
    for name, _, body in cases:
        kernels += (f"torch::Tensor {name}(const torch::Tensor &x) {{\n"
                    f"    auto in = x.accessor<float, 1>();\n    int r[8] = {{0}};\n    {body}\n"
                    f"    return out8(r);\n}}\n")
        shapes += f'    m.def("{name}", &eight, "{name}");\n'
    return kernels, shapes + "}\n"
