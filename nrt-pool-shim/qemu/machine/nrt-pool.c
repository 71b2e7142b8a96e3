/*
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The `nrt-pool` machine: one emulated Pool core (an Xtensa core, de212 by default) whose
 * device memory is the nrt-pool engine's, shared, not copied (docs/decisions.md D63).
 *
 * This file is compiled into QEMU (nrt-pool-shim/qemu/machine/build-qemu.sh adds it to a
 * QEMU source tree), so it is under QEMU's licence, GPL-2.0-or-later, unlike the rest of
 * the project.
 *
 * The engine's device memory (HBM, SBUF, the cores' data scratch areas, the control block)
 * is one memory file. QEMU maps it as the machine's RAM (`-machine memory-backend=ID` over
 * `-object memory-backend-file,mem-path=/dev/fd/N,share=on`), but never at a fixed place:
 * the core reaches it only through translation windows, as a Pool core does on hardware.
 * The `regions` property names where each SoC range lies in the file:
 * "SOC+SIZE@OFFSET;..." in hexadecimal (semicolons: QEMU splits options at commas).
 *
 * Core-local map:
 *   0x00080000   64 KiB  pinned window 2: the core's data scratch area (the NX dataram)
 *   0x00100000    4 KiB  window registers (below)
 *   0x04000000 + n*16 MiB  window n (0-7), 16 MiB, programmed by MEM_WINDOWn_LO/HI
 *   0x4FFFE000    8 KiB  private RAM: the core's local stack (the board's and the
 *                        kernel's); the ~1 GiB below it is no memory, so a stack that
 *                        outgrows it faults (a write below it is never a write elsewhere)
 *   0x50000000            the core configuration's system ROM (the reset vector)
 *   0x60000000    1 MiB  the board's vectors: read-only (stores are bus errors)
 *   0x80000000   64 MiB  pinned window 0 (SBUF)
 *   0x84000000   64 MiB  pinned window 1 (hbm_scratch: the op image, the heaps, tensors)
 *   0x88000000   16 MiB  the board's code: read-only, a store there is a bus error (a kernel
 *                        cannot change the board that runs the next launch)
 *   0x89000000   16 MiB  private RAM (the board's data)
 * Every other address is a bus error: a load or store there raises
 * LoadStorePIFAddrError, a fetch InstrPIFAddrError. So is any SoC range the `hidden`
 * property names ("SOC+SIZE;...", hexadecimal), in every window that spans it: the engine
 * hides the other cores' op images and scratch areas, so no store of this core reaches
 * them (issue #25).
 *
 * Window registers (offsets from 0x00100000, 32-bit accesses only):
 *   0x200 + 8n  MEM_WINDOWn_LO, +4 MEM_WINDOWn_HI (n 0-7): window n shows the 16 MiB of
 *               SoC memory at (HI << 32) | (LO & 0xFF000000), as the Sunda registers do;
 *               writing either word remaps it
 *   0x300 + 8k  PINk_LO/HI (k 0-2): the pinned windows' SoC bases (the firmware's job on
 *               hardware; 64 MiB-aligned for k 0-1, 64 KiB for k 2)
 *   0x400 + 8g  GUARDg_LO/HI (g 0-31): a SoC page (4 KiB) no window shows; LO bit 0 set
 *               means in use. The engine's guard pages after tensors. Written values take
 *               effect at the next write of GUARDS_APPLY
 *   0x600       GUARDS_APPLY: any value applies the guard registers to every window, once
 *               (one change of the memory map for a whole set of guards: each change
 *               rebuilds QEMU's view of the address space and empties the core's TLB)
 *   0x800       LAST_ACCESS: 1 if the last bus error was a read (load or fetch), 2 a
 *               write; bit 8 set when a window's span holds the address (a guard page, or
 *               past what the window shows), then LAST_SOC is the SoC address it stands for
 *   0x804       LAST_ADDRESS: its core-local address
 *   0x808       LAST_SOC_LO, 0x80C LAST_SOC_HI
 *   0x900 + 4w  SHOWN (read-only): bytes window w shows (w: 0-7 dynamic, 8-10 pinned)
 * A window shows the part of its span that lies inside one region; the rest is a bus error.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "sysemu/reset.h"
#include "hw/boards.h"
#include "exec/memory.h"
#include "exec/address-spaces.h"
#include "cpu.h"
#include "xtensa_memory.h"
#include "xtensa_sim.h"

#define TYPE_NRT_POOL_MACHINE MACHINE_TYPE_NAME("nrt-pool")
OBJECT_DECLARE_SIMPLE_TYPE(NrtPoolMachineState, NRT_POOL_MACHINE)

enum {
    DYNAMIC_WINDOWS = 8,
    PINNED_WINDOWS = 3,
    WINDOWS = DYNAMIC_WINDOWS + PINNED_WINDOWS,
    GUARDS = 32,
    MAX_REGIONS = 32,
    MAX_HIDDEN = 24,
    GUARD_PAGE = 4096,
};

#define LOCAL_STACK_BASE 0x4FFFE000u
#define LOCAL_STACK_SIZE 0x2000u

#define REGS_BASE 0x00100000u
#define REGS_SIZE 0x1000u
#define REG_WINDOWS 0x200u
#define REG_PINS 0x300u
#define REG_GUARDS 0x400u
#define REG_GUARDS_APPLY 0x600u
#define REG_LAST_ACCESS 0x800u
#define REG_LAST_ADDRESS 0x804u
#define REG_LAST_SOC 0x808u
#define REG_SHOWN 0x900u
#define ACCESS_SOC 0x100u

typedef struct {
    uint64_t soc, size, offset;
} Region;

typedef struct {
    hwaddr local;
    uint64_t span;
    uint32_t lo, hi;
    /* What the window shows now: SoC base and bytes (0: nothing). */
    uint64_t base, shown;
    MemoryRegion alias;
    /* Made when first needed (most windows never show a guard page or another core's
       range; ~600 regions made up front cost each core's start ~4 ms). */
    MemoryRegion holes[GUARDS];
    MemoryRegion hidden[MAX_HIDDEN];
    bool hole_made[GUARDS], hidden_made[MAX_HIDDEN];
    char name[32];
} Window;

struct NrtPoolMachineState {
    MachineState parent_obj;
    uint32_t core;
    char *regions_text;
    Region regions[MAX_REGIONS];
    unsigned region_count;
    char *hidden_text;
    Region hidden[MAX_HIDDEN];
    unsigned hidden_count;
    Window windows[WINDOWS];
    uint32_t guard_lo[GUARDS], guard_hi[GUARDS];
    bool guards_changed;
    uint32_t last_access, last_address;
    uint64_t last_soc;
    MemoryRegion regs, bus_error, vectors, board_code, board, stack;
};

static const Region *region_of(NrtPoolMachineState *s, uint64_t soc)
{
    for (unsigned i = 0; i < s->region_count; i++) {
        const Region *r = &s->regions[i];
        if (soc >= r->soc && soc - r->soc < r->size) {
            return r;
        }
    }
    return NULL;
}

static const MemoryRegionOps error_ops;
typedef struct ErrorSite ErrorSite;
static ErrorSite *error_site(NrtPoolMachineState *s, MemoryRegion *mr);

/* Hole `mr` of window w (a guard page's or a hidden range's, `kind` and index i): made and
   added, disabled, the first time it is asked for. */
static void window_hole(NrtPoolMachineState *s, Window *w, MemoryRegion *mr, bool *made,
                        const char *kind, unsigned i)
{
    if (!*made) {
        char part[64];

        /* Names unique to the region: QEMU numbers a region's name among its owner's
           children by trying 0, 1, ... in turn (quadratic in regions of one name). */
        snprintf(part, sizeof part, "%s.%s%u", w->name, kind, i);
        memory_region_init_io(mr, OBJECT(s), &error_ops, error_site(s, mr), part, GUARD_PAGE);
        memory_region_add_subregion_overlap(get_system_memory(), w->local, mr, 2);
        memory_region_set_enabled(mr, false);
        *made = true;
    }
}

/* Shows window w's SoC base (from its registers) and punches the guard pages it covers. */
static void window_update(NrtPoolMachineState *s, Window *w)
{
    uint64_t ram = memory_region_size(s->parent_obj.ram);
    uint64_t base = ((uint64_t)w->hi << 32) | (w->lo & ~(uint32_t)(w->span - 1));
    const Region *r = region_of(s, base);

    memory_region_transaction_begin();
    w->base = base;
    w->shown = 0;
    if (r) {
        uint64_t offset = r->offset + (base - r->soc);
        uint64_t shown = MIN(w->span, r->size - (base - r->soc));
        if (offset < ram && shown <= ram - offset) {
            w->shown = shown;
            memory_region_set_alias_offset(&w->alias, offset);
            memory_region_set_size(&w->alias, shown);
        }
    }
    memory_region_set_enabled(&w->alias, w->shown != 0);
    for (unsigned g = 0; g < GUARDS; g++) {
        uint64_t page = ((uint64_t)s->guard_hi[g] << 32) | (s->guard_lo[g] & ~(GUARD_PAGE - 1u));
        bool on = (s->guard_lo[g] & 1) && w->shown && page >= base && page - base < w->shown;
        if (on) {
            window_hole(s, w, &w->holes[g], &w->hole_made[g], "guard", g);
            memory_region_set_address(&w->holes[g], w->local + (page - base));
        }
        if (w->hole_made[g]) {
            memory_region_set_enabled(&w->holes[g], on);
        }
    }
    for (unsigned h = 0; h < MAX_HIDDEN; h++) {
        bool on = false;
        if (h < s->hidden_count && w->shown) {
            uint64_t lo = MAX(s->hidden[h].soc, base);
            uint64_t hi = MIN(s->hidden[h].soc + s->hidden[h].size, base + w->shown);
            if (lo < hi) {
                on = true;
                window_hole(s, w, &w->hidden[h], &w->hidden_made[h], "hidden", h);
                memory_region_set_address(&w->hidden[h], w->local + (lo - base));
                memory_region_set_size(&w->hidden[h], hi - lo);
            }
        }
        if (w->hidden_made[h]) {
            memory_region_set_enabled(&w->hidden[h], on);
        }
    }
    memory_region_transaction_commit();
}

static uint64_t regs_read(void *opaque, hwaddr addr, unsigned size)
{
    NrtPoolMachineState *s = opaque;

    if (addr >= REG_WINDOWS && addr < REG_WINDOWS + 8 * DYNAMIC_WINDOWS) {
        Window *w = &s->windows[(addr - REG_WINDOWS) / 8];
        return (addr & 4) ? w->hi : w->lo;
    }
    if (addr >= REG_PINS && addr < REG_PINS + 8 * PINNED_WINDOWS) {
        Window *w = &s->windows[DYNAMIC_WINDOWS + (addr - REG_PINS) / 8];
        return (addr & 4) ? w->hi : w->lo;
    }
    if (addr >= REG_GUARDS && addr < REG_GUARDS + 8 * GUARDS) {
        unsigned g = (addr - REG_GUARDS) / 8;
        return (addr & 4) ? s->guard_hi[g] : s->guard_lo[g];
    }
    if (addr == REG_LAST_ACCESS) {
        return s->last_access;
    }
    if (addr == REG_LAST_ADDRESS) {
        return s->last_address;
    }
    if (addr == REG_LAST_SOC || addr == REG_LAST_SOC + 4) {
        return addr & 4 ? s->last_soc >> 32 : (uint32_t)s->last_soc;
    }
    if (addr >= REG_SHOWN && addr < REG_SHOWN + 4 * WINDOWS) {
        return s->windows[(addr - REG_SHOWN) / 4].shown;
    }
    return 0;
}

static void regs_write(void *opaque, hwaddr addr, uint64_t value, unsigned size)
{
    NrtPoolMachineState *s = opaque;
    Window *w = NULL;

    if (addr >= REG_WINDOWS && addr < REG_WINDOWS + 8 * DYNAMIC_WINDOWS) {
        w = &s->windows[(addr - REG_WINDOWS) / 8];
    } else if (addr >= REG_PINS && addr < REG_PINS + 8 * PINNED_WINDOWS) {
        w = &s->windows[DYNAMIC_WINDOWS + (addr - REG_PINS) / 8];
    }
    if (w) {
        uint32_t *word = (addr & 4) ? &w->hi : &w->lo;
        /* The same value again (a kernel translating the window it has) changes nothing:
           no new memory map. */
        if (*word != value) {
            *word = value;
            window_update(s, w);
        }
        return;
    }
    if (addr >= REG_GUARDS && addr < REG_GUARDS + 8 * GUARDS) {
        unsigned g = (addr - REG_GUARDS) / 8;
        uint32_t *word = (addr & 4) ? &s->guard_hi[g] : &s->guard_lo[g];
        s->guards_changed |= *word != value;
        *word = value;
        return;
    }
    if (addr == REG_GUARDS_APPLY && s->guards_changed) {
        s->guards_changed = false;
        memory_region_transaction_begin();
        for (unsigned i = 0; i < WINDOWS; i++) {
            window_update(s, &s->windows[i]);
        }
        memory_region_transaction_commit();
    }
}

static const MemoryRegionOps regs_ops = {
    .read = regs_read,
    .write = regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

/* Where the core has no memory: every access fails (the CPU raises LoadStorePIFAddrError,
   or InstrPIFAddrError for a fetch), and the machine notes the kind and the local address. */
struct ErrorSite {
    NrtPoolMachineState *s;
    MemoryRegion *mr;
};

static ErrorSite *error_site(NrtPoolMachineState *s, MemoryRegion *mr)
{
    ErrorSite *e = g_new0(ErrorSite, 1);

    e->s = s;
    e->mr = mr;
    return e;
}

static MemTxResult note_error(ErrorSite *e, hwaddr addr, uint32_t access)
{
    NrtPoolMachineState *s = e->s;
    hwaddr local = e->mr->addr + addr;

    s->last_access = access;
    s->last_address = local;
    s->last_soc = 0;
    for (unsigned i = 0; i < WINDOWS; i++) {
        Window *w = &s->windows[i];
        if (local >= w->local && local - w->local < w->span) {
            s->last_access |= ACCESS_SOC;
            s->last_soc = w->base + (local - w->local);
        }
    }
    return MEMTX_DECODE_ERROR;
}

static MemTxResult error_read(void *opaque, hwaddr addr, uint64_t *data, unsigned size,
                              MemTxAttrs attrs)
{
    *data = 0;
    return note_error(opaque, addr, 1);
}

static MemTxResult error_write(void *opaque, hwaddr addr, uint64_t data, unsigned size,
                               MemTxAttrs attrs)
{
    return note_error(opaque, addr, 2);
}

static const MemoryRegionOps error_ops = {
    .read_with_attrs = error_read,
    .write_with_attrs = error_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8, .unaligned = true },
};

static bool parse_regions(NrtPoolMachineState *s, Error **errp)
{
    const char *p = s->regions_text ? s->regions_text : "";

    s->region_count = 0;
    while (*p) {
        uint64_t soc, size, offset;
        const char *end;

        if (s->region_count == MAX_REGIONS) {
            error_setg(errp, "nrt-pool: more than %d regions", MAX_REGIONS);
            return false;
        }
        if (qemu_strtou64(p, &end, 16, &soc) || *end != '+' ||
            qemu_strtou64(end + 1, &end, 16, &size) || *end != '@' ||
            qemu_strtou64(end + 1, &end, 16, &offset) || (*end && *end != ';') ||
            size == 0 || soc + size < soc) {
            error_setg(errp, "nrt-pool: bad regions entry at '%s' (want SOC+SIZE@OFFSET "
                       "in hexadecimal, separated by semicolons)", p);
            return false;
        }
        s->regions[s->region_count++] = (Region){ soc, size, offset };
        p = *end ? end + 1 : end;
    }
    return true;
}

static bool parse_hidden(NrtPoolMachineState *s, Error **errp)
{
    const char *p = s->hidden_text ? s->hidden_text : "";

    s->hidden_count = 0;
    while (*p) {
        uint64_t soc, size;
        const char *end;

        if (s->hidden_count == MAX_HIDDEN) {
            error_setg(errp, "nrt-pool: more than %d hidden ranges", MAX_HIDDEN);
            return false;
        }
        if (qemu_strtou64(p, &end, 16, &soc) || *end != '+' ||
            qemu_strtou64(end + 1, &end, 16, &size) || (*end && *end != ';') ||
            size == 0 || soc + size < soc) {
            error_setg(errp, "nrt-pool: bad hidden entry at '%s' (want SOC+SIZE in "
                       "hexadecimal, separated by semicolons)", p);
            return false;
        }
        s->hidden[s->hidden_count++] = (Region){ soc, size, 0 };
        p = *end ? end + 1 : end;
    }
    return true;
}

/* The machine, for nrt_pool_soc_of (one per QEMU process). */
static NrtPoolMachineState *the_machine;

/* The SoC address core-local `local` shows now through a window, or UINT64_MAX. Exported
   (build-qemu.sh adds it to the plugins' symbol list) for the access plugin, which records a
   checked launch's reads and writes by SoC address, dynamic windows included (D101). */
uint64_t nrt_pool_soc_of(uint64_t local);
uint64_t nrt_pool_soc_of(uint64_t local)
{
    NrtPoolMachineState *s = the_machine;
    if (!s) {
        return UINT64_MAX;
    }
    for (unsigned i = 0; i < WINDOWS; i++) {
        Window *w = &s->windows[i];
        if (w->shown && local >= w->local && local - w->local < w->shown) {
            return w->base + (local - w->local);
        }
    }
    return UINT64_MAX;
}

static void nrt_pool_reset(void *opaque)
{
    cpu_reset(CPU(opaque));
}

static void window_init(NrtPoolMachineState *s, Window *w, const char *name, hwaddr local,
                        uint64_t span)
{
    MemoryRegion *sysmem = get_system_memory();

    w->local = local;
    w->span = span;
    g_strlcpy(w->name, name, sizeof w->name);
    memory_region_init_alias(&w->alias, OBJECT(s), name, s->parent_obj.ram, 0, span);
    memory_region_add_subregion_overlap(sysmem, local, &w->alias, 1);
    memory_region_set_enabled(&w->alias, false);
}

static void nrt_pool_init(MachineState *machine)
{
    NrtPoolMachineState *s = NRT_POOL_MACHINE(machine);
    the_machine = s;
    MemoryRegion *sysmem = get_system_memory();
    XtensaCPU *cpu;
    CPUXtensaState *env;
    ErrorSite *everywhere, *board_code, *vectors;
    char name[32];

    if (!machine->ram) {
        error_report("nrt-pool: no device memory (-machine memory-backend=ID)");
        exit(EXIT_FAILURE);
    }
    if (!parse_regions(s, &error_fatal) || !parse_hidden(s, &error_fatal)) {
        exit(EXIT_FAILURE);
    }
    /* One change of the memory map for the whole machine: each of the ~600 regions below
       would otherwise rebuild QEMU's view of the address space (most of a core's start
       time, issue #29). */
    memory_region_transaction_begin();
    cpu = XTENSA_CPU(cpu_create(machine->cpu_type));
    env = &cpu->env;
    env->sregs[PRID] = s->core;
    qemu_register_reset(nrt_pool_reset, cpu);
    nrt_pool_reset(cpu);

    /* Bus errors below everything else. */
    everywhere = error_site(s, &s->bus_error);
    memory_region_init_io(&s->bus_error, OBJECT(s), &error_ops, everywhere,
                          "nrt-pool.bus-error", UINT64_C(1) << 32);
    memory_region_add_subregion_overlap(sysmem, 0, &s->bus_error, -1);

    /* Of the core configuration's memories only the ROM with the reset vector: a Pool core
       has nothing at the others' addresses. */
    xtensa_create_memory_regions(&env->config->sysrom, "xtensa.sysrom", sysmem);
    /* The board's vectors and code are ROM devices: reads and fetches from their RAM,
       stores through error_ops (a bus error noted like any other), so no kernel changes
       the board that runs the next launch; the ELF loader writes them at reset. */
    vectors = error_site(s, &s->vectors);
    memory_region_init_rom_device(&s->vectors, OBJECT(s), &error_ops, vectors,
                                  "nrt-pool.vectors", 1 << 20, &error_fatal);
    memory_region_add_subregion(sysmem, 0x60000000, &s->vectors);
    board_code = error_site(s, &s->board_code);
    memory_region_init_rom_device(&s->board_code, OBJECT(s), &error_ops, board_code,
                                  "nrt-pool.board-code", 16 << 20, &error_fatal);
    memory_region_add_subregion(sysmem, 0x88000000, &s->board_code);
    memory_region_init_ram(&s->board, OBJECT(s), "nrt-pool.board", 16 << 20, &error_fatal);
    memory_region_add_subregion(sysmem, 0x89000000, &s->board);
    memory_region_init_ram(&s->stack, OBJECT(s), "nrt-pool.stack", LOCAL_STACK_SIZE, &error_fatal);
    memory_region_add_subregion(sysmem, LOCAL_STACK_BASE, &s->stack);

    memory_region_init_io(&s->regs, OBJECT(s), &regs_ops, s, "nrt-pool.windows", REGS_SIZE);
    memory_region_add_subregion(sysmem, REGS_BASE, &s->regs);
    for (unsigned n = 0; n < DYNAMIC_WINDOWS; n++) {
        snprintf(name, sizeof name, "nrt-pool.window%u", n);
        window_init(s, &s->windows[n], name, (hwaddr)(n + 4) << 24, 16 << 20);
    }
    window_init(s, &s->windows[DYNAMIC_WINDOWS + 0], "nrt-pool.sbuf", 0x80000000, 64 << 20);
    window_init(s, &s->windows[DYNAMIC_WINDOWS + 1], "nrt-pool.hbm-scratch", 0x84000000,
                64 << 20);
    window_init(s, &s->windows[DYNAMIC_WINDOWS + 2], "nrt-pool.dataram", 0x00080000, 64 << 10);
    /* Window 0 shows the APB on hardware (SUNDA_APB_BASE); nothing backs it here. */
    s->windows[0].lo = 0xF0000000u;
    memory_region_transaction_commit();

    xtensa_sim_load_kernel(cpu, machine);
}

static char *get_regions(Object *obj, Error **errp)
{
    return g_strdup(NRT_POOL_MACHINE(obj)->regions_text);
}

static void set_regions(Object *obj, const char *value, Error **errp)
{
    NrtPoolMachineState *s = NRT_POOL_MACHINE(obj);

    g_free(s->regions_text);
    s->regions_text = g_strdup(value);
}

static char *get_hidden(Object *obj, Error **errp)
{
    return g_strdup(NRT_POOL_MACHINE(obj)->hidden_text);
}

static void set_hidden(Object *obj, const char *value, Error **errp)
{
    NrtPoolMachineState *s = NRT_POOL_MACHINE(obj);

    g_free(s->hidden_text);
    s->hidden_text = g_strdup(value);
}

static void nrt_pool_instance_init(Object *obj)
{
    NrtPoolMachineState *s = NRT_POOL_MACHINE(obj);

    object_property_add_uint32_ptr(obj, "core", &s->core, OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "core", "the core's PRID (0-7)");
}

static void nrt_pool_class_init(ObjectClass *oc, void *data)
{
    MachineClass *mc = MACHINE_CLASS(oc);

    mc->desc = "one nrt-pool Pool core over the engine's shared device memory";
    mc->init = nrt_pool_init;
    mc->max_cpus = 1;
    mc->default_cpu_type = XTENSA_CPU_TYPE_NAME("de233_fpu");
    object_class_property_add_str(oc, "regions", get_regions, set_regions);
    object_class_property_set_description(oc, "regions",
        "where SoC ranges lie in the device memory: SOC+SIZE@OFFSET;... (hexadecimal)");
    object_class_property_add_str(oc, "hidden", get_hidden, set_hidden);
    object_class_property_set_description(oc, "hidden",
        "SoC ranges no window of this core shows: SOC+SIZE;... (hexadecimal)");
}

static const TypeInfo nrt_pool_machine_info = {
    .name = TYPE_NRT_POOL_MACHINE,
    .parent = TYPE_MACHINE,
    .instance_size = sizeof(NrtPoolMachineState),
    .instance_init = nrt_pool_instance_init,
    .class_init = nrt_pool_class_init,
};

static void nrt_pool_machine_register(void)
{
    type_register_static(&nrt_pool_machine_info);
}

type_init(nrt_pool_machine_register)
