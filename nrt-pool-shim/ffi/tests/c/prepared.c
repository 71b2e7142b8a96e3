/* A C output + launch pair runs the op's shape function once (ABI 4): the launch after
 * nrt_pool_op_output_v2 with the same inputs and output takes its result. argv[1]: the mlp
 * ops built with tests/c/counted_shape.cpp, whose shape functions print "shape function
 * ran"; the test counts those lines on stdout (PAIRS lines below say what to expect). */
#include <stdio.h>
#include <string.h>

#include "nrt_pool.h"
#include "check.h"

enum { R = 4, C = 8 };
static float x[R * C], y[R * C];

static void launch(nrt_pool_tensor *tx, nrt_pool_tensor *out, int rc_want) {
    double a = 2.0, b = 0.5;
    void *args[] = {tx, &a, &b, out};
    CHECK(nrt_pool_launch_v2("mlp_ops::axpb", 0, args, 0, -1) == rc_want, "launch: %s",
          nrt_pool_last_error());
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: prepared LIB.so");
    CHECK(NRT_POOL_ABI_VERSION >= 4 && nrt_pool_abi_version() == NRT_POOL_ABI_VERSION, "ABI 4");
    CHECK(nrt_pool_init() == 0, "init");
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "register");
    for (int i = 0; i < R * C; i++) x[i] = (float)i;
    nrt_pool_tensor tx = {x, {R, C}, 2, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    double a = 2.0, b = 0.5;
    void *inputs[] = {&tx, &a, &b};
    nrt_pool_tensor out;
    memset(&out, 0, sizeof out);

    /* One pair, then the same launch again: one run of the shape function. */
    CHECK(nrt_pool_op_output_v2("mlp_ops::axpb", inputs, &out) == NRT_POOL_OK, "output");
    out.data = y;
    launch(&tx, &out, NRT_POOL_OK);
    launch(&tx, &out, NRT_POOL_OK);
    for (int i = 0; i < R * C; i++) CHECK(y[i] == x[i] * 2.0f + 0.5f, "y[%d] = %g", i, y[i]);
    fflush(stdout);
    printf("PAIRS 1\n");
    fflush(stdout);

    /* Other inputs than the prepared ones: the launch runs the shape function itself. */
    nrt_pool_tensor half = tx;
    half.shape[0] = R / 2;
    nrt_pool_tensor out_half = out;
    out_half.shape[0] = R / 2;
    launch(&half, &out_half, NRT_POOL_OK);
    fflush(stdout);
    printf("PAIRS 2\n");
    fflush(stdout);

    /* A launch naming another output than the prepared one is checked by the shape
     * function, and refused. */
    CHECK(nrt_pool_op_output_v2("mlp_ops::axpb", inputs, &out) == NRT_POOL_OK, "output");
    out.data = y;
    nrt_pool_tensor wrong = out;
    wrong.shape[1] = C + 1;
    launch(&tx, &wrong, NRT_POOL_ERR_ARGUMENT);
    CHECK(strstr(nrt_pool_last_error(), "the shape function gives [4, 8]") != NULL, "says so: %s",
          nrt_pool_last_error());
    /* A library registered since forgets the pair. */
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "register again");
    launch(&tx, &out, NRT_POOL_OK);
    fflush(stdout);
    printf("PAIRS 5\n");
    fflush(stdout);
    CHECK(nrt_pool_close() == 0, "close");
    printf("PASS: output + launch pairs\n");
    return 0;
}
