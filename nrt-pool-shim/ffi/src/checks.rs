//! Checked launches through the FFI: `nrt_pool_set_checks` turns checks on for
//! the launches after it, and a launch whose checks found something returns
//! `NRT_POOL_CHECK_FOUND` with the findings in `nrt_pool_last_error`.
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_char;
use std::sync::atomic::{AtomicBool, Ordering};

use nrt_pool_engine::check::{CheckReport, Checks, Suppressions};

use crate::boundary::{cpath, cstr, guard, status, with_engine, Code, Failure};

/// Sets the checks every later launch makes: `list` names them, comma-separated
/// (init, race, memory, rules, cores, parity, leftovers, or all; "default" or "1" for all but
/// cores, parity and leftovers; "none" or "0" for none). `parity` compares each launch with
/// the other build: the one beside a library registered by path, or the one
/// `$GPSIMD_OPEN_PARITY_BUILD` names for an image registered as bytes (else the launch's
/// notes say it was not checked). A
/// launch whose checks find something writes its output and returns
/// `NRT_POOL_CHECK_FOUND`. `$GPSIMD_OPEN_CHECK` sets the same at `nrt_pool_init`.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_set_checks(list: *const c_char) -> i32 {
    guard(|| {
        status(with_engine(|e| {
            let list = cstr(list, "list")?;
            e.defaults.checks = Checks::parse(list)
                .map_err(|m| Failure::argument(format!("nrt_pool_set_checks: {m}")))?;
            Ok(())
        }))
    })
}

/// Reads a suppression file (`path`; NULL: none): later launches' findings that an entry
/// matches are kept out of `NRT_POOL_CHECK_FOUND` (a launch whose findings were all
/// suppressed returns `NRT_POOL_OK`). `nrt_pool_close` says on stderr which entries matched
/// and which never did. A file that cannot be read, or a malformed line, is
/// `NRT_POOL_ERR_ARGUMENT` naming the file and line; the suppressions in force stay.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_set_suppressions(path: *const c_char) -> i32 {
    guard(|| {
        status(with_engine(|e| {
            if path.is_null() {
                e.set_suppressions(None);
                return Ok(());
            }
            let p = cpath(path, "path")?;
            let s = Suppressions::read(p)
                .map_err(|err| Failure::argument(format!("nrt_pool_set_suppressions: {err}")))?;
            e.set_suppressions(Some(s));
            Ok(())
        }))
    })
}

/// `NRT_POOL_CHECK_FOUND` with the findings, one per line, when a checked launch found
/// something; what the checks could not look at is said on stderr (once per process).
pub(crate) fn checked(report: &CheckReport) -> Result<(), Failure> {
    static NOTED: AtomicBool = AtomicBool::new(false);
    if !report.notes.is_empty() && !NOTED.swap(true, Ordering::Relaxed) {
        for n in &report.notes {
            eprintln!("nrt_pool: note: {n}");
        }
    }
    if report.findings.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = report.findings.iter().map(|f| f.to_string()).collect();
    Err(Failure::new(Code::CheckFound, lines.join("\n")))
}
