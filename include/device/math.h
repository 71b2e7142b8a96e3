/* math.h for device objects (freestanding Xtensa): declarations; the device libm is issue
 * #12's (kernels that call these compile, and link once the device archive has them). */
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
float sinf(float), cosf(float), tanf(float), expf(float), logf(float), log2f(float), log10f(float);
float powf(float, float), sqrtf(float), fabsf(float), ceilf(float), floorf(float), fmaxf(float, float), fminf(float, float);
double sin(double), cos(double), tan(double), exp(double), log(double), log2(double), log10(double);
double pow(double, double), sqrt(double), fabs(double), ceil(double), floor(double), fmax(double, double), fmin(double, double);
#ifdef __cplusplus
}
#endif
