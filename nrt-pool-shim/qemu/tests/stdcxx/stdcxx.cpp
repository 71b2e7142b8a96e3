// Kernels written the way C++ code is: <cmath>, <algorithm>, <limits>, <array>, <numeric>,
// <utility>, <type_traits>, <cstring>, <cstdint>, <cstdio> (streams too), <cassert>, <new>.
#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <type_traits>
#include <utility>

#include "neuron_customop.hpp"

template <class T> static T halve(T v) {
    static_assert(std::is_floating_point<T>::value, "floating point");
    return v / T(2);
}

struct Acc {
    float sum;
    explicit Acc(float s) : sum(s) {}
};

void std_mix(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.read_stream_accessor<float>();
    auto o = out.write_stream_accessor<float>();
    std::array<float, 8> window{};
    alignas(Acc) unsigned char room[sizeof(Acc)];
    Acc *acc = new (room) Acc(0.0f);
    for (int64_t i = 0; i < x.numel(); i++) {
        float v = in.read();
        window[i % 8] = v;
        std::array<float, 8> sorted = window;
        std::sort(sorted.begin(), sorted.end());
        float median = (sorted[3] + sorted[4]) * 0.5f;
        float lo = *std::min_element(window.begin(), window.end());
        float c = std::clamp(v, -2.0f, 2.0f);
        float m = std::max({std::abs(v), 0.25f, std::sqrt(float(i % 5))});
        float e = std::exp(halve(v)) + std::tanh(v) + std::pow(std::fabs(v), 1.5f);
        float s = std::accumulate(window.begin(), window.end(), 0.0f);
        std::pair<float, int32_t> p = std::make_pair(v, int32_t(i));
        std::swap(p.first, median);
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        float r = float(bits % 7) + median + lo + c + m + e + s + float(p.second % 3) +
                  float(M_PI) * (std::isnan(v) ? 0.0f : 1.0f) +
                  (std::numeric_limits<float>::max() > 1e38f ? 1.0f : 0.0f) +
                  float(std::numeric_limits<int16_t>::min() / 4096);
        acc->sum += r;
        assert(!std::isinf(r));
        o.write(r);
    }
    float *spare = new (std::nothrow) float[4];
    printf("std_mix: %.4f %s\n", acc->sum, spare ? "spare" : "none");
    std::fprintf(stderr, "std_mix on stderr: %d\n", int(x.numel()));
    std::fputs("fputs to stdout\n", stdout);
    printf("%1500d|\n", 7);  // longer than any one buffer: whole on both builds
    delete[] spare;
    acc->~Acc();
}

void assert_positive(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.read_stream_accessor<float>();
    auto o = out.write_stream_accessor<float>();
    for (int64_t i = 0; i < x.numel(); i++) {
        float v = in.read();
        assert(v > 0.0f);
        o.write(v);
    }
}

// GCC's bit built-ins, which call libgcc helpers on this target (popcount, ffs, parity,
// clrsb, 32 and 64 bits) and 64-bit negation.
void bit_mix(const neuron::Tensor &x, neuron::Tensor &out) {
    auto in = x.read_stream_accessor<uint32_t>();
    auto o = out.write_stream_accessor<uint32_t>();
    for (int64_t i = 0; i < x.numel(); i++) {
        uint32_t v = in.read();
        uint64_t w = (uint64_t(v) << 29) ^ (uint64_t(v) * 0x9E3779B97F4A7C15ull);
        int64_t neg = -int64_t(w >> 3);
        uint32_t r = uint32_t(__builtin_popcount(v)) + uint32_t(__builtin_popcountll(w)) * 3u +
                     uint32_t(__builtin_ffs(int(v))) * 7u + uint32_t(__builtin_ffsll((long long)w)) * 11u +
                     uint32_t(__builtin_parity(v)) * 13u + uint32_t(__builtin_parityll(w)) * 17u +
                     uint32_t(__builtin_clrsb(int(v))) * 19u + uint32_t(__builtin_clrsbll((long long)w)) * 23u +
                     uint32_t(uint64_t(neg) >> 40);
        o.write(r);
    }
}

// stdlib.h's integer parsing, qsort and bsearch (distinct keys: any sort order agrees);
// long long where the host's 64-bit long would differ from the device's 32 bits.
struct Keyed {
    int32_t key;
    float value;
};
static int by_key(const void *a, const void *b) {
    int32_t x = static_cast<const Keyed *>(a)->key, y = static_cast<const Keyed *>(b)->key;
    return (x > y) - (x < y);
}
void libc_mix(const neuron::Tensor &x, neuron::Tensor &out) {
    static const char *const texts[] = {"  -42xyz", "0x1F", "017", "zz", "99999", "-9",
                                        "+7", "0X", "1010", "  12 34"};
    static const int bases[] = {10, 0, 0, 36, 10, 10, 10, 16, 2, 10};
    int64_t n = x.numel();
    Keyed *items = static_cast<Keyed *>(std::malloc(sizeof(Keyed) * size_t(n)));
    auto in = x.read_stream_accessor<float>();
    for (int64_t i = 0; i < n; i++) items[i] = {int32_t((i * 7919) % 1009), in.read()};
    std::qsort(items, size_t(n), sizeof(Keyed), by_key);
    auto o = out.write_stream_accessor<float>();
    for (int64_t i = 0; i < n; i++) {
        const char *t = texts[i % 10];
        char *end = nullptr;
        long long v = std::strtoll(t, &end, bases[i % 10]);
        Keyed probe = {int32_t((i * 31) % 1009), 0.0f};
        const Keyed *hit =
            static_cast<const Keyed *>(std::bsearch(&probe, items, size_t(n), sizeof(Keyed), by_key));
        float r = items[i].value + float(v % 1000) + float(end - t) + float(std::atoi(t)) +
                  float(std::strtoull("-1", nullptr, 10) % 1000u) +
                  float(std::strtol(t, nullptr, bases[i % 10]) % 1000) + (hit ? hit->value : -1.0f);
        o.write(r);
    }
    std::free(items);
}
