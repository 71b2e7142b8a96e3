/* The printf family's variadic entry points on Xtensa (D54): GCC reads the arguments with
   its own va_arg, and the formatting is the archive's (customop_vformat, Rust), which asks
   for each argument through the readers below. Built windowed into libneuroncustomop.a by
   build-archive.sh. */
#include <stdarg.h>
#include <stddef.h>

struct customop_arg_readers {
    va_list *ctx;
    int (*int_arg)(va_list *);
    long long (*long_long_arg)(va_list *);
    double (*double_arg)(va_list *);
    const char *(*pointer_arg)(va_list *);
};

int customop_vformat(char *buf, size_t size, const char *format,
                     const struct customop_arg_readers *readers);

static int int_arg(va_list *ap) { return va_arg(*ap, int); }
static long long long_long_arg(va_list *ap) { return va_arg(*ap, long long); }
static double double_arg(va_list *ap) { return va_arg(*ap, double); }
static const char *pointer_arg(va_list *ap) { return va_arg(*ap, const char *); }

static int format_into(char *buf, size_t size, const char *format, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    struct customop_arg_readers r = {&copy, int_arg, long_long_arg, double_arg, pointer_arg};
    int n = customop_vformat(buf, size, format, &r);
    va_end(copy);
    return n;
}

int vprintf(const char *format, va_list ap) { return format_into(NULL, 0, format, ap); }

int printf(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = format_into(NULL, 0, format, ap);
    va_end(ap);
    return n;
}

int vsnprintf(char *buf, size_t size, const char *format, va_list ap) {
    /* NULL is customop_vformat's "to stdout": a zero-size count goes to a dummy byte. */
    char dummy;
    return format_into(buf ? buf : &dummy, buf ? size : 0, format, ap);
}

int snprintf(char *buf, size_t size, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(buf, size, format, ap);
    va_end(ap);
    return n;
}

int vsprintf(char *buf, const char *format, va_list ap) {
    return format_into(buf, (size_t)-1, format, ap);
}

int sprintf(char *buf, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = vsprintf(buf, format, ap);
    va_end(ap);
    return n;
}

/* Streams: stdout and stderr, each a host stdio channel (fd 1, fd 2). */
struct __neuron_file {
    int fd;
};
typedef struct __neuron_file FILE;
static FILE out_file = {1};
static FILE err_file = {2};
FILE *stdout = &out_file;
FILE *stderr = &err_file;

long customop_stdio_write(int fd, const void *buf, size_t len);
int fsync(int fd);
void *malloc(size_t n);
void free(void *p);

static int fd_of(FILE *f) { return f == &err_file ? 2 : 1; }

int vfprintf(FILE *f, const char *format, va_list ap) {
    char local[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(local, sizeof local, format, ap);
    if (n < 0) {
        va_end(again);
        return n;
    }
    const char *text = local;
    char *big = 0;
    if ((size_t)n >= sizeof local && (big = (char *)malloc((size_t)n + 1)) != 0) {
        vsnprintf(big, (size_t)n + 1, format, again);
        text = big;
    }
    va_end(again);
    size_t len = big || (size_t)n < sizeof local ? (size_t)n : sizeof local - 1;
    long w = customop_stdio_write(fd_of(f), text, len);
    free(big);
    return w < 0 ? -1 : n;
}

int fprintf(FILE *f, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = vfprintf(f, format, ap);
    va_end(ap);
    return n;
}

int fputs(const char *s, FILE *f) {
    size_t n = 0;
    while (s[n]) n++;
    return customop_stdio_write(fd_of(f), s, n) < 0 ? -1 : 0;
}

int fputc(int c, FILE *f) {
    unsigned char b = (unsigned char)c;
    return customop_stdio_write(fd_of(f), &b, 1) < 0 ? -1 : b;
}

int putc(int c, FILE *f) { return fputc(c, f); }

size_t fwrite(const void *p, size_t size, size_t n, FILE *f) {
    if (size == 0 || n == 0) return 0;
    if (n > (size_t)-1 / size) return 0;
    return customop_stdio_write(fd_of(f), p, size * n) < 0 ? 0 : n;
}

int fflush(FILE *f) {
    if (f) fsync(fd_of(f));
    return 0;
}
