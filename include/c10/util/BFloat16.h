// c10/util/BFloat16.h: c10::BFloat16, the top half of a float.
#pragma once

#include <stdint.h>
#include <c10/util/Half.h>

namespace c10 {

/// bfloat16: the top half of a float (conversion rounds to nearest even, as c10's does).
struct BFloat16 {
    uint16_t x = 0;
    BFloat16() = default;
    BFloat16(float f) : x(from_float(f)) {}
    BFloat16(double d) : BFloat16(float(d)) {}
    BFloat16(int v) : BFloat16(float(v)) {}
    BFloat16(long long v) : BFloat16(float(v)) {}
    BFloat16(long v) : BFloat16(float(v)) {}
    operator float() const { return detail::f32_from(uint32_t(x) << 16); }
    static BFloat16 from_bits(uint16_t b) {
        BFloat16 h;
        h.x = b;
        return h;
    }
    static uint16_t from_float(float f) {
        uint32_t b = detail::f32_bits(f);
        if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x40u);  // NaN stays NaN
        b += 0x7fffu + ((b >> 16) & 1u);
        return uint16_t(b >> 16);
    }
};
#include <torch/neuron/detail/c10_arith.h>
NRT_C10_ARITH(BFloat16)
#undef NRT_C10_ARITH

}  // namespace c10
