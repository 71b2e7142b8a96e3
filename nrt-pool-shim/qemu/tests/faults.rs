//! Device faults under QEMU ("Bad input"): an illegal instruction, a load and a
//! store to no memory, a window exception (the stack pointer left memory), a timeout, a
//! broken runtime rule and abort() each end the core with a report naming the core, the
//! PC (symbolized from the image) and the address.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nrt_pool_engine::adapters::{KernelLaunch, LaunchVerbs};
use nrt_pool_engine::tensor::{DType, HostTensor};
use nrt_pool_engine::{DeviceFault, EmuError, LaunchArg, PoolEngine};
use nrt_pool_testkit as testkit;

mod common;

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

/// Runs `kernel` on one QEMU core; the fault it must end in.
fn fault(e: &mut PoolEngine, kernel: &str, arg: LaunchArg, timeout: u64) -> DeviceFault {
    e.defaults.timeout = Duration::from_secs(timeout);
    let args = vec![arg];
    let output = e.loaded.output_for(kernel, &args).unwrap();
    match e.launch(&KernelLaunch {
        kernel: kernel.into(),
        args,
        output,
        cores: 1,
    }) {
        Err(EmuError::Fault(f)) => {
            assert_eq!((f.kernel.as_str(), f.core), (kernel, 0), "{f}");
            *f
        }
        Err(e) => panic!("{kernel}: expected a fault, got {e}"),
        Ok(_) => panic!("{kernel}: expected a fault, the kernel finished"),
    }
}

fn floats() -> LaunchArg {
    LaunchArg::hbm(HostTensor::new(DType::F32, vec![4], vec![0; 16]).unwrap())
}

fn address(a: u32) -> LaunchArg {
    LaunchArg::hbm(HostTensor::new(DType::U32, vec![1], a.to_le_bytes().to_vec()).unwrap())
}

/// The report's kind and its sentence from the core (without the leading "core N: ").
fn report(f: &DeviceFault) -> (String, &str) {
    (format!("{:?}", f.kind), f.message.as_str())
}

#[test]
fn device_faults_are_reported_with_core_symbolized_pc_and_address() {
    let dir = tempfile::tempdir().unwrap();
    let pool = build(dir.path());
    let mut e = common::xtensa_engine(64 << 20);
    e.load(&pool).unwrap();

    let f = fault(&mut e, "illegal", floats(), 30);
    let (kind, m) = report(&f);
    assert_eq!(kind, "Trap", "{f}");
    assert!(m.starts_with("illegal instruction at pc 0x84"), "{f}");
    assert!(m.contains(" (illegal("), "{f}");

    let f = fault(&mut e, "trap", floats(), 30);
    let (kind, m) = report(&f);
    assert_eq!(kind, "Trap", "{f}");
    assert!(
        m.starts_with("break instruction (a trap) at pc 0x84"),
        "{f}"
    );
    assert!(m.contains(" (trap("), "{f}");

    // An integer division by zero traps (device builds check divisors, D69).
    let f = fault(&mut e, "divide_by_zero", address(0), 30);
    let (kind, m) = report(&f);
    assert_eq!(kind, "Trap", "{f}");
    assert!(
        m.starts_with("break instruction (a trap) at pc 0x84"),
        "{f}"
    );
    assert!(m.contains(" (divide_by_zero("), "{f}");

    // No memory at 0x40000010: the machine's bus error, which names the access.
    for (kernel, access, what) in [
        ("bad_load", "read", "load from no memory"),
        ("bad_store", "write", "store to no memory"),
    ] {
        let f = fault(&mut e, kernel, address(0x4000_0010), 30);
        let (kind, m) = report(&f);
        assert_eq!(kind, "Memory", "{f}");
        assert_eq!(f.access, Some(access), "{f}");
        assert!(m.starts_with(&format!("{what} at pc 0x84")), "{f}");
        assert!(m.contains(&format!(" ({kernel}(")), "{f}");
        assert!(m.ends_with("address 0x40000010"), "{f}");
    }

    // The stack pointer left memory: the window overflow's spill faults (a double
    // exception), at an address just below 0x40000000.
    let f = fault(&mut e, "bad_stack", floats(), 30);
    let (kind, m) = report(&f);
    assert_eq!(kind, "Memory", "{f}");
    assert!(m.starts_with("window exception ("), "{f}");
    assert!(m.contains("address 0x3fffff"), "{f}");

    let f = fault(&mut e, "spin", floats(), 3);
    let (kind, m) = report(&f);
    assert_eq!(kind, "Timeout", "{f}");
    assert!(m.starts_with("timed out at pc 0x84"), "{f}");
    assert!(m.contains(" (spin("), "{f}");

    let f = fault(&mut e, "pull_too_many", floats(), 30);
    let (kind, m) = report(&f);
    assert_eq!(kind, "Fatal", "{f}");
    assert!(m.contains("customop: fatal"), "{f}");

    let f = fault(&mut e, "call_abort", floats(), 30);
    assert_eq!(
        report(&f).0,
        "Fatal",
        "abort() ends the core through the runtime's fault service: {f}"
    );
}
