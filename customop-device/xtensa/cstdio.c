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
