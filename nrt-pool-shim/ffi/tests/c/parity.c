/* The parity check through the FFI (issue #40): argv[1] is a host library registered by
 * path, its Pool image beside it. nrt_pool_set_checks("parity") runs each launch on Xtensa
 * cores too: an op whose __builtin_clz/ctz of 0 (undefined; x86's and the device's
 * instructions answer differently) differs is NRT_POOL_CHECK_FOUND naming the first
 * differing element; an op that agrees is NRT_POOL_OK. */
#include <stdio.h>
#include <string.h>

#include "nrt_pool.h"
#include "check.h"

enum { N = 16 };
static float x[N], y[N];

static int launch(const char *op) {
    nrt_pool_tensor tx = {x, {N}, 1, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    nrt_pool_tensor out = {y, {N}, 1, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    void *args[] = {&tx, &out};
    return nrt_pool_launch_v2(op, 1, args, 0, 0);
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: parity LIBparity.so");
    CHECK(nrt_pool_init() == 0, "init");
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "register %s", argv[1]);
    for (int i = 0; i < N; i++) x[i] = (float)i - 8.0f;
    CHECK(nrt_pool_set_checks("parity") == NRT_POOL_OK, "set checks");
    CHECK(launch("parity_ops::clz_zero") == NRT_POOL_CHECK_FOUND, "a difference is found: %s",
          nrt_pool_last_error());
    const char *e = nrt_pool_last_error();
    CHECK(strstr(e, "check parity") != NULL && strstr(e, "element [0]") != NULL, "names it: %s", e);
    CHECK(launch("parity_ops::twice") == NRT_POOL_OK, "equal on both: %s", nrt_pool_last_error());
    for (int i = 0; i < N; i++) CHECK(y[i] == 2.0f * x[i], "the output");
    CHECK(nrt_pool_close() == 0, "close");
    printf("PASS: the parity check through the FFI\n");
    return 0;
}
