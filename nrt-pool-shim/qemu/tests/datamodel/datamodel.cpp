// Kernels as op authors write them without thinking of the data model: `long` counters,
// `char` bytes, `sizeof` in offsets, `%ld`, the C++ library's unordered choices.
#include <limits.h>
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

#include "neuron_customop.hpp"

void long_counter(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.accessor<int32_t, 1>();
    auto o = out.accessor<int32_t, 1>();
    long acc = 0;
    for (long i = 0; i < 100000; i++) acc += (long)(i + in[0]) * 100000;
    unsigned long wrap = (unsigned long)-1;
    o[0] = (int32_t)acc;
    o[1] = (int32_t)(acc >> 16);
    o[2] = (int32_t)(wrap >> 1);
    o[3] = (int32_t)(LONG_MAX >> 3);
    printf("acc %ld wrap %lu size_t %zu\n", acc, wrap, (size_t)-1);
}

void plain_char(const neuron::Tensor &x, neuron::Tensor &out) {
    auto o = out.accessor<int32_t, 1>();
    int acc = 0;
    for (int i = 0; i < 1000; i++) {
        char c = (char)(i & 0xff);
        acc += c;
    }
    struct Bits { char q : 4; char r : 4; } b;
    b.q = 0xf;
    b.r = 0x8;
    o[0] = acc;
    o[1] = b.q;
    o[2] = b.r;
    o[3] = (char)0x80 > 0;
}

struct Record {
    char tag;
    double value;
    long long count;
    long words[3];
    long double ld;
};

void layouts(const neuron::Tensor &x, neuron::Tensor &out) {
    auto o = out.accessor<int32_t, 1>();
    o[0] = sizeof(long);
    o[1] = sizeof(void *);
    o[2] = sizeof(size_t) + 10 * sizeof(ptrdiff_t);
    o[3] = sizeof(long double);
    o[4] = sizeof(wchar_t);
    o[5] = sizeof(Record);
    o[6] = offsetof(Record, value) * 100 + offsetof(Record, count);
    o[7] = alignof(Record) * 100 + alignof(max_align_t);
}

void library_choices(const neuron::Tensor &x, neuron::Tensor &out) {
    auto o = out.accessor<int32_t, 1>();
    // Ties after std::sort: which of the equal keys comes first is the library's choice.
    std::vector<std::pair<int, int>> v;
    for (int i = 0; i < 40; i++) v.push_back({(i * 7) % 5, i});
    std::sort(v.begin(), v.end(), [](auto a, auto b) { return a.first < b.first; });
    int32_t ties = 0;
    for (int i = 0; i < 40; i++) ties = ties * 31 + v[i].second;
    // Hashes and the iteration order of an unordered container.
    std::unordered_map<std::string, int> m;
    for (int i = 0; i < 20; i++) m["key" + std::to_string(i)] = i;
    int32_t order = 0;
    for (auto &kv : m) order = order * 17 + kv.second;
    size_t h = std::hash<std::string>{}("gpsimd");
    // Where malloc puts a block, relative to its alignment; what getenv finds.
    void *p = malloc(24);
    o[0] = ties;
    o[1] = order;
    o[2] = (int32_t)h;
    o[3] = (int32_t)((uintptr_t)p % 16);
    o[4] = getenv("HOME") != nullptr;
    free(p);
}

void int_min_by_minus_one(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.accessor<int32_t, 1>();
    auto o = out.accessor<int32_t, 1>();
    volatile int32_t n = INT32_MIN, d = in[1] - 1;  // in[1] == 0: d == -1
    volatile long long ln = INT64_MIN, ld = d;
    o[0] = n / d;
    o[1] = n % d;
    o[2] = (int32_t)(ln / ld >> 32);
}

// A word read at a constant offset from a pointer argument: GCC folds the offset into the
// access, which the x86-64 build's alignment check missed (D92); both builds here fault.
__attribute__((noinline)) int word_after(const unsigned char *p) { return *(const int *)(p + 1); }
void folded_offset(const neuron::Tensor &x, neuron::Tensor &out) {
    auto o = out.accessor<int32_t, 1>();
    alignas(4) unsigned char buf[16];
    for (int i = 0; i < 16; i++) buf[i] = (unsigned char)(i + 1);
    o[0] = word_after(buf);
}
