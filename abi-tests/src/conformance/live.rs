//! Checks that load the provider (in a child process) and drive it through its exports on a
//! memory-backed device, with the harness's own declarations. Checks named `*.private-*`
//! read the handles' documented private offsets.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::Arc;

use libloading::Library;
use nrt_sim_device::facade::UcodeFacade;
use nrt_sim_device::{
    control_block as cb, tables, FaultOp, Op, SimDevice, CLAIM_CLAIMED, CLAIM_UNCLAIMED,
};

use super::Outcome;

type P = *mut c_void;
type R = Result<String, Outcome>;
const DRAM: u64 = 0x2_0000_0000;

/// The GNU-built Xtensa test library the harness ships (made with gcc-xtensa-lx106 from
/// nrtucode-extisa/tests/xtensa/kernels.c; also a fuzz seed).
const GNU_LIBRARY: &[u8] = include_bytes!("../../../fuzz/corpus/prelink/gnu-split.so");
const SUNDA_LIBRARY: &[u8] =
    b"synthetic SUNDA ext-ISA library (SUNDA libraries are not parsed on the host)\n";

/// The image directory children see (NRTUCODE_EXTISA_IMAGE_DIR).
pub fn write_images(dir: &Path) {
    for (rel, bytes) in [
        ("ext-isa/ct6/lib0.elf", SUNDA_LIBRARY),
        ("ext-isa/ct13/lib0.elf", GNU_LIBRARY),
    ] {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

pub const CHECKS: &[super::CheckEntry] = &[
    ("api.level", "get_api_level() == 3", api_level),
    ("context.api-gate", "context_create(level != 3) -> 4 with *out = NULL; level 3 -> 0", api_gate),
    ("libnrt.bind", "the 30 symbols libnrt binds resolve in its order; versions are strings", libnrt_bind),
    ("handles.malloc-sizes", "each handle is one malloc block of the documented size: context 0x28, core 0x70, ll 0x48, opset 0x830 (glibc usable sizes)", malloc_sizes),
    ("handles.context.private-offsets", "context: rw table +0x00, memhandle +0x08, userdata +0x10, scratch size 0x200 +0x18, scratch +0x20", context_offsets),
    ("handles.core.private-offsets", "core: context +0x00, coretype +0x10, bases +0x18/+0x20/+0x28, boot +0x30, name +0x48 (NUL at +0x68)", core_offsets),
    ("handles.ll.private-offsets", "ll: context +0x00, selector +0x10, size +0x18, name +0x20 (NUL at +0x40)", ll_offsets),
    ("handles.opset.private-offsets", "opset: context +0x000, slots +0x008, name +0x808 (NUL at +0x828)", opset_offsets),
    ("claim.unclaimed", "reads the claim word, writes 0x502B2DA1, returns 0", claim_unclaimed),
    ("claim.claimed-by-another", "word 0x502B2DA1 -> 8, nothing written", claim_busy),
    ("claim.incompatible", "any other word -> 8, nothing written", claim_incompatible),
    ("claim.release", "core_destroy writes 0x6099CB34 only for a claimed core", claim_release),
    ("logs.ring", "enable publishes ring address, size 0x20000, head 0, level; print_logs drains \"name: text\"; before enable 8", logs_ring),
    ("dge.priority-map", "boot gate, NX POOL kind gate, n > 4 -> 8; writes 4n bytes at +0x18", dge_priority),
    ("dge.mailboxes", "mailboxes from num on reset to 0xFFFFFF00; address dram + 0x28; num > 4 -> 8", dge_mailboxes),
    ("pc-bounds", "no boot or kind gate; lo >= hi -> 8; writes lo +0x38, hi +0x40; disable writes 0 and ~0", pc_bounds),
    ("opset.rules", "slots, 0xF0 specializations at byte 0x0c, byte-sum count, NULL queries 0, library index 0 / 1", opset_rules),
    ("images.routing", "ext-ISA: SUNDA 1 lib, Cayman+ 4, other coretypes 1; flavor >= 4 -> 2; memory/hwdecode: coretype > 37 -> 1, bad region/kind -> 2", images_routing),
    ("ll.sunda-records", "SUNDA ll_create stages nothing; one 0x40-byte 0x1095 record per direction, address and size 0", ll_sunda),
    ("ll.prelinked-records", "Cayman ll_create stages a UCPL image; the load record carries its device address and size, unload neither", ll_prelinked),
    ("records.rules", "8-byte buffer alignment (8), capacity (7), 8 records for a foreign core", records_rules),
    ("callbacks.pass-through", "rw and memhandle callback errors are returned verbatim", callbacks),
];

struct S {
    lib: Library,
    dev: Arc<SimDevice>,
}

fn with(lib: &Path, f: impl FnOnce(&S) -> R) -> Outcome {
    // SAFETY: loading the provider under test in this child is the point of the check.
    let lib = match unsafe { Library::new(lib) } {
        Ok(l) => l,
        Err(e) => return Outcome::fail(format!("cannot load: {e}")),
    };
    let s = S {
        lib,
        dev: SimDevice::new(),
    };
    match s.f::<unsafe extern "C" fn(P) -> P>("context_get_userdata") {
        Ok(g) => tables::bind_userdata_getter(g),
        Err(o) => return o,
    }
    match f(&s) {
        Ok(o) => Outcome::pass(o),
        Err(o) => o,
    }
}

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), Outcome> {
    if cond {
        Ok(())
    } else {
        Err(Outcome::fail(what()))
    }
}

fn rw() -> *const c_void {
    (&tables::RW_TABLE as *const tables::RwTable).cast()
}

fn mh() -> *const c_void {
    (&tables::MEMHANDLE_TABLE as *const tables::MemhandleTable).cast()
}

fn u64_at(p: P, off: usize) -> u64 {
    // SAFETY: callers read documented offsets inside live handles.
    unsafe { p.cast::<u8>().add(off).cast::<u64>().read_unaligned() }
}

fn u32_at(p: P, off: usize) -> u32 {
    // SAFETY: as u64_at.
    unsafe { p.cast::<u8>().add(off).cast::<u32>().read_unaligned() }
}

fn str_at(p: P, off: usize) -> String {
    // SAFETY: a NUL-terminated name inside a live handle.
    unsafe { CStr::from_ptr(p.cast::<u8>().add(off).cast()) }
        .to_string_lossy()
        .into_owned()
}

impl S {
    fn f<T: Copy>(&self, name: &str) -> Result<T, Outcome> {
        // SAFETY: the caller states the documented signature of `name`.
        unsafe { self.lib.get::<T>(format!("nrtucode_{name}").as_bytes()) }
            .map(|s| *s)
            .map_err(|_| Outcome::fail(format!("nrtucode_{name} is not exported")))
    }

    fn ctx(&self) -> Result<P, Outcome> {
        let create: unsafe extern "C" fn(u32, *const c_void, *mut P) -> u32 =
            self.f("context_create")?;
        let set_mh: unsafe extern "C" fn(P, *const c_void) =
            self.f("context_set_memhandle_impl")?;
        let set_ud: unsafe extern "C" fn(P, P) = self.f("context_set_userdata")?;
        let mut ctx = null_mut();
        // SAFETY: valid table and out pointer; the device outlives the child.
        unsafe {
            let rc = create(3, rw(), &mut ctx);
            ensure(rc == 0 && !ctx.is_null(), || {
                format!("context_create(3) -> {rc}")
            })?;
            set_mh(ctx, mh());
            set_ud(ctx, Arc::as_ptr(&self.dev) as P);
        }
        Ok(ctx)
    }

    fn core_in(&self, ctx: P, ct: u32, dram: u64, boot: bool) -> Result<P, Outcome> {
        let create: unsafe extern "C" fn(P, u32, u64, u64, u64, *mut P) -> u32 =
            self.f("core_create")?;
        let booted: unsafe extern "C" fn(P, u32) -> u32 = self.f("core_on_ucode_booted")?;
        // Cores may share a control block: one already mapped at `dram` is kept; any other
        // mapping failure is the harness's own, reported rather than ignored.
        match self.dev.map_control_block(dram) {
            Ok(()) => {}
            Err(nrt_sim_device::SimError::Overlap { addr, .. }) if addr == dram => {}
            Err(e) => {
                return Err(Outcome::fail(format!(
                    "harness: control block at {dram:#x}: {e}"
                )))
            }
        }
        let mut core = null_mut();
        // SAFETY: live context, out pointer.
        unsafe {
            let rc = create(ctx, ct, 0x1000, dram, 0x3000, &mut core);
            ensure(rc == 0, || format!("core_create -> {rc}"))?;
            if boot {
                let rc = booted(core, 0);
                ensure(rc == 0, || format!("core_on_ucode_booted -> {rc}"))?;
            }
        }
        Ok(core)
    }

    fn core(&self, ct: u32, boot: bool) -> Result<P, Outcome> {
        let ctx = self.ctx()?;
        self.core_in(ctx, ct, DRAM, boot)
    }

    fn writes(&self) -> Vec<(u64, Vec<u8>)> {
        self.dev.writes()
    }

    fn logged(&self, needle: &str) -> bool {
        self.dev
            .host_logs()
            .iter()
            .any(|l| l.text().contains(needle))
    }
}

fn api_level(lib: &Path) -> Outcome {
    with(lib, |s| {
        let f: unsafe extern "C" fn() -> i32 = s.f("get_api_level")?;
        // SAFETY: documented signature.
        let level = unsafe { f() };
        ensure(level == 3, || format!("{level}"))?;
        Ok("3".into())
    })
}

fn api_gate(lib: &Path) -> Outcome {
    with(lib, |s| {
        let create: unsafe extern "C" fn(u32, *const c_void, *mut P) -> u32 =
            s.f("context_create")?;
        let mut seen = Vec::new();
        for level in [2u32, 4, 0xFFFF_FFFF] {
            let mut out = std::ptr::dangling_mut::<c_void>();
            // SAFETY: valid table and out pointer.
            let rc = unsafe { create(level, rw(), &mut out) };
            ensure(rc == 4 && out.is_null(), || {
                format!("level {level} -> {rc}, out {out:p}")
            })?;
            seen.push(format!("{level}->4"));
        }
        s.ctx()?;
        Ok(format!("{}; 3->0", seen.join(", ")))
    })
}

fn libnrt_bind(lib: &Path) -> Outcome {
    match UcodeFacade::open(lib) {
        Ok(f) => Outcome::pass(format!(
            "bound 30; build {}; git {} characters",
            f.build_version,
            f.git_version.len()
        )),
        Err(e) => Outcome::fail(e.to_string()),
    }
}

/// A glibc chunk of usable size `u` serves requests in (u - 16, u].
fn fits(p: P, size: usize) -> Result<usize, Outcome> {
    // SAFETY: `p` is a live malloc block of the provider (the process's libc allocator).
    let u = unsafe { libc::malloc_usable_size(p) };
    ensure(size <= u && u < size + 16, || {
        format!("usable size {u:#x} cannot hold a {size:#x} request")
    })?;
    Ok(u)
}

fn malloc_sizes(lib: &Path) -> Outcome {
    with(lib, |s| {
        let ctx = s.ctx()?;
        let core = s.core_in(ctx, 6, DRAM, false)?;
        let ll = sunda_ll(s, ctx)?;
        let create: unsafe extern "C" fn(P, *mut P) -> u32 = s.f("opset_create")?;
        let mut op = null_mut();
        // SAFETY: live context, out pointer.
        ensure(unsafe { create(ctx, &mut op) } == 0, || {
            "opset_create failed".into()
        })?;
        let sizes = [
            fits(ctx, 0x28)?,
            fits(core, 0x70)?,
            fits(ll, 0x48)?,
            fits(op, 0x830)?,
        ];
        Ok(format!(
            "usable {:#x} {:#x} {:#x} {:#x}",
            sizes[0], sizes[1], sizes[2], sizes[3]
        ))
    })
}

fn context_offsets(lib: &Path) -> Outcome {
    with(lib, |s| {
        let ctx = s.ctx()?;
        ensure(u64_at(ctx, 0) == rw() as u64, || {
            "+0x00 is not the rw table".into()
        })?;
        ensure(u64_at(ctx, 8) == mh() as u64, || {
            "+0x08 is not the memhandle table".into()
        })?;
        ensure(u64_at(ctx, 0x10) == Arc::as_ptr(&s.dev) as u64, || {
            "+0x10 is not the userdata".into()
        })?;
        ensure(u64_at(ctx, 0x18) == 0x200, || {
            format!("+0x18 = {:#x}", u64_at(ctx, 0x18))
        })?;
        ensure(u64_at(ctx, 0x20) != 0, || "+0x20 scratch is NULL".into())?;
        Ok("rw, memhandle, userdata, 0x200, scratch".into())
    })
}

fn core_offsets(lib: &Path) -> Outcome {
    with(lib, |s| {
        let ctx = s.ctx()?;
        let core = s.core_in(ctx, 2, DRAM, false)?;
        let get_name: unsafe extern "C" fn(P) -> *const c_char = s.f("core_get_friendly_name")?;
        let set_name: unsafe extern "C" fn(P, *const c_char) = s.f("core_set_friendly_name")?;
        let booted: unsafe extern "C" fn(P, u32) -> u32 = s.f("core_on_ucode_booted")?;
        ensure(u64_at(core, 0) == ctx as u64, || {
            "+0x00 is not the context".into()
        })?;
        ensure(u32_at(core, 0x10) == 2, || {
            format!("+0x10 = {}", u32_at(core, 0x10))
        })?;
        ensure(
            (u64_at(core, 0x18), u64_at(core, 0x20), u64_at(core, 0x28)) == (0x1000, DRAM, 0x3000),
            || "bases not at +0x18/+0x20/+0x28".into(),
        )?;
        ensure(u32_at(core, 0x30) == 0, || {
            "boot state not 0 before the claim".into()
        })?;
        // SAFETY: live core.
        unsafe { booted(core, 0) };
        ensure(u32_at(core, 0x30) == 1, || {
            "boot state not 1 after the claim".into()
        })?;
        let name = str_at(core, 0x48);
        ensure(name.starts_with("nrtucode_core_t@0x"), || {
            format!("name {name:?}")
        })?;
        // SAFETY: live core.
        ensure(
            unsafe { get_name(core) } as usize == core as usize + 0x48,
            || "get_friendly_name != core + 0x48".into(),
        )?;
        let long = CString::new("x".repeat(40)).unwrap();
        // SAFETY: live core, NUL-terminated name.
        unsafe { set_name(core, long.as_ptr()) };
        ensure(str_at(core, 0x48).len() == 32, || {
            "rename not cut at 32 bytes".into()
        })?;
        Ok("context, coretype, bases, boot 0->1, name@+0x48 (32 max)".into())
    })
}

fn sunda_ll(s: &S, ctx: P) -> Result<P, Outcome> {
    let create: unsafe extern "C" fn(P, u32, u32, u64, *mut P) -> u32 = s.f("ll_create")?;
    let mut ll = null_mut();
    // SAFETY: live context, out pointer.
    let rc = unsafe { create(ctx, 6, 0, 0, &mut ll) };
    ensure(rc == 0, || format!("ll_create(SUNDA) -> {rc}"))?;
    Ok(ll)
}

fn ll_offsets(lib: &Path) -> Outcome {
    with(lib, |s| {
        let ctx = s.ctx()?;
        let ll = sunda_ll(s, ctx)?;
        let size: unsafe extern "C" fn(P) -> usize = s.f("ll_get_library_size")?;
        let set_name: unsafe extern "C" fn(P, *const c_char) = s.f("ll_set_friendly_name")?;
        ensure(u64_at(ll, 0) == ctx as u64, || {
            "+0x00 is not the context".into()
        })?;
        ensure(u64_at(ll, 0x10) == 0, || {
            format!("selector {}", u64_at(ll, 0x10))
        })?;
        // SAFETY: live handle.
        ensure(u64_at(ll, 0x18) == unsafe { size(ll) } as u64, || {
            "+0x18 != get_library_size".into()
        })?;
        ensure(str_at(ll, 0x20).starts_with("nrtucode_ll_t@0x"), || {
            format!("name {:?}", str_at(ll, 0x20))
        })?;
        let long = CString::new("y".repeat(50)).unwrap();
        // SAFETY: live handle, NUL-terminated name.
        unsafe { set_name(ll, long.as_ptr()) };
        ensure(str_at(ll, 0x20).len() == 32, || {
            "rename not cut at 32 bytes".into()
        })?;
        Ok("context, selector 0, size, name@+0x20 (32 max)".into())
    })
}

fn opset_offsets(lib: &Path) -> Outcome {
    with(lib, |s| {
        let ctx = s.ctx()?;
        let create: unsafe extern "C" fn(P, *mut P) -> u32 = s.f("opset_create")?;
        let add: unsafe extern "C" fn(P, *const u8) -> u32 = s.f("opset_add_instruction")?;
        let set_name: unsafe extern "C" fn(P, *const c_char) = s.f("opset_set_friendly_name")?;
        let mut op = null_mut();
        // SAFETY: live context, out pointer, 64-byte instruction.
        unsafe {
            ensure(create(ctx, &mut op) == 0, || "opset_create failed".into())?;
            ensure(u64_at(op, 0) == ctx as u64, || {
                "+0x000 is not the context".into()
            })?;
            ensure(u64_at(op, 8 + 8 * 0x41) == 0, || {
                "slot set before add".into()
            })?;
            add(op, [0x41u8; 64].as_ptr());
            ensure(u64_at(op, 8 + 8 * 0x41) != 0, || {
                "slot 0x41 at +0x008 + 8*op not set".into()
            })?;
            ensure(str_at(op, 0x808).starts_with("nrtucode_opset_t@0x"), || {
                format!("name {:?}", str_at(op, 0x808))
            })?;
            let long = CString::new("z".repeat(50)).unwrap();
            set_name(op, long.as_ptr());
            ensure(str_at(op, 0x808).len() == 32, || {
                "rename not cut at 32 bytes".into()
            })?;
        }
        Ok("context, slots, name@+0x808 (32 max)".into())
    })
}

fn claim_unclaimed(lib: &Path) -> Outcome {
    with(lib, |s| {
        let core = s.core(6, false)?;
        let booted: unsafe extern "C" fn(P, u32) -> u32 = s.f("core_on_ucode_booted")?;
        s.dev.clear_trace();
        // SAFETY: live core.
        let rc = unsafe { booted(core, 0) };
        let want = vec![
            Op::Read { addr: DRAM, len: 4 },
            Op::Write {
                addr: DRAM,
                bytes: CLAIM_CLAIMED.to_le_bytes().to_vec(),
            },
        ];
        ensure(rc == 0 && s.dev.trace() == want, || {
            format!("rc {rc}; trace {:?}", s.dev.trace())
        })?;
        Ok("read 4 @dram, write 0x502B2DA1, 0".into())
    })
}

fn refused(s: &S, word: u32) -> R {
    let core = s.core(6, false)?;
    let booted: unsafe extern "C" fn(P, u32) -> u32 = s.f("core_on_ucode_booted")?;
    s.dev.poke(DRAM, &word.to_le_bytes()).unwrap();
    s.dev.clear_trace();
    // SAFETY: live core.
    let rc = unsafe { booted(core, 0) };
    ensure(rc == 8 && s.writes().is_empty(), || {
        format!("rc {rc}; writes {:?}", s.writes())
    })?;
    ensure(s.dev.peek_u32(DRAM).unwrap() == word, || {
        "claim word changed".into()
    })?;
    Ok(format!("{word:#010x} -> 8, no write"))
}

fn claim_busy(lib: &Path) -> Outcome {
    with(lib, |s| refused(s, CLAIM_CLAIMED))
}

fn claim_incompatible(lib: &Path) -> Outcome {
    with(lib, |s| refused(s, 0xDEAD_BEEF))
}

fn claim_release(lib: &Path) -> Outcome {
    with(lib, |s| {
        let destroy: unsafe extern "C" fn(P) -> u32 = s.f("core_destroy")?;
        let claimed = s.core(6, true)?;
        s.dev.clear_trace();
        // SAFETY: live core, destroyed once.
        unsafe { destroy(claimed) };
        let released = s.writes().last() == Some(&(DRAM, CLAIM_UNCLAIMED.to_le_bytes().to_vec()));
        ensure(released, || format!("writes on destroy {:?}", s.writes()))?;
        let ctx = s.ctx()?;
        let unclaimed = s.core_in(ctx, 6, DRAM + 0x1000, false)?;
        s.dev.clear_trace();
        // SAFETY: live core, destroyed once.
        unsafe { destroy(unclaimed) };
        ensure(s.writes().is_empty(), || {
            format!("unclaimed core wrote {:?}", s.writes())
        })?;
        Ok("claimed: 0x6099CB34 written; unclaimed: no write".into())
    })
}

fn logs_ring(lib: &Path) -> Outcome {
    with(lib, |s| {
        let core = s.core(6, true)?;
        let enable: unsafe extern "C" fn(P) -> u32 = s.f("core_enable_logs")?;
        let print: unsafe extern "C" fn(P) -> u32 = s.f("core_print_logs")?;
        let disable: unsafe extern "C" fn(P) -> u32 = s.f("core_disable_logs")?;
        // SAFETY: live core throughout.
        unsafe {
            ensure(print(core) == 8, || "print_logs before enable != 8".into())?;
            s.dev.clear_trace();
            ensure(enable(core) == 0, || "enable_logs failed".into())?;
            ensure(
                s.dev.peek_u32(DRAM + cb::LOG_RING_SIZE).unwrap() == 0x20000,
                || "ring size not published".into(),
            )?;
            let ring = s.dev.peek_u64(DRAM + cb::LOG_RING_ADDR).unwrap();
            ensure(ring != 0, || "ring address not published".into())?;
            ensure(
                s.dev.peek_u32(DRAM + cb::MAX_LOG_LEVEL).unwrap() == 4,
                || "level not 4".into(),
            )?;
            s.dev
                .firmware_log(DRAM, 1, "conformance says hello\n")
                .unwrap();
            s.dev.clear_host_logs();
            ensure(print(core) == 0, || "print_logs failed".into())?;
            ensure(s.logged(": conformance says hello"), || {
                format!("logged {:?}", s.dev.host_logs())
            })?;
            s.dev.clear_host_logs();
            ensure(print(core) == 0 && !s.logged("hello"), || {
                "records drained twice".into()
            })?;
            ensure(disable(core) == 0, || "disable_logs failed".into())?;
            ensure(
                s.dev.peek_u64(DRAM + cb::LOG_RING_ADDR).unwrap() == 0,
                || "disable left the ring".into(),
            )?;
            ensure(s.dev.live_memhandles() == 0, || "ring not freed".into())?;
        }
        Ok("published, drained once as \"<name>: text\", freed".into())
    })
}

fn dge_priority(lib: &Path) -> Outcome {
    with(lib, |s| {
        let set: unsafe extern "C" fn(P, *const u32, usize) -> u32 =
            s.f("core_dge_set_priority_class_map")?;
        let classes = [64u32, 128, 256, 512, 1024];
        let unbooted = s.core(2, false)?;
        // SAFETY: live cores, 5 classes.
        unsafe {
            ensure(set(unbooted, classes.as_ptr(), 4) == 8, || {
                "unbooted core accepted".into()
            })?;
            let q7 = s.core_in(s.ctx()?, 6, DRAM + 0x1000, true)?;
            ensure(set(q7, classes.as_ptr(), 4) == 8, || {
                "Q7 core accepted (kind gate)".into()
            })?;
            let nx = s.core_in(s.ctx()?, 9, DRAM + 0x2000, true)?;
            ensure(set(nx, classes.as_ptr(), 5) == 8, || {
                "n = 5 accepted".into()
            })?;
            s.dev.clear_trace();
            ensure(set(nx, classes.as_ptr(), 3) == 0, || "n = 3 refused".into())?;
            let bytes: Vec<u8> = classes[..3].iter().flat_map(|c| c.to_le_bytes()).collect();
            ensure(
                s.writes() == vec![(DRAM + 0x2000 + cb::DGE_PRIORITY_MAP, bytes)],
                || format!("writes {:?}", s.writes()),
            )?;
        }
        Ok("8, 8, 8; 12 bytes at +0x18".into())
    })
}

fn dge_mailboxes(lib: &Path) -> Outcome {
    with(lib, |s| {
        let addr_of: unsafe extern "C" fn(P, usize, *mut u64) -> u32 =
            s.f("core_get_dge_mailbox_addr")?;
        let core = s.core(17, true)?;
        let mut addr = 0u64;
        s.dev.clear_trace();
        // SAFETY: live core, out pointer.
        unsafe {
            ensure(
                addr_of(core, 1, &mut addr) == 0 && addr == DRAM + 0x28,
                || format!("addr {addr:#x}"),
            )?;
            let reset = 0xFFFF_FF00u32.to_le_bytes().to_vec();
            let want: Vec<_> = (1..4)
                .map(|i| (DRAM + 0x28 + 4 * i, reset.clone()))
                .collect();
            ensure(s.writes() == want, || format!("writes {:?}", s.writes()))?;
            ensure(addr_of(core, 5, &mut addr) == 8, || "num 5 accepted".into())?;
        }
        Ok("dram+0x28; 3 x 0xFFFFFF00; 5 -> 8".into())
    })
}

fn pc_bounds(lib: &Path) -> Outcome {
    with(lib, |s| {
        let enable: unsafe extern "C" fn(P, u64, u64) -> u32 =
            s.f("core_enable_pc_bounds_check")?;
        let disable: unsafe extern "C" fn(P) -> u32 = s.f("core_disable_pc_bounds_check")?;
        let core = s.core(13, false)?;
        s.dev.clear_trace();
        // SAFETY: live core.
        unsafe {
            ensure(enable(core, 9, 9) == 8 && s.writes().is_empty(), || {
                "lo >= hi accepted".into()
            })?;
            ensure(enable(core, 0x100, 0x200) == 0, || {
                "enable refused without boot".into()
            })?;
            ensure(disable(core) == 0, || "disable failed".into())?;
        }
        let want = vec![
            (DRAM + 0x38, 0x100u64.to_le_bytes().to_vec()),
            (DRAM + 0x40, 0x200u64.to_le_bytes().to_vec()),
            (DRAM + 0x38, 0u64.to_le_bytes().to_vec()),
            (DRAM + 0x40, u64::MAX.to_le_bytes().to_vec()),
        ];
        ensure(s.writes() == want, || format!("writes {:?}", s.writes()))?;
        Ok("lo>=hi 8; [0x100, 0x200); [0, ~0]".into())
    })
}

fn opset_rules(lib: &Path) -> Outcome {
    with(lib, |s| {
        let ctx = s.ctx()?;
        let create: unsafe extern "C" fn(P, *mut P) -> u32 = s.f("opset_create")?;
        let add: unsafe extern "C" fn(P, *const u8) -> u32 = s.f("opset_add_instruction")?;
        let nops: unsafe extern "C" fn(P) -> usize = s.f("opset_private_get_num_opcodes")?;
        let nspec: unsafe extern "C" fn(P, u8) -> usize =
            s.f("opset_private_get_num_specializations")?;
        let has: unsafe extern "C" fn(P, u8) -> bool = s.f("opset_private_has_opcode")?;
        let has_spec: unsafe extern "C" fn(P, u8, u8) -> bool =
            s.f("opset_private_has_specialization")?;
        let index: unsafe extern "C" fn(P, u32, *mut usize) -> u32 =
            s.f("opset_get_library_index")?;
        let mut op = null_mut();
        // SAFETY: live context and opset; 64-byte instructions.
        unsafe {
            ensure(create(ctx, &mut op) == 0, || "create failed".into())?;
            let mut lib_index = 99usize;
            ensure(index(op, 2, &mut lib_index) == 0 && lib_index == 0, || {
                "empty set not index 0".into()
            })?;
            for (opc, spec) in [(0x41u8, 9u8), (0xF0, 1), (0xF0, 7), (0xF0, 7)] {
                let mut i = [0u8; 64];
                i[0] = opc;
                i[0x0c] = spec;
                add(op, i.as_ptr());
            }
            ensure(nops(op) == 2, || format!("{} opcodes", nops(op)))?;
            ensure(nspec(op, 0xF0) == 2 && nspec(op, 0x41) == 0, || {
                "specialization counts".into()
            })?;
            ensure(
                has(op, 0x41) && !has(op, 0x42) && has_spec(op, 0xF0, 7) && !has_spec(op, 0xF0, 2),
                || "queries".into(),
            )?;
            ensure(nops(null_mut()) == 0 && !has(null_mut(), 0xF0), || {
                "NULL queries".into()
            })?;
            let mut lib_index = 99usize;
            ensure(index(op, 13, &mut lib_index) == 0 && lib_index == 0, || {
                "Q7 coretype not index 0".into()
            })?;
            let mut untouched = 99usize;
            ensure(index(op, 2, &mut untouched) == 1 && untouched == 99, || {
                "NX coretype not 1".into()
            })?;
        }
        Ok("2 opcodes, 2 specs, NULL 0, index 0 / 1".into())
    })
}

fn images_routing(lib: &Path) -> Outcome {
    with(lib, |s| {
        let num: unsafe extern "C" fn(u32, *mut usize) -> u32 = s.f("get_num_ext_isa_libs")?;
        let ext: unsafe extern "C" fn(u32, u32, *mut [usize; 4]) -> u32 = s.f("get_ext_isa")?;
        let mem: unsafe extern "C" fn(u32, u32, u32, *mut P, *mut usize) -> u32 =
            s.f("get_memory_image")?;
        let hw: unsafe extern "C" fn(u32, i32, *mut P, *mut usize) -> u32 =
            s.f("get_hwdecode_table")?;
        let mut counts = Vec::new();
        // SAFETY: valid out pointers throughout.
        unsafe {
            for ct in 0..40u32 {
                let mut n = 77usize;
                let rc = num(ct, &mut n);
                let want = match ct {
                    6 => (0, 1),
                    13 | 21 | 29 => (0, 4),
                    _ => (1, 0),
                };
                ensure((rc, n) == want, || format!("ct {ct}: rc {rc}, n {n}"))?;
                if rc == 0 {
                    counts.push(format!("{ct}:{n}"));
                }
            }
            let mut out = [0usize; 4];
            ensure(ext(5, 0, &mut out) == 1, || "get_ext_isa(5) != 1".into())?;
            ensure(ext(13, 4, &mut out) == 2, || "flavor 4 != 2".into())?;
            let (mut p, mut n) = (null_mut(), 0usize);
            ensure(mem(38, 0, 1, &mut p, &mut n) == 1, || {
                "memory ct 38 != 1".into()
            })?;
            ensure(mem(2, 4, 1, &mut p, &mut n) == 2, || {
                "memory region 4 != 2".into()
            })?;
            ensure(hw(38, 0, &mut p, &mut n) == 1, || {
                "hwdecode ct 38 != 1".into()
            })?;
            ensure(hw(7, 2, &mut p, &mut n) == 2, || {
                "hwdecode kind 2 != 2".into()
            })?;
        }
        Ok(format!("libs {}; 1, 2, 1, 2, 1, 2", counts.join(" ")))
    })
}

#[repr(C, align(8))]
struct Records([u8; 0x40 * 9]);

type Seq = unsafe extern "C" fn(P, P, usize, *mut c_char, *mut usize) -> u32;

fn records(s: &S, ll: P, core: P) -> Result<([u8; 0x40], [u8; 0x40]), Outcome> {
    let load: Seq = s.f("ll_get_load_sequence")?;
    let unload: Seq = s.f("ll_get_unload_sequence")?;
    let mut out = [[0u8; 0x40]; 2];
    for (i, f) in [load, unload].into_iter().enumerate() {
        let mut buf = Records([0xAB; 0x40 * 9]);
        let mut n = 0usize;
        // SAFETY: aligned buffer of 9 records.
        let rc = unsafe { f(ll, core, 8, buf.0.as_mut_ptr().cast(), &mut n) };
        ensure(rc == 0 && n == 1, || {
            format!("sequence {i}: rc {rc}, {n} records")
        })?;
        ensure(buf.0[0x40] == 0xAB, || "wrote past one record".into())?;
        out[i].copy_from_slice(&buf.0[..0x40]);
    }
    Ok((out[0], out[1]))
}

fn hex(r: &[u8]) -> String {
    r.iter().map(|b| format!("{b:02x}")).collect()
}

fn record(dir: u8, addr: u64, selector: u32, size: u32) -> [u8; 0x40] {
    let mut r = [0u8; 0x40];
    r[..2].copy_from_slice(&0x1095u16.to_le_bytes());
    r[0x0c] = dir;
    r[0x0d] = 0xFF;
    r[0x10..0x18].copy_from_slice(&addr.to_le_bytes());
    r[0x18..0x1c].copy_from_slice(&selector.to_le_bytes());
    r[0x1c..0x20].copy_from_slice(&size.to_le_bytes());
    r
}

fn ll_sunda(lib: &Path) -> Outcome {
    with(lib, |s| {
        let ctx = s.ctx()?;
        let core = s.core_in(ctx, 6, DRAM, true)?;
        s.dev.clear_trace();
        let ll = sunda_ll(s, ctx)?;
        ensure(s.dev.trace().is_empty(), || {
            "SUNDA ll_create touched the device".into()
        })?;
        let (load, unload) = records(s, ll, core)?;
        ensure(
            load == record(1, 0, 0, 0) && unload == record(2, 0, 0, 0),
            || format!("load {} unload {}", hex(&load), hex(&unload)),
        )?;
        Ok(format!(
            "load {} unload {}",
            hex(&load[..0x20]),
            hex(&unload[..0x20])
        ))
    })
}

fn ll_prelinked(lib: &Path) -> Outcome {
    with(lib, |s| {
        let ext: unsafe extern "C" fn(u32, u32, *mut [usize; 4]) -> u32 = s.f("get_ext_isa")?;
        let mut k = [0usize; 4];
        // SAFETY: valid out pointer; a returned image is readable for its length.
        let ours = unsafe {
            ext(13, 0, &mut k) == 0
                && std::slice::from_raw_parts(k[0] as *const u8, k[1]) == GNU_LIBRARY
        };
        if !ours {
            return Err(Outcome::unsupported(
                "the provider serves its own Cayman image, not the harness's (NRTUCODE_EXTISA_IMAGE_DIR)",
            ));
        }
        let create: unsafe extern "C" fn(P, u32, u32, u64, *mut P) -> u32 = s.f("ll_create")?;
        let ctx = s.ctx()?;
        let core = s.core_in(ctx, 13, DRAM, true)?;
        s.dev.clear_trace();
        let mut ll = null_mut();
        // SAFETY: live context, out pointer.
        let rc = unsafe { create(ctx, 13, 0, 0, &mut ll) };
        ensure(rc == 0, || {
            format!("ll_create -> {rc}: {:?}", s.dev.host_logs())
        })?;
        let trace = s.dev.trace();
        let Some(Op::Malloc {
            size,
            align,
            handle,
        }) = trace.first().cloned()
        else {
            return Err(Outcome::fail(format!("no device allocation: {trace:?}")));
        };
        ensure(align == 0x100_0000, || format!("alignment {align:#x}"))?;
        let addr = s.dev.memhandle_addr(handle).unwrap();
        let mut header = [0u8; 0x20];
        s.dev.peek(addr, &mut header).unwrap();
        ensure(&header[..8] == b"UCPL \0\0\0", || {
            format!("header {}", hex(&header))
        })?;
        let staged = u32::from_le_bytes(header[0x0c..0x10].try_into().unwrap())
            + u32::from_le_bytes(header[0x10..0x14].try_into().unwrap());
        ensure(staged as usize == size, || {
            format!("staged {staged:#x} vs allocation {size:#x}")
        })?;
        let (load, unload) = records(s, ll, core)?;
        ensure(
            load == record(1, addr, 0, staged) && unload == record(2, 0, 0, 0),
            || format!("load {} unload {}", hex(&load), hex(&unload)),
        )?;
        Ok(format!(
            "UCPL {}; load {} unload {}",
            hex(&header),
            hex(&load[..0x20]),
            hex(&unload[..0x20])
        ))
    })
}

fn records_rules(lib: &Path) -> Outcome {
    with(lib, |s| {
        let load: Seq = s.f("ll_get_load_sequence")?;
        let ctx = s.ctx()?;
        let core = s.core_in(ctx, 6, DRAM, true)?;
        let ll = sunda_ll(s, ctx)?;
        let other = s.core_in(s.ctx()?, 6, DRAM + 0x1000, false)?;
        let mut buf = Records([0; 0x40 * 9]);
        let mut n = 0usize;
        // SAFETY: the buffer holds 9 records past offset 4.
        unsafe {
            ensure(
                load(ll, core, 8, buf.0.as_mut_ptr().add(4).cast(), &mut n) == 8,
                || "misaligned accepted".into(),
            )?;
            ensure(
                load(ll, core, 0, buf.0.as_mut_ptr().cast(), &mut n) == 7,
                || "capacity 0 accepted".into(),
            )?;
            ensure(
                load(ll, other, 7, buf.0.as_mut_ptr().cast(), &mut n) == 7,
                || "7 slots for 8 records".into(),
            )?;
            ensure(
                load(ll, other, 8, buf.0.as_mut_ptr().cast(), &mut n) == 0 && n == 8,
                || format!("{n} records for a foreign core"),
            )?;
        }
        let first = &buf.0[..0x40];
        ensure(buf.0[..0x200].chunks(0x40).all(|r| r == first), || {
            "the 8 records differ".into()
        })?;
        Ok("8, 7, 7, 8 identical".into())
    })
}

fn callbacks(lib: &Path) -> Outcome {
    with(lib, |s| {
        let booted: unsafe extern "C" fn(P, u32) -> u32 = s.f("core_on_ucode_booted")?;
        let enable: unsafe extern "C" fn(P) -> u32 = s.f("core_enable_logs")?;
        let core = s.core(6, false)?;
        // SAFETY: live core.
        unsafe {
            s.dev.fail(FaultOp::Read, 0, 77);
            ensure(booted(core, 0) == 77, || {
                "read error not passed through".into()
            })?;
            s.dev.fail(FaultOp::Write, 0, 1234);
            ensure(booted(core, 0) == 1234, || {
                "write error not passed through".into()
            })?;
            ensure(booted(core, 0) == 0, || "claim after errors failed".into())?;
            s.dev.fail(FaultOp::Malloc, 0, 5);
            ensure(enable(core) == 5, || {
                "device_malloc error not passed through".into()
            })?;
        }
        Ok("77, 1234, 5".into())
    })
}
