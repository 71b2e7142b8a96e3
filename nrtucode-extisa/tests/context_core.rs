//! Context and core lifecycle, the claim handshake and friendly names, through the C API.

mod common;

use std::ffi::c_void;
use std::ptr;

use common::*;
use nrt_sim_device::{FaultOp, Op, CLAIM_CLAIMED, CLAIM_UNCLAIMED};
use nrtucode_extisa::ffi::context::*;
use nrtucode_extisa::ffi::core::*;
use nrtucode_extisa::ffi::get::*;
use nrtucode_extisa::*;

#[test]
fn versions() {
    assert_eq!(nrtucode_get_api_level(), 3);
    // SAFETY: static NUL-terminated strings.
    let build = unsafe { std::ffi::CStr::from_ptr(nrtucode_get_build_version()) };
    let git = unsafe { std::ffi::CStr::from_ptr(nrtucode_get_git_version()) };
    assert_eq!(build.to_str().unwrap(), "1.21.1.0");
    assert_eq!(
        git.to_str().unwrap(),
        "6db9edc09474e79d0c0e283c14c16e51ee7417e5"
    );
}

#[test]
fn context_rejects_other_api_levels_and_clears_out() {
    for level in [0, 2, 4, u32::MAX] {
        let mut ctx = std::ptr::dangling_mut::<nrtucode_context_t>();
        // SAFETY: valid table and out pointer.
        assert_eq!(
            unsafe { nrtucode_context_create(level, rw(), &mut ctx) },
            NRTUCODE_ERR_VERSION
        );
        assert!(ctx.is_null(), "*out is cleared before the level gate");
    }
}

#[test]
fn context_layout_and_userdata() {
    let rig = Rig::new();
    let ctx = rig.ctx;
    assert_eq!(u64_at(ctx, 0x00), rw() as u64, "rw_impl at +0x00");
    assert_eq!(
        u64_at(ctx, 0x08),
        memhandles() as u64,
        "memhandle_impl at +0x08"
    );
    assert_eq!(
        u64_at(ctx, 0x10),
        std::sync::Arc::as_ptr(&rig.dev) as u64,
        "userdata at +0x10"
    );
    assert_eq!(u64_at(ctx, 0x18), 0x200, "log scratch size at +0x18");
    assert_ne!(u64_at(ctx, 0x20), 0, "log scratch buffer at +0x20");
    // SAFETY: live context.
    unsafe {
        nrtucode_context_set_userdata(ctx, 0x1234 as *mut c_void);
        assert_eq!(nrtucode_context_get_userdata(ctx), 0x1234 as *mut c_void);
        nrtucode_context_set_userdata(ctx, std::sync::Arc::as_ptr(&rig.dev) as *mut c_void);
    }
}

#[test]
fn fresh_context_uses_the_not_attached_memhandle_table() {
    let rig = Rig::new();
    let mut ctx = ptr::null_mut();
    // SAFETY: valid arguments; the context is destroyed below.
    unsafe {
        assert_eq!(nrtucode_context_create(3, rw(), &mut ctx), 0);
        nrtucode_context_set_userdata(ctx, std::sync::Arc::as_ptr(&rig.dev) as *mut c_void);
        rig.dev.map_control_block(DRAM).unwrap();
        let mut core = ptr::null_mut();
        assert_eq!(nrtucode_core_create(ctx, 2, 0, DRAM, 0, &mut core), 0);
        assert_eq!(nrtucode_core_on_ucode_booted(core, 0), 0);
        assert_eq!(nrtucode_core_enable_logs(core), NRTUCODE_ERR_INVALID);
        let want = format!(
            "nrtucode_context_t@{ctx:p}: memhandle platform implementation is required but is not attached"
        );
        assert!(rig.has_log(1, &want), "{:?}", rig.log_texts());
        assert_eq!(rig.dev.live_memhandles(), 0);
        nrtucode_core_destroy(core);
        nrtucode_context_destroy(ctx);
    }
}

#[test]
fn core_layout_name_and_accessors() {
    let rig = Rig::new();
    let mut core = ptr::null_mut();
    // SAFETY: live context and out pointer; core destroyed below.
    unsafe {
        assert_eq!(
            nrtucode_core_create(rig.ctx, 37, 0x1111, 0x2222, 0x3333, &mut core),
            0
        );
    }
    assert_eq!(u64_at(core, 0x00), rig.ctx as u64);
    assert_eq!(u32_at(core, 0x10), 37, "coretype stored unvalidated");
    assert_eq!(u64_at(core, 0x18), 0x1111);
    assert_eq!(u64_at(core, 0x20), 0x2222);
    assert_eq!(u64_at(core, 0x28), 0x3333);
    assert_eq!(u32_at(core, 0x30), 0, "not booted");
    assert_eq!(u64_at(core, 0x38), 0, "no log ring");
    let name = format!("nrtucode_core_t@{core:p}");
    assert_eq!(name_of(core), name);
    // SAFETY: live core.
    unsafe {
        assert_eq!(
            nrtucode_core_get_friendly_name(core) as usize,
            core as usize + 0x48
        );
        assert_eq!(nrtucode_core_get_coretype(core), 37);
        assert_eq!(nrtucode_core_get_context(core), rig.ctx);
        assert!(nrtucode_core_get_userdata(core).is_null());
        nrtucode_core_set_userdata(core, 0x77 as *mut c_void);
        assert_eq!(nrtucode_core_get_userdata(core), 0x77 as *mut c_void);
        assert_eq!(u64_at(core, 0x08), 0x77);
    }
    assert!(rig.has_log(4, &format!("Initialized {name}")));
    assert!(rig.dev.trace().is_empty(), "core_create does no device I/O");
    // SAFETY: live core.
    unsafe { nrtucode_core_destroy(core) };
    assert!(rig.has_log(4, &format!("Destroyed {name}")));
}

#[test]
fn rename_truncates_to_32_bytes_and_logs_full_names() {
    let rig = Rig::new();
    let core = rig.core_at(6, DRAM);
    let old = name_of(core);
    let long = "ND[0]NC[1].Q7_POOL[7]-with-a-long-suffix-past-32";
    let c = std::ffi::CString::new(long).unwrap();
    // SAFETY: live core, NUL-terminated name.
    unsafe { nrtucode_core_set_friendly_name(core, c.as_ptr()) };
    assert_eq!(name_of(core), &long[..32]);
    assert_eq!(byte_at(core, 0x68), 0, "NUL forced at +0x68");
    assert!(rig.has_log(4, &format!("{old} renamed {long}")));
    // SAFETY: live core.
    unsafe { nrtucode_core_destroy(core) };
}

#[test]
fn claim_is_a_read_then_a_write() {
    let rig = Rig::new();
    let core = rig.core_at(6, DRAM);
    rig.dev.clear_trace();
    // SAFETY: live core.
    assert_eq!(unsafe { nrtucode_core_on_ucode_booted(core, 0) }, 0);
    assert_eq!(
        rig.dev.trace(),
        vec![
            Op::Read { addr: DRAM, len: 4 },
            Op::Write {
                addr: DRAM,
                bytes: CLAIM_CLAIMED.to_le_bytes().to_vec()
            }
        ]
    );
    assert_eq!(u32_at(core, 0x30), 1, "BOOTED_LEGACY");
    rig.dev.clear_trace();
    // SAFETY: live core.
    unsafe { nrtucode_core_destroy(core) };
    let writes = rig.writes();
    assert_eq!(
        writes.last().unwrap(),
        &(DRAM, CLAIM_UNCLAIMED.to_le_bytes().to_vec()),
        "release"
    );
    assert_eq!(rig.dev.peek_u32(DRAM).unwrap(), CLAIM_UNCLAIMED);
}

#[test]
fn second_claim_and_foreign_image_are_refused() {
    let rig = Rig::new();
    let first = rig.booted_core(2);
    let second = rig.core_at(2, DRAM);
    let name = name_of(second);
    // SAFETY: live cores.
    unsafe {
        assert_eq!(
            nrtucode_core_on_ucode_booted(second, 0),
            NRTUCODE_ERR_INVALID
        );
        assert!(rig.has_log(
            1,
            &format!(
                "nrtucode: claim_core: {name}: Core is claimed by another nrtucode_core_t instance"
            )
        ));
        rig.dev.poke(DRAM, &0xDEAD_BEEFu32.to_le_bytes()).unwrap();
        assert_eq!(
            nrtucode_core_on_ucode_booted(second, 0),
            NRTUCODE_ERR_INVALID
        );
        assert!(rig.has_log(
            1,
            &format!("nrtucode: claim_core: {name}: Magic value `deadbeef` mismatch (booted image is incompatible)")
        ));
        assert_eq!(u32_at(second, 0x30), 0);
        // The refused core never claimed: destroying it leaves the word alone.
        rig.dev.clear_trace();
        nrtucode_core_destroy(second);
        assert!(rig.writes().is_empty(), "{:?}", rig.writes());
        assert_eq!(rig.dev.peek_u32(DRAM).unwrap(), 0xDEAD_BEEF);
        nrtucode_core_destroy(first);
    }
}

#[test]
fn claim_passes_callback_errors_through() {
    let rig = Rig::new();
    let core = rig.core_at(2, DRAM);
    // SAFETY: live core.
    unsafe {
        rig.dev.fail(FaultOp::Read, 0, 77);
        assert_eq!(nrtucode_core_on_ucode_booted(core, 0), 77);
        rig.dev.fail(FaultOp::Write, 0, 1234);
        assert_eq!(nrtucode_core_on_ucode_booted(core, 0), 1234);
        assert_eq!(u32_at(core, 0x30), 0, "not booted after a failed write");
        assert_eq!(rig.dev.peek_u32(DRAM).unwrap(), CLAIM_UNCLAIMED);
        // An unmapped control block is the platform's I/O error (6).
        let mut stray = ptr::null_mut();
        assert_eq!(
            nrtucode_core_create(rig.ctx, 2, 0, 0x9_0000_0000, 0, &mut stray),
            0
        );
        assert_eq!(nrtucode_core_on_ucode_booted(stray, 0), 6);
        nrtucode_core_destroy(stray);
        nrtucode_core_destroy(core);
    }
}

#[test]
fn destroy_of_unbooted_core_logs_the_boot_gate() {
    let rig = Rig::new();
    let core = rig.core_at(2, DRAM);
    // SAFETY: live core.
    unsafe { nrtucode_core_destroy(core) };
    assert!(rig.has_log(
        1,
        "nrtucode: invalid API usage: check `(core)->boot_state == BOOTED_LEGACY` in `nrtucode_core_disable_logs` failed"
    ));
    assert!(rig.writes().is_empty());
}

#[test]
fn log_scratch_grows_for_long_lines() {
    let rig = Rig::new();
    let core = rig.booted_core(6);
    assert_eq!(u64_at(rig.ctx, 0x18), 0x200, "the initial scratch size");
    // A device log line of 0x300 bytes: the scratch grows to exactly the line and its NUL.
    // SAFETY: live core.
    unsafe { assert_eq!(nrtucode_core_enable_logs_with_size_hint(core, 0x10000), 0) };
    let name = name_of(core);
    let line = |len: usize| {
        let text = "y".repeat(len - name.len() - 2);
        assert!(rig.dev.firmware_log(DRAM, 1, &format!("{text}\n")).unwrap());
        rig.dev.clear_host_logs();
        // SAFETY: live core with logs enabled.
        unsafe { assert_eq!(nrtucode_core_print_logs(core), 0) };
        let logs = rig.logs();
        assert_eq!(logs.len(), 1);
        (
            logs[0].bytes.clone(),
            format!("{name}: {text}").into_bytes(),
        )
    };
    let (got, want) = line(0x300);
    assert_eq!(got, want, "the whole line reaches the log callback");
    assert_eq!(
        u64_at(rig.ctx, 0x18),
        0x301,
        "grown to the line and its NUL"
    );
    // A shorter line reuses the buffer.
    let (got, want) = line(0x100);
    assert_eq!(got, want);
    assert_eq!(u64_at(rig.ctx, 0x18), 0x301, "never shrinks");
    // The growth limit: a line of exactly 0x3fff bytes still grows the buffer...
    let (got, want) = line(0x3fff);
    assert_eq!(got, want);
    assert_eq!(u64_at(rig.ctx, 0x18), 0x4000);
    // ...a longer one does not, and is cut to the buffer (D5).
    let (got, want) = line(0x4800);
    assert_eq!(u64_at(rig.ctx, 0x18), 0x4000);
    assert_eq!(got, want[..0x3fff].to_vec(), "cut to the scratch buffer");
    // SAFETY: live core.
    unsafe { nrtucode_core_destroy(core) };
}

#[test]
fn disabled_levels_are_not_formatted_or_logged() {
    let rig = Rig::new();
    rig.dev.set_log_threshold(0);
    let core = rig.core_at(2, DRAM);
    // SAFETY: live core.
    unsafe { nrtucode_core_destroy(core) };
    assert!(rig.logs().is_empty());
}
