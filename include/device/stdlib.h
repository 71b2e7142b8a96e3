/* stdlib.h for device objects (freestanding Xtensa, no newlib): what the device
 * libneuroncustomop.a defines (malloc and friends on the libc heap in the data scratch
 * area; abort reports a device fault; number parsing, qsort, bsearch, div, rand), and,
 * for the C++ library, the rest of C's list, unavailable (neuron_unavailable.h). */
#pragma once
#include <stddef.h>
#include "neuron_unavailable.h"
#ifdef __cplusplus
extern "C" {
#endif
typedef struct { int quot, rem; } div_t;
typedef struct { long quot, rem; } ldiv_t;
typedef struct { long long quot, rem; } lldiv_t;
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647
#define MB_CUR_MAX ((size_t)1)
void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void *aligned_alloc(size_t align, size_t n);
int posix_memalign(void **p, size_t align, size_t n);
void free(void *p);
__attribute__((noreturn)) void abort(void);
int atexit(void (*f)(void));
int abs(int v);
long labs(long v);
long long llabs(long long v);
div_t div(int n, int d);
ldiv_t ldiv(long n, long d);
lldiv_t lldiv(long long n, long long d);
long strtol(const char *s, char **end, int base);
long long strtoll(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);
int atoi(const char *s);
long atol(const char *s);
long long atoll(const char *s);
/* Correctly rounded, decimal and hexadecimal, inf and nan (long double is double here). */
double strtod(const char *s, char **end);
float strtof(const char *s, char **end);
long double strtold(const char *s, char **end);
double atof(const char *s);
void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void *bsearch(const void *key, const void *base, size_t n, size_t size,
              int (*cmp)(const void *, const void *));
int rand(void);
void srand(unsigned seed);
/* A core has no environment: getenv finds nothing. */
char *getenv(const char *name);
__NEURON_UNAVAILABLE("exit") __attribute__((noreturn)) void exit(int status);
__NEURON_UNAVAILABLE("_Exit") __attribute__((noreturn)) void _Exit(int status);
__NEURON_UNAVAILABLE("quick_exit") __attribute__((noreturn)) void quick_exit(int status);
__NEURON_UNAVAILABLE("at_quick_exit") int at_quick_exit(void (*f)(void));
__NEURON_UNAVAILABLE("system") int system(const char *command);
__NEURON_UNAVAILABLE("mblen") int mblen(const char *s, size_t n);
__NEURON_UNAVAILABLE("mbtowc") int mbtowc(wchar_t *pwc, const char *s, size_t n);
__NEURON_UNAVAILABLE("wctomb") int wctomb(char *s, wchar_t wc);
__NEURON_UNAVAILABLE("mbstowcs") size_t mbstowcs(wchar_t *d, const char *s, size_t n);
__NEURON_UNAVAILABLE("wcstombs") size_t wcstombs(char *d, const wchar_t *s, size_t n);
#ifdef __cplusplus
}
#endif
