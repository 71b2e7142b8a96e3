// torch/torch.h: the Custom C++ Operators tensor API (AWS Neuron's public reference guide)
// over the open device runtime, for kernels and shape functions alike.
//
// Written from the reference guide's descriptions, not from any vendor source. What the
// guide documents is here: the factory functions with c10::TensorOptions, every listed
// tensor operation in its `_out` and returning forms (no broadcasting, shapes checked),
// torch::Tensor with its accessors (standard, read/write stream, TCM), fill_, the coherence
// policy, c10::Half / c10::BFloat16 / c10::Scalar, get_dst_tensor, and the TCM allocator.
// The guide's rules are checked and a broken one ends the kernel as a device fault naming
// it (customop_fatal); in multicore mode a standard or stream accessor is reported once per
// tensor, since on hardware it races. What the guide does not document is not provided: a
// use of it fails to compile.
//
// Tensors made inside a kernel live in device memory until the launch ends (the runtime's
// HBM heap is reset per launch). In a shape function (run by the engine to learn an op's
// output) tensors carry only dtype and shape; touching their data is a fault.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "neuron_customop.hpp"

// Braced size lists need std::initializer_list, IntArrayRef::vec() std::vector (device
// builds: libc++'s, D72).
#include <initializer_list>
#include <vector>

extern "C" {
/// Ends the kernel as a device fault whose report carries `msg` (the runtime's rule path).
__attribute__((noreturn)) void customop_fatal(const char *msg, size_t len);
}

namespace c10 {

/// c10's scalar type ordinals (the ones the device carries).
enum class ScalarType : int8_t {
    Byte = 0,
    Char = 1,
    Short = 2,
    Int = 3,
    Long = 4,
    Half = 5,
    Float = 6,
    BFloat16 = 15,
    Undefined = 18,
};

}  // namespace c10

namespace torch { namespace neuron { namespace detail {

// The few type traits used here (no C++ library on the device).
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <class T> struct is_float { static constexpr bool value = false; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };

// ---- faults and warnings (formatted without a C library: the device has none) ----

struct Msg {
    // The engine's fault record holds 456 bytes of message.
    char buf[448];
    size_t n = 0;
    Msg &s(const char *t) {
        while (t && *t && n < sizeof buf - 1) buf[n++] = *t++;
        return *this;
    }
    Msg &i(long long v) {
        char tmp[24];
        size_t k = 0;
        unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        do {
            tmp[k++] = char('0' + u % 10);
            u /= 10;
        } while (u && k < sizeof tmp);
        if (v < 0) s("-");
        while (k && n < sizeof buf - 1) buf[n++] = tmp[--k];
        return *this;
    }
};

[[noreturn]] inline void fail(const Msg &m) { customop_fatal(m.buf, m.n); }
[[noreturn]] inline void fail(const char *text) {
    Msg m;
    m.s(text);
    fail(m);
}
inline void warn(const Msg &m) {
    customop_stdio_write(2, m.buf, m.n);
    customop_stdio_write(2, "\n", 1);
}

/// The kernel a launch runs (set by the generated wrapper), for reports.
inline const char *&current_kernel() {
    static const char *name = "?";
    return name;
}

/// True while the engine runs a shape function: tensors are metadata only.
inline bool &shape_mode() {
    static bool on = false;
    return on;
}

}}}  // namespace torch::neuron::detail

namespace c10 {

inline const char *toString(ScalarType t) {
    switch (t) {
        case ScalarType::Byte: return "Byte";
        case ScalarType::Char: return "Char";
        case ScalarType::Short: return "Short";
        case ScalarType::Int: return "Int";
        case ScalarType::Long: return "Long";
        case ScalarType::Half: return "Half";
        case ScalarType::Float: return "Float";
        case ScalarType::BFloat16: return "BFloat16";
        default: return "Undefined";
    }
}

inline size_t elementSize(ScalarType t) {
    switch (t) {
        case ScalarType::Byte:
        case ScalarType::Char: return 1;
        case ScalarType::Short:
        case ScalarType::Half:
        case ScalarType::BFloat16: return 2;
        case ScalarType::Int:
        case ScalarType::Float: return 4;
        case ScalarType::Long: return 8;
        default: return 0;
    }
}

inline bool isIntegralType(ScalarType t) {
    return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short ||
           t == ScalarType::Int || t == ScalarType::Long;
}

inline bool isFloatingType(ScalarType t) {
    return t == ScalarType::Half || t == ScalarType::Float || t == ScalarType::BFloat16;
}

/// The descriptor's NEURON_ISA_TPB_DTYPE for a scalar type, and back.
inline uint8_t toIsa(ScalarType t) {
    switch (t) {
        case ScalarType::Byte: return 3;
        case ScalarType::Char: return 2;
        case ScalarType::Short: return 4;
        case ScalarType::Int: return 8;
        case ScalarType::Long: return 12;
        case ScalarType::Half: return 7;
        case ScalarType::Float: return 10;
        case ScalarType::BFloat16: return 6;
        default: return 0;
    }
}

inline ScalarType fromIsa(uint8_t d) {
    switch (d) {
        case 3: return ScalarType::Byte;
        case 2: return ScalarType::Char;
        case 4: return ScalarType::Short;
        case 8: return ScalarType::Int;
        case 12: return ScalarType::Long;
        case 7: return ScalarType::Half;
        case 10: return ScalarType::Float;
        case 6: return ScalarType::BFloat16;
        default: return ScalarType::Undefined;
    }
}

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

// Arithmetic: Half op Half is Half; mixed with float or double, the wider type.
#define NRT_C10_ARITH(T)                                                                   \
    inline T operator+(T a, T b) { return T(float(a) + float(b)); }                        \
    inline T operator-(T a, T b) { return T(float(a) - float(b)); }                        \
    inline T operator*(T a, T b) { return T(float(a) * float(b)); }                        \
    inline T operator/(T a, T b) { return T(float(a) / float(b)); }                        \
    inline T operator-(T a) { return T(-float(a)); }                                       \
    inline T &operator+=(T &a, T b) { return a = a + b; }                                  \
    inline T &operator-=(T &a, T b) { return a = a - b; }                                  \
    inline T &operator*=(T &a, T b) { return a = a * b; }                                  \
    inline T &operator/=(T &a, T b) { return a = a / b; }                                  \
    inline float operator+(T a, float b) { return float(a) + b; }                          \
    inline float operator-(T a, float b) { return float(a) - b; }                          \
    inline float operator*(T a, float b) { return float(a) * b; }                          \
    inline float operator/(T a, float b) { return float(a) / b; }                          \
    inline float operator+(float a, T b) { return a + float(b); }                          \
    inline float operator-(float a, T b) { return a - float(b); }                          \
    inline float operator*(float a, T b) { return a * float(b); }                          \
    inline float operator/(float a, T b) { return a / float(b); }                          \
    inline double operator+(T a, double b) { return double(float(a)) + b; }                \
    inline double operator-(T a, double b) { return double(float(a)) - b; }                \
    inline double operator*(T a, double b) { return double(float(a)) * b; }                \
    inline double operator/(T a, double b) { return double(float(a)) / b; }                \
    inline double operator+(double a, T b) { return a + double(float(b)); }                \
    inline double operator-(double a, T b) { return a - double(float(b)); }                \
    inline double operator*(double a, T b) { return a * double(float(b)); }                \
    inline double operator/(double a, T b) { return a / double(float(b)); }                \
    inline T operator+(T a, int b) { return a + T(b); }                                    \
    inline T operator-(T a, int b) { return a - T(b); }                                    \
    inline T operator*(T a, int b) { return a * T(b); }                                    \
    inline T operator/(T a, int b) { return a / T(b); }                                    \
    inline T operator+(int a, T b) { return T(a) + b; }                                    \
    inline T operator-(int a, T b) { return T(a) - b; }                                    \
    inline T operator*(int a, T b) { return T(a) * b; }                                    \
    inline T operator/(int a, T b) { return T(a) / b; }                                    \
    inline bool operator==(T a, T b) { return float(a) == float(b); }                      \
    inline bool operator!=(T a, T b) { return float(a) != float(b); }                      \
    inline bool operator<(T a, T b) { return float(a) < float(b); }                        \
    inline bool operator>(T a, T b) { return float(a) > float(b); }                        \
    inline bool operator<=(T a, T b) { return float(a) <= float(b); }                      \
    inline bool operator>=(T a, T b) { return float(a) >= float(b); }
NRT_C10_ARITH(Half)
NRT_C10_ARITH(BFloat16)
#undef NRT_C10_ARITH

/// A number of either kind (integral or floating), as c10::Scalar holds it.
class Scalar {
  public:
    Scalar() : Scalar(0) {}
    Scalar(double v) : integral_(false), d_(v), i_(int64_t(v)) {}
    Scalar(float v) : Scalar(double(v)) {}
    Scalar(Half v) : Scalar(double(float(v))) {}
    Scalar(BFloat16 v) : Scalar(double(float(v))) {}
    Scalar(bool v) : Scalar((long long)(v)) {}
    Scalar(int v) : Scalar((long long)(v)) {}
    Scalar(short v) : Scalar((long long)(v)) {}
    Scalar(signed char v) : Scalar((long long)(v)) {}
    Scalar(unsigned char v) : Scalar((long long)(v)) {}
    Scalar(unsigned v) : Scalar((long long)(v)) {}
    Scalar(long v) : integral_(true), d_(double(v)), i_(int64_t(v)) {}
    Scalar(long long v) : integral_(true), d_(double(v)), i_(int64_t(v)) {}
    Scalar(unsigned long v) : Scalar((long long)(v)) {}
    Scalar(unsigned long long v) : Scalar((long long)(v)) {}

    bool isIntegral(bool includeBool = false) const { return integral_ || (includeBool && false); }
    bool isFloatingPoint() const { return !integral_; }
    double toDouble() const { return d_; }
    float toFloat() const { return float(d_); }
    int64_t toLong() const { return integral_ ? i_ : int64_t(d_); }
    int toInt() const { return int(toLong()); }
    short toShort() const { return short(toLong()); }
    signed char toChar() const { return (signed char)(toLong()); }
    unsigned char toByte() const { return (unsigned char)(toLong()); }
    Half toHalf() const { return Half(float(d_)); }
    BFloat16 toBFloat16() const { return BFloat16(float(d_)); }
    template <typename T> T to() const;

  private:
    bool integral_;
    double d_;
    int64_t i_;
};

template <> inline double Scalar::to<double>() const { return toDouble(); }
template <> inline float Scalar::to<float>() const { return toFloat(); }
template <> inline int64_t Scalar::to<int64_t>() const { return toLong(); }
template <> inline int32_t Scalar::to<int32_t>() const { return toInt(); }
template <> inline int16_t Scalar::to<int16_t>() const { return toShort(); }
template <> inline int8_t Scalar::to<int8_t>() const { return toChar(); }
template <> inline uint8_t Scalar::to<uint8_t>() const { return toByte(); }
template <> inline Half Scalar::to<Half>() const { return toHalf(); }
template <> inline BFloat16 Scalar::to<BFloat16>() const { return toBFloat16(); }

/// The element type of a C++ type (the accessors check it against the tensor's).
template <typename T> struct CppTypeToScalarType;
template <> struct CppTypeToScalarType<uint8_t> { static constexpr ScalarType value = ScalarType::Byte; };
template <> struct CppTypeToScalarType<int8_t> { static constexpr ScalarType value = ScalarType::Char; };
template <> struct CppTypeToScalarType<int16_t> { static constexpr ScalarType value = ScalarType::Short; };
template <> struct CppTypeToScalarType<int32_t> { static constexpr ScalarType value = ScalarType::Int; };
template <> struct CppTypeToScalarType<int64_t> { static constexpr ScalarType value = ScalarType::Long; };
template <> struct CppTypeToScalarType<Half> { static constexpr ScalarType value = ScalarType::Half; };
template <> struct CppTypeToScalarType<float> { static constexpr ScalarType value = ScalarType::Float; };
template <> struct CppTypeToScalarType<BFloat16> { static constexpr ScalarType value = ScalarType::BFloat16; };
template <typename T> struct CppTypeToScalarType<const T> : CppTypeToScalarType<T> {};

namespace detail {
/// One entry of a braced size list: any integer expression (int, int64_t, size_t, ...), so
/// that `{3, n}` with `int64_t n` or `{x.numel(), k}` with `size_t k` build, as in libtorch
/// sizes are always int64_t. Floating-point entries do not convert (ambiguous on purpose).
struct SizeEntry {
    int64_t v;
    SizeEntry(int x) : v(x) {}
    SizeEntry(unsigned x) : v(int64_t(x)) {}
    SizeEntry(long x) : v(int64_t(x)) {}
    SizeEntry(unsigned long x) : v(int64_t(x)) {}
    SizeEntry(long long x) : v(int64_t(x)) {}
    SizeEntry(unsigned long long x) : v(int64_t(x)) {}
};
}  // namespace detail

/// A list of sizes, as libtorch's `IntArrayRef` (`ArrayRef<int64_t>`) is used: built from
/// a braced list of integers, a `std::vector<int64_t>` (or any contiguous container of
/// int64_t: std::array, c10::SmallVector-like), a pointer and a length, a begin/end pair,
/// a C array or one value. It holds a copy of at most 8 values (a tensor's rank limit), so
/// it never dangles; `Tensor::sizes()` returns a reference to the tensor's own list, so
/// `t.sizes().begin()` and `t.sizes().end()` belong to one list, as in libtorch.
class IntArrayRef {
  public:
    IntArrayRef() = default;
    IntArrayRef(std::initializer_list<detail::SizeEntry> l) {
        for (const detail::SizeEntry &e : l) push(e.v);
    }
    IntArrayRef(const int64_t *p, size_t n) {
        for (size_t k = 0; k < n; k++) push(p[k]);
    }
    IntArrayRef(const int64_t *b, const int64_t *e) {
        for (; b != e; ++b) push(*b);
    }
    template <size_t N> IntArrayRef(const int64_t (&a)[N]) : IntArrayRef(a, N) {}
    /// Any container whose data() is int64_t and that has size(): std::vector<int64_t>,
    /// std::array<int64_t, N>, ...
    template <typename C, typename = decltype(static_cast<const int64_t *>(static_cast<const C *>(nullptr)->data())),
              typename = decltype(size_t(static_cast<const C *>(nullptr)->size()))>
    IntArrayRef(const C &c) : IntArrayRef(c.data(), size_t(c.size())) {}
    IntArrayRef(int64_t v) { push(v); }

    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const int64_t *data() const { return v_; }
    const int64_t *begin() const { return v_; }
    const int64_t *end() const { return v_ + n_; }
    const int64_t *cbegin() const { return v_; }
    const int64_t *cend() const { return v_ + n_; }
    int64_t front() const { return at(0); }
    int64_t back() const { return at(n_ == 0 ? 0 : n_ - 1); }
    /// Unchecked in libtorch; here an index past the end reads 0 rather than memory.
    int64_t operator[](size_t k) const { return k < n_ ? v_[k] : 0; }
    int64_t at(size_t k) const {
        if (k >= n_) {
            torch::neuron::detail::Msg m;
            m.s("customop: IntArrayRef::at(").i((long long)k).s(") on a list of ").i((long long)n_).s(" values");
            torch::neuron::detail::fail(m);
        }
        return v_[k];
    }
    /// Values [k, k + m) (and [k, size()) ): checked, as libtorch's slice is.
    IntArrayRef slice(size_t k, size_t m) const {
        if (k > n_ || m > n_ - k) {
            torch::neuron::detail::Msg msg;
            msg.s("customop: IntArrayRef::slice(").i((long long)k).s(", ").i((long long)m).s(") on a list of ").i((long long)n_).s(" values");
            torch::neuron::detail::fail(msg);
        }
        return IntArrayRef(v_ + k, m);
    }
    IntArrayRef slice(size_t k) const { return slice(k, k <= n_ ? n_ - k : 0); }
    std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
    operator std::vector<int64_t>() const { return vec(); }
    bool equals(const IntArrayRef &o) const {
        if (n_ != o.n_) return false;
        for (size_t k = 0; k < n_; k++)
            if (v_[k] != o.v_[k]) return false;
        return true;
    }
    // Hidden friends: either side may be a std::vector<int64_t> or a single value.
    friend bool operator==(const IntArrayRef &a, const IntArrayRef &b) { return a.equals(b); }
    friend bool operator!=(const IntArrayRef &a, const IntArrayRef &b) { return !a.equals(b); }
    /// `os << t.sizes()` prints "[2, 3]" (any stream with `<<` for int64_t and text).
    template <typename OS>
    friend auto operator<<(OS &os, const IntArrayRef &r) -> decltype(os << int64_t(0), os << "") {
        os << "[";
        for (size_t k = 0; k < r.n_; k++) {
            if (k) os << ", ";
            os << r.v_[k];
        }
        return os << "]";
    }

  private:
    void push(int64_t v) {
        if (n_ == 8) torch::neuron::detail::fail("customop: a tensor has at most 8 dimensions (the guide's limit)");
        v_[n_++] = v;
    }
    int64_t v_[8] = {0};
    size_t n_ = 0;
};

/// Options of a factory function: only the dtype has an effect (the guide: it must be
/// given; a default-constructed TensorOptions means kFloat, libtorch's default dtype).
/// The other properties libtorch's TensorOptions carries are accepted and ignored.
class TensorOptions {
  public:
    TensorOptions() : dtype_(ScalarType::Float) {}
    TensorOptions(ScalarType t) : dtype_(t) {}
    TensorOptions dtype(ScalarType t) const { return TensorOptions(t); }
    template <typename T> TensorOptions dtype() const;
    ScalarType dtype() const { return dtype_; }
    TensorOptions requires_grad(bool = true) const { return *this; }
    bool requires_grad_opt() const { return false; }

  private:
    ScalarType dtype_;
};

template <typename T> inline TensorOptions TensorOptions::dtype() const {
    return TensorOptions(CppTypeToScalarType<T>::value);
}

/// `torch::dtype(kInt)` and `torch::dtype<float>()`: TensorOptions with that dtype.
inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
template <typename T> inline TensorOptions dtype() { return TensorOptions(CppTypeToScalarType<T>::value); }

}  // namespace c10

namespace torch {

using c10::BFloat16;
using c10::Half;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;
using c10::TensorOptions;
using c10::dtype;

constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat16 = ScalarType::Half;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kInt32 = ScalarType::Int;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kInt8 = ScalarType::Char;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kInt64 = ScalarType::Long;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt16 = ScalarType::Short;
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kUInt8 = ScalarType::Byte;

/// What an accessor does on potentially incoherent access (the guide's enum).
class CoherencyEnforcer {
  public:
    enum Policy { COHERENT, INCOHERENT_VERBOSE, INCOHERENT_QUIET };
};

class Tensor;

namespace neuron {

namespace detail {

/// Per-storage accessor state for one launch: open stream accessors, the coherence policy
/// and whether the multicore warning was given. Keyed by the data's SoC address.
struct StorageState {
    unsigned long long soc = 0;
    int readers = 0, writers = 0;
    int policy = CoherencyEnforcer::COHERENT;
    bool warned = false;
};

inline StorageState *states() {
    static StorageState s[64];
    return s;
}

inline StorageState &state_of(unsigned long long soc) {
    StorageState *s = states();
    for (int k = 0; k < 64; k++)
        if (s[k].soc == soc) return s[k];
    for (int k = 0; k < 64; k++)
        if (s[k].soc == 0) {
            s[k] = StorageState();
            s[k].soc = soc;
            return s[k];
        }
    return s[63];  // full: the last slot is shared (checks stay conservative)
}

/// TCM blocks handed out by tcm_malloc, to check the sizes the TCM accessor copies.
struct TcmBlock {
    const void *p = nullptr;
    size_t n = 0;
};
inline TcmBlock *tcm_blocks() {
    static TcmBlock b[64];
    return b;
}

/// Whether the kernel took the destination through get_dst_tensor() this launch.
inline bool &dst_taken() {
    static bool taken = false;
    return taken;
}

/// Fresh per-launch state (the generated wrapper calls this before the kernel).
inline void begin_launch(const char *kernel) {
    dst_taken() = false;
    current_kernel() = kernel;
    shape_mode() = false;
    StorageState *s = states();
    for (int k = 0; k < 64; k++) s[k] = StorageState();
    TcmBlock *b = tcm_blocks();
    for (int k = 0; k < 64; k++) b[k] = TcmBlock();
}

}  // namespace detail

/// Allocates `nbytes` of the 16 KiB TCM pool; NULL when it does not fit.
inline void *tcm_malloc(size_t nbytes) {
    if (nbytes == 0 || nbytes > 0xffffffffu) return nullptr;
    void *p = at::neuron::tcm_malloc(unsigned(nbytes));
    if (p) {
        detail::TcmBlock *b = detail::tcm_blocks();
        for (int k = 0; k < 64; k++)
            if (!b[k].p) {
                b[k].p = p;
                b[k].n = nbytes;
                break;
            }
    }
    return p;
}

/// Frees a tcm_malloc block (NULL is ignored).
inline void tcm_free(void *ptr) {
    if (!ptr) return;
    detail::TcmBlock *b = detail::tcm_blocks();
    for (int k = 0; k < 64; k++)
        if (b[k].p == ptr) b[k] = detail::TcmBlock();
    at::neuron::tcm_free(ptr);
}

}  // namespace neuron

/// Element-wise random access (`accessor<T, N>()`); `read_only` accessors yield const T&.
/// Indexes are checked against the sizes (a fault names the dimension).
template <typename T, size_t N, bool read_only = false> class TensorAccessor {
  public:
    using Elem = typename neuron::detail::conditional<read_only, const T, T>::type;
    TensorAccessor(unsigned long long soc, const int64_t *sizes, const int64_t *strides)
        : soc_(soc), sizes_(sizes), strides_(strides) {}
    TensorAccessor<T, N - 1, read_only> operator[](int64_t i) const {
        check(i);
        return TensorAccessor<T, N - 1, read_only>(soc_ + uint64_t(i * strides_[0]) * sizeof(T), sizes_ + 1,
                                                   strides_ + 1);
    }
    int64_t size(size_t d) const { return sizes_[d]; }
    int64_t stride(size_t d) const { return strides_[d]; }

  private:
    void check(int64_t i) const {
        if (i < 0 || i >= sizes_[0]) {
            neuron::detail::Msg m;
            m.s("customop: accessor index ").i(i).s(" out of range for a dimension of size ").i(sizes_[0]);
            neuron::detail::fail(m);
        }
    }
    unsigned long long soc_;
    const int64_t *sizes_, *strides_;
};

template <typename T, bool read_only> class TensorAccessor<T, 1, read_only> {
  public:
    using Elem = typename neuron::detail::conditional<read_only, const T, T>::type;
    TensorAccessor(unsigned long long soc, const int64_t *sizes, const int64_t *strides)
        : soc_(soc), sizes_(sizes), strides_(strides) {}
    Elem &operator[](int64_t i) const {
        if (i < 0 || i >= sizes_[0]) {
            neuron::detail::Msg m;
            m.s("customop: accessor index ").i(i).s(" out of range for a dimension of size ").i(sizes_[0]);
            neuron::detail::fail(m);
        }
        return ::neuron::element<T>(soc_, size_t(i * strides_[0]));
    }
    int64_t size(size_t) const { return sizes_[0]; }
    int64_t stride(size_t) const { return strides_[0]; }

  private:
    unsigned long long soc_;
    const int64_t *sizes_, *strides_;
};

namespace neuron { namespace detail {

/// Stream accessors' TCM buffers: 4 KiB each while the pool has room, then one element
/// (functionally unlimited, slower past the 4th, as the guide says).
template <typename T> struct StreamBuf {
    T *buf = nullptr;
    size_t cap = 0;
    void open() {
        cap = 4096 / sizeof(T);
        buf = static_cast<T *>(tcm_malloc(cap * sizeof(T)));
        if (!buf) {
            cap = 1;
            buf = static_cast<T *>(tcm_malloc(sizeof(T)));
        }
        if (!buf) fail("customop: no TCM left for a stream accessor's buffer (the 16 KiB pool is exhausted)");
    }
    void close() {
        if (buf) tcm_free(buf);
        buf = nullptr;
    }
};

/// A coherence rule broke: what the tensor's policy says to do.
inline void incoherent(StorageState &st, const char *what) {
    if (st.policy == CoherencyEnforcer::INCOHERENT_QUIET) return;
    Msg m;
    m.s(st.policy == CoherencyEnforcer::COHERENT ? "customop: " : "customop: warning: ")
        .s("kernel '")
        .s(current_kernel())
        .s("': ")
        .s(what)
        .s(" (coherence policy ")
        .s(st.policy == CoherencyEnforcer::COHERENT ? "COHERENT" : "INCOHERENT_VERBOSE")
        .s(")");
    if (st.policy == CoherencyEnforcer::COHERENT) fail(m);
    warn(m);
}

}}  // namespace neuron::detail

namespace neuron { namespace detail {

/// What both stream accessors hold: the tensor (its first byte keys the coherence state),
/// where the stream is in it, its TCM buffer, and whether it is open. Moving one moves the
/// buffer and leaves the source closed.
template <typename T> class StreamState {
  protected:
    StreamState(unsigned long long soc, size_t n) : soc_(soc), base_(soc), left_(n), total_(n) {}
    StreamState(StreamState &&o) noexcept { *this = static_cast<StreamState &&>(o); }
    StreamState &operator=(StreamState &&o) noexcept {
        soc_ = o.soc_, base_ = o.base_, left_ = o.left_, total_ = o.total_, fill_ = o.fill_,
        pos_ = o.pos_, b_ = o.b_, open_ = o.open_;
        o.open_ = false;
        o.b_.buf = nullptr;
        return *this;
    }
    StreamState(const StreamState &) = delete;
    StreamState &operator=(const StreamState &) = delete;
    void open() {
        b_.open();
        open_ = true;
    }
    /// Closes the stream if open: whether it was.
    bool shut() {
        if (!open_) return false;
        open_ = false;
        b_.close();
        return true;
    }
    [[noreturn]] void past_end(const char *what) const {
        Msg m;
        m.s("customop: ").s(what).s("() past the end of a ").s(what).s(" stream accessor (")
            .i((long long)total_).s(" elements)");
        fail(m);
    }
    unsigned long long soc_ = 0, base_ = 0;
    size_t left_ = 0, total_ = 0, fill_ = 0, pos_ = 0;
    StreamBuf<T> b_;
    bool open_ = false;
};

}}  // namespace neuron::detail

/// Sequential reads (`read_stream_accessor<T>()`): reading past the end or after close()
/// is a fault.
template <typename T> class TensorReadStreamAccessor : neuron::detail::StreamState<T> {
    using S = neuron::detail::StreamState<T>;

  public:
    TensorReadStreamAccessor(unsigned long long soc, size_t n) : S(soc, n) {
        neuron::detail::StorageState &st = neuron::detail::state_of(this->base_);
        if (st.writers > 0)
            neuron::detail::incoherent(st, "read_stream_accessor opened while a write stream accessor is open on the same tensor");
        st.readers++;
        this->open();
    }
    TensorReadStreamAccessor(TensorReadStreamAccessor &&) noexcept = default;
    TensorReadStreamAccessor &operator=(TensorReadStreamAccessor &&) noexcept = default;
    ~TensorReadStreamAccessor() { close(); }
    T read() {
        if (!this->open_) neuron::detail::fail("customop: read() on a closed read stream accessor");
        if (this->pos_ == this->fill_) {
            if (this->left_ == 0) this->past_end("read");
            refill();
        }
        return this->b_.buf[this->pos_++];
    }
    int close() {
        // The reader counts against the tensor's first byte, where it was recorded.
        if (this->shut()) neuron::detail::state_of(this->base_).readers--;
        return 0;
    }

  private:
    void refill() {
        size_t n = this->left_ < this->b_.cap ? this->left_ : this->b_.cap;
        neuron_memcpy(static_cast<void *>(this->b_.buf), this->soc_, unsigned(n * sizeof(T)));
        this->soc_ += n * sizeof(T);
        this->left_ -= n;
        this->fill_ = n;
        this->pos_ = 0;
    }
};

/// Sequential writes (`write_stream_accessor<T>()`), written back at close() or
/// destruction; writing past the end or after close() is a fault.
template <typename T> class TensorWriteStreamAccessor : neuron::detail::StreamState<T> {
    using S = neuron::detail::StreamState<T>;

  public:
    TensorWriteStreamAccessor(unsigned long long soc, size_t n) : S(soc, n) {
        neuron::detail::StorageState &st = neuron::detail::state_of(this->base_);
        if (st.writers > 0 || st.readers > 0)
            neuron::detail::incoherent(st, "write_stream_accessor opened while another stream accessor is open on the same tensor");
        st.writers++;
        this->open();
    }
    TensorWriteStreamAccessor(TensorWriteStreamAccessor &&) noexcept = default;
    TensorWriteStreamAccessor &operator=(TensorWriteStreamAccessor &&) noexcept = default;
    ~TensorWriteStreamAccessor() { close(); }
    void write(T v) {
        if (!this->open_) neuron::detail::fail("customop: write() on a closed write stream accessor");
        if (this->left_ == 0) this->past_end("write");
        this->b_.buf[this->pos_++] = v;
        this->left_--;
        if (this->pos_ == this->b_.cap) flush();
    }
    int close() {
        if (!this->open_) return 0;
        flush();
        this->shut();
        neuron::detail::state_of(this->base_).writers--;
        return 0;
    }

  private:
    void flush() {
        if (this->pos_) neuron_memcpy(this->soc_, static_cast<void *>(this->b_.buf), unsigned(this->pos_ * sizeof(T)));
        this->soc_ += this->pos_ * sizeof(T);
        this->pos_ = 0;
    }
};

/// Bulk copies between a tensor (flattened indexing) and TCM buffers, checked against the
/// tensor's size and, for tcm_malloc blocks, the block's size; no coherence checks.
template <bool read_only> class TensorTcmAccessor {
  public:
    TensorTcmAccessor(unsigned long long soc, int64_t numel, ScalarType dtype)
        : soc_(soc), numel_(numel), dtype_(dtype) {}
    template <typename T> void tensor_to_tcm(T *tcm_ptr, size_t tensor_offset, size_t num_elem) const {
        check<T>("tensor_to_tcm", tcm_ptr, tensor_offset, num_elem);
        if (num_elem)
            neuron_memcpy(static_cast<void *>(tcm_ptr), soc_ + tensor_offset * sizeof(T), unsigned(num_elem * sizeof(T)));
    }
    template <typename T> void tcm_to_tensor(T *tcm_ptr, size_t tensor_offset, size_t num_elem) const {
        static_assert(!read_only, "tcm_to_tensor: this TensorTcmAccessor is read-only (tcm_accessor() of a const Tensor)");
        check<T>("tcm_to_tensor", tcm_ptr, tensor_offset, num_elem);
        if (num_elem)
            neuron_memcpy(soc_ + tensor_offset * sizeof(T), static_cast<void *>(tcm_ptr), unsigned(num_elem * sizeof(T)));
    }

  private:
    template <typename T> void check(const char *what, const T *p, size_t off, size_t n) const {
        using neuron::detail::Msg;
        if (c10::CppTypeToScalarType<T>::value != dtype_) {
            Msg m;
            m.s("customop: ").s(what).s("<").s(c10::toString(c10::CppTypeToScalarType<T>::value)).s("> on a tensor of ").s(c10::toString(dtype_));
            neuron::detail::fail(m);
        }
        if (off > size_t(numel_) || n > size_t(numel_) - off) {
            Msg m;
            m.s("customop: ").s(what).s(": elements [").i((long long)off).s(", ").i((long long)(off + n)).s(") outside a tensor of ").i(numel_).s(" elements");
            neuron::detail::fail(m);
        }
        neuron::detail::TcmBlock *b = neuron::detail::tcm_blocks();
        const char *q = reinterpret_cast<const char *>(p);
        for (int k = 0; k < 64; k++) {
            const char *s = static_cast<const char *>(b[k].p);
            if (s && q >= s && q < s + b[k].n && size_t(s + b[k].n - q) < n * sizeof(T)) {
                Msg m;
                m.s("customop: ").s(what).s(": ").i((long long)(n * sizeof(T))).s(" bytes do not fit the TCM buffer (").i((long long)(s + b[k].n - q)).s(" bytes left of a ").i((long long)b[k].n).s("-byte tcm_malloc block)");
                neuron::detail::fail(m);
            }
        }
    }
    unsigned long long soc_;
    int64_t numel_;
    ScalarType dtype_;
};

/// A tensor: an argument, the destination, or one a factory function made. Copies share
/// the data, as at::Tensor's do.
class Tensor {
  public:
    Tensor() = default;
    Tensor(const Tensor &) = default;
    Tensor(Tensor &&) = default;
    Tensor &operator=(const Tensor &x) & = default;
    Tensor &operator=(Tensor &&x) & = default;

    /// Internal: a tensor over `soc` (0 and `meta`: shape only), labelled for reports.
    Tensor(unsigned long long soc, ScalarType dtype, IntArrayRef sizes, bool meta, const char *label)
        : soc_(soc), dtype_(dtype), sizes_(sizes), meta_(meta), label_(label) {
        rank_ = sizes.size();
        int64_t st[8] = {0};
        int64_t stride = 1;
        for (size_t k = rank_; k-- > 0;) {
            st[k] = stride;
            stride *= sizes_[k];
        }
        strides_ = IntArrayRef(st, rank_);
        numel_ = stride;
    }

    bool defined() const { return dtype_ != ScalarType::Undefined; }
    int64_t numel() const { return numel_; }
    int64_t dim() const { return int64_t(rank_); }
    int64_t ndimension() const { return dim(); }
    /// The tensor's own lists (references, so begin() and end() of two calls agree).
    const IntArrayRef &sizes() const { return sizes_; }
    const IntArrayRef &strides() const { return strides_; }
    int64_t size(int64_t d) const { return sizes_[wrap(d)]; }
    int64_t stride(int64_t d) const { return strides_[wrap(d)]; }
    ScalarType scalar_type() const { return dtype_; }
    ScalarType dtype() const { return dtype_; }
    TensorOptions options() const { return TensorOptions(dtype_); }
    size_t element_size() const { return c10::elementSize(dtype_); }
    size_t itemsize() const { return element_size(); }
    size_t nbytes() const { return size_t(numel_) * element_size(); }

    template <typename T, size_t N> TensorAccessor<T, N, true> accessor() const & {
        standard_access<T>(N);
        return TensorAccessor<T, N, true>(soc_, sizes_.data(), strides_.data());
    }
    template <typename T, size_t N> TensorAccessor<T, N, false> accessor() & {
        standard_access<T>(N);
        return TensorAccessor<T, N, false>(soc_, sizes_.data(), strides_.data());
    }
    template <typename T, size_t N> TensorAccessor<T, N, false> accessor() && = delete;

    template <typename T> TensorReadStreamAccessor<T> read_stream_accessor() const & {
        data_access<T>("read_stream_accessor");
        multicore_check("read_stream_accessor");
        return TensorReadStreamAccessor<T>(soc_, size_t(numel_));
    }
    template <typename T> TensorWriteStreamAccessor<T> write_stream_accessor() & {
        data_access<T>("write_stream_accessor");
        multicore_check("write_stream_accessor");
        return TensorWriteStreamAccessor<T>(soc_, size_t(numel_));
    }

    TensorTcmAccessor<true> tcm_accessor() const & {
        no_meta("tcm_accessor");
        return TensorTcmAccessor<true>(soc_, numel_, dtype_);
    }
    TensorTcmAccessor<false> tcm_accessor() & {
        no_meta("tcm_accessor");
        return TensorTcmAccessor<false>(soc_, numel_, dtype_);
    }

    Tensor &fill_(const Scalar &value) const;

    CoherencyEnforcer::Policy get_accessor_coherence_policy() const {
        return CoherencyEnforcer::Policy(neuron::detail::state_of(soc_).policy);
    }
    void set_accessor_coherence_policy(CoherencyEnforcer::Policy policy) const {
        neuron::detail::state_of(soc_).policy = policy;
    }

    // Internal (the generated wrapper and the operations).
    unsigned long long soc_addr() const { return soc_; }
    bool is_meta() const { return meta_; }
    const char *label() const { return label_; }
    void no_meta(const char *what) const {
        if (meta_) {
            neuron::detail::Msg m;
            m.s("customop: ").s(what).s(" on ").s(label_).s(": a shape function sees shapes, not data");
            neuron::detail::fail(m);
        }
        if (!defined()) {
            neuron::detail::Msg m;
            m.s("customop: ").s(what).s(" on an undefined tensor");
            neuron::detail::fail(m);
        }
    }

  private:
    size_t wrap(int64_t d) const {
        int64_t r = int64_t(rank_);
        if (d < -r || d >= r) {
            neuron::detail::Msg m;
            m.s("customop: dimension ").i(d).s(" out of range for a tensor of rank ").i(r);
            neuron::detail::fail(m);
        }
        return size_t(d < 0 ? d + r : d);
    }
    template <typename T> void data_access(const char *what) const {
        no_meta(what);
        if (c10::CppTypeToScalarType<T>::value != dtype_) {
            neuron::detail::Msg m;
            m.s("customop: ").s(what).s("<").s(c10::toString(c10::CppTypeToScalarType<T>::value)).s("> on ").s(label_).s(", a tensor of ").s(c10::toString(dtype_));
            neuron::detail::fail(m);
        }
    }
    template <typename T> void standard_access(size_t n) const {
        data_access<T>("accessor");
        if (n != rank_) {
            neuron::detail::Msg m;
            m.s("customop: accessor with ").i((long long)n).s(" dimensions on ").s(label_).s(", a tensor of rank ").i((long long)rank_);
            neuron::detail::fail(m);
        }
        neuron::detail::StorageState &st = neuron::detail::state_of(soc_);
        if (st.readers > 0 || st.writers > 0)
            neuron::detail::incoherent(st, "accessor() used while a stream accessor is open on the same tensor");
        multicore_check("accessor");
    }
    void multicore_check(const char *what) const {
        if (get_cpu_count() <= 1) return;
        neuron::detail::StorageState &st = neuron::detail::state_of(soc_);
        if (st.warned) return;
        st.warned = true;
        neuron::detail::Msg m;
        m.s("customop: warning: kernel '").s(neuron::detail::current_kernel()).s("': ").s(what).s("() on ").s(label_).s(" while ").i(get_cpu_count()).s(" cores run: standard and stream accessors race in multicore mode; use tcm_accessor()");
        neuron::detail::warn(m);
    }

    unsigned long long soc_ = 0;
    ScalarType dtype_ = ScalarType::Undefined;
    IntArrayRef sizes_, strides_;
    size_t rank_ = 0;
    int64_t numel_ = 0;
    bool meta_ = true;
    const char *label_ = "an undefined tensor";
};

namespace neuron { namespace detail {

/// The sizes in a descriptor.
inline IntArrayRef desc_sizes(const NeuronArgTensor *d) {
    int64_t s[8];
    size_t r = 0;
    for (int k = 0; k < 8; k++) {
        int64_t v = d->framework_shape_type == 2 ? (k < 4 ? int64_t(d->framework_shape.inline_shape4d[k]) : 0)
                                                 : int64_t(d->framework_shape.inline_shape8d[k]);
        if (v == 0) break;
        s[r++] = v;
    }
    return IntArrayRef(s, r);
}

inline const char *arg_label(int i) {
    static const char *labels[] = {"argument 0", "argument 1", "argument 2", "argument 3", "argument 4",
                                   "argument 5", "argument 6", "argument 7", "argument 8", "argument 9"};
    return i >= 0 && i < 10 ? labels[i] : "an argument";
}

/// A launch argument or the destination as a tensor (data in device memory).
inline Tensor from_desc(const NeuronArgTensor *d, const char *label) {
    return Tensor(customop_tensor_soc_addr(d), c10::fromIsa(d->dtype), desc_sizes(d), false, label);
}

/// A shape function's view of an argument (dtype and shape only).
inline Tensor meta_from_desc(const NeuronArgTensor *d, const char *label) {
    return Tensor(0, c10::fromIsa(d->dtype), desc_sizes(d), true, label);
}

/// A descriptor for `t` (HBM), to hand a returned tensor to the runtime.
inline NeuronArgTensor to_desc(const Tensor &t) {
    NeuronArgTensor d;
    __builtin_memset(&d, 0, sizeof d);
    d.location = 2;
    d.dtype = c10::toIsa(t.scalar_type());
    bool small = true;
    for (int64_t k = 0; k < t.dim(); k++)
        if (t.size(k) > 65535) small = false;
    if (small) {
        d.framework_shape_type = 0;
        for (int64_t k = 0; k < t.dim(); k++) d.framework_shape.inline_shape8d[k] = uint16_t(t.size(k));
    } else {
        d.framework_shape_type = 2;
        for (int64_t k = 0; k < t.dim() && k < 4; k++) d.framework_shape.inline_shape4d[k] = uint32_t(t.size(k));
    }
    d.storage.hbm.addr = t.soc_addr();
    d.storage.hbm.num_elem = uint32_t(t.numel());
    return d;
}

/// Device memory for a new tensor, from the core's HBM heap (freed when the launch ends).
inline unsigned long long allocate(uint64_t bytes, const char *who) {
    unsigned long long soc = 0;
    if (bytes == 0) bytes = 1;
    if (bytes > 0xffffffffu || neuron_hbm_allocate(unsigned(bytes), &soc, 64) != 0 || soc == 0) {
        Msg m;
        m.s("customop: ").s(who).s(": cannot allocate ").i((long long)bytes).s(" bytes from core ").i(get_cpu_id())
            .s("'s HBM heap (").i((long long)extended_isa::sdk::hbm_scratch_size)
            .s(" bytes a core, for every tensor a launch makes; docs/decisions.md D74): write the result into get_dst_tensor() instead of returning a new tensor, or make fewer or smaller tensors");
        fail(m);
    }
    return soc;
}

/// The guide's shape rule (developer guide, "Implementing an operator"; the descriptor's
/// two inline forms): rank 1 to 8 with every dimension 1 to 65535, or rank 1 to 4 with
/// every dimension 1 to 4294967295; the element count fits the descriptor's 32 bits.
/// Returns the element count.
inline uint64_t check_shape(IntArrayRef sizes, const char *who) {
    if (sizes.size() == 0) {
        Msg m;
        m.s("customop: ").s(who).s(": tensors need at least one dimension (the guide: rank 1 to 8)");
        fail(m);
    }
    const uint64_t max_numel = 0xffffffffull;
    uint64_t numel = 1;
    int64_t big = 0;
    for (size_t k = 0; k < sizes.size(); k++) {
        int64_t d = sizes[k];
        if (d < 1) {
            Msg m;
            m.s("customop: ").s(who).s(": dimension ").i((long long)k).s(" is ").i(d).s("; every dimension is at least 1 (no empty tensors on the device)");
            fail(m);
        }
        big = d > big ? d : big;
        // Saturates just past the limit (both factors stay below 2^32, so no overflow).
        numel = numel > max_numel || uint64_t(d) > max_numel ? max_numel + 1 : numel * uint64_t(d);
    }
    bool small = big <= 65535, large = sizes.size() <= 4 && uint64_t(big) <= max_numel;
    if (!small && !large) {
        Msg m;
        m.s("customop: ").s(who).s(": a shape of rank ").i((long long)sizes.size()).s(" with a dimension of ").i(big)
            .s(" breaks the guide's limit: up to 8 dimensions of at most 65535, or up to 4 of at most 4294967295 (developer guide, 'Implementing an operator')");
        fail(m);
    }
    if (numel > max_numel) {
        Msg m;
        m.s("customop: ").s(who).s(": more than 4294967295 elements (a tensor descriptor counts them in 32 bits)");
        fail(m);
    }
    return numel;
}

/// A new tensor of `sizes` and `opts`: metadata in a shape function, device memory in a
/// kernel. Sizes are checked against the guide's shape rule.
inline Tensor make(IntArrayRef sizes, TensorOptions opts, const char *who) {
    ScalarType t = opts.dtype();
    if (c10::elementSize(t) == 0) {
        Msg m;
        m.s("customop: ").s(who).s(": unsupported dtype");
        fail(m);
    }
    uint64_t numel = check_shape(sizes, who);
    if (shape_mode()) return Tensor(0, t, sizes, true, "a tensor from a factory function");
    unsigned long long soc = allocate(numel * c10::elementSize(t), who);
    return Tensor(soc, t, sizes, false, "a tensor from a factory function");
}

// ---- element-wise machinery ----

/// Calls `f(T())` with T the C++ type of dtype `t`.
template <typename F> inline void dispatch(ScalarType t, F &&f) {
    switch (t) {
        case ScalarType::Byte: f(uint8_t()); break;
        case ScalarType::Char: f(int8_t()); break;
        case ScalarType::Short: f(int16_t()); break;
        case ScalarType::Int: f(int32_t()); break;
        case ScalarType::Long: f(int64_t()); break;
        case ScalarType::Half: f(c10::Half()); break;
        case ScalarType::Float: f(float()); break;
        case ScalarType::BFloat16: f(c10::BFloat16()); break;
        default: fail("customop: unsupported dtype");
    }
}

/// The type an element of T is computed in: float for the float types (Half and BFloat16
/// round to their type after each operation, as c10 computes them), int64 for integers.
template <typename T> struct Compute { typedef int64_t type; };
template <> struct Compute<float> { typedef float type; };
template <> struct Compute<c10::Half> { typedef float type; };
template <> struct Compute<c10::BFloat16> { typedef float type; };
template <typename T> inline typename Compute<T>::type up(T v) { return typename Compute<T>::type(v); }
template <typename T> inline float as_float(T v) { return float(v); }

/// Operands are staged through local buffers of CH elements.
constexpr size_t CH = 128;

template <typename T> struct Chunk {
    T v[CH];
    void load(const Tensor &t, size_t at, size_t n) {
        neuron_memcpy(static_cast<void *>(v), t.soc_addr() + at * sizeof(T), unsigned(n * sizeof(T)));
    }
    void store(const Tensor &t, size_t at, size_t n) {
        neuron_memcpy(t.soc_addr() + at * sizeof(T), static_cast<void *>(v), unsigned(n * sizeof(T)));
    }
};

/// out[i] = f(a[i]); a of TI, out of TO.
template <typename TI, typename TO, typename F> void map1(const Tensor &out, const Tensor &a, F f) {
    Chunk<TI> x;
    Chunk<TO> y;
    size_t n = size_t(a.numel());
    for (size_t at = 0; at < n; at += CH) {
        size_t k = n - at < CH ? n - at : CH;
        x.load(a, at, k);
        for (size_t i = 0; i < k; i++) y.v[i] = TO(f(x.v[i]));
        y.store(out, at, k);
    }
}

/// out[i] = f(a[i], b[i]), all of T.
template <typename T, typename F> void map2(const Tensor &out, const Tensor &a, const Tensor &b, F f) {
    Chunk<T> x, z, y;
    size_t n = size_t(a.numel());
    for (size_t at = 0; at < n; at += CH) {
        size_t k = n - at < CH ? n - at : CH;
        x.load(a, at, k);
        z.load(b, at, k);
        for (size_t i = 0; i < k; i++) y.v[i] = T(f(x.v[i], z.v[i]));
        y.store(out, at, k);
    }
}

inline void same_shape(const char *op, const Tensor &a, const Tensor &b) {
    if (!a.sizes().equals(b.sizes())) {
        Msg m;
        m.s("customop: ").s(op).s(": shapes differ (").s(a.label()).s(": rank ").i(a.dim()).s(", ").i(a.numel()).s(" elements; ").s(b.label()).s(": rank ").i(b.dim()).s(", ").i(b.numel()).s(" elements); no broadcasting");
        fail(m);
    }
}

inline void same_dtype(const char *op, const Tensor &a, const Tensor &b) {
    if (a.scalar_type() != b.scalar_type()) {
        Msg m;
        m.s("customop: ").s(op).s(": dtypes differ (").s(c10::toString(a.scalar_type())).s(" and ").s(c10::toString(b.scalar_type())).s("); no type promotion between tensors");
        fail(m);
    }
}

inline void integral_only(const char *op, const Tensor &t) {
    if (!c10::isIntegralType(t.scalar_type())) {
        Msg m;
        m.s("customop: ").s(op).s(": the input tensors must be of integral types, got ").s(c10::toString(t.scalar_type()));
        fail(m);
    }
}

inline void floating_result(const char *op, const Tensor &r) {
    if (!c10::isFloatingType(r.scalar_type())) {
        Msg m;
        m.s("customop: ").s(op).s(": the result is floating point and cannot be stored in a tensor of ").s(c10::toString(r.scalar_type()));
        fail(m);
    }
}

inline Tensor result_like(const Tensor &t, ScalarType dtype, const char *op) {
    return make(t.sizes(), TensorOptions(dtype), op);
}

inline ScalarType float_result_of(ScalarType t) { return c10::isFloatingType(t) ? t : ScalarType::Float; }

/// The dtype of `tensor op scalar`: a floating scalar makes an integral tensor's result Float.
inline ScalarType ts_dtype(const Tensor &t, const Scalar &s) {
    return (c10::isIntegralType(t.scalar_type()) && s.isFloatingPoint()) ? ScalarType::Float : t.scalar_type();
}

/// A scalar in compute type C.
template <typename C> inline C scalar_as(const Scalar &s) {
    if (neuron::detail::is_float<C>::value) return C(s.toFloat());
    return C(s.toLong());
}

// Math on float (the compiler's builtins: libm on the host, the device's math functions).
inline float m_sin(float v) { return __builtin_sinf(v); }
inline float m_cos(float v) { return __builtin_cosf(v); }
inline float m_tan(float v) { return __builtin_tanf(v); }
inline float m_log(float v) { return __builtin_logf(v); }
inline float m_log2(float v) { return __builtin_log2f(v); }
inline float m_log10(float v) { return __builtin_log10f(v); }
inline float m_exp(float v) { return __builtin_expf(v); }

inline int64_t ipow(int64_t base, int64_t exp) {
    if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exp & 1) ? -1 : 1;
        fail("customop: pow: integers to negative integer powers are not allowed");
    }
    uint64_t r = 1, b = uint64_t(base);
    while (exp) {
        if (exp & 1) r *= b;
        b *= b;
        exp >>= 1;
    }
    return int64_t(r);
}

/// A bitwise operation on integral compute values (float types never reach it: checked).
template <typename C, typename F> inline C bitop(C a, C b, F f) {
    if constexpr (is_float<C>::value) {
        (void)b;
        (void)f;
        return a;
    } else {
        return C(f(a, b));
    }
}

/// pow in compute type C.
template <typename C> inline C cpow(C a, C b) {
    if constexpr (neuron::detail::is_float<C>::value) return __builtin_powf(a, b);
    else return C(ipow(int64_t(a), int64_t(b)));
}

/// result = f(self) for a float function (integral inputs converted; a float result).
template <typename FF> Tensor &unary_float(const char *op, Tensor &result, const Tensor &self, FF f) {
    self.no_meta(op);
    result.no_meta(op);
    same_shape(op, result, self);
    floating_result(op, result);
    dispatch(result.scalar_type(), [&](auto out_tag) {
        typedef decltype(out_tag) TO;
        dispatch(self.scalar_type(), [&](auto in_tag) {
            typedef decltype(in_tag) TI;
            map1<TI, TO>(result, self, [&](TI v) { return f(as_float(v)); });
        });
    });
    return result;
}

/// result = f(self) in self's compute type (dtype kept).
template <typename F> Tensor &unary_same(const char *op, Tensor &result, const Tensor &self, F f) {
    self.no_meta(op);
    result.no_meta(op);
    same_shape(op, result, self);
    same_dtype(op, result, self);
    dispatch(self.scalar_type(), [&](auto tag) {
        typedef decltype(tag) T;
        map1<T, T>(result, self, [&](T v) { return T(f(up(v))); });
    });
    return result;
}

/// result = f(self, s) for a tensor and a scalar, in self's compute type; an integral
/// tensor with a Float result is computed in float.
template <typename F> Tensor &tensor_scalar(const char *op, Tensor &result, const Tensor &self, const Scalar &s, F f) {
    self.no_meta(op);
    result.no_meta(op);
    same_shape(op, result, self);
    if (result.scalar_type() != self.scalar_type()) {
        if (result.scalar_type() != ScalarType::Float || !c10::isIntegralType(self.scalar_type())) {
            Msg m;
            m.s("customop: ").s(op).s(": a ").s(c10::toString(self.scalar_type())).s(" tensor gives no ").s(c10::toString(result.scalar_type())).s(" result");
            fail(m);
        }
        float sv = s.toFloat();
        dispatch(self.scalar_type(), [&](auto tag) {
            typedef decltype(tag) TI;
            map1<TI, float>(result, self, [&](TI v) { return f(as_float(v), sv); });
        });
        return result;
    }
    dispatch(self.scalar_type(), [&](auto tag) {
        typedef decltype(tag) T;
        typedef typename Compute<T>::type C;
        C sv = scalar_as<C>(s);
        map1<T, T>(result, self, [&](T v) { return f(up(v), sv); });
    });
    return result;
}

/// result = f(self, other) for same-shape, same-dtype tensors.
template <typename F> Tensor &tensor_tensor(const char *op, Tensor &result, const Tensor &self, const Tensor &other, F f) {
    self.no_meta(op);
    other.no_meta(op);
    result.no_meta(op);
    same_shape(op, self, other);
    same_shape(op, result, self);
    same_dtype(op, self, other);
    same_dtype(op, result, self);
    dispatch(self.scalar_type(), [&](auto tag) {
        typedef decltype(tag) T;
        map2<T>(result, self, other, [&](T a, T b) { return f(up(a), up(b)); });
    });
    return result;
}

}}  // namespace neuron::detail

// ---- factory functions ----

inline Tensor &Tensor::fill_(const Scalar &value) const {
    if (!is_meta()) {
        no_meta("fill_");
        neuron::detail::dispatch(dtype_, [&](auto tag) {
            typedef decltype(tag) T;
            neuron::detail::Chunk<T> c;
            T v = T(neuron::detail::scalar_as<typename neuron::detail::Compute<T>::type>(value));
            for (size_t i = 0; i < neuron::detail::CH; i++) c.v[i] = v;
            size_t n = size_t(numel_);
            for (size_t at = 0; at < n; at += neuron::detail::CH)
                c.store(*this, at, n - at < neuron::detail::CH ? n - at : neuron::detail::CH);
        });
    }
    return const_cast<Tensor &>(*this);
}

inline Tensor empty(IntArrayRef size, TensorOptions options) { return neuron::detail::make(size, options, "empty"); }
inline Tensor full(IntArrayRef size, const Scalar &fill_value, TensorOptions options) {
    Tensor t = neuron::detail::make(size, options, "full");
    t.fill_(fill_value);
    return t;
}
inline Tensor zeros(IntArrayRef size, TensorOptions options) {
    Tensor t = neuron::detail::make(size, options, "zeros");
    t.fill_(0);
    return t;
}
inline Tensor ones(IntArrayRef size, TensorOptions options) {
    Tensor t = neuron::detail::make(size, options, "ones");
    t.fill_(1);
    return t;
}
inline Tensor eye(int64_t n, int64_t m, TensorOptions options) {
    Tensor t = neuron::detail::make(IntArrayRef({n, m}), options, "eye");
    if (t.is_meta()) return t;
    t.fill_(0);
    neuron::detail::dispatch(t.scalar_type(), [&](auto tag) {
        typedef decltype(tag) T;
        T one = T(typename neuron::detail::Compute<T>::type(1));
        for (int64_t i = 0; i < (n < m ? n : m); i++)
            neuron_memcpy(t.soc_addr() + uint64_t(i * m + i) * sizeof(T), static_cast<void *>(&one), sizeof(T));
    });
    return t;
}

// ---- tensor operations ----
//
// `_out` forms write `result` (its shape must match; no broadcasting) and return it; the
// returning forms allocate the result. Tensor-tensor operands have one dtype (there is no
// type promotion between tensors); a floating scalar with an integral tensor, or a float
// function of an integral tensor, gives a Float result.

#define NRT_UNARY_FLOAT(name, fn)                                                                      \
    inline Tensor &name##_out(Tensor &result, const Tensor &self) {                                    \
        return neuron::detail::unary_float(#name "_out", result, self, [](float v) { return fn(v); }); \
    }                                                                                                  \
    inline Tensor name(const Tensor &self) {                                                           \
        Tensor r = neuron::detail::result_like(self, neuron::detail::float_result_of(self.scalar_type()), #name); \
        if (r.is_meta()) return r;                                                                     \
        return name##_out(r, self);                                                                    \
    }
NRT_UNARY_FLOAT(sin, neuron::detail::m_sin)
NRT_UNARY_FLOAT(cos, neuron::detail::m_cos)
NRT_UNARY_FLOAT(tan, neuron::detail::m_tan)
NRT_UNARY_FLOAT(log, neuron::detail::m_log)
NRT_UNARY_FLOAT(log2, neuron::detail::m_log2)
NRT_UNARY_FLOAT(log10, neuron::detail::m_log10)
NRT_UNARY_FLOAT(exp, neuron::detail::m_exp)
#undef NRT_UNARY_FLOAT

// abs, ceil and floor keep the dtype (integers: abs wraps as c10's does; ceil and floor
// are the identity).
#define NRT_UNARY_SAME(name, EXPR)                                                                     \
    inline Tensor &name##_out(Tensor &result, const Tensor &self) {                                    \
        return neuron::detail::unary_same(#name "_out", result, self, [](auto v) {                     \
            typedef decltype(v) C;                                                                     \
            if constexpr (neuron::detail::is_float<C>::value) return C(EXPR);                           \
            else return C(name##_int(v));                                                              \
        });                                                                                            \
    }                                                                                                  \
    inline Tensor name(const Tensor &self) {                                                           \
        Tensor r = neuron::detail::result_like(self, self.scalar_type(), #name);                       \
        if (r.is_meta()) return r;                                                                     \
        return name##_out(r, self);                                                                    \
    }
namespace neuron { namespace detail {
inline int64_t abs_int(int64_t v) { return v < 0 ? int64_t(0 - uint64_t(v)) : v; }
inline int64_t ceil_int(int64_t v) { return v; }
inline int64_t floor_int(int64_t v) { return v; }
}}  // namespace neuron::detail
using neuron::detail::abs_int;
using neuron::detail::ceil_int;
using neuron::detail::floor_int;
NRT_UNARY_SAME(abs, __builtin_fabsf(v))
NRT_UNARY_SAME(ceil, __builtin_ceilf(v))
NRT_UNARY_SAME(floor, __builtin_floorf(v))
#undef NRT_UNARY_SAME

/// add / sub: out = self +- alpha * other; mul.
#define NRT_ARITH(name, EXPR, ALPHA_DECL, ALPHA_PARAM, ALPHA_ARG, ALPHA_FLOAT)                              \
    inline Tensor &name##_out(Tensor &result, const Tensor &self, const Scalar &other ALPHA_DECL) {           \
        return neuron::detail::tensor_scalar(#name "_out", result, self, other, [&](auto a, auto b) {          \
            typedef decltype(a) C;                                                                         \
            C al = neuron::detail::scalar_as<C>(ALPHA_ARG);                                                \
            (void)al;                                                                                      \
            return C(EXPR);                                                                                \
        });                                                                                                \
    }                                                                                                      \
    inline Tensor &name##_out(Tensor &result, const Tensor &self, const Tensor &other ALPHA_DECL) {           \
        return neuron::detail::tensor_tensor(#name "_out", result, self, other, [&](auto a, auto b) {          \
            typedef decltype(a) C;                                                                         \
            C al = neuron::detail::scalar_as<C>(ALPHA_ARG);                                                \
            (void)al;                                                                                      \
            return C(EXPR);                                                                                \
        });                                                                                                \
    }                                                                                                      \
    inline Tensor name(const Tensor &self, const Scalar &other ALPHA_DECL) {                                 \
        ScalarType t = neuron::detail::ts_dtype(self, other);                                              \
        if (c10::isIntegralType(t) && (ALPHA_FLOAT)) t = ScalarType::Float;                                \
        Tensor r = neuron::detail::result_like(self, t, #name);                                            \
        if (r.is_meta()) return r;                                                                         \
        return name##_out(r, self, other ALPHA_PARAM);                                                     \
    }                                                                                                      \
    inline Tensor name(const Tensor &self, const Tensor &other ALPHA_DECL) {                                 \
        Tensor r = neuron::detail::result_like(self, self.scalar_type(), #name);                           \
        if (r.is_meta()) return r;                                                                         \
        return name##_out(r, self, other ALPHA_PARAM);                                                     \
    }
#define NRT_COMMA ,
NRT_ARITH(add, a + C(al * b), NRT_COMMA const Scalar &alpha = 1, NRT_COMMA alpha, alpha, alpha.isFloatingPoint())
NRT_ARITH(sub, a - C(al * b), NRT_COMMA const Scalar &alpha = 1, NRT_COMMA alpha, alpha, alpha.isFloatingPoint())
NRT_ARITH(mul, a * b, , , Scalar(1), false)
#undef NRT_ARITH
#undef NRT_COMMA

/// div: true division. Integral inputs give a Float result; `div_out` into an integral
/// tensor is refused (c10 refuses to cast the Float quotient too).
inline Tensor &div_out(Tensor &result, const Tensor &self, const Scalar &other) {
    neuron::detail::floating_result("div_out", result);
    if (result.scalar_type() != self.scalar_type()) {
        // Integral / scalar into Float.
        return neuron::detail::tensor_scalar("div_out", result, self, Scalar(other.toDouble()), [](auto a, auto b) { return a / b; });
    }
    return neuron::detail::tensor_scalar("div_out", result, self, other, [](auto a, auto b) { return a / b; });
}
inline Tensor &div_out(Tensor &result, const Tensor &self, const Tensor &other) {
    neuron::detail::floating_result("div_out", result);
    if (result.scalar_type() != self.scalar_type() && c10::isIntegralType(self.scalar_type())) {
        neuron::detail::same_dtype("div_out", self, other);
        neuron::detail::same_shape("div_out", self, other);
        Tensor b = neuron::detail::result_like(other, ScalarType::Float, "div_out");
        neuron::detail::dispatch(self.scalar_type(), [&](auto tag) {
            typedef decltype(tag) TI;
            neuron::detail::map1<TI, float>(result, self, [](TI v) { return float(v); });
            neuron::detail::map1<TI, float>(b, other, [](TI v) { return float(v); });
        });
        return neuron::detail::tensor_tensor("div_out", result, result, b, [](auto x, auto y) { return x / y; });
    }
    return neuron::detail::tensor_tensor("div_out", result, self, other, [](auto a, auto b) { return a / b; });
}
inline Tensor div(const Tensor &self, const Scalar &other) {
    Tensor r = neuron::detail::result_like(self, neuron::detail::float_result_of(self.scalar_type()), "div");
    if (r.is_meta()) return r;
    return div_out(r, self, other);
}
inline Tensor div(const Tensor &self, const Tensor &other) {
    Tensor r = neuron::detail::result_like(self, neuron::detail::float_result_of(self.scalar_type()), "div");
    if (r.is_meta()) return r;
    return div_out(r, self, other);
}

/// pow: tensor ** scalar, scalar ** tensor, tensor ** tensor.
inline Tensor &pow_out(Tensor &result, const Tensor &self, const Scalar &exponent) {
    return neuron::detail::tensor_scalar("pow_out", result, self, exponent, [](auto a, auto b) { return neuron::detail::cpow(a, decltype(a)(b)); });
}
inline Tensor &pow_out(Tensor &result, const Tensor &self, const Tensor &exponent) {
    return neuron::detail::tensor_tensor("pow_out", result, self, exponent, [](auto a, auto b) { return neuron::detail::cpow(a, b); });
}
inline Tensor &pow_out(Tensor &result, const Scalar &self, const Tensor &exponent) {
    return neuron::detail::tensor_scalar("pow_out", result, exponent, self, [](auto e, auto base) { return neuron::detail::cpow(decltype(e)(base), e); });
}
inline Tensor pow(const Tensor &self, const Scalar &exponent) {
    Tensor r = neuron::detail::result_like(self, neuron::detail::ts_dtype(self, exponent), "pow");
    if (r.is_meta()) return r;
    return pow_out(r, self, exponent);
}
inline Tensor pow(const Scalar &self, const Tensor &exponent) {
    Tensor r = neuron::detail::result_like(exponent, neuron::detail::ts_dtype(exponent, self), "pow");
    if (r.is_meta()) return r;
    return pow_out(r, self, exponent);
}
inline Tensor pow(const Tensor &self, const Tensor &exponent) {
    Tensor r = neuron::detail::result_like(self, self.scalar_type(), "pow");
    if (r.is_meta()) return r;
    return pow_out(r, self, exponent);
}

/// clamp into [minval, maxval] (in the tensor's compute type; NaN stays NaN).
inline Tensor &clamp_out(Tensor &result, const Tensor &self, const Scalar &minval, const Scalar &maxval) {
    return neuron::detail::tensor_scalar("clamp_out", result, self, minval, [&](auto a, auto lo) {
        typedef decltype(a) C;
        C hi = neuron::detail::scalar_as<C>(maxval);
        if (a != a) return a;
        C v = a < lo ? lo : a;
        return v > hi ? hi : v;
    });
}
inline Tensor clamp(const Tensor &self, const Scalar &minval, const Scalar &maxval) {
    ScalarType t = neuron::detail::ts_dtype(self, minval);
    if (c10::isIntegralType(t) && maxval.isFloatingPoint()) t = ScalarType::Float;
    Tensor r = neuron::detail::result_like(self, t, "clamp");
    if (r.is_meta()) return r;
    return clamp_out(r, self, minval, maxval);
}

/// Bitwise operations: integral tensors only; a scalar is cast to the tensor's dtype.
#define NRT_BITWISE(name, OP)                                                                          \
    inline Tensor &name##_out(Tensor &result, const Tensor &self, const Tensor &other) {                \
        neuron::detail::integral_only(#name "_out", self);                                             \
        return neuron::detail::tensor_tensor(#name "_out", result, self, other, [](auto a, auto b) { return neuron::detail::bitop(a, b, [](auto x, auto y) { return x OP y; }); }); \
    }                                                                                                  \
    inline Tensor &name##_out(Tensor &result, const Tensor &self, const Scalar &other) {                \
        neuron::detail::integral_only(#name "_out", self);                                             \
        return neuron::detail::tensor_scalar(#name "_out", result, self, Scalar(other.toLong()), [](auto a, auto b) { return neuron::detail::bitop(a, decltype(a)(b), [](auto x, auto y) { return x OP y; }); }); \
    }                                                                                                  \
    inline Tensor &name##_out(Tensor &result, const Scalar &self, const Tensor &other) {                \
        return name##_out(result, other, self);                                                        \
    }                                                                                                  \
    inline Tensor name(const Tensor &self, const Tensor &other) {                                      \
        neuron::detail::integral_only(#name, self);                                                    \
        Tensor r = neuron::detail::result_like(self, self.scalar_type(), #name);                       \
        if (r.is_meta()) return r;                                                                     \
        return name##_out(r, self, other);                                                             \
    }                                                                                                  \
    inline Tensor name(const Tensor &self, const Scalar &other) {                                      \
        neuron::detail::integral_only(#name, self);                                                    \
        Tensor r = neuron::detail::result_like(self, self.scalar_type(), #name);                       \
        if (r.is_meta()) return r;                                                                     \
        return name##_out(r, self, other);                                                             \
    }                                                                                                  \
    inline Tensor name(const Scalar &self, const Tensor &other) { return name(other, self); }
NRT_BITWISE(bitwise_and, &)
NRT_BITWISE(bitwise_or, |)
#undef NRT_BITWISE

inline Tensor &bitwise_not_out(Tensor &result, const Tensor &self) {
    neuron::detail::integral_only("bitwise_not_out", self);
    return neuron::detail::unary_same("bitwise_not_out", result, self, [](auto a) {
        return neuron::detail::bitop(a, a, [](auto x, auto) { return ~x; });
    });
}
/// The guide lists `bitwise_not(result, self)`; the one-argument form is here too.
inline Tensor bitwise_not(const Tensor &self) {
    neuron::detail::integral_only("bitwise_not", self);
    Tensor r = neuron::detail::result_like(self, self.scalar_type(), "bitwise_not");
    if (r.is_meta()) return r;
    return bitwise_not_out(r, self);
}
inline Tensor bitwise_not(Tensor &result, const Tensor &self) { return bitwise_not_out(result, self); }

}  // namespace torch

namespace at {
using torch::Tensor;
using c10::Scalar;
using c10::ScalarType;
}  // namespace at

/// The Custom C++ operator's destination (the output): writing it directly saves the copy
/// of a returned tensor, and is how multicore kernels return their result.
inline torch::Tensor get_dst_tensor() {
    torch::neuron::detail::dst_taken() = true;
    return torch::neuron::detail::from_desc(customop_dst_tensor_desc(), "the output");
}
