// A device op using what the device libc provides (stdio, stdlib, string, C++ new/delete,
// virtual calls, a guarded static), linked into a Pool core image by abi-tests.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct Shape { virtual int area() const = 0; virtual ~Shape() {} };
struct Sq : Shape { int s; explicit Sq(int v) : s(v) {} int area() const override { return s * s; } };
static int counter() { static int c = strlen("abc"); return ++c; }
extern "C" int op_main(void) {
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%d %s %.2f %x", 42, "hi", 3.14159, 255u);
    printf("%s (%d)\n", buf, n);
    char *p = (char *)calloc(4, 8);
    strcpy(p, "needle");
    Shape *sh = new Sq(7);
    int a = sh->area();
    delete sh;
    int r = strcmp(p, "needle") == 0 && strstr("haystack needle", p) != nullptr ? a + counter() : -1;
    free(p);
    return r;
}
