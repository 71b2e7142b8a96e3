//! Device faults under QEMU (issue #12, "Bad input"): an illegal instruction, a load and a
//! store to no memory, a window exception (the stack pointer left memory), a timeout, a
//! broken runtime rule and abort() each end the core with a report naming the core, the
//! PC (symbolized from the image) and the address.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nrt_pool_qemu::{pool_cores, run_kernel, ArgIn, CoreFault, FaultCause, QemuError};
use nrt_pool_testkit as testkit;

const FP32: u8 = 10;
const UINT32: u8 = 9;

fn build(dir: &Path) -> PathBuf {
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/faults");
    let schema = t.join("device_faults.schema");
    testkit::build_with_image(
        dir,
        "device_faults",
        &schema,
        &[t.join("device_faults.cpp")],
    )
    .1
}

fn fault(pool: &Path, kernel: &str, arg: ArgIn, out: (u8, &[u32]), timeout: u64) -> CoreFault {
    let board = testkit::xtensa_board();
    let cores = pool_cores(pool).unwrap();
    match run_kernel(
        &board,
        &cores[0],
        pool,
        kernel.as_bytes(),
        &[arg],
        out,
        Duration::from_secs(timeout),
    ) {
        Err(QemuError::Fault(f)) => f,
        Err(e) => panic!("{kernel}: expected a fault, got {e}"),
        Ok(r) => panic!("{kernel}: expected a fault, the kernel finished: {r:?}"),
    }
}

fn floats() -> ArgIn {
    ArgIn {
        dtype: FP32,
        shape: vec![4],
        data: vec![0; 16],
    }
}

fn address(a: u32) -> ArgIn {
    ArgIn {
        dtype: UINT32,
        shape: vec![1],
        data: a.to_le_bytes().to_vec(),
    }
}

/// The exception's cause, PC symbol and address, checked against what each kernel did.
#[track_caller]
fn exception(f: &CoreFault) -> (FaultCause, bool, String, u32) {
    match f {
        CoreFault::Exception {
            core,
            cause,
            window,
            pc,
            address,
            symbol,
            ..
        } => {
            assert_eq!(*core, 0);
            assert!((0x8400_0000..0x8420_0000).contains(pc), "{f}");
            (
                *cause,
                *window,
                symbol.clone().unwrap_or_default(),
                *address,
            )
        }
        other => panic!("expected an exception, got {other}"),
    }
}

#[test]
fn device_faults_are_reported_with_core_symbolized_pc_and_address() {
    let dir = tempfile::tempdir().unwrap();
    let pool = build(dir.path());

    let f = fault(&pool, "illegal", floats(), (FP32, &[4]), 30);
    let (cause, window, symbol, _) = exception(&f);
    assert_eq!(
        (cause, window),
        (FaultCause::IllegalInstruction, false),
        "{f}"
    );
    assert!(symbol.starts_with("illegal("), "{f}");
    assert!(
        f.to_string()
            .starts_with("core 0: illegal instruction at pc 0x84"),
        "{f}"
    );

    let f = fault(&pool, "trap", floats(), (FP32, &[4]), 30);
    let (cause, _, symbol, _) = exception(&f);
    assert_eq!(cause, FaultCause::Break, "{f}");
    assert!(symbol.starts_with("trap("), "{f}");

    // No memory at 0x40000010: the machine's bus error, which names the access.
    for (kernel, write, what) in [
        ("bad_load", false, "load from no memory"),
        ("bad_store", true, "store to no memory"),
    ] {
        let f = fault(&pool, kernel, address(0x4000_0010), (UINT32, &[1]), 30);
        let (cause, window, symbol, addr) = exception(&f);
        assert_eq!(
            (cause, window),
            (FaultCause::LoadStorePifAddress, false),
            "{f}"
        );
        assert_eq!(addr, 0x4000_0010, "{f}");
        assert!(symbol.starts_with(&format!("{kernel}(")), "{f}");
        assert!(
            f.to_string()
                .starts_with(&format!("core 0: {what} at pc 0x84")),
            "{f}"
        );
        assert!(f.to_string().ends_with("address 0x40000010"), "{f}");
        assert!(
            matches!(f, CoreFault::Exception { write: Some(w), soc: None, .. } if w == write),
            "{f:?}"
        );
    }

    let f = fault(&pool, "bad_stack", floats(), (FP32, &[4]), 30);
    match &f {
        CoreFault::Exception {
            window, address, ..
        } => {
            assert!(*window, "a window exception: {f}");
            assert!((0x3FFF_FF00..0x4000_0000).contains(address), "{f}");
        }
        other => panic!("expected a window exception, got {other}"),
    }
    assert!(f.to_string().starts_with("core 0: window exception"), "{f}");

    let f = fault(&pool, "spin", floats(), (FP32, &[4]), 3);
    match &f {
        CoreFault::Timeout {
            core: 0,
            pc: Some(pc),
            symbol: Some(symbol),
        } => {
            assert!((0x8400_0000..0x8420_0000).contains(pc), "{f}");
            assert!(symbol.starts_with("spin("), "{f}");
        }
        other => panic!("expected a timeout inside spin(), got {other}"),
    }
    assert!(
        f.to_string().starts_with("core 0: timed out at pc 0x84"),
        "{f}"
    );

    let f = fault(&pool, "pull_too_many", floats(), (FP32, &[4]), 30);
    match &f {
        CoreFault::Fatal { core: 0, message } => {
            let m = String::from_utf8_lossy(message);
            assert!(m.contains("customop: fatal"), "{m}");
        }
        other => panic!("expected the runtime's fatal error, got {other}"),
    }

    let f = fault(&pool, "call_abort", floats(), (FP32, &[4]), 30);
    assert!(
        matches!(f, CoreFault::Fatal { core: 0, .. }),
        "abort() ends the core through the runtime's fault service: {f}"
    );
}
