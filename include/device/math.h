/* math.h for device objects (freestanding Xtensa): libneuroncustomop.a defines these (from
 * the libm crate, musl's libm), and a host build of an op links the same code from the host
 * archive, so both builds compute the same bytes. */
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
float sinf(float), cosf(float), tanf(float), asinf(float), acosf(float), atanf(float);
float sinhf(float), coshf(float), tanhf(float), expf(float), exp2f(float), expm1f(float);
float logf(float), log2f(float), log10f(float), log1pf(float), sqrtf(float), cbrtf(float);
float fabsf(float), ceilf(float), floorf(float), roundf(float), truncf(float), erff(float);
float powf(float, float), atan2f(float, float), fmodf(float, float), fmaxf(float, float);
float fminf(float, float), hypotf(float, float), copysignf(float, float);
double sin(double), cos(double), tan(double), asin(double), acos(double), atan(double);
double sinh(double), cosh(double), tanh(double), exp(double), exp2(double), expm1(double);
double log(double), log2(double), log10(double), log1p(double), sqrt(double), cbrt(double);
double fabs(double), ceil(double), floor(double), round(double), trunc(double), erf(double);
double pow(double, double), atan2(double, double), fmod(double, double), fmax(double, double);
double fmin(double, double), hypot(double, double), copysign(double, double);
/* GNU: GCC turns sin and cos of one argument into these. */
void sincosf(float, float *, float *);
void sincos(double, double *, double *);
/* Classification (C99), from GCC's built-ins; <cmath> replaces them with functions. */
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define isnormal(x) __builtin_isnormal(x)
#define signbit(x) __builtin_signbit(x)
#define fpclassify(x) __builtin_fpclassify(FP_NAN, FP_INFINITE, FP_NORMAL, FP_SUBNORMAL, FP_ZERO, x)
/* The constants glibc's math.h gives (g++ defines _GNU_SOURCE, so host builds see them). */
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#define HUGE_VALF __builtin_huge_valf()
#define HUGE_VAL __builtin_huge_val()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#ifdef __cplusplus
}
#endif
