/* math.h for device objects (freestanding Xtensa): libneuroncustomop.a defines these (from
 * the libm crate, musl's libm), and a host build of an op links the same code from the host
 * archive, so both builds compute the same bytes. */
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
/* float */
float acosf(float), asinf(float), atanf(float), cosf(float), sinf(float), tanf(float),
    acoshf(float), asinhf(float), atanhf(float), coshf(float), sinhf(float), tanhf(float),
    expf(float), exp2f(float), expm1f(float), logf(float), log10f(float), log1pf(float),
    log2f(float), logbf(float), cbrtf(float), sqrtf(float), erff(float), erfcf(float),
    lgammaf(float), tgammaf(float), ceilf(float), floorf(float), nearbyintf(float),
    rintf(float), roundf(float), truncf(float), fabsf(float);
float atan2f(float, float), fmodf(float, float), powf(float, float), hypotf(float, float),
    remainderf(float, float), copysignf(float, float), nextafterf(float, float), fdimf(float,
    float), fmaxf(float, float), fminf(float, float);
float fmaf(float, float, float), frexpf(float, int *), ldexpf(float, int), modff(float, float
    *), scalbnf(float, int), scalblnf(float, long), remquof(float, float, int *), nanf(const
    char *), nexttowardf(float, long double);
int ilogbf(float); long lrintf(float), lroundf(float); long long llrintf(float),
    llroundf(float);
/* double */
double acos(double), asin(double), atan(double), cos(double), sin(double), tan(double),
    acosh(double), asinh(double), atanh(double), cosh(double), sinh(double), tanh(double),
    exp(double), exp2(double), expm1(double), log(double), log10(double), log1p(double),
    log2(double), logb(double), cbrt(double), sqrt(double), erf(double), erfc(double),
    lgamma(double), tgamma(double), ceil(double), floor(double), nearbyint(double),
    rint(double), round(double), trunc(double), fabs(double);
double atan2(double, double), fmod(double, double), pow(double, double), hypot(double, double),
    remainder(double, double), copysign(double, double), nextafter(double, double),
    fdim(double, double), fmax(double, double), fmin(double, double);
double fma(double, double, double), frexp(double, int *), ldexp(double, int), modf(double,
    double *), scalbn(double, int), scalbln(double, long), remquo(double, double, int *),
    nan(const char *), nexttoward(double, long double);
int ilogb(double); long lrint(double), lround(double); long long llrint(double),
    llround(double);
/* long double (the same format as double on Xtensa) */
long double acosl(long double), asinl(long double), atanl(long double), cosl(long double),
    sinl(long double), tanl(long double), acoshl(long double), asinhl(long double), atanhl(long
    double), coshl(long double), sinhl(long double), tanhl(long double), expl(long double),
    exp2l(long double), expm1l(long double), logl(long double), log10l(long double),
    log1pl(long double), log2l(long double), logbl(long double), cbrtl(long double), sqrtl(long
    double), erfl(long double), erfcl(long double), lgammal(long double), tgammal(long double),
    ceill(long double), floorl(long double), nearbyintl(long double), rintl(long double),
    roundl(long double), truncl(long double), fabsl(long double);
long double atan2l(long double, long double), fmodl(long double, long double), powl(long
    double, long double), hypotl(long double, long double), remainderl(long double, long
    double), copysignl(long double, long double), nextafterl(long double, long double),
    fdiml(long double, long double), fmaxl(long double, long double), fminl(long double, long
    double);
long double fmal(long double, long double, long double), frexpl(long double, int *),
    ldexpl(long double, int), modfl(long double, long double *), scalbnl(long double, int),
    scalblnl(long double, long), remquol(long double, long double, int *), nanl(const char *),
    nexttowardl(long double, long double);
int ilogbl(long double); long lrintl(long double), lroundl(long double); long long llrintl(long
    double), llroundl(long double);
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
#define isgreater(x, y) __builtin_isgreater(x, y)
#define isgreaterequal(x, y) __builtin_isgreaterequal(x, y)
#define isless(x, y) __builtin_isless(x, y)
#define islessequal(x, y) __builtin_islessequal(x, y)
#define islessgreater(x, y) __builtin_islessgreater(x, y)
#define isunordered(x, y) __builtin_isunordered(x, y)
typedef float float_t;
typedef double double_t;
#define FP_ILOGB0 (-2147483647 - 1)
#define FP_ILOGBNAN (-2147483647 - 1)
#define MATH_ERRNO 1
#define MATH_ERREXCEPT 2
#define math_errhandling 0
#define HUGE_VALL __builtin_huge_vall()
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
