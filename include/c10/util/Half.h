// c10/util/Half.h: c10::Half, IEEE binary16 (as libtorch lays its headers out; written
// from the Custom C++ Operators reference guide, not from any vendor source).
#pragma once

#include <stdint.h>

namespace c10 {

namespace detail {
inline uint32_t f32_bits(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    return u;
}
inline float f32_from(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}
}  // namespace detail

/// IEEE binary16, converted to and from float (round to nearest even).
struct Half {
    uint16_t x = 0;
    Half() = default;
    Half(float f) : x(from_float(f)) {}
    Half(double d) : Half(float(d)) {}
    Half(int v) : Half(float(v)) {}
    Half(long long v) : Half(float(v)) {}
    Half(long v) : Half(float(v)) {}
    operator float() const { return to_float(x); }
    static Half from_bits(uint16_t b) {
        Half h;
        h.x = b;
        return h;
    }
    static uint16_t from_float(float f) {
        uint32_t b = detail::f32_bits(f);
        uint16_t sign = uint16_t((b >> 16) & 0x8000u);
        int32_t exp = int32_t((b >> 23) & 0xff);
        uint32_t man = b & 0x7fffffu;
        if (exp == 0xff) return uint16_t(sign | 0x7c00u | (man ? 0x200u : 0u));
        int32_t e = exp - 127 + 15;
        if (e >= 0x1f) return uint16_t(sign | 0x7c00u);
        if (e <= 0) {
            if (e < -10) return sign;
            uint32_t m = man | 0x800000u;
            uint32_t shift = uint32_t(14 - e);
            uint32_t half = 1u << (shift - 1), rest = m & ((1u << shift) - 1);
            uint32_t r = m >> shift;
            if (rest > half || (rest == half && (r & 1))) r++;
            return uint16_t(sign | r);
        }
        uint32_t rest = man & 0x1fffu;
        uint32_t r = (uint32_t(e) << 10) | (man >> 13);
        if (rest > 0x1000u || (rest == 0x1000u && (r & 1))) r++;
        return uint16_t(sign | r);
    }
    static float to_float(uint16_t h) {
        uint32_t sign = uint32_t(h & 0x8000u) << 16;
        uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
        if (exp == 0) {
            if (man == 0) return detail::f32_from(sign);
            // Subnormal: normalise.
            int32_t e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            return detail::f32_from(sign | (uint32_t(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13));
        }
        if (exp == 0x1f) return detail::f32_from(sign | 0x7f800000u | (man << 13));
        return detail::f32_from(sign | ((exp + 127 - 15) << 23) | (man << 13));
    }
};

#include <torch/neuron/detail/c10_arith.h>
NRT_C10_ARITH(Half)
#undef NRT_C10_ARITH

}  // namespace c10
