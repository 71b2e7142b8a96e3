/* Plays a C runtime on libnrt_pool_shim.so: registers an op library as the Pool image
 * through nrt_set_pool_eng_ucode, initialises the engine, launches through the versioned
 * FFI and checks the seam's state rules. Usage: seam LIBOPS.so [null]. "PASS" and exit 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt_pool.h"
#include "check.h"

static nrt_pool_tensor tensor(void *data, uint8_t dtype, uint64_t n) {
    nrt_pool_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.shape[0] = n;
    t.rank = 1;
    t.dtype = dtype;
    t.location = NRT_POOL_LOCATION_HBM;
    return t;
}

int main(int argc, char **argv) {
    CHECK(argc >= 2, "usage");
    if (argc == 3 && strcmp(argv[2], "null") == 0) {
        nrt_set_pool_eng_ucode(NULL); /* libnrt dereferences it: the process faults */
        return 0;
    }
    if (argc == 3 && strcmp(argv[2], "stock") == 0) {
        /* Nothing registered: the engine keeps the stock image (none in the emulator). */
        CHECK(nrt_pool_init() == 0, "init without a registered image");
        CHECK(nrt_pool_image_is_registered() == 0, "stock image");
        float v = 0;
        nrt_pool_tensor t = tensor(&v, 10, 1);
        void *args[] = {&t, &t};
        CHECK(nrt_pool_launch_v1("k", 1, args, 0, 0) == NRT_POOL_ERR_LIBRARY, "nothing to run");
        CHECK(strstr(nrt_pool_last_error(), "no stock Pool ucode") != NULL, "says why");
        CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "a library by path instead");
        CHECK(nrt_pool_close() == 0 && nrt_pool_close() != 0, "close once");
        printf("PASS: %d checks\n", checks);
        return 0;
    }
    if (argc == 3 && strcmp(argv[2], "xtensa") == 0) {
        /* A device image (an ELF32 Xtensa header) registers and initialises, but cannot run. */
        static unsigned char xt[64] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
        xt[16] = 2;  /* ET_EXEC */
        xt[18] = 94; /* EM_XTENSA */
        nrt_ucode_info xinfo = {{xt, sizeof xt}, {NULL, 0}};
        CHECK(nrt_set_pool_eng_ucode(&xinfo) == 0, "store");
        CHECK(nrt_pool_init() == 0, "init with a device image");
        CHECK(nrt_pool_image_is_registered() == 1, "registered");
        float v = 0;
        nrt_pool_tensor t = tensor(&v, 10, 1);
        void *args[] = {&t, &t};
        CHECK(nrt_pool_launch_v1("k", 1, args, 0, -1) == NRT_POOL_ERR_LIBRARY, "nothing to run");
        CHECK(strstr(nrt_pool_last_error(), "machine 94") != NULL, "names the image");
        printf("PASS: %d checks\n", checks);
        return 0;
    }
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL, "open %s", argv[1]);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *image = malloc((size_t)size);
    CHECK(fread(image, 1, (size_t)size, f) == (size_t)size, "read");
    fclose(f);
    static unsigned char dram[64];

    printf("buffered before init\n"); /* must reach stdout once, not once per core */
    CHECK(nrt_pool_abi_version() == NRT_POOL_ABI_VERSION, "ABI version");
    CHECK(nrt_pool_image_is_registered() == -1, "not initialised yet");
    nrt_ucode_info info = {{image, (size_t)size}, {dram, sizeof dram}};
    CHECK(nrt_set_pool_eng_ucode(&info) == 0, "seam before init stores");
    CHECK(nrt_pool_init() == 0, "init");
    CHECK(nrt_pool_image_is_registered() == 1, "the registered pair replaced the stock image");
    CHECK(nrt_set_pool_eng_ucode(&info) == 0xd, "seam after init");

    enum { N = 1000 };
    static float x[N], out[N];
    for (int i = 0; i < N; i++) x[i] = (float)i * 0.5f;
    float alpha = 3.0f, beta = -1.0f;
    nrt_pool_tensor tx = tensor(x, 10, N), tout = tensor(out, 10, N);
    void *args[] = {&tx, &alpha, &beta, &tout};
    CHECK(nrt_pool_launch_v1("scale_add_mc", 8, args, 0, -1) == NRT_POOL_OK, "launch on 8 cores");
    for (int i = 0; i < N; i++) CHECK(out[i] == x[i] * 3.0f - 1.0f, "out[%d] = %g", i, out[i]);

    /* Host tensors are copied into device memory for one launch and freed after it: 24
     * launches of 64 MiB in and out (3 GiB in all) fit the 1 GiB device. */
    {
        enum { BIG = 16 << 20 };
        float *bx = malloc(BIG * sizeof(float)), *bout = malloc(BIG * sizeof(float));
        CHECK(bx != NULL && bout != NULL, "64 MiB buffers");
        for (int i = 0; i < BIG; i++) bx[i] = (float)(i % 977) - 400.0f;
        nrt_pool_tensor bt = tensor(bx, 10, BIG), bo = tensor(bout, 10, BIG);
        void *bargs[] = {&bt, &alpha, &beta, &bo};
        for (int k = 0; k < 24; k++) {
            memset(bout, 0, (size_t)BIG * sizeof(float));
            CHECK(nrt_pool_launch_v1("scale_add_mc", 8, bargs, 0, -1) == NRT_POOL_OK, "big launch %d: %s", k,
                  nrt_pool_last_error());
            CHECK(bout[BIG - 1] == bx[BIG - 1] * 3.0f - 1.0f && bout[12345] == bx[12345] * 3.0f - 1.0f,
                  "big launch %d result", k);
        }
        free(bx);
        free(bout);
    }

    /* Explicit metadata for the same kernel, launched on device 0 with x in SBUF. */
    const uint8_t kinds[] = {NRT_POOL_PARAM_TENSOR, NRT_POOL_PARAM_SCALAR, NRT_POOL_PARAM_SCALAR, NRT_POOL_PARAM_OUTPUT};
    const uint8_t dtypes[] = {10, 10, 10, 10};
    CHECK(nrt_pool_register_kernel_params("scale_add", 4, kinds, dtypes) == NRT_POOL_OK, "register params");
    const uint8_t bad_kinds[] = {NRT_POOL_PARAM_TENSOR, 9, NRT_POOL_PARAM_SCALAR, NRT_POOL_PARAM_OUTPUT};
    CHECK(nrt_pool_register_kernel_params("scale_add", 4, bad_kinds, dtypes) == NRT_POOL_ERR_ARGUMENT, "unknown kind");
    tx.location = NRT_POOL_LOCATION_SBUF;
    memset(out, 0, sizeof out);
    CHECK(nrt_pool_launch_v1("scale_add", 1, args, 0, 0) == NRT_POOL_OK, "launch on device 0");
    CHECK(out[N - 1] == x[N - 1] * 3.0f - 1.0f, "scale_add result");

    /* Out-of-range devices: a diagnostic, no launch (the output stays untouched). */
    memset(out, 0, sizeof out);
    CHECK(nrt_pool_launch_v1("scale_add", 1, args, 0, 1) == NRT_POOL_ERR_DEVICE, "device 1");
    CHECK(nrt_pool_launch_v1("scale_add", 1, args, 0, -2) == NRT_POOL_ERR_DEVICE, "device -2");
    CHECK(out[1] == 0.0f, "nothing launched");
    CHECK(strstr(nrt_pool_last_error(), "out of range") != NULL, "diagnostic");
    CHECK(nrt_pool_launch_v1("scale_add", 1, args, 7, 0) == NRT_POOL_ERR_ARGUMENT, "stream 7");
    CHECK(nrt_pool_launch_v1("nope", 1, args, 0, 0) == NRT_POOL_ERR_KERNEL, "unknown kernel");
    CHECK(strstr(nrt_pool_last_error(), "scale_add_mc") != NULL, "names the known kernels");
    tout.dtype = 8;
    CHECK(nrt_pool_launch_v1("scale_add", 1, args, 0, 0) == NRT_POOL_ERR_ARGUMENT, "dtype mismatch");
    tout.dtype = 10;
    CHECK(nrt_pool_launch_v1("scale_add", 9, args, 0, 0) == NRT_POOL_ERR_ARGUMENT, "9 cores");
    /* Shapes from the caller are checked before any byte count is taken from them. */
    tx.shape[0] = 0;
    CHECK(nrt_pool_launch_v1("scale_add", 1, args, 0, 0) == NRT_POOL_ERR_ARGUMENT, "zero dimension");
    CHECK(strstr(nrt_pool_last_error(), "has no elements") != NULL, "says so: %s", nrt_pool_last_error());
    tx.rank = 4;
    tx.shape[0] = tx.shape[1] = tx.shape[2] = tx.shape[3] = 0xffffffffull;
    CHECK(nrt_pool_launch_v1("scale_add", 1, args, 0, 0) == NRT_POOL_ERR_ARGUMENT, "overflowing shape");
    CHECK(strstr(nrt_pool_last_error(), "too large") != NULL, "says so: %s", nrt_pool_last_error());
    tx = tensor(x, 10, N);

    /* A library registered by path replaces the Pool image's. */
    CHECK(nrt_pool_device_count() == 1, "one emulated device");
    CHECK(nrt_pool_register_library("/no/such/libop.so") == NRT_POOL_ERR_LIBRARY, "missing library");
    CHECK(strstr(nrt_pool_last_error(), "no such file") != NULL, "names the problem");
    CHECK(nrt_pool_register_library(NULL) == NRT_POOL_ERR_ARGUMENT, "NULL path");
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "register by path");
    memset(out, 0, sizeof out);
    CHECK(nrt_pool_launch_v1("scale_add_mc", 2, args, 0, 0) == NRT_POOL_OK, "launch from the path-registered library");
    CHECK(out[N - 1] == x[N - 1] * 3.0f - 1.0f, "result");

    CHECK(nrt_pool_close() == 0, "close");
    CHECK(nrt_set_pool_eng_ucode(&info) == 0xe, "seam after close");
    CHECK(nrt_pool_launch_v1("scale_add", 1, args, 0, 0) == NRT_POOL_ERR_STATE, "launch after close");
    CHECK(nrt_pool_init() != 0, "no re-init after close");
    printf("PASS: %d checks\n", checks);
    return 0;
}
