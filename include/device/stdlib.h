/* stdlib.h for device objects (freestanding Xtensa, no newlib): declarations of what the
 * device runtime provides or will provide (malloc over the dataram heap is issue #12's). */
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
#ifdef __cplusplus
}
#endif
