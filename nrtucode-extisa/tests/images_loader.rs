//! Image routing codes, the image directory, ll_create, staging and the push records.
//! These tests change process environment variables, so each takes the ENV lock.

mod common;

use std::ffi::c_void;
use std::path::Path;
use std::ptr::{self, NonNull};

use common::*;
use nrt_sim_device::{FaultOp, Op};
use nrtucode_extisa::ffi::get::*;
use nrtucode_extisa::ffi::ll::*;
use nrtucode_extisa::images::{CPTC_ENV, FLAVOR_ENV, IMAGE_DIR_ENV, MPLUS_ENV};
use nrtucode_extisa::prelink::Ucpl;
use nrtucode_extisa::*;
use parking_lot::Mutex;

static ENV: Mutex<()> = Mutex::new(());

fn clear_env() {
    for v in [IMAGE_DIR_ENV, CPTC_ENV, FLAVOR_ENV, MPLUS_ENV] {
        std::env::remove_var(v);
    }
}

fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// An image directory with a SUNDA library (+ manifest), one Cayman library without one,
/// a SUNDA NX POOL IRAM image and a Cayman hwdecode CAM (plus a wrong-sized table).
fn image_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        "ext-isa/ct6/lib0.elf",
        b"\x7fELF sunda pool image",
    );
    write(
        d.path(),
        "ext-isa/ct6/lib0.json",
        br#"{"library":"all.stripped.so"}"#,
    );
    write(d.path(), "ext-isa/ct13/lib0.elf", b"\x7fELF cayman lib0");
    write(d.path(), "memory/ct2/1/iram.bin", &[0x11; 64]);
    write(d.path(), "hwdecode/ct7/prof_cam.bin", &[0x22; 0x400]);
    write(d.path(), "hwdecode/ct7/prof_table.bin", &[0x33; 0x10]);
    d
}

fn ext_isa(ct: u32, flavor: u32) -> (u32, nrtucode_extkernel_t) {
    let mut out = nrtucode_extkernel_t {
        so_ptr: ptr::null(),
        so_len: 0,
        json_ptr: ptr::null(),
        json_len: 0,
    };
    // SAFETY: valid out pointer.
    let rc = unsafe { nrtucode_get_ext_isa(ct, flavor, &mut out) };
    (rc, out)
}

fn bytes<'a>(p: *const c_void, len: usize) -> &'a [u8] {
    // SAFETY: the provider returned a live image of `len` bytes.
    unsafe { std::slice::from_raw_parts(p.cast(), len) }
}

fn memory_image(ct: u32, region: u32, flavor: u32) -> (u32, Vec<u8>) {
    let (mut p, mut n) = (ptr::null_mut(), 0usize);
    // SAFETY: valid out pointers.
    let rc = unsafe { nrtucode_get_memory_image(ct, region, flavor, &mut p, &mut n) };
    (
        rc,
        if p.is_null() {
            vec![]
        } else {
            bytes(p.cast(), n).to_vec()
        },
    )
}

fn hwdecode(ct: u32, kind: i32) -> (u32, usize) {
    let (mut p, mut n) = (ptr::null_mut(), 0usize);
    // SAFETY: valid out pointers.
    let rc = unsafe { nrtucode_get_hwdecode_table(ct, kind, &mut p, &mut n) };
    (rc, n)
}

fn ll_create(rig: &Rig, ct: u32, library: u64) -> (u32, *mut nrtucode_loadable_library_t) {
    let mut ll = ptr::dangling_mut::<nrtucode_loadable_library_t>();
    // SAFETY: live context, valid out pointer.
    let rc = unsafe { nrtucode_ll_create(rig.ctx, ct, 0, library, &mut ll) };
    (rc, ll)
}

#[test]
fn routing_codes_without_images() {
    let _g = ENV.lock();
    clear_env();
    assert_eq!(
        ext_isa(6, 0).0,
        NRTUCODE_ERR_MISSING_IMAGE,
        "no image directory"
    );
    assert_eq!(ext_isa(5, 0).0, NRTUCODE_ERR_UNKNOWN_CORE);
    assert_eq!(ext_isa(14, 1).0, NRTUCODE_ERR_UNKNOWN_CORE);
    assert_eq!(
        ext_isa(5, 4).0,
        NRTUCODE_ERR_UNKNOWN_IMAGE,
        "flavor is checked first"
    );
    let mut n = 77usize;
    // SAFETY: valid out pointer.
    unsafe {
        assert_eq!(
            nrtucode_get_num_ext_isa_libs(2, &mut n),
            NRTUCODE_ERR_UNKNOWN_CORE
        );
        assert_eq!(n, 0, "zeroed before the coretype check");
        assert_eq!(nrtucode_get_num_ext_isa_libs(21, &mut n), 0);
        assert_eq!(n, 4);
    }
    assert_eq!(memory_image(38, 0, 1).0, NRTUCODE_ERR_UNKNOWN_CORE);
    assert_eq!(
        memory_image(2, 0, 8).0,
        NRTUCODE_ERR_UNKNOWN_IMAGE,
        "no such flavor key"
    );
    assert_eq!(
        memory_image(2, 4, 1).0,
        NRTUCODE_ERR_UNKNOWN_IMAGE,
        "region > 3"
    );
    assert_eq!(
        memory_image(36, 0, 1).0,
        NRTUCODE_ERR_UNKNOWN_IMAGE,
        "empty row"
    );
    assert_eq!(
        memory_image(13, 0, 17).0,
        NRTUCODE_ERR_MISSING_IMAGE,
        "DKL key exists, image absent"
    );
    assert_eq!(
        memory_image(2, 0, 17).0,
        NRTUCODE_ERR_UNKNOWN_IMAGE,
        "DKL keys only on Q7 POOL rows"
    );
    assert_eq!(hwdecode(38, 0).0, NRTUCODE_ERR_UNKNOWN_CORE);
    assert_eq!(hwdecode(7, 2).0, NRTUCODE_ERR_UNKNOWN_IMAGE);
    assert_eq!(
        hwdecode(2, 0).0,
        NRTUCODE_ERR_UNKNOWN_IMAGE,
        "row without tables"
    );
    assert_eq!(hwdecode(7, 0).0, NRTUCODE_ERR_UNKNOWN_IMAGE, "table absent");

    let rig = Rig::new();
    let (rc, ll) = ll_create(&rig, 6, 0);
    assert_eq!((rc, ll), (NRTUCODE_ERR_MISSING_IMAGE, ptr::null_mut()));
    assert_eq!(ll_create(&rig, 2, 0).0, NRTUCODE_ERR_UNKNOWN_CORE);
}

#[test]
fn libraries_from_opcodes() {
    let _g = ENV.lock();
    clear_env();
    let call = |ct: u32, n: usize| {
        let (mut libs, mut num) = ([99usize; 2], 99usize);
        // SAFETY: the opcode lists are never read; out pointers are valid.
        let rc = unsafe {
            nrtucode_ll_get_libraries_from_opcodes(
                ct,
                ptr::null(),
                n,
                ptr::null(),
                0,
                libs.as_mut_ptr(),
                &mut num,
            )
        };
        (rc, libs[0], num)
    };
    assert_eq!(call(13, 0), (0, 99, 0));
    assert_eq!(call(6, 3), (0, 0, 1));
    assert_eq!(call(13, 1), (0, 0, 1));
    assert_eq!(call(2, 1), (NRTUCODE_ERR_UNKNOWN_CORE, 99, 0));
    std::env::set_var(CPTC_ENV, "");
    assert_eq!(call(21, 1), (0, 3, 1), "set, even empty, selects CPTC");
    assert_eq!(call(6, 1), (0, 0, 1), "SUNDA has no CPTC library");
    clear_env();
}

#[test]
fn image_directory_serves_images() {
    let _g = ENV.lock();
    clear_env();
    let dir = image_dir();
    std::env::set_var(IMAGE_DIR_ENV, dir.path());

    let (rc, k) = ext_isa(6, 0);
    assert_eq!(rc, 0);
    assert_eq!(bytes(k.so_ptr, k.so_len), b"\x7fELF sunda pool image");
    assert_eq!(
        bytes(k.json_ptr, k.json_len),
        br#"{"library":"all.stripped.so"}"#
    );
    assert_eq!(
        ext_isa(6, 3).1.so_ptr,
        k.so_ptr,
        "images stay put for the process"
    );
    let (rc, k13) = ext_isa(13, 0);
    assert_eq!(rc, 0);
    assert_eq!(
        (k13.json_ptr, k13.json_len),
        (ptr::null(), 0),
        "manifest is optional"
    );
    assert_eq!(ext_isa(21, 0).0, NRTUCODE_ERR_MISSING_IMAGE);

    assert_eq!(
        memory_image(2, 0, 0),
        (0, vec![0x11; 64]),
        "DEFAULT -> RELEASE"
    );
    std::env::set_var(FLAVOR_ENV, "bogus");
    assert_eq!(
        memory_image(2, 0, 0).0,
        0,
        "unknown flavor names mean RELEASE"
    );
    std::env::set_var(FLAVOR_ENV, "DEBUG");
    assert_eq!(
        memory_image(2, 0, 0).0,
        NRTUCODE_ERR_UNKNOWN_IMAGE,
        "SUNDA rows only hold RELEASE"
    );
    std::env::remove_var(FLAVOR_ENV);
    assert_eq!(
        memory_image(2, 1, 1).0,
        NRTUCODE_ERR_MISSING_IMAGE,
        "no DRAM image"
    );
    std::env::set_var(MPLUS_ENV, "1");
    assert_eq!(memory_image(2, 0, 1).0, NRTUCODE_ERR_INVALID);
    std::env::set_var(MPLUS_ENV, "0");
    assert_eq!(memory_image(2, 0, 1).0, 0);
    std::env::remove_var(MPLUS_ENV);

    assert_eq!(hwdecode(7, 0), (0, 0x400));
    assert_eq!(
        hwdecode(7, 1).0,
        NRTUCODE_ERR_UNKNOWN_IMAGE,
        "wrong-sized table is refused"
    );
    clear_env();
}

#[test]
fn ll_create_paths() {
    let _g = ENV.lock();
    clear_env();
    let dir = image_dir();
    std::env::set_var(IMAGE_DIR_ENV, dir.path());
    let rig = Rig::new();

    let (rc, ll) = ll_create(&rig, 6, 0);
    assert_eq!(rc, 0);
    assert_eq!(u64_at(ll, 0x00), rig.ctx as u64);
    assert_eq!(u64_at(ll, 0x10), 0, "selector");
    assert_eq!(u64_at(ll, 0x18), 0, "SUNDA stages nothing");
    let name = format!("nrtucode_ll_t@{ll:p}");
    assert!(rig.has_log(4, &format!("Initialized {name}")));
    assert!(rig.dev.trace().is_empty(), "no device traffic for SUNDA");
    // SAFETY: live ll.
    unsafe {
        assert_eq!(nrtucode_ll_get_library_size(ll), 0);
        let c = std::ffi::CString::new("ND[0]NC[0].loadable_library[0]-and-more-text").unwrap();
        nrtucode_ll_set_friendly_name(ll, c.as_ptr());
        assert!(rig.has_log(
            4,
            &format!("{name} renamed ND[0]NC[0].loadable_library[0]-and-more-text")
        ));
        assert_eq!(byte_at(ll, 0x40), 0, "NUL forced at +0x40");
        assert_eq!(nrtucode_ll_destroy(ll), 0);
    }
    assert!(rig.has_log(4, "Destroyed ND[0]NC[0].loadable_library[0]-a"));

    // An explicit index past SUNDA's one library reads the next table (Cayman lib 0).
    let (rc, ll) = ll_create(&rig, 6, 1);
    assert_eq!(rc, 0);
    assert_eq!(u64_at(ll, 0x10), 1);
    // SAFETY: live ll.
    unsafe { nrtucode_ll_destroy(ll) };

    // CPTC selects library 3 when none is given: absent here.
    std::env::set_var(CPTC_ENV, "1");
    assert_eq!(
        ll_create(&rig, 13, 0),
        (NRTUCODE_ERR_MISSING_IMAGE, ptr::null_mut())
    );
    std::env::remove_var(CPTC_ENV);

    // A Cayman library that is not a split-load ELF: the prelinker refuses it.
    rig.dev.clear_host_logs();
    assert_eq!(
        ll_create(&rig, 13, 0),
        (NRTUCODE_ERR_RELOCATION, ptr::null_mut())
    );
    assert!(rig.has_log(
        1,
        "nrtucode: prelink: failed to validate ELF shared object file (status 1)"
    ));
    assert!(rig.has_log(1, "Failed prelink with status = 1"));
    assert_eq!(rig.dev.live_memhandles(), 0);
    clear_env();
}

#[test]
fn ll_create_prelinks_and_stages_cayman_libraries() {
    let _g = ENV.lock();
    clear_env();
    let dir = image_dir();
    let sample = nrtucode_extisa::prelink::fixture::Fixture::sample().build();
    write(dir.path(), "ext-isa/ct21/lib2.elf", &sample);
    std::env::set_var(IMAGE_DIR_ENV, dir.path());
    let rig = Rig::new();
    let core = rig.booted_core(21);
    rig.dev.clear_trace();
    let (rc, ll) = ll_create(&rig, 21, 2);
    assert_eq!(rc, 0, "{:?}", rig.log_texts());
    let trace = rig.dev.trace();
    let Op::Malloc {
        size,
        align,
        handle,
    } = trace[0].clone()
    else {
        panic!("{trace:?}")
    };
    // Code 28 bytes -> data at 0x40; data = 16 bytes + 6 relocations + 7 .dynamic entries.
    assert_eq!((size, align), (0x40 + 0x90, 0x100_0000));
    let Op::MemhandleWrite {
        off: 0,
        bytes: header,
        ..
    } = &trace[1]
    else {
        panic!("{trace:?}")
    };
    assert_eq!(&header[..8], b"UCPL \0\0\0");
    let Op::MemhandleWrite {
        off: 0x20,
        bytes: code,
        ..
    } = &trace[2]
    else {
        panic!("{trace:?}")
    };
    assert_eq!(code.len(), 28);
    assert_eq!(
        &code[..4],
        &0x00E0_0804u32.to_le_bytes(),
        "relocated CONST16"
    );
    let Op::MemhandleWrite {
        off: 0x40,
        bytes: data,
        ..
    } = &trace[3]
    else {
        panic!("{trace:?}")
    };
    assert_eq!(&data[4..8], &0x18008u32.to_le_bytes());
    assert_eq!(trace.len(), 4);
    // SAFETY: live handles.
    unsafe { assert_eq!(nrtucode_ll_get_library_size(ll), 0xD0) };
    let mut buf = RecordBuf([0; 0x40 * 9]);
    assert_eq!(sequence(true, ll, core, 1, &mut buf, 0), (0, 1));
    assert_eq!(
        &buf.0[0x10..0x18],
        &rig.dev.memhandle_addr(handle).unwrap().to_le_bytes()
    );
    assert_eq!(
        &buf.0[0x18..0x20],
        &[2, 0, 0, 0, 0xD0, 0, 0, 0],
        "selector 2, size 0xD0"
    );
    // SAFETY: live handles, destroyed once.
    unsafe {
        nrtucode_ll_destroy(ll);
        nrtucode_extisa::ffi::core::nrtucode_core_destroy(core);
    }
    assert_eq!(rig.dev.live_memhandles(), 0);
    clear_env();
}

#[test]
fn ll_create_stages_hazardous_libraries_as_the_vendor_does_and_warns() {
    let _g = ENV.lock();
    clear_env();
    let dir = image_dir();
    let skewed = nrtucode_extisa::prelink::fixture::Fixture::skewed();
    write(dir.path(), "ext-isa/ct21/lib2.elf", &skewed.build());
    std::env::set_var(IMAGE_DIR_ENV, dir.path());
    let rig = Rig::new();
    let core = rig.booted_core(21);
    let (rc, ll) = ll_create(&rig, 21, 2);
    assert_eq!(
        rc,
        0,
        "staged as the vendor stages it: {:?}",
        rig.log_texts()
    );
    let warnings: Vec<String> = rig
        .logs()
        .iter()
        .filter(|l| l.sev == 2)
        .map(|l| l.text().into_owned())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].starts_with("nrtucode: prelink: warning: the text segment's p_paddr 0x4"));
    assert!(warnings[1].contains("data segment's p_paddr 0x108"));
    // SAFETY: live handles, destroyed once.
    unsafe {
        nrtucode_ll_destroy(ll);
        nrtucode_extisa::ffi::core::nrtucode_core_destroy(core);
    }
    clear_env();
}

/// A SUNDA library handle (nothing staged) and its core in the same context.
fn sunda_ll(rig: &Rig) -> *mut nrtucode_loadable_library_t {
    let (rc, ll) = ll_create(rig, 6, 0);
    assert_eq!(rc, 0);
    ll
}

#[repr(C, align(8))]
struct RecordBuf([u8; 0x40 * 9]);

fn sequence(
    load: bool,
    ll: *mut nrtucode_loadable_library_t,
    core: *mut nrtucode_core_t,
    cap: usize,
    buf: &mut RecordBuf,
    offset: usize,
) -> (u32, usize) {
    let mut n = 1234usize;
    // SAFETY: live handles; the buffer holds 9 records past `offset` <= 8.
    let rc = unsafe {
        let p = buf.0.as_mut_ptr().add(offset).cast();
        if load {
            nrtucode_ll_get_load_sequence(ll, core, cap, p, &mut n)
        } else {
            nrtucode_ll_get_unload_sequence(ll, core, cap, p, &mut n)
        }
    };
    (rc, n)
}

#[test]
fn push_records() {
    let _g = ENV.lock();
    clear_env();
    let dir = image_dir();
    std::env::set_var(IMAGE_DIR_ENV, dir.path());
    let rig = Rig::new();
    let ll = sunda_ll(&rig);
    let core = rig.booted_core(6);
    let mut buf = RecordBuf([0xAB; 0x40 * 9]);

    assert_eq!(sequence(true, ll, core, 1, &mut buf, 0), (0, 1));
    let mut want = [0u8; 0x40];
    want[..2].copy_from_slice(&[0x95, 0x10]);
    want[0x0c] = 1;
    want[0x0d] = 0xFF;
    assert_eq!(&buf.0[..0x40], &want[..]);
    assert!(buf.0[0x40..].iter().all(|&b| b == 0xAB), "one record only");
    assert_eq!(sequence(false, ll, core, 1, &mut buf, 0), (0, 1));
    want[0x0c] = 2;
    assert_eq!(&buf.0[..0x40], &want[..]);

    let mut fresh = RecordBuf([0xAB; 0x40 * 9]);
    assert_eq!(
        sequence(true, ll, core, 0, &mut fresh, 0),
        (NRTUCODE_ERR_ENOSPC, 1234)
    );
    assert!(
        fresh.0.iter().all(|&b| b == 0xAB),
        "nothing written without capacity"
    );
    assert_eq!(
        sequence(true, ll, core, 1, &mut fresh, 4),
        (NRTUCODE_ERR_INVALID, 1234)
    );
    assert!(rig.has_log(
        1,
        "nrtucode: invalid API usage in `nrtucode_ll_get_load_sequence`: instruction buffer is not correctly aligned"
    ));

    // SAFETY: live handles.
    unsafe {
        assert_eq!(nrtucode_ll_get_load_sequence_num_instrs(ll, core), 1);
        assert_eq!(nrtucode_ll_get_unload_sequence_num_instrs(ll, core), 1);
    }

    // A core from another context: 8 identical records, and a logged check failure.
    let other_ctx = rig.sibling_context();
    let mut other = ptr::null_mut();
    // SAFETY: live context and out pointer.
    unsafe {
        rig.dev.map_control_block(DRAM + 0x1000).unwrap();
        assert_eq!(
            nrtucode_extisa::ffi::core::nrtucode_core_create(
                other_ctx,
                6,
                0,
                DRAM + 0x1000,
                0,
                &mut other
            ),
            0
        );
        rig.dev.clear_host_logs();
        assert_eq!(nrtucode_ll_get_unload_sequence_num_instrs(ll, other), 8);
    }
    assert!(rig.has_log(
        1,
        "nrtucode: invalid API usage: check `ll->context == nrtucode_core_get_context(core)` in `nrtucode_ll_get_unload_sequence_num_instrs` failed"
    ));
    assert_eq!(
        sequence(true, ll, other, 7, &mut fresh, 0),
        (NRTUCODE_ERR_ENOSPC, 1234)
    );
    assert_eq!(sequence(true, ll, other, 8, &mut fresh, 0), (0, 8));
    let mut load_record = want;
    load_record[0x0c] = 1;
    for r in fresh.0[..0x200].chunks(0x40) {
        assert_eq!(
            r,
            &load_record[..],
            "SUNDA: no address or size even on load"
        );
    }
    assert!(fresh.0[0x200..].iter().all(|&b| b == 0xAB));

    // SAFETY: live handles, destroyed once.
    unsafe {
        nrtucode_extisa::ffi::core::nrtucode_core_destroy(other);
        nrtucode_extisa::ffi::context::nrtucode_context_destroy(other_ctx);
        nrtucode_extisa::ffi::core::nrtucode_core_destroy(core);
        nrtucode_ll_destroy(ll);
    }
    clear_env();
}

fn handles(rig: &Rig, ll: *mut nrtucode_loadable_library_t) -> (platform::Ctx, ll::Ll) {
    // SAFETY: both are live objects this library created.
    unsafe {
        (
            platform::Ctx::from_raw(NonNull::new(rig.ctx).unwrap()),
            ll::Ll::from_raw(NonNull::new(ll).unwrap()),
        )
    }
}

#[test]
fn staging_a_prelinked_image() {
    let _g = ENV.lock();
    clear_env();
    let dir = image_dir();
    std::env::set_var(IMAGE_DIR_ENV, dir.path());
    let rig = Rig::new();
    let core = rig.booted_core(13);
    let lib = sunda_ll(&rig);
    let (ctx, ll) = handles(&rig, lib);
    ll.update(|l| l.library_selector = 3);

    let ucpl = Ucpl {
        init: 0x18020,
        fini: 0x18024,
        start_sym: 0x18028,
        ..Ucpl::for_segments(0x30, 0x10)
    };
    let code = vec![0xC0; 0x8000];
    let data = vec![0xDA; 0x2000];
    rig.dev.clear_trace();
    assert_eq!(
        nrtucode_extisa::ll::stage_prelinked(ctx, ll, &ucpl, &code, &data),
        Ok(())
    );
    let size = 0x20 + 0x40 + 0x10;
    let trace = rig.dev.trace();
    let Op::Malloc {
        size: s,
        align,
        handle,
    } = trace[0].clone()
    else {
        panic!("{trace:?}")
    };
    assert_eq!((s, align), (size, 0x100_0000));
    assert_eq!(
        trace[1..],
        [
            Op::MemhandleWrite {
                handle,
                off: 0,
                bytes: ucpl.to_bytes().to_vec()
            },
            Op::MemhandleWrite {
                handle,
                off: 0x20,
                bytes: vec![0xC0; 0x30]
            },
            Op::MemhandleWrite {
                handle,
                off: 0x60,
                bytes: vec![0xDA; 0x10]
            },
        ]
    );
    // SAFETY: live handles.
    unsafe { assert_eq!(nrtucode_ll_get_library_size(lib), size) };

    let mut buf = RecordBuf([0; 0x40 * 9]);
    assert_eq!(sequence(true, lib, core, 1, &mut buf, 0), (0, 1));
    let addr = rig.dev.memhandle_addr(handle).unwrap();
    assert_eq!(&buf.0[0x10..0x18], &addr.to_le_bytes());
    assert_eq!(&buf.0[0x18..0x1c], &3u32.to_le_bytes());
    assert_eq!(&buf.0[0x1c..0x20], &(size as u32).to_le_bytes());
    assert_eq!(sequence(false, lib, core, 1, &mut buf, 0), (0, 1));
    assert_eq!(&buf.0[0x10..0x18], &[0; 8], "unload carries no address");
    assert_eq!(
        &buf.0[0x18..0x1c],
        &3u32.to_le_bytes(),
        "but keeps the selector"
    );
    assert_eq!(&buf.0[0x1c..0x20], &[0; 4]);
    // SAFETY: live handles.
    unsafe { nrtucode_ll_destroy(lib) };
    assert_eq!(
        rig.dev.live_memhandles(),
        0,
        "destroy frees the staged buffer"
    );

    // Oversize: written first, then refused with 7 and freed; exactly 0x10000 is fine.
    let lib = sunda_ll(&rig);
    let (ctx, ll) = handles(&rig, lib);
    let big = Ucpl {
        code_seg_len: 0xFFE0,
        data_seg_off: 0x10000,
        data_seg_len: 4,
        ..Ucpl::for_segments(0, 0)
    };
    rig.dev.clear_host_logs();
    assert_eq!(
        nrtucode_extisa::ll::stage_prelinked(ctx, ll, &big, &code, &data),
        Err(error::Error::Enospc)
    );
    assert!(rig.has_log(
        1,
        "Prelinked library would be larger than the available buffer on device"
    ));
    assert_eq!(rig.dev.live_memhandles(), 0);
    let exact = Ucpl {
        data_seg_len: 0,
        ..big
    };
    assert_eq!(
        nrtucode_extisa::ll::stage_prelinked(ctx, ll, &exact, &code, &data),
        Ok(())
    );
    // SAFETY: live handle.
    unsafe { nrtucode_ll_destroy(lib) };

    // A write error passes through and frees the buffer.
    let lib = sunda_ll(&rig);
    let (ctx, ll) = handles(&rig, lib);
    rig.dev.fail(FaultOp::MemhandleWrite, 1, 66);
    assert_eq!(
        nrtucode_extisa::ll::stage_prelinked(ctx, ll, &ucpl, &code, &data),
        Err(error::Error::Callback(66))
    );
    assert_eq!(rig.dev.live_memhandles(), 0);
    // SAFETY: live handles.
    unsafe {
        assert_eq!(nrtucode_ll_get_library_size(lib), 0);
        nrtucode_ll_destroy(lib);
        nrtucode_extisa::ffi::core::nrtucode_core_destroy(core);
    }
    clear_env();
}
