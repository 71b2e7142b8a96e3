/* What a C runtime gets back when op code fails (argv[1]: the faulty_ops library built by
 * seam.rs, argv[2]: a path whose existence makes the library's start code fault): a kernel
 * or shape function that faults gives NRT_POOL_ERR_FAULT with the output it printed first;
 * start code that faults in a core started for a launch gives NRT_POOL_ERR_LIBRARY, as it
 * does for nrt_pool_register_library; the engine runs the next launch as usual. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt_pool.h"
#include "check.h"

enum { N = 64 };
static float x[N], y[N];

static int launch(const char *op, unsigned cores, nrt_pool_tensor *tx) {
    nrt_pool_tensor out = {y, {N}, 1, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    void *args[] = {tx, &out};
    memset(y, 0, sizeof y);
    return nrt_pool_launch_v2(op, cores, args, 0, -1);
}

int main(int argc, char **argv) {
    CHECK(argc == 3, "usage: faults LIBfaulty_ops.so MARKER");
    for (int i = 0; i < N; i++) x[i] = (float)i - 20.0f;
    nrt_pool_tensor tx = {x, {N}, 1, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    void *inputs[] = {&tx};
    nrt_pool_tensor out;

    CHECK(nrt_pool_init() == 0, "init");
    /* Start code that faults at registration, then not. */
    FILE *marker = fopen(argv[2], "w");
    CHECK(marker != NULL && fclose(marker) == 0, "marker %s", argv[2]);
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_ERR_LIBRARY, "start fault");
    CHECK(strstr(nrt_pool_last_error(), "static constructors") != NULL, "says where");
    CHECK(remove(argv[2]) == 0, "marker removed");
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "register %s", argv[1]);

    /* A shape function that faults. */
    CHECK(nrt_pool_op_output_v2("faulty_ops::bad_shape", inputs, &out) == NRT_POOL_ERR_FAULT,
          "shape fault");
    /* A kernel that faults, then a launch that works. */
    CHECK(launch("faulty_ops::boom", 1, &tx) == NRT_POOL_ERR_FAULT, "kernel fault");
    CHECK(launch("faulty_ops::copy", 1, &tx) == NRT_POOL_OK, "after a fault");
    for (int i = 0; i < N; i++) CHECK(y[i] == x[i], "y[%d] = %g", i, y[i]);

    /* Start code that faults in the cores this launch starts. */
    marker = fopen(argv[2], "w");
    CHECK(marker != NULL && fclose(marker) == 0, "marker %s", argv[2]);
    CHECK(launch("faulty_ops::copy", 8, &tx) == NRT_POOL_ERR_LIBRARY, "start fault");
    CHECK(y[0] == 0.0f, "nothing written");
    CHECK(remove(argv[2]) == 0, "marker removed");
    CHECK(launch("faulty_ops::copy", 8, &tx) == NRT_POOL_OK, "after a start fault");
    for (int i = 0; i < N; i++) CHECK(y[i] == x[i], "y[%d] = %g", i, y[i]);

    CHECK(nrt_pool_close() == 0, "close");
    printf("PASS: faults in op code\n");
    return 0;
}
