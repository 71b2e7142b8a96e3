/*
 * shim.c: a forwarding libnrtucode_extisa.so over a real provider (NRTUCODE_SHIM_TARGET),
 * faithful unless built with one planted defect:
 *   -DWRONG_API_LEVEL      get_api_level returns 4
 *   -DCLAIM_WITHOUT_WRITE  on_ucode_booted reads the claim word but never writes it
 *   -DWRONG_RECORD_BYTE    load records carry 0xFE instead of 0xFF at +0x0d
 *   -DMISSING_EXPORT       nrtucode_core_print_logs is not exported
 *   -DEXTRA_EXPORT         an extra nrtucode_debug_dump is exported
 * Every forwarded export is a tail jump through a pointer the constructor resolves, so
 * arguments pass untouched. The conformance harness must pass the faithful shim and fail
 * each defective one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FORWARDED(X)                                                                          \
    X(get_build_version) X(get_git_version) X(get_memory_image) X(get_ext_isa)                \
    X(get_num_ext_isa_libs) X(get_hwdecode_table) X(context_create) X(context_destroy)        \
    X(context_set_memhandle_impl) X(context_get_userdata) X(context_set_userdata)             \
    X(core_create) X(core_destroy) X(core_get_context) X(core_get_userdata)                   \
    X(core_set_userdata) X(core_get_coretype) X(core_set_friendly_name)                       \
    X(core_get_friendly_name) X(core_enable_logs) X(core_enable_logs_with_size_hint)          \
    X(core_disable_logs) X(core_set_max_loglevel) X(core_dge_set_priority_class_map)          \
    X(core_dge_get_priority_class_map) X(core_get_dge_mailbox_addr)                           \
    X(core_private_set_dge_mailbox) X(core_private_get_dge_mailbox_values)                    \
    X(core_enable_pc_bounds_check) X(core_disable_pc_bounds_check)                            \
    X(core_private_get_pc_bounds) X(ll_get_libraries_from_opcodes) X(ll_create) X(ll_destroy) \
    X(ll_get_load_sequence_num_instrs) X(ll_get_unload_sequence_num_instrs)                   \
    X(ll_get_unload_sequence) X(ll_set_friendly_name) X(ll_get_library_size) X(opset_create)  \
    X(opset_destroy) X(opset_add_instruction) X(opset_private_get_num_opcodes)                \
    X(opset_private_get_num_specializations) X(opset_private_has_opcode)                      \
    X(opset_private_has_specialization) X(opset_set_friendly_name)                            \
    X(opset_get_library_index)

#define POINTER(n) void *shim_real_##n;
FORWARDED(POINTER)
POINTER(get_api_level)
POINTER(core_on_ucode_booted)
POINTER(ll_get_load_sequence)
POINTER(core_print_logs)

#define FORWARD(n)                                                                     \
    __attribute__((naked, visibility("default"))) void nrtucode_##n(void) {            \
        __asm__ volatile("jmp *shim_real_" #n "(%rip)");                              \
    }
FORWARDED(FORWARD)

#ifndef MISSING_EXPORT
FORWARD(core_print_logs)
#endif

#ifdef EXTRA_EXPORT
__attribute__((visibility("default"))) int nrtucode_debug_dump(void) { return 0; }
#endif

__attribute__((visibility("default"))) int nrtucode_get_api_level(void) {
#ifdef WRONG_API_LEVEL
    return 4;
#else
    return ((int (*)(void))shim_real_get_api_level)();
#endif
}

typedef int (*read_fn)(void *ctx, uint64_t addr, size_t len, void *dst);

__attribute__((visibility("default"))) uint32_t nrtucode_core_on_ucode_booted(void *core, uint32_t flavor) {
#ifdef CLAIM_WITHOUT_WRITE
    /* Private offsets: core->context at +0, dram_base at +0x20; ctx->rw_impl at +0. */
    void *ctx = *(void **)core;
    read_fn rd = **(read_fn **)ctx;
    uint32_t word = 0;
    int rc = rd(ctx, *(uint64_t *)((char *)core + 0x20), 4, &word);
    (void)flavor;
    return (uint32_t)rc;
#else
    return ((uint32_t(*)(void *, uint32_t))shim_real_core_on_ucode_booted)(core, flavor);
#endif
}

__attribute__((visibility("default"))) uint32_t nrtucode_ll_get_load_sequence(void *ll, void *core, size_t max,
                                                                              char *buf, size_t *n) {
    uint32_t rc = ((uint32_t(*)(void *, void *, size_t, char *, size_t *))shim_real_ll_get_load_sequence)(
        ll, core, max, buf, n);
#ifdef WRONG_RECORD_BYTE
    if (rc == 0)
        for (size_t i = 0; i < *n; i++) buf[i * 0x40 + 0x0d] = (char)0xFE;
#endif
    return rc;
}

#define RESOLVE(n)                                                                        \
    shim_real_##n = dlsym(h, "nrtucode_" #n);                                             \
    if (!shim_real_##n) { fprintf(stderr, "shim: target lacks nrtucode_" #n "\n"); abort(); }

__attribute__((constructor)) static void shim_init(void) {
    const char *target = getenv("NRTUCODE_SHIM_TARGET");
    void *h = target ? dlopen(target, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        fprintf(stderr, "shim: cannot load NRTUCODE_SHIM_TARGET (%s)\n", target ? dlerror() : "unset");
        abort();
    }
    FORWARDED(RESOLVE)
    RESOLVE(get_api_level)
    RESOLVE(core_on_ucode_booted)
    RESOLVE(ll_get_load_sequence)
    RESOLVE(core_print_logs)
}
