//! The conformance harness for any `libnrtucode_extisa.so`: static checks on the file, and
//! live checks that load it, each in its own child process (a library under test is never
//! loaded, let alone unloaded, in the harness process), against a memory-backed device and
//! the harness's own declarations of the contract.

mod live;
mod statics;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// A check's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    Unsupported,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Unsupported => "UNSUPPORTED",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        match s {
            "PASS" => Some(Status::Pass),
            "FAIL" => Some(Status::Fail),
            "UNSUPPORTED" => Some(Status::Unsupported),
            _ => None,
        }
    }
}

/// What a check observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    pub observed: String,
}

impl Outcome {
    pub fn pass(o: impl Into<String>) -> Self {
        Outcome {
            status: Status::Pass,
            observed: o.into(),
        }
    }
    pub fn fail(o: impl Into<String>) -> Self {
        Outcome {
            status: Status::Fail,
            observed: o.into(),
        }
    }
    pub fn unsupported(o: impl Into<String>) -> Self {
        Outcome {
            status: Status::Unsupported,
            observed: o.into(),
        }
    }
}

/// A check body, and a registry entry: (name, expectation, body).
pub type CheckFn = fn(&Path) -> Outcome;
pub type CheckEntry = (&'static str, &'static str, CheckFn);

/// How a check runs.
#[derive(Clone, Copy)]
pub enum Kind {
    /// On the file, in the harness process (nothing is loaded).
    Static(fn(&Path) -> Outcome),
    /// In a child process that loads the library.
    Live(fn(&Path) -> Outcome),
    /// A call that must end the child (abi_tests::scenarios): (scenario, expected outcome).
    Ending(&'static str, &'static str),
}

pub struct Check {
    pub name: String,
    pub expectation: String,
    pub kind: Kind,
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub check: String,
    pub expectation: String,
    pub observed: String,
    pub status: Status,
}

/// Every check, in report order.
pub fn checks() -> Vec<Check> {
    let mut v: Vec<Check> = statics::CHECKS
        .iter()
        .map(|&(n, e, f)| Check {
            name: n.into(),
            expectation: e.into(),
            kind: Kind::Static(f),
        })
        .collect();
    v.extend(live::CHECKS.iter().map(|&(n, e, f)| Check {
        name: n.into(),
        expectation: e.into(),
        kind: Kind::Live(f),
    }));
    for &(scenario, expect) in crate::scenarios::SCENARIOS {
        v.push(Check {
            name: format!("ending.{scenario}"),
            expectation: ending_expectation(expect),
            kind: Kind::Ending(scenario, expect),
        });
    }
    v
}

fn ending_expectation(expect: &str) -> String {
    let w: Vec<&str> = expect.split_whitespace().collect();
    match w.as_slice() {
        ["abort", f, a] => {
            format!("SIGABRT after \"nrtucode: invalid API usage in `{f}`: `{a}` is null\"")
        }
        ["segv"] => "SIGSEGV, nothing on stderr (no guard)".into(),
        ["exit", rc] => format!("returns {rc}"),
        _ => expect.into(),
    }
}

/// Runs every check against `lib`; live and ending checks in children of `exe` (this
/// program, re-entered through [`child_main`]).
pub fn run(lib: &Path, exe: &Path) -> Vec<Row> {
    let images = tempfile::tempdir().expect("temporary image directory");
    live::write_images(images.path());
    checks()
        .into_iter()
        .map(|c| {
            let o = match c.kind {
                Kind::Static(f) => f(lib),
                Kind::Live(_) => run_child(exe, &["--live", &c.name], lib, images.path(), None),
                Kind::Ending(s, e) => run_child(exe, &["--ending", s], lib, images.path(), Some(e)),
            };
            Row {
                check: c.name,
                expectation: c.expectation,
                observed: o.observed,
                status: o.status,
            }
        })
        .collect()
}

const MPLUS_NOTICE: &str = "nrtucode: the NRTUCODE_MPLUS_ON_MARIANA flag has been removed; set NEURON_RT_DBG_V4_PLUS=0/1 instead to choose Mariana or Mariana-Plus microcode images.\n";

fn run_child(
    exe: &Path,
    mode: &[&str],
    lib: &Path,
    images: &Path,
    ending: Option<&str>,
) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    let out = match Command::new(exe)
        .args(mode)
        .arg(lib)
        .env("NRTUCODE_EXTISA_IMAGE_DIR", images)
        .env_remove("NRTUCODE_MPLUS_ON_MARIANA")
        .env_remove("NRT_UCODE_UNSTABLE_LIBRARY_FLAG_CPTC_DECODE")
        .env_remove("NEURON_UCODE_FLAVOR")
        .output()
    {
        Ok(o) => o,
        Err(e) => return Outcome::fail(format!("cannot run the child: {e}")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let how = match (out.status.code(), out.status.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (_, Some(s)) => format!("signal {s}"),
        _ => "unknown end".into(),
    };
    if let Some(expect) = ending {
        let w: Vec<&str> = expect.split_whitespace().collect();
        let observed = format!("{how}; stdout {stdout:?}; stderr {:?}", stderr.trim_end());
        let ok = match w.as_slice() {
            ["abort", f, a] => {
                out.status.signal() == Some(libc::SIGABRT)
                    && stderr == format!("nrtucode: invalid API usage in `{f}`: `{a}` is null\n")
            }
            ["segv"] => out.status.signal() == Some(libc::SIGSEGV) && stderr.is_empty(),
            ["exit", rc] => {
                let want = if mode[1] == "get_memory_image.mplus" {
                    MPLUS_NOTICE
                } else {
                    ""
                };
                out.status.success() && stdout == *rc && stderr == want
            }
            _ => false,
        };
        return if ok {
            Outcome::pass(observed)
        } else {
            Outcome::fail(observed)
        };
    }
    match stdout.lines().last().and_then(|l| l.split_once('\t')) {
        Some((s, o)) if out.status.success() => match Status::parse(s) {
            Some(status) => Outcome {
                status,
                observed: o.to_string(),
            },
            None => Outcome::fail(format!("unreadable child report {stdout:?}")),
        },
        _ => Outcome::fail(format!(
            "child ended by {how}; stderr {:?}",
            stderr.trim_end()
        )),
    }
}

/// The child side: `--live NAME LIB` or `--ending SCENARIO LIB`. Returns false for other
/// arguments.
pub fn child_main(args: &[String]) -> bool {
    match args {
        [mode, name, lib] if mode == "--live" => {
            let o = live::CHECKS.iter().find(|c| c.0 == name).map_or_else(
                || Outcome::fail(format!("no live check {name}")),
                |c| (c.2)(Path::new(lib)),
            );
            println!("{}\t{}", o.status.as_str(), o.observed.replace('\n', " "));
            true
        }
        [mode, scenario, lib] if mode == "--ending" => {
            crate::scenarios::run_scenario(Path::new(lib), scenario);
            true
        }
        _ => false,
    }
}

/// The report as an aligned table.
/// Prints the rows (a table, or JSON) and gives the harness's exit status: failure if any
/// check failed.
pub fn report(rows: &[Row], as_json: bool) -> std::process::ExitCode {
    print!("{}", if as_json { json(rows) } else { table(rows) });
    if rows.iter().any(|r| r.status == Status::Fail) {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

pub fn table(rows: &[Row]) -> String {
    let w = |f: fn(&Row) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let (wc, we) = (
        w(|r| r.check.len()).max(5),
        w(|r| r.expectation.len()).clamp(11, 70),
    );
    let mut s = format!(
        "{:<wc$}  {:<we$}  {:<11}  observed\n",
        "check", "expectation", "status"
    );
    for r in rows {
        let e: String = if r.expectation.len() > we {
            format!("{}...", &r.expectation[..we - 3])
        } else {
            r.expectation.clone()
        };
        writeln!(
            s,
            "{:<wc$}  {:<we$}  {:<11}  {}",
            r.check,
            e,
            r.status.as_str(),
            r.observed
        )
        .unwrap();
    }
    let count = |st| rows.iter().filter(|r| r.status == st).count();
    writeln!(
        s,
        "{} checks: {} PASS, {} FAIL, {} UNSUPPORTED",
        rows.len(),
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Unsupported)
    )
    .unwrap();
    s
}

/// The report as JSON: an array of {check, expectation, observed, status}, in check order.
pub fn json(rows: &[Row]) -> String {
    fn esc(s: &str) -> String {
        let mut o = String::with_capacity(s.len() + 2);
        o.push('"');
        for c in s.chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                '\n' => o.push_str("\\n"),
                c if (c as u32) < 0x20 => write!(o, "\\u{:04x}", c as u32).unwrap(),
                c => o.push(c),
            }
        }
        o.push('"');
        o
    }
    let mut s = String::from("[\n");
    for (i, r) in rows.iter().enumerate() {
        write!(
            s,
            "  {{\"check\": {}, \"expectation\": {}, \"observed\": {}, \"status\": {}}}",
            esc(&r.check),
            esc(&r.expectation),
            esc(&r.observed),
            esc(r.status.as_str())
        )
        .unwrap();
        s.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    s.push_str("]\n");
    s
}
