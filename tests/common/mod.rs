//! What the root package's integration tests (install, deb) share: the checkout, a
//! command that must succeed, and `make` in the checkout.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).into()
}

/// `out`, after asserting it succeeded (its stdout and stderr shown otherwise).
pub fn ok(what: &str, out: Output) -> Output {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `make -s ARGS` in the checkout, which must succeed.
pub fn make(args: &[&str]) -> Output {
    ok(
        &format!("make {args:?}"),
        Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(root())
            .args(args)
            .output()
            .unwrap(),
    )
}
