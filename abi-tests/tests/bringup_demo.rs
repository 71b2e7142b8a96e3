//! `make demo`'s sequence (nrt-pool bringup) against the built provider: the report holds
//! the exact records, the drained device logs and a clean teardown.

use std::process::Command;

use nrt_sim_device::bringup;

#[test]
fn bringup_reports_records_logs_and_clean_teardown() {
    std::env::remove_var(bringup::IMAGE_DIR_ENV);
    let opts = bringup::Options {
        provider: abi_tests::provider(),
        cayman_library: None,
    };
    let report = bringup::run(&opts).expect("bring-up sequence");
    assert_eq!(report.load_records.len(), 1);
    let load = report.load_records[0];
    assert_eq!(&load[..2], &[0x95, 0x10]);
    assert_eq!((load[0x0c], load[0x0d]), (1, 0xFF));
    assert!(
        load[0x10..].iter().all(|&b| b == 0),
        "SUNDA: nothing staged, selector 0"
    );
    assert_eq!(report.unload_records[0][0x0c], 2);
    assert_eq!(report.drained_logs.len(), 2);
    assert!(report.drained_logs[1].starts_with("ND[0]NC[0].Q7_POOL[0]: Q7_POOL firmware:"));
    assert_eq!(report.live_memhandles_after, 0);
    let text = report.to_string();
    for phase in ["init\n", "bring-up\n", "load\n", "query\n", "teardown\n"] {
        assert!(text.contains(phase), "phase {phase:?} in report");
    }
}

#[test]
fn cli_bringup_and_usage() {
    let cli = abi_tests::artifact("nrt-pool");
    let ok = Command::new(&cli)
        .args(["bringup", "--provider"])
        .arg(abi_tests::provider())
        .env_remove(bringup::IMAGE_DIR_ENV)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("ok: "));

    // With a split-load library, a Cayman core stages it through ll_create.
    let lib = tempfile::tempdir().unwrap();
    let elf = lib.path().join("lib.elf");
    std::fs::write(
        &elf,
        nrtucode_extisa::prelink::fixture::Fixture::sample().build(),
    )
    .unwrap();
    let staged = Command::new(&cli)
        .args(["bringup", "--provider"])
        .arg(abi_tests::provider())
        .arg("--cayman-library")
        .arg(&elf)
        .env_remove(bringup::IMAGE_DIR_ENV)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&staged.stdout);
    assert!(
        staged.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&staged.stderr)
    );
    assert!(
        stdout.contains("record tag 0x1095 dir 1 flag 0xff addr 0x40"),
        "{stdout}"
    );
    assert!(stdout.contains("selector 0 size 208"), "{stdout}");
    assert!(
        stdout.contains("UCPL header, code 0x1c bytes, data 0x90 bytes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 staged Cayman library, 0 device memhandles left"),
        "{stdout}"
    );

    let missing = Command::new(&cli)
        .args([
            "bringup",
            "--provider",
            "/nonexistent/libnrtucode_extisa.so",
        ])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr)
        .contains("cannot load /nonexistent/libnrtucode_extisa.so"));

    let usage = Command::new(&cli).arg("frobnicate").output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let text = String::from_utf8_lossy(&usage.stderr);
    assert!(
        text.contains("unrecognized subcommand 'frobnicate'") && text.contains("Usage: nrt-pool"),
        "{text}"
    );
}
