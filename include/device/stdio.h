/* stdio.h for device objects built by `nrt-pool build` (freestanding Xtensa, no newlib):
 * the device libneuroncustomop.a defines these; printf output goes to the Pool stdio ring
 * (fd 1), as the vendor's does. Conversions: flags -+ #0, width/precision (also *),
 * hh h l ll j z t L, d i u o x X c s p f F e E g G %%; %n writes nothing
 * (docs/decisions.md D52). On the host, ops use the system's stdio. */
#pragma once
#include <stdarg.h>
#include <stddef.h>
#include "neuron_unavailable.h"
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
#define BUFSIZ 1024
#define FILENAME_MAX 256
#define FOPEN_MAX 2
#define L_tmpnam 20
#define TMP_MAX 0
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
#define _IOFBF 0
#define _IOLBF 1
#define _IONBF 2
typedef long fpos_t;
/* Beyond the two output streams: no files, no input (neuron_unavailable.h). */
__NEURON_UNAVAILABLE("fopen") FILE *fopen(const char *path, const char *mode);
__NEURON_UNAVAILABLE("freopen") FILE *freopen(const char *path, const char *mode, FILE *f);
__NEURON_UNAVAILABLE("fclose") int fclose(FILE *f);
__NEURON_UNAVAILABLE("remove") int remove(const char *path);
__NEURON_UNAVAILABLE("rename") int rename(const char *from, const char *to);
__NEURON_UNAVAILABLE("tmpfile") FILE *tmpfile(void);
__NEURON_UNAVAILABLE("tmpnam") char *tmpnam(char *s);
__NEURON_UNAVAILABLE("setbuf") void setbuf(FILE *f, char *buf);
__NEURON_UNAVAILABLE("setvbuf") int setvbuf(FILE *f, char *buf, int mode, size_t size);
__NEURON_UNAVAILABLE("fscanf") int fscanf(FILE *f, const char *fmt, ...);
__NEURON_UNAVAILABLE("scanf") int scanf(const char *fmt, ...);
__NEURON_UNAVAILABLE("sscanf") int sscanf(const char *s, const char *fmt, ...);
__NEURON_UNAVAILABLE("vfscanf") int vfscanf(FILE *f, const char *fmt, va_list ap);
__NEURON_UNAVAILABLE("vscanf") int vscanf(const char *fmt, va_list ap);
__NEURON_UNAVAILABLE("vsscanf") int vsscanf(const char *s, const char *fmt, va_list ap);
__NEURON_UNAVAILABLE("fgetc") int fgetc(FILE *f);
__NEURON_UNAVAILABLE("fgets") char *fgets(char *s, int n, FILE *f);
__NEURON_UNAVAILABLE("getc") int getc(FILE *f);
__NEURON_UNAVAILABLE("getchar") int getchar(void);
__NEURON_UNAVAILABLE("ungetc") int ungetc(int c, FILE *f);
__NEURON_UNAVAILABLE("fread") size_t fread(void *p, size_t size, size_t n, FILE *f);
__NEURON_UNAVAILABLE("fgetpos") int fgetpos(FILE *f, fpos_t *pos);
__NEURON_UNAVAILABLE("fsetpos") int fsetpos(FILE *f, const fpos_t *pos);
__NEURON_UNAVAILABLE("fseek") int fseek(FILE *f, long off, int whence);
__NEURON_UNAVAILABLE("ftell") long ftell(FILE *f);
__NEURON_UNAVAILABLE("rewind") void rewind(FILE *f);
__NEURON_UNAVAILABLE("clearerr") void clearerr(FILE *f);
__NEURON_UNAVAILABLE("feof") int feof(FILE *f);
__NEURON_UNAVAILABLE("ferror") int ferror(FILE *f);
__NEURON_UNAVAILABLE("perror") void perror(const char *s);
#ifdef __cplusplus
}
#endif
