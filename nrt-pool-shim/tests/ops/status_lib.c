/* An op library whose start code returns the STATUS named by NRT_POOL_TEST_STATUS, and
 * whose registration can disagree with it (NRT_POOL_TEST_MISMATCH): the emulator's load
 * must report each case. Not built on libneuroncustomop.a: a foreign library's start code. */
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    size_t size;
    void *handle;
    uint32_t (*register_ext_isa_fn)(void *, const char *);
} handoff;

uint32_t entry_func(const handoff *h) {
    const char *s = getenv("NRT_POOL_TEST_STATUS");
    if (s && atoi(s) != 0) return (uint32_t)atoi(s);
    h->register_ext_isa_fn(h->handle, "only");
    if (getenv("NRT_POOL_TEST_MISMATCH")) h->register_ext_isa_fn(h->handle, "extra");
    return 0;
}

static int only(void) { return 0; }
uint32_t _Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE(uint32_t (*cb)(void *, const char *, int (*)(void))) {
    return cb ? cb(0, "only", only) : 0;
}
