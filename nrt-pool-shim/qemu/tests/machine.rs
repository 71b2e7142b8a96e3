//! QEMU's nrt-pool machine (`machine/nrt-pool.c`, docs/decisions.md D63) refuses a
//! configuration it cannot honour with a message naming what is wrong.

use std::process::Command;

use nrt_pool_qemu::tools::qemu_for;
use nrt_pool_testkit as testkit;

fn qemu(args: &[&str]) -> (bool, String) {
    let q = qemu_for(&testkit::xtensa_board());
    let o = Command::new(&q)
        .args(["-display", "none", "-nodefaults", "-S"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", q.display()));
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn the_machine_names_bad_regions_and_missing_device_memory() {
    let (ok, err) = qemu(&["-M", "help"]);
    assert!(ok, "{err}");
    let (ok, err) = qemu(&["-M", "nrt-pool"]);
    assert!(!ok);
    assert!(
        err.contains("no device memory (-machine memory-backend=ID)"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memory");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    let backend = format!(
        "memory-backend-file,id=m,mem-path={},share=on,size=1M",
        file.display()
    );
    for bad in [
        "4000000000+10",
        "zz+10@0",
        "4000000000+0@0",
        "4000000000+10@0;x",
    ] {
        let (ok, err) = qemu(&[
            "-object",
            &backend,
            "-M",
            &format!("nrt-pool,memory-backend=m,regions={bad}"),
        ]);
        assert!(!ok, "{bad}");
        assert!(err.contains("bad regions entry"), "{bad}: {err}");
    }
}
