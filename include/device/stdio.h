/* stdio.h for device objects built by `nrt-pool build` (freestanding Xtensa, no newlib):
 * the device libneuroncustomop.a defines these; printf output goes to the Pool stdio ring
 * (fd 1), as the vendor's does. Conversions: flags -+ #0, width/precision (also *),
 * hh h l ll j z t L, d i u o x X c s p f F e E g G %%; %n writes nothing
 * (docs/decisions.md D52). On the host, ops use the system's stdio. */
#pragma once
#include <stdarg.h>
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *fmt, va_list ap);
int snprintf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int vsnprintf(char *buf, size_t n, const char *fmt, va_list ap);
int sprintf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int vsprintf(char *buf, const char *fmt, va_list ap);
int puts(const char *s);
int putchar(int c);
/* Streams: stdout and stderr only (fd 1 and 2, as the host's stdio channel carries them). */
typedef struct __neuron_file FILE;
extern FILE *stdout;
extern FILE *stderr;
#define stdout stdout
#define stderr stderr
int fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int vfprintf(FILE *f, const char *fmt, va_list ap);
int fputs(const char *s, FILE *f);
int fputc(int c, FILE *f);
int putc(int c, FILE *f);
size_t fwrite(const void *p, size_t size, size_t n, FILE *f);
int fflush(FILE *f);
#define EOF (-1)
#ifdef __cplusplus
}
#endif
