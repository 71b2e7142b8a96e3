// c10/core/Scalar.h: c10::Scalar, a number of either kind.
#pragma once

#include <stdint.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace c10 {

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

}  // namespace c10
