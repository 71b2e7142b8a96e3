/* Plays a C runtime with an Xtensa Pool image: splits libNAME.pool into the IRAM/DRAM pair
 * (docs/decisions.md D57), registers it through nrt_set_pool_eng_ucode, initialises the
 * engine (which runs the image on QEMU cores) and launches scale_add_mc on 8 cores through
 * the versioned FFI, checking every element, profiled: the report carries the estimate of
 * the launch's time on a trn1 Pool engine (issue #44). Usage: pool_image LIBOPS.pool.
 * "PASS", exit 0. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt_pool.h"

static uint32_t word(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Another thread has made no profiled launch: it has no report of its own. */
static void *other_thread(void *out) {
    *(int64_t *)out = nrt_pool_last_profile(NULL, 0);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *file = malloc((size_t)size);
    if (!file || fread(file, 1, (size_t)size, f) != (size_t)size) return 2;
    fclose(f);
    if (size < 28 || memcmp(file, "NPOOLIMG", 8) != 0) {
        printf("FAIL: not a Pool image\n");
        return 1;
    }
    nrt_ucode_info info = {{file + word(file + 12), word(file + 16)},
                           {file + word(file + 20), word(file + 24)}};
    if (nrt_set_pool_eng_ucode(&info) != 0 || nrt_pool_init() != 0) {
        printf("FAIL: init: %s\n", nrt_pool_last_error());
        return 1;
    }
    enum { N = 4096 };
    static float x[N], out[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 97) * 0.5f - 20.0f;
    float alpha = 1.5f, beta = -0.25f;
    nrt_pool_tensor tx = {x, {N}, 1, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    nrt_pool_tensor to = {out, {N}, 1, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    void *args[] = {&tx, &alpha, &beta, &to};
    if (nrt_pool_last_profile(NULL, 0) != -NRT_POOL_ERR_STATE) {
        printf("FAIL: a profile before any profiled launch\n");
        return 1;
    }
    if (nrt_pool_set_profile(1) != NRT_POOL_OK) {
        printf("FAIL: set_profile: %s\n", nrt_pool_last_error());
        return 1;
    }
    int rc = nrt_pool_launch_v1("scale_add_mc", 8, args, 0, -1);
    if (rc != NRT_POOL_OK) {
        printf("FAIL: launch %d: %s\n", rc, nrt_pool_last_error());
        return 1;
    }
    for (int i = 0; i < N; i++) {
        if (out[i] != x[i] * alpha + beta) {
            printf("FAIL: out[%d] = %g, want %g\n", i, out[i], x[i] * alpha + beta);
            return 1;
        }
    }
    int64_t len = nrt_pool_last_profile(NULL, 0);
    char *report = malloc((size_t)len + 1);
    if (len <= 0 || !report || nrt_pool_last_profile(report, (size_t)len + 1) != len ||
        strlen(report) != (size_t)len) {
        printf("FAIL: last_profile %lld\n", (long long)len);
        return 1;
    }
    if (!strstr(report, "estimated time on a trn1 Pool engine: ~") || !strstr(report, "an estimate")) {
        printf("FAIL: no device-time estimate in the profile:\n%s", report);
        return 1;
    }
    char small[8];
    if (nrt_pool_last_profile(small, sizeof small) != len || strlen(small) != sizeof small - 1) {
        printf("FAIL: a short buffer is not cut to fit\n");
        return 1;
    }
    pthread_t t;
    int64_t theirs = 0;
    if (pthread_create(&t, NULL, other_thread, &theirs) != 0 || pthread_join(t, NULL) != 0 ||
        theirs != -NRT_POOL_ERR_STATE) {
        printf("FAIL: another thread read this thread's profile (%lld)\n", (long long)theirs);
        return 1;
    }
    /* The same launch's trace: Trace Event JSON with a track per core and the kernel's spans. */
    int64_t tlen = nrt_pool_last_trace(NULL, 0);
    char *trace = malloc((size_t)tlen + 1);
    if (tlen <= 0 || !trace || nrt_pool_last_trace(trace, (size_t)tlen + 1) != tlen ||
        strlen(trace) != (size_t)tlen) {
        printf("FAIL: last_trace %lld\n", (long long)tlen);
        return 1;
    }
    if (trace[0] != '{' || !strstr(trace, "\"traceEvents\":[") || !strstr(trace, "\"core 7\"") ||
        !strstr(trace, "\"cat\":\"kernel\"")) {
        printf("FAIL: the trace is not the launch's:\n%.300s\n", trace);
        return 1;
    }
    if (nrt_pool_last_trace(small, 0) != tlen || nrt_pool_last_trace(NULL, 4) != -NRT_POOL_ERR_ARGUMENT) {
        printf("FAIL: last_trace's sizing or NULL buffer\n");
        return 1;
    }
    free(trace);
    fputs(report, stdout);
    nrt_pool_close();
    printf("PASS: scale_add_mc on 8 Xtensa cores, profiled with its device-time estimate and trace\n");
    return 0;
}
