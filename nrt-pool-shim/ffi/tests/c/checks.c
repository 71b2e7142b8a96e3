/* Checked launches through the FFI: argv[1] is the check gallery's library
 * (examples/check-gallery, multicore). nrt_pool_set_checks turns checks on; a launch whose
 * checks find something writes its output and returns NRT_POOL_CHECK_FOUND, the findings
 * in nrt_pool_last_error. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nrt_pool.h"
#include "check.h"

enum { N = 1003 };
static float x[N], y[N];

static int launch(const char *op) {
    nrt_pool_tensor tx = {x, {N}, 1, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    nrt_pool_tensor out = {y, {N}, 1, 10, NRT_POOL_LOCATION_HBM, {0, 0}};
    void *args[] = {&tx, &out};
    memset(y, 0, sizeof y);
    return nrt_pool_launch_v2(op, 8, args, 0, 0);
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: checks LIBgallery.so");
    CHECK(nrt_pool_abi_version() >= 3 && NRT_POOL_ABI_VERSION >= 3, "ABI 3");
    CHECK(nrt_pool_init() == 0, "init");
    CHECK(nrt_pool_register_library(argv[1]) == NRT_POOL_OK, "register %s", argv[1]);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 13) - 6.0f;

    /* Unchecked: the remainder bug goes unseen (its elements are zero). */
    CHECK(launch("gallery::remainder") == NRT_POOL_OK, "unchecked launch");
    CHECK(y[1001] == 0.0f, "unwritten, zeroed");

    CHECK(nrt_pool_set_checks("init,race") == NRT_POOL_OK, "set checks");
    CHECK(launch("gallery::remainder") == NRT_POOL_CHECK_FOUND, "found");
    const char *e = nrt_pool_last_error();
    CHECK(strstr(e, "check init: kernel 'remainder'") != NULL, "names the check: %s", e);
    CHECK(strstr(e, "never written by any core: elements [1000, 1003)") != NULL, "the range: %s", e);
    CHECK(y[7] == 1.0f && isnan(y[1001]), "the output is written, the unwritten part poisoned");
    CHECK(launch("gallery::overlap") == NRT_POOL_CHECK_FOUND, "race found");
    CHECK(strstr(nrt_pool_last_error(), "check race: kernel 'overlap', cores 0, 1") != NULL,
          "names the cores");
    CHECK(launch("gallery::clean") == NRT_POOL_OK, "clean");

    /* Suppressions: a malformed file is refused naming its line; a good one keeps the
     * findings it matches out (the launch is OK), the rest still found. */
    char supp[4096];
    snprintf(supp, sizeof supp, "%s.supp", argv[1]);
    FILE *f = fopen(supp, "w");
    CHECK(f != NULL, "write %s", supp);
    fputs("init\nbogus op=x\n", f);
    fclose(f);
    CHECK(nrt_pool_set_suppressions(supp) == NRT_POOL_ERR_ARGUMENT, "malformed");
    CHECK(strstr(nrt_pool_last_error(), ".supp:2: 'bogus' is no check") != NULL,
          "names the line: %s", nrt_pool_last_error());
    f = fopen(supp, "w");
    fputs("# judged benign\ninit op=gallery::remainder elements=1000..1003\nrace kernel=nobody\n", f);
    fclose(f);
    CHECK(nrt_pool_set_suppressions(supp) == NRT_POOL_OK, "suppressions");
    CHECK(launch("gallery::remainder") == NRT_POOL_OK, "suppressed: %s", nrt_pool_last_error());
    CHECK(launch("gallery::overlap") == NRT_POOL_CHECK_FOUND, "not suppressed");
    CHECK(nrt_pool_set_checks("raec") == NRT_POOL_ERR_ARGUMENT, "unknown check");
    CHECK(strstr(nrt_pool_last_error(), "unknown check 'raec'") != NULL, "says which");
    CHECK(nrt_pool_set_checks(NULL) == NRT_POOL_ERR_ARGUMENT, "NULL list");
    CHECK(nrt_pool_set_checks("none") == NRT_POOL_OK, "off");
    CHECK(launch("gallery::remainder") == NRT_POOL_OK, "unchecked again");
    CHECK(nrt_pool_close() == 0, "close");
    printf("PASS: checked launches\n");
    return 0;
}
