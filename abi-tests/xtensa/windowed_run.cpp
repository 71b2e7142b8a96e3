// Windowed code on QEMU: 30 nested calls (window overflows and underflows on a core with
// 32 physical registers), the device archive's string functions and its snprintf (GCC's
// va_list into the archive's formatter); exits 42 when all hold.
#include <stdio.h>
#include <string.h>
__attribute__((noinline)) int depth(int n) {
    volatile int pad[4] = {n, 1, 2, 3};
    if (n == 0) return 0;
    return pad[0] + depth(n - 1) + pad[1] - 1;
}
extern "C" int windowed_main(void) {
    if (depth(30) != 465) return 1;
    char buf[64];
    strcpy(buf, "-42 hi ");
    strncat(buf, "3.14 ff|", 5);
    if (strcmp(buf, "-42 hi 3.14 ") != 0) return 3;
    if (strstr(buf, "3.14") != buf + 7) return 4;
    if (strnlen(buf, 100) != 12 || strrchr(buf, '4') != buf + 10) return 5;
    char out[64];
    int n = snprintf(out, sizeof out, "%d %s %.2f %x|%5.1e|%lld", -42, "hi", 3.14159, 255u,
                     12345.678, -9000000000LL);
    if (n != (int)strlen(out)) return 6;
    if (strcmp(out, "-42 hi 3.14 ff|1.2e+04|-9000000000") != 0) return 7;
    char small[8];
    if (snprintf(small, sizeof small, "%s", "truncated") != 9 || strcmp(small, "truncat") != 0)
        return 8;
    return 42;
}
typedef int (*launcher_t)();
int get_func_cnt() { return 0; }
const char *get_func_name(int) { return ""; }
launcher_t get_func_ptr(int) { return nullptr; }
