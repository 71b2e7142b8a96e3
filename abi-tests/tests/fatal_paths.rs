//! How the provider ends the process: every guarded NULL argument aborts with the vendor's
//! exact stderr line, unguarded ones die of SIGSEGV silently, and the few stderr notices
//! are exact. Each scenario runs in its own child process (nrtucode-probe).

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

const MPLUS_NOTICE: &str = "nrtucode: the NRTUCODE_MPLUS_ON_MARIANA flag has been removed; set NEURON_RT_DBG_V4_PLUS=0/1 instead to choose Mariana or Mariana-Plus microcode images.\n";

#[test]
fn every_scenario_ends_as_the_contract_says() {
    let probe = abi_tests::artifact("nrtucode-probe");
    let provider = abi_tests::provider();
    let images = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(images.path().join("ext-isa/ct6")).unwrap();
    std::fs::write(
        images.path().join("ext-isa/ct6/lib0.elf"),
        b"synthetic SUNDA library",
    )
    .unwrap();

    let list = Command::new(&probe).arg("--list").output().unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for line in list.lines() {
        count += 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        let out = Command::new(&probe)
            .arg(&provider)
            .arg(words[0])
            .env("NRTUCODE_EXTISA_IMAGE_DIR", images.path())
            .env_remove("NRTUCODE_MPLUS_ON_MARIANA")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let ok = match words[1..] {
            ["abort", func, arg] => {
                out.status.signal() == Some(libc::SIGABRT)
                    && stderr
                        == format!("nrtucode: invalid API usage in `{func}`: `{arg}` is null\n")
            }
            ["segv"] => out.status.signal() == Some(libc::SIGSEGV) && stderr.is_empty(),
            ["exit", rc] => {
                let want_stderr = if words[0] == "get_memory_image.mplus" {
                    MPLUS_NOTICE
                } else {
                    ""
                };
                out.status.success() && stdout == rc && stderr == want_stderr
            }
            _ => panic!("bad scenario line {line}"),
        };
        if !ok {
            failures.push(format!(
                "{line}: status {:?}, stdout {stdout:?}, stderr {stderr:?}",
                out.status
            ));
        }
    }
    assert!(count >= 60, "only {count} scenarios listed");
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
