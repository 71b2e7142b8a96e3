/*
 * libnrt_sequence.c: plays libnrt against a microcode provider on the simulated device.
 *
 * Like libnrt it dlopen()s "libnrtucode_extisa.so" by name (found through LD_LIBRARY_PATH,
 * or already present through LD_PRELOAD), binds the same 30 symbols in libnrt's order
 * (all or nothing), checks the API level, then runs init -> bring-up -> load -> query ->
 * teardown for a SUNDA Pool engine (NX POOL core + Q7 POOL core, one context each),
 * asserting every step. Built with -Wall -Werror against include/nrtucode_extisa.h.
 *
 * Exit status 0 and a final "PASS" line when every check held.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nrtucode_extisa.h"
#include "nrt_sim_device.h"

#define NX_POOL_DRAM 0x200000000ull
#define Q7_POOL_DRAM 0x200100000ull
#define CLAIM_UNCLAIMED 0x6099CB34u
#define CLAIM_CLAIMED 0x502B2DA1u

static int checks;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define CALL_OK(expr)                                                        \
    do {                                                                     \
        nrtucode_result_t rc_ = (expr);                                      \
        CHECK(rc_ == NRTUCODE_SUCCESS, "%s returned %u", #expr, rc_);        \
        printf("  %s -> 0\n", #expr);                                        \
    } while (0)

/* The 30 entry points libnrt binds, typed by the header's declarations. */
#define API_FN(name) __typeof__(&nrtucode_##name) name
static struct {
    API_FN(get_api_level);
    API_FN(get_git_version);
    API_FN(get_build_version);
    API_FN(get_memory_image);
    API_FN(get_ext_isa);
    API_FN(context_create);
    API_FN(context_destroy);
    API_FN(core_get_context);
    API_FN(context_get_userdata);
    API_FN(context_set_userdata);
    API_FN(context_set_memhandle_impl);
    API_FN(core_on_ucode_booted);
    API_FN(core_create);
    API_FN(core_destroy);
    API_FN(core_enable_logs);
    API_FN(core_disable_logs);
    API_FN(core_print_logs);
    API_FN(core_get_friendly_name);
    API_FN(core_set_friendly_name);
    API_FN(get_num_ext_isa_libs);
    API_FN(ll_create);
    API_FN(ll_set_friendly_name);
    API_FN(ll_destroy);
    API_FN(ll_get_libraries_from_opcodes);
    API_FN(ll_get_load_sequence);
    API_FN(ll_get_unload_sequence);
    API_FN(core_dge_set_priority_class_map);
    API_FN(core_get_dge_mailbox_addr);
    API_FN(core_enable_pc_bounds_check);
    API_FN(core_disable_pc_bounds_check);
} api;

/* libnrt's ucode_func_symbols: {slot, name} in table order. */
#define SLOT(name) { (void **)&api.name, "nrtucode_" #name }
static const struct {
    void **slot;
    const char *sym;
} bind_table[30] = {
    SLOT(get_api_level), SLOT(get_git_version), SLOT(get_build_version),
    SLOT(get_memory_image), SLOT(get_ext_isa), SLOT(context_create),
    SLOT(context_destroy), SLOT(core_get_context), SLOT(context_get_userdata),
    SLOT(context_set_userdata), SLOT(context_set_memhandle_impl), SLOT(core_on_ucode_booted),
    SLOT(core_create), SLOT(core_destroy), SLOT(core_enable_logs),
    SLOT(core_disable_logs), SLOT(core_print_logs), SLOT(core_get_friendly_name),
    SLOT(core_set_friendly_name), SLOT(get_num_ext_isa_libs), SLOT(ll_create),
    SLOT(ll_set_friendly_name), SLOT(ll_destroy), SLOT(ll_get_libraries_from_opcodes),
    SLOT(ll_get_load_sequence), SLOT(ll_get_unload_sequence),
    SLOT(core_dge_set_priority_class_map), SLOT(core_get_dge_mailbox_addr),
    SLOT(core_enable_pc_bounds_check), SLOT(core_disable_pc_bounds_check),
};

static void *provider;

/* All 30 or none: on any failure every pointer is zeroed and the library closed. */
static int bind_provider(void) {
    provider = dlopen("libnrtucode_extisa.so", RTLD_NOW | RTLD_LOCAL);
    if (!provider) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return -1;
    }
    for (int i = 0; i < 30; i++) {
        void *p = dlsym(provider, bind_table[i].sym);
        if (!p) {
            fprintf(stderr, "dlsym %s failed\n", bind_table[i].sym);
            for (int j = 0; j < 30; j++) *bind_table[j].slot = NULL;
            dlclose(provider);
            return -1;
        }
        *bind_table[i].slot = p;
    }
    if (api.get_api_level() != 3) {
        fprintf(stderr, "Incompatible version of %s! Compatibility id: %d, expected: %d\n",
                "libnrtucode_extisa.so", api.get_api_level(), 3);
        for (int j = 0; j < 30; j++) *bind_table[j].slot = NULL;
        dlclose(provider);
        return -1;
    }
    return 0;
}

static uint32_t dev_u32(const nrt_sim_device_t *dev, uint64_t addr) {
    uint32_t v = 0;
    CHECK(nrt_sim_device_read(dev, addr, 4, &v) == 0, "device read at 0x%llx",
          (unsigned long long)addr);
    return v;
}

static int host_log_contains(const nrt_sim_device_t *dev, const char *needle) {
    char line[512];
    uint32_t sev;
    for (size_t i = 0; i < nrt_sim_device_host_log_count(dev); i++)
        if (nrt_sim_device_host_log_line(dev, i, &sev, line, sizeof line) == 0 &&
            strstr(line, needle))
            return 1;
    return 0;
}

struct core_rig {
    nrtucode_context_t *ctx;
    nrtucode_core_t *core;
    uint64_t dram;
    const char *label;
};

static void bring_up(const nrt_sim_device_t *dev, struct core_rig *r, nrtucode_coretype_t ct) {
    char name[64];
    CHECK(nrt_sim_device_map_control_block(dev, r->dram) == 0, "map control block");
    CALL_OK(api.context_create(3, nrt_sim_rw_table(), &r->ctx));
    api.context_set_memhandle_impl(r->ctx, nrt_sim_memhandle_table());
    CALL_OK(api.core_create(r->ctx, ct, r->dram - 0x100000, r->dram, r->dram + 0x100000, &r->core));
    api.context_set_userdata(r->ctx, (void *)dev);
    CHECK(api.context_get_userdata(r->ctx) == (void *)dev, "userdata round trip");
    snprintf(name, sizeof name, "ND[%d]NC[%d].%s[%d]", 0, 0, r->label, 0);
    api.core_set_friendly_name(r->core, name);
    CHECK(strcmp(api.core_get_friendly_name(r->core), name) == 0, "friendly name %s",
          api.core_get_friendly_name(r->core));
    CHECK(dev_u32(dev, r->dram) == CLAIM_UNCLAIMED, "firmware left the unclaimed word");
    CALL_OK(api.core_on_ucode_booted(r->core, NRTUCODE_FLAVORS_DEFAULT));
    CHECK(dev_u32(dev, r->dram) == CLAIM_CLAIMED, "claim word 0x%08x", dev_u32(dev, r->dram));
    CALL_OK(api.core_enable_logs(r->core));
    CHECK(dev_u32(dev, r->dram + 0x04) == 0x20000, "ring size published");
}

static void make_image_dir(char *dir) {
    char path[512];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/ext-isa", dir);
    CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/ext-isa/ct6", dir);
    CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/ext-isa/ct6/lib0.elf", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "create %s", path);
    fputs("synthetic SUNDA ext-ISA library (SUNDA libraries are not parsed on the host)\n", f);
    fclose(f);
    setenv("NRTUCODE_EXTISA_IMAGE_DIR", dir, 1);
}

static void remove_image_dir(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/ext-isa/ct6/lib0.elf", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/ext-isa/ct6", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/ext-isa", dir);
    rmdir(path);
    rmdir(dir);
}

int main(void) {
    char image_dir[] = "/tmp/nrtucode-images-XXXXXX";
    _Alignas(8) char records[8 * 0x40];
    size_t n = 0;

    printf("init\n");
    CHECK(bind_provider() == 0, "bind the 30 symbols");
    printf("  bound 30 symbols in libnrt's order; api level %d\n", api.get_api_level());
    char *build = strdup(api.get_build_version());
    char *git = strdup(api.get_git_version());
    CHECK(strcmp(build, "1.21.1.0") == 0, "build version %s", build);
    CHECK(strlen(git) == 40 && strspn(git, "0123456789abcdef") == 40, "git version %s", git);
    printf("  build %s git %s\n", build, git);
    make_image_dir(image_dir);

    const nrt_sim_device_t *dev = nrt_sim_device_create();
    nrt_sim_bind_userdata_getter((nrt_sim_userdata_getter_t)api.context_get_userdata);

    printf("bring-up\n");
    struct core_rig nx = { .dram = NX_POOL_DRAM, .label = "NX_POOL" };
    struct core_rig q7 = { .dram = Q7_POOL_DRAM, .label = "Q7_POOL" };
    bring_up(dev, &nx, NRTUCODE_CORE_SUNDA_NX_POOL);
    bring_up(dev, &q7, NRTUCODE_CORE_SUNDA_Q7_POOL);

    printf("load\n");
    size_t nlibs = 99;
    CALL_OK(api.get_num_ext_isa_libs(NRTUCODE_CORE_SUNDA_Q7_POOL, &nlibs));
    CHECK(nlibs == 1, "SUNDA has one ext-ISA library, got %zu", nlibs);
    size_t libs[1] = { 99 }, num_libs = 99;
    uint8_t opcodes[2] = { 0xF0, 0x41 };
    CALL_OK(api.ll_get_libraries_from_opcodes(NRTUCODE_CORE_SUNDA_Q7_POOL, opcodes, 2, NULL, 0,
                                              libs, &num_libs));
    CHECK(num_libs == 1 && libs[0] == 0, "libraries %zu (n=%zu)", libs[0], num_libs);
    nrtucode_extkernel_t ext;
    CALL_OK(api.get_ext_isa(NRTUCODE_CORE_SUNDA_Q7_POOL, NRTUCODE_FLAVORS_DEFAULT, &ext));
    CHECK(ext.so_ptr != NULL && ext.so_len > 0, "ext-ISA image");
    uint8_t *img = NULL;
    size_t img_len = 0;
    CHECK(api.get_memory_image(NRTUCODE_CORE_SUNDA_Q7_POOL, NRTUCODE_IMAGE_IRAM,
                               NRTUCODE_FLAVORS_DEFAULT, &img, &img_len) ==
              NRTUCODE_ERR_MISSING_IMAGE,
          "no base IRAM image is installed: missing image");
    nrtucode_loadable_library_t *ll = NULL;
    CALL_OK(api.ll_create(q7.ctx, NRTUCODE_CORE_SUNDA_Q7_POOL, NRTUCODE_FLAVORS_DEFAULT, 0, &ll));
    api.ll_set_friendly_name(ll, "ND[0]NC[0].loadable_library[0]");
    memset(records, 0xAB, sizeof records);
    CALL_OK(api.ll_get_load_sequence(ll, q7.core, 8, records, &n));
    CHECK(n == 1, "one load record, got %zu", n);
    static const uint8_t want_load[0x40] = { 0x95, 0x10, [0x0c] = 1, [0x0d] = 0xFF };
    CHECK(memcmp(records, want_load, 0x40) == 0, "load record bytes");
    CHECK((uint8_t)records[0x40] == 0xAB, "nothing past the record");
    CHECK(api.ll_get_load_sequence(ll, q7.core, 0, records, &n) == NRTUCODE_ERR_ENOSPC,
          "capacity 0");
    CHECK(api.ll_get_load_sequence(ll, q7.core, 8, records + 4, &n) == NRTUCODE_ERR_INVALID,
          "misaligned buffer");

    printf("query\n");
    const uint32_t classes[4] = { 64, 128, 256, 512 };
    CALL_OK(api.core_dge_set_priority_class_map(nx.core, classes, 4));
    for (int i = 0; i < 4; i++)
        CHECK(dev_u32(dev, NX_POOL_DRAM + 0x18 + 4 * i) == classes[i], "class %d", i);
    CHECK(api.core_dge_set_priority_class_map(q7.core, classes, 4) == NRTUCODE_ERR_INVALID,
          "the DGE gate wants an NX POOL core");
    uint64_t mailboxes = 0;
    CALL_OK(api.core_get_dge_mailbox_addr(nx.core, 2, &mailboxes));
    CHECK(mailboxes == NX_POOL_DRAM + 0x28, "mailbox address 0x%llx",
          (unsigned long long)mailboxes);
    CHECK(dev_u32(dev, mailboxes + 8) == 0xFFFFFF00u && dev_u32(dev, mailboxes + 12) == 0xFFFFFF00u,
          "unused mailboxes reset");
    CALL_OK(api.core_enable_pc_bounds_check(nx.core, 0x1000000, 0x1020000));
    CHECK(dev_u32(dev, NX_POOL_DRAM + 0x38) == 0x1000000 && dev_u32(dev, NX_POOL_DRAM + 0x40) == 0x1020000,
          "pc bounds written");
    CHECK(api.core_enable_pc_bounds_check(nx.core, 5, 5) == NRTUCODE_ERR_INVALID, "lo < hi");
    CALL_OK(api.core_disable_pc_bounds_check(nx.core));
    CHECK(dev_u32(dev, NX_POOL_DRAM + 0x40) == 0xFFFFFFFFu, "upper bound ~0");

    printf("teardown\n");
    CHECK(nrt_sim_device_firmware_log(dev, Q7_POOL_DRAM, 1, "q7 firmware: hello from the pool\n") == 1,
          "firmware log kept");
    CALL_OK(api.core_print_logs(q7.core));
    CHECK(host_log_contains(dev, "ND[0]NC[0].Q7_POOL[0]: q7 firmware: hello from the pool"),
          "device log drained through the rw log slot");
    CALL_OK(api.core_print_logs(nx.core));
    memset(records, 0xAB, sizeof records);
    CALL_OK(api.ll_get_unload_sequence(ll, q7.core, 8, records, &n));
    static const uint8_t want_unload[0x40] = { 0x95, 0x10, [0x0c] = 2, [0x0d] = 0xFF };
    CHECK(n == 1 && memcmp(records, want_unload, 0x40) == 0, "unload record bytes");
    CALL_OK(api.ll_destroy(ll));
    struct core_rig *cores[2] = { &nx, &q7 };
    for (int i = 0; i < 2; i++) {
        nrtucode_context_t *ctx = api.core_get_context(cores[i]->core);
        CHECK(ctx == cores[i]->ctx, "core_get_context");
        CALL_OK(api.core_destroy(cores[i]->core));
        CHECK(dev_u32(dev, cores[i]->dram) == CLAIM_UNCLAIMED, "claim released");
        CALL_OK(api.context_destroy(ctx));
    }
    CHECK(nrt_sim_device_live_memhandles(dev) == 0, "device memory all freed");
    nrt_sim_device_destroy(dev);
    remove_image_dir(image_dir);
    free(build);
    free(git);
    dlclose(provider);
    printf("PASS: %d checks\n", checks);
    return 0;
}
