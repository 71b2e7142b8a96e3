/* stdio.h for device objects built by `nrt-pool build` (freestanding Xtensa, no newlib):
 * declarations only, so kernel sources that print compile unchanged. The open
 * libneuroncustomop.a does not define printf on the device yet (docs/decisions.md, "Device
 * stdio"); on the host the op build helper routes these through customop_stdio_write. */
#pragma once
#include <stdarg.h>
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
int printf(const char *fmt, ...);
int vprintf(const char *fmt, va_list ap);
int puts(const char *s);
int putchar(int c);
#ifdef __cplusplus
}
#endif
