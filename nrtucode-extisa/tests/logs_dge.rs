//! The device log ring, the DGE priority map and mailboxes, and the PC-bounds check, each
//! with its gates in order and the exact control-block bytes it writes.

mod common;

use std::ptr;

use common::*;
use nrt_sim_device::{control_block as cb, FaultOp, Op};
use nrtucode_extisa::ffi::core::*;
use nrtucode_extisa::*;

const BOOT_GATE: &str = "(core)->boot_state == BOOTED_LEGACY";

fn check_failed(expr: &str, func: &str) -> String {
    format!("nrtucode: invalid API usage: check `{expr}` in `{func}` failed")
}

#[test]
fn enable_logs_publishes_the_ring() {
    let rig = Rig::new();
    rig.dev.set_log_threshold(2);
    let core = rig.booted_core(6);
    rig.dev.clear_trace();
    // SAFETY: live core.
    assert_eq!(
        unsafe { nrtucode_core_enable_logs_with_size_hint(core, 100) },
        0
    );
    let trace = rig.dev.trace();
    let (handle, size, align) = trace
        .iter()
        .find_map(|op| match op {
            Op::Malloc {
                size,
                align,
                handle,
            } => Some((*handle, *size, *align)),
            _ => None,
        })
        .expect("ring allocated");
    assert_eq!(
        (size, align),
        (0x80, 0x20),
        "100 rounded up to 0x20, aligned 0x20"
    );
    let ring = rig.dev.memhandle_addr(handle).unwrap();
    assert_eq!(
        rig.writes(),
        vec![
            (DRAM + cb::LOG_RING_ADDR, ring.to_le_bytes().to_vec()),
            (DRAM + cb::LOG_RING_SIZE, 0x80u32.to_le_bytes().to_vec()),
            (DRAM + cb::LOG_HEAD, 0u32.to_le_bytes().to_vec()),
            (DRAM + cb::MAX_LOG_LEVEL, 2u32.to_le_bytes().to_vec()),
        ]
    );
    assert_eq!(u64_at(core, 0x38), handle as u64);
    assert_eq!(u32_at(core, 0x40), 0x80);
    assert_eq!(u32_at(core, 0x44), 0);
    // Severity 4 is above the threshold: the "logs enabled" line is not emitted.
    assert!(!rig.log_texts().iter().any(|l| l.contains("logs enabled")));
    rig.dev.set_log_threshold(4);
    // SAFETY: live core.
    assert_eq!(unsafe { nrtucode_core_enable_logs(core) }, 0);
    assert_eq!(
        rig.dev.live_memhandles(),
        1,
        "re-enable frees the old ring first"
    );
    assert!(rig.has_log(
        4,
        &format!("{} logs enabled; bufsize=131072 max level=4", name_of(core))
    ));
    // SAFETY: live core.
    unsafe { nrtucode_core_destroy(core) };
    assert_eq!(rig.dev.live_memhandles(), 0, "destroy frees the ring");
}

#[test]
fn log_calls_need_a_booted_core() {
    let rig = Rig::new();
    let core = rig.core_at(6, DRAM);
    // SAFETY: live core.
    unsafe {
        assert_eq!(nrtucode_core_enable_logs(core), 8);
        assert_eq!(nrtucode_core_disable_logs(core), 8);
        assert_eq!(nrtucode_core_set_max_loglevel(core, 1), 8);
        assert_eq!(nrtucode_core_print_logs(core), 8);
    }
    for f in [
        "nrtucode_core_enable_logs_with_size_hint",
        "nrtucode_core_disable_logs",
        "nrtucode_core_set_max_loglevel",
        "nrtucode_core_print_logs",
    ] {
        assert!(
            rig.has_log(1, &check_failed(BOOT_GATE, f)),
            "{f}: {:?}",
            rig.log_texts()
        );
    }
    assert!(rig.writes().is_empty());
    // SAFETY: live core.
    unsafe { nrtucode_core_destroy(core) };
}

#[test]
fn print_logs_drains_records_and_advances_the_cursor() {
    let rig = Rig::new();
    let core = rig.booted_core(6);
    let name = name_of(core);
    // SAFETY: live core.
    unsafe {
        assert_eq!(nrtucode_core_print_logs(core), 8);
        assert!(rig.has_log(
            1,
            &format!("nrtucode: invalid API usage in `nrtucode_core_print_logs`: {name}: Logs must be enabled before printing them")
        ));
        assert_eq!(nrtucode_core_enable_logs_with_size_hint(core, 0x40), 0);
        assert!(rig.dev.firmware_log(DRAM, 1, "kernel started\n").unwrap());
        assert!(rig.dev.firmware_log(DRAM, 3, "detail\n").unwrap());
        rig.dev.clear_host_logs();
        assert_eq!(nrtucode_core_print_logs(core), 0);
        assert_eq!(
            rig.logs()
                .iter()
                .map(|l| (l.sev, l.text().into_owned()))
                .collect::<Vec<_>>(),
            vec![
                (1, format!("{name}: kernel started")),
                (3, format!("{name}: detail"))
            ]
        );
        let head = rig.dev.peek_u32(DRAM + cb::LOG_HEAD).unwrap();
        assert_eq!(u32_at(core, 0x44), head, "cursor advanced to the head");
        rig.dev.clear_host_logs();
        assert_eq!(nrtucode_core_print_logs(core), 0, "nothing new");
        assert!(rig.logs().is_empty());
        // A head behind the tail (the ring never wraps) is refused the same way.
        rig.dev
            .poke(DRAM + cb::LOG_HEAD, &1u32.to_le_bytes())
            .unwrap();
        assert_eq!(nrtucode_core_print_logs(core), NRTUCODE_ERR_IO);
        assert!(rig.has_log(
            1,
            &format!("{name}: internal error: invalid log buffer tail index 1")
        ));
        // A head past the ring's end is an internal error (6).
        rig.dev
            .poke(DRAM + cb::LOG_HEAD, &0x41u32.to_le_bytes())
            .unwrap();
        assert_eq!(nrtucode_core_print_logs(core), NRTUCODE_ERR_IO);
        assert!(rig.has_log(
            1,
            &format!("{name}: internal error: invalid log buffer tail index 65")
        ));
        // A memhandle read error passes through and the cursor stays.
        rig.dev
            .poke(DRAM + cb::LOG_HEAD, &0x40u32.to_le_bytes())
            .unwrap();
        rig.dev.fail(FaultOp::MemhandleRead, 0, 99);
        assert_eq!(nrtucode_core_print_logs(core), 99);
        assert_eq!(u32_at(core, 0x44), head);
        nrtucode_core_destroy(core);
    }
}

#[test]
fn log_lines_carry_device_text_and_names_byte_for_byte() {
    let rig = Rig::new();
    let core = rig.booted_core(6);
    // A name with a Latin-1 byte (not UTF-8), an invalid sequence and real UTF-8.
    let name: &[u8] = b"caf\xe9-\xff\xfe-\xc3\xa9";
    let c_name = std::ffi::CString::new(name).unwrap();
    let old = name_of(core);
    rig.dev.clear_host_logs();
    // SAFETY: live core, NUL-terminated name.
    unsafe {
        nrtucode_core_set_friendly_name(core, c_name.as_ptr());
        let got = std::ffi::CStr::from_ptr(nrtucode_core_get_friendly_name(core));
        assert_eq!(
            got.to_bytes(),
            name,
            "the stored name is the caller's bytes"
        );
        let mut renamed = format!("{old} renamed ").into_bytes();
        renamed.extend_from_slice(name);
        assert_eq!(rig.logs().last().unwrap().bytes, renamed);
        assert_eq!(nrtucode_core_enable_logs_with_size_hint(core, 0x100), 0);
        let record: &[u8] = b"temp 21\xb0C \xe9t\xe9 \xf0\x9f\x98\x80\n";
        assert!(rig.dev.firmware_log_bytes(DRAM, 1, record).unwrap());
        rig.dev.clear_host_logs();
        assert_eq!(nrtucode_core_print_logs(core), 0);
        let mut want = name.to_vec();
        want.extend_from_slice(b": ");
        want.extend_from_slice(&record[..record.len() - 1]);
        let logs = rig.logs();
        assert_eq!(logs.len(), 1);
        assert_eq!(
            logs[0].bytes, want,
            "device text and name pass through unchanged"
        );
        nrtucode_core_destroy(core);
    }
}

#[test]
fn disable_logs_clears_the_control_block_and_frees() {
    let rig = Rig::new();
    let core = rig.booted_core(6);
    // SAFETY: live core.
    unsafe {
        assert_eq!(nrtucode_core_enable_logs(core), 0);
        rig.dev.clear_trace();
        assert_eq!(nrtucode_core_disable_logs(core), 0);
        assert_eq!(
            rig.writes(),
            vec![
                (DRAM + cb::LOG_RING_ADDR, vec![0; 8]),
                (DRAM + cb::LOG_RING_SIZE, vec![0; 4])
            ]
        );
        assert_eq!(rig.dev.live_memhandles(), 0);
        assert_eq!(u64_at(core, 0x38), 0);
        // Without a ring, disable only reads the level word back.
        rig.dev.clear_trace();
        assert_eq!(nrtucode_core_disable_logs(core), 0);
        assert_eq!(
            rig.dev.trace(),
            vec![Op::Read {
                addr: DRAM + cb::MAX_LOG_LEVEL,
                len: 4
            }]
        );
        assert_eq!(nrtucode_core_set_max_loglevel(core, 3), 0);
        assert_eq!(rig.dev.peek_u32(DRAM + cb::MAX_LOG_LEVEL).unwrap(), 3);
        nrtucode_core_destroy(core);
    }
}

#[test]
fn enable_logs_passes_allocation_errors_through() {
    let rig = Rig::new();
    let core = rig.booted_core(6);
    rig.dev.fail(FaultOp::Malloc, 0, 5);
    // SAFETY: live core.
    unsafe {
        assert_eq!(nrtucode_core_enable_logs(core), 5);
        assert_eq!(u64_at(core, 0x38), 0);
        nrtucode_core_destroy(core);
    }
}

const KIND_GATE: &str = "((core)->kind == NRTUCODE_CORE_SUNDA_NX_POOL) || ((core)->kind == NRTUCODE_CORE_CAYMAN_NX_POOL) || ((core)->kind == NRTUCODE_CORE_MARIANA_NX_POOL) || ((core)->kind == NRTUCODE_CORE_MARIANA_PLUS_NX_POOL) && \"Expected core kind: \" \"NX\" \"_\" \"POOL\"";

#[test]
fn priority_map_gates_in_order() {
    let rig = Rig::new();
    let classes = [64u32, 128, 256, 512, 1024];
    // SAFETY: live cores; `classes` holds 5 entries.
    unsafe {
        let unbooted = rig.core_at(2, DRAM);
        assert_eq!(
            nrtucode_core_dge_set_priority_class_map(unbooted, classes.as_ptr(), 4),
            8
        );
        assert!(rig.has_log(
            1,
            &check_failed(BOOT_GATE, "nrtucode_core_dge_set_priority_class_map")
        ));
        nrtucode_core_destroy(unbooted);

        let q7 = rig.booted_core(6);
        assert_eq!(
            nrtucode_core_dge_set_priority_class_map(q7, classes.as_ptr(), 4),
            8
        );
        assert!(rig.has_log(
            1,
            &check_failed(KIND_GATE, "nrtucode_core_dge_set_priority_class_map")
        ));
        nrtucode_core_destroy(q7);

        for ct in [2, 9, 17, 25] {
            let core = rig.booted_core(ct);
            rig.dev.clear_host_logs();
            assert_eq!(
                nrtucode_core_dge_set_priority_class_map(core, classes.as_ptr(), 5),
                8
            );
            assert!(rig.logs().is_empty(), "n > 4 fails without a log line");
            rig.dev.clear_trace();
            assert_eq!(
                nrtucode_core_dge_set_priority_class_map(core, classes.as_ptr(), 3),
                0
            );
            let bytes: Vec<u8> = classes[..3].iter().flat_map(|c| c.to_le_bytes()).collect();
            assert_eq!(rig.writes(), vec![(DRAM + cb::DGE_PRIORITY_MAP, bytes)]);
            let mut back = [0u32; 4];
            assert_eq!(
                nrtucode_core_dge_get_priority_class_map(core, back.as_mut_ptr(), 3),
                0
            );
            assert_eq!(back, [64, 128, 256, 0]);
            assert_eq!(
                nrtucode_core_dge_get_priority_class_map(core, back.as_mut_ptr(), 5),
                8
            );
            rig.dev.fail(FaultOp::Write, 0, 31);
            assert_eq!(
                nrtucode_core_dge_set_priority_class_map(core, classes.as_ptr(), 1),
                31
            );
            nrtucode_core_destroy(core);
        }
    }
}

#[test]
fn mailbox_address_resets_unused_mailboxes() {
    let rig = Rig::new();
    let core = rig.booted_core(9);
    let mut addr = 0u64;
    // SAFETY: live core and out pointers.
    unsafe {
        rig.dev.clear_trace();
        assert_eq!(nrtucode_core_get_dge_mailbox_addr(core, 1, &mut addr), 0);
        assert_eq!(addr, DRAM + cb::DGE_MAILBOXES);
        let reset = 0xFFFF_FF00u32.to_le_bytes().to_vec();
        assert_eq!(
            rig.writes(),
            (1..4)
                .map(|i| (DRAM + cb::DGE_MAILBOXES + 4 * i, reset.clone()))
                .collect::<Vec<_>>()
        );
        assert_eq!(nrtucode_core_get_dge_mailbox_addr(core, 5, &mut addr), 8);
        rig.dev.clear_trace();
        assert_eq!(nrtucode_core_get_dge_mailbox_addr(core, 4, &mut addr), 0);
        assert!(rig.writes().is_empty(), "all four in use: nothing reset");

        let mb = nrtucode_dge_mailbox_t {
            reserved: 0,
            priority: 3,
            bitmask: 0x00F0,
        };
        assert_eq!(nrtucode_core_private_set_dge_mailbox(core, 2, mb), 0);
        assert_eq!(
            rig.dev.peek_u32(DRAM + cb::DGE_MAILBOXES + 8).unwrap(),
            0x00F0_0300
        );
        assert_eq!(nrtucode_core_private_set_dge_mailbox(core, 4, mb), 8);
        let mut out = nrtucode_dge_mailbox_t {
            reserved: 9,
            priority: 9,
            bitmask: 9,
        };
        assert_eq!(
            nrtucode_core_private_get_dge_mailbox_values(core, 2, &mut out),
            0
        );
        assert_eq!(out, mb);
        assert_eq!(
            nrtucode_core_private_get_dge_mailbox_values(core, 4, ptr::null_mut()),
            8,
            "the index gate comes before the out guard"
        );
        nrtucode_core_destroy(core);

        // The private mailbox calls have the kind gate but no boot gate.
        let unbooted = rig.core_at(17, DRAM + 0x1000);
        assert_eq!(nrtucode_core_private_set_dge_mailbox(unbooted, 0, mb), 0);
        let q7 = rig.core_at(13, DRAM + 0x2000);
        assert_eq!(nrtucode_core_private_set_dge_mailbox(q7, 0, mb), 8);
        assert!(rig.has_log(
            1,
            &check_failed(KIND_GATE, "nrtucode_core_private_set_dge_mailbox")
        ));
        nrtucode_core_destroy(unbooted);
        nrtucode_core_destroy(q7);
    }
}

#[test]
fn pc_bounds_have_no_boot_or_kind_gate() {
    let rig = Rig::new();
    let core = rig.core_at(13, DRAM);
    let name = name_of(core);
    // SAFETY: live core and out pointers.
    unsafe {
        assert_eq!(nrtucode_core_enable_pc_bounds_check(core, 0x200, 0x200), 8);
        assert!(rig.has_log(
            1,
            "enable_pc_bounds_check : lower bound(0x200) must be smaller than upper bound(0x200)"
        ));
        rig.dev.clear_trace();
        assert_eq!(nrtucode_core_enable_pc_bounds_check(core, 0x100, 0x200), 0);
        assert_eq!(
            rig.writes(),
            vec![
                (DRAM + cb::PC_BOUNDS_LO, 0x100u64.to_le_bytes().to_vec()),
                (DRAM + cb::PC_BOUNDS_HI, 0x200u64.to_le_bytes().to_vec())
            ]
        );
        assert!(rig.has_log(
            4,
            &format!("{name}: enabled PC bounds check for range [0x100, 0x200]")
        ));
        let (mut lo, mut hi) = (0u64, 0u64);
        assert_eq!(
            nrtucode_core_private_get_pc_bounds(core, &mut lo, &mut hi),
            0
        );
        assert_eq!((lo, hi), (0x100, 0x200));
        assert_eq!(nrtucode_core_disable_pc_bounds_check(core), 0);
        assert!(rig.has_log(4, &format!("{name}: disabled PC bounds check")));
        assert_eq!(
            nrtucode_core_private_get_pc_bounds(core, &mut lo, &mut hi),
            0
        );
        assert_eq!((lo, hi), (0, u64::MAX));
        // Outputs are written only when both reads succeed.
        let (mut lo2, mut hi2) = (7u64, 7u64);
        rig.dev.fail(FaultOp::Read, 1, 42);
        assert_eq!(
            nrtucode_core_private_get_pc_bounds(core, &mut lo2, &mut hi2),
            42
        );
        assert_eq!((lo2, hi2), (7, 7));
        rig.dev.fail(FaultOp::Write, 1, 43);
        assert_eq!(
            nrtucode_core_enable_pc_bounds_check(core, 1, 2),
            43,
            "hi write error passes through"
        );
        nrtucode_core_destroy(core);
    }
}
