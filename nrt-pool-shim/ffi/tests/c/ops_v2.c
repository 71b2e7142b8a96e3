/* Plays a C/C++ runtime on a NEURON_LIBRARY op library through the v2 entry points: the
 * output's shape from the op's shape function, then the launch by "NS::OP" (argv[1]: the
 * library built from examples/mlp). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt_pool.h"
#include "check.h"

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: ops_v2 LIBmlp_ops.so");
    CHECK(nrt_pool_abi_version() == NRT_POOL_ABI_VERSION && NRT_POOL_ABI_VERSION >= 2, "ABI 2");
    CHECK(nrt_pool_init() == 0, "init");
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "register %s", argv[1]);

    enum { R = 16, C = 24 };
    static float x[R * C], y[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)(i % 17) - 8.0f;
    nrt_pool_tensor tx = {x, {R, C}, 2, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    double a = 2.0, b = 0.5;
    void *inputs[] = {&tx, &a, &b};

    /* The output's dtype and shape come from the op's shape function. */
    nrt_pool_tensor out;
    memset(&out, 0, sizeof out);
    CHECK(nrt_pool_op_output_v2("mlp_ops::axpb", inputs, &out) == NRT_POOL_OK, "output");
    CHECK(out.dtype == 10 && out.rank == 2 && out.shape[0] == R && out.shape[1] == C, "f32 [16, 24]");
    out.data = y;
    out.location = NRT_POOL_LOCATION_HBM;
    void *args[] = {&tx, &a, &b, &out};
    CHECK(nrt_pool_launch_v2("mlp_ops::axpb", 0, args, 0, -1) == NRT_POOL_OK, "launch");
    for (int i = 0; i < R * C; i++) CHECK(y[i] == x[i] * 2.0f + 0.5f, "y[%d] = %g", i, y[i]);

    /* relu_forward by its bare name, on 8 cores. */
    void *relu_in[] = {&tx};
    CHECK(nrt_pool_op_output_v2("relu_forward", relu_in, &out) == NRT_POOL_OK, "relu output");
    void *relu[] = {&tx, &out};
    memset(y, 0, sizeof y);
    CHECK(nrt_pool_launch_v2("relu_forward", 1, relu, 0, 0) == NRT_POOL_OK, "relu launch");
    for (int i = 0; i < R * C; i++) CHECK(y[i] == (x[i] > 0 ? x[i] : 0.0f), "relu y[%d]", i);

    /* Mistakes: an unknown op, a wrong output shape, a NULL slot; nothing is written. */
    CHECK(nrt_pool_launch_v2("mlp_ops::nope", 0, args, 0, -1) == NRT_POOL_ERR_KERNEL, "unknown op");
    CHECK(strstr(nrt_pool_last_error(), "mlp_ops::relu_forward") != NULL, "names the ops");
    out.shape[1] = C + 1;
    memset(y, 0, sizeof y);
    CHECK(nrt_pool_launch_v2("mlp_ops::axpb", 0, args, 0, -1) == NRT_POOL_ERR_ARGUMENT, "shape");
    CHECK(strstr(nrt_pool_last_error(), "the shape function gives [16, 24]") != NULL, "says so");
    CHECK(y[5] == 0.0f, "nothing launched");
    out.shape[1] = C;
    void *null_slot[] = {&tx, NULL, &b, &out};
    CHECK(nrt_pool_launch_v2("mlp_ops::axpb", 0, null_slot, 0, -1) == NRT_POOL_ERR_ARGUMENT, "NULL");
    CHECK(nrt_pool_launch_v2("mlp_ops::axpb", 0, args, 0, 3) == NRT_POOL_ERR_DEVICE, "device 3");
    CHECK(nrt_pool_close() == 0, "close");
    printf("PASS: v2 launches of NEURON_LIBRARY ops\n");
    return 0;
}
