/* stdlib.h for device objects (freestanding Xtensa, no newlib): what the device
 * libneuroncustomop.a defines (malloc and friends on the libc heap in the data scratch
 * area; abort reports a device fault). */
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
