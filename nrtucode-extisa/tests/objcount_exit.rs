//! The at-exit teardown check, observed as a process sees it: the real `.init_array`
//! registration and `atexit` path print the shipped build's message only for a negative
//! count, once, and nothing for leaks. Each case runs this test binary again as a child.

use std::process::Command;

use nrtucode_extisa::objcount;

const CHILD: &str = "NRTUCODE_OBJCOUNT_CHILD";

/// The child side: skews the counter as asked, then exits normally (atexit handlers run).
#[test]
fn child_process_body() {
    let Ok(mode) = std::env::var(CHILD) else {
        return;
    };
    match mode.as_str() {
        "double-free" => objcount::destroyed(),
        "leak" => {
            objcount::created();
            objcount::created();
        }
        _ => {}
    }
    std::process::exit(0);
}

fn run_child(mode: &str) -> Vec<u8> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_body",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, mode)
        .output()
        .unwrap();
    assert!(out.status.success(), "{mode}: {out:?}");
    out.stderr
}

#[test]
fn a_negative_count_prints_the_double_free_message_once_at_exit() {
    assert_eq!(
        run_child("double-free"),
        objcount::DOUBLE_FREE_MESSAGE.as_bytes()
    );
}

#[test]
fn leaks_and_a_clean_teardown_print_nothing_at_exit() {
    assert_eq!(run_child("leak"), b"");
    assert_eq!(run_child("clean"), b"");
}
