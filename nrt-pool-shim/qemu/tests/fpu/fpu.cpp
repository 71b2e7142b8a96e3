// Float arithmetic on bit patterns the test chooses (denormals, infinities, signed zeros,
// values that round at overflow and underflow): the device build's FPU instructions against
// the host build's.
#include <string.h>

#include "neuron_customop.hpp"

static float as_float(uint32_t w) {
    float f;
    memcpy(&f, &w, 4);
    return f;
}

static uint32_t as_bits(float f) {
    uint32_t w;
    memcpy(&w, &f, 4);
    return w;
}

template <typename Op>
static void pairs(const neuron::Tensor &x, neuron::Tensor &out, Op op) {
    auto a = x.accessor<uint32_t, 1>();
    auto o = out.accessor<uint32_t, 1>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; i++) {
        o[i] = as_bits(op(as_float(a[i]), as_float(a[(7 * i + 1) % n])));
    }
}

void fpu_add(const neuron::Tensor &x, neuron::Tensor &out) {
    pairs(x, out, [](float p, float q) { return p + q; });
}

void fpu_sub(const neuron::Tensor &x, neuron::Tensor &out) {
    pairs(x, out, [](float p, float q) { return p - q; });
}

void fpu_mul(const neuron::Tensor &x, neuron::Tensor &out) {
    pairs(x, out, [](float p, float q) { return p * q; });
}

void fpu_cmp(const neuron::Tensor &x, neuron::Tensor &out) {
    auto a = x.accessor<uint32_t, 1>();
    auto o = out.accessor<uint32_t, 1>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; i++) {
        float p = as_float(a[i]), q = as_float(a[(7 * i + 1) % n]);
        o[i] = uint32_t(p < q) | uint32_t(p <= q) << 1 | uint32_t(p > q) << 2 | uint32_t(p >= q) << 3 |
               uint32_t(p == q) << 4 | uint32_t(p != q) << 5 | uint32_t(__builtin_isunordered(p, q)) << 6;
    }
}
