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
#define HUGE_VALF __builtin_huge_valf()
#define HUGE_VAL __builtin_huge_val()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#ifdef __cplusplus
}
#endif
