/* stdlib.h for device objects (freestanding Xtensa, no newlib): what the device
 * libneuroncustomop.a defines (malloc and friends on the libc heap in the data scratch
 * area; abort reports a device fault; integer parsing, qsort and bsearch). */
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);
__attribute__((noreturn)) void abort(void);
int abs(int v);
long labs(long v);
long long llabs(long long v);
long strtol(const char *s, char **end, int base);
long long strtoll(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);
int atoi(const char *s);
long atol(const char *s);
long long atoll(const char *s);
void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void *bsearch(const void *key, const void *base, size_t n, size_t size,
              int (*cmp)(const void *, const void *));
#ifdef __cplusplus
}
#endif
