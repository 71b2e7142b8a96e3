/* An op library whose start code returns the STATUS it is built with (-DSTATUS=n), and
 * whose registration can disagree with it (-DMISMATCH): the emulator's load must report
 * each case. Not built on libneuroncustomop.a: a foreign library's start code. */
#include <stdint.h>
#include <stddef.h>

#ifndef STATUS
#define STATUS 0
#endif

typedef struct {
    size_t size;
    void *handle;
    uint32_t (*register_ext_isa_fn)(void *, const char *);
} handoff;

uint32_t entry_func(const handoff *h) {
    if (STATUS != 0) return STATUS;
    h->register_ext_isa_fn(h->handle, "only");
#ifdef MISMATCH
    h->register_ext_isa_fn(h->handle, "extra");
#endif
    return 0;
}

static int only(void) { return 0; }
uint32_t _Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE(uint32_t (*cb)(void *, const char *, int (*)(void))) {
    return cb ? cb(0, "only", only) : 0;
}
