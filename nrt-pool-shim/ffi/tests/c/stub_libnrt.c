/* A stand-in libnrt for the LD_PRELOAD test: the program links against it, and the
 * preloaded libnrt_pool_shim.so must win for every symbol (these all fail loudly). */
#include "nrt_pool.h"
NRT_STATUS nrt_set_pool_eng_ucode(const nrt_ucode_info *i) { (void)i; return 99; }
int32_t nrt_pool_init(void) { return 99; }
int32_t nrt_pool_close(void) { return 99; }
int32_t nrt_pool_image_is_registered(void) { return 99; }
int32_t nrt_pool_abi_version(void) { return 99; }
const char *nrt_pool_last_error(void) { return "stub libnrt"; }
int32_t nrt_pool_device_count(void) { return 0; }
int32_t nrt_pool_register_library(const char *p) { (void)p; return 99; }
int32_t nrt_pool_register_kernel_params(const char *k, int32_t n, const uint8_t *a, const uint8_t *b) {
    (void)k; (void)n; (void)a; (void)b; return 99;
}
int32_t nrt_pool_launch_v1(const char *k, uint32_t c, void *const *v, int64_t s, int32_t d) {
    (void)k; (void)c; (void)v; (void)s; (void)d; return 99;
}
