// ATen/Functions.h: the factory functions and every tensor operation the guide lists, in
// their `_out` and returning forms.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch {

namespace neuron { namespace detail {


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
