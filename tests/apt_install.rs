//! `make tools` installs Debian packages through packaging/apt-install.sh (D73): nothing
//! runs when everything is installed, and a transaction that would remove or downgrade a
//! package stops with the conflict and the choices named, changing nothing. The apt and
//! dpkg-query it runs are fakes here (NRT_POOL_APT_GET, NRT_POOL_DPKG_QUERY), which record
//! every call.

use std::path::Path;
use std::process::Command;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/apt-install.sh")
}

/// A fake apt-get printing `simulation` for `install -s` and recording its calls in `log`,
/// and a fake dpkg-query that finds only `installed`.
fn fakes(
    dir: &Path,
    simulation: &str,
    installed: &[&str],
) -> (std::path::PathBuf, std::path::PathBuf) {
    let log = dir.join("calls.log");
    let apt = dir.join("apt-get");
    std::fs::write(dir.join("simulation.txt"), simulation).unwrap();
    std::fs::write(
        &apt,
        format!(
            "#!/bin/sh\necho \"apt-get $*\" >> {log}\ncase \"$*\" in *' -s '*) cat {sim};; esac\nexit 0\n",
            log = log.display(),
            sim = dir.join("simulation.txt").display()
        ),
    )
    .unwrap();
    let query = dir.join("dpkg-query");
    let cases: String = installed
        .iter()
        .map(|p| format!("  *\" {p}\") echo 'install ok installed'; exit 0;;\n"))
        .collect();
    std::fs::write(
        &query,
        format!("#!/bin/sh\ncase \" $*\" in\n{cases}esac\nexit 1\n"),
    )
    .unwrap();
    for f in [&apt, &query] {
        Command::new("chmod").arg("+x").arg(f).status().unwrap();
    }
    (apt, query)
}

/// Runs apt-install.sh for `pkgs` against fresh fakes: its exit status, its stderr and the
/// apt-get calls it made.
fn run(sim: &str, installed: &[&str], pkgs: &[&str], allow: bool) -> (i32, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (apt, query) = fakes(dir, sim, installed);
    let mut c = Command::new("sh");
    c.arg(script())
        .args(pkgs)
        .env("NRT_POOL_APT_GET", &apt)
        .env("NRT_POOL_DPKG_QUERY", &query);
    if allow {
        c.env("NRT_POOL_APT_ALLOW_CHANGES", "1");
    } else {
        c.env_remove("NRT_POOL_APT_ALLOW_CHANGES");
    }
    let out = c.output().unwrap();
    let calls = std::fs::read_to_string(dir.join("calls.log")).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        calls,
    )
}

const REMOVES_QEMU_UTILS: &str = "NOTE: This is only a simulation!\n\
Remv qemu-utils [1:10.0.2+ds-2+deb13u1~bpo12+1]\n\
Inst qemu-system-misc (1:7.2+dfsg-7+deb12u7 Debian:12/stable [amd64])\n\
Conf qemu-system-misc (1:7.2+dfsg-7+deb12u7 Debian:12/stable [amd64])\n";

#[test]
fn a_removal_stops_the_install_naming_the_package_and_the_choices() {
    let (code, stderr, calls) = run(REMOVES_QEMU_UTILS, &[], &["qemu-system-misc"], false);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("remove: qemu-utils"), "{stderr}");
    assert!(
        stderr.contains("Nothing was changed") && stderr.contains("NRT_POOL_APT_ALLOW_CHANGES=1"),
        "{stderr}"
    );
    assert!(calls.contains("install -s"), "simulated first: {calls}");
    assert!(!calls.contains("install -y"), "nothing installed: {calls}");
}

#[test]
fn a_downgrade_stops_it_too_and_an_upgrade_does_not() {
    let down = "Inst libfoo [2.0-1] (1.5-1 Debian:12/stable [amd64])\n";
    let (code, stderr, calls) = run(down, &[], &["foo-dev"], false);
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("downgrade: libfoo (2.0-1 -> 1.5-1)"),
        "{stderr}"
    );
    assert!(!calls.contains("install -y"), "{calls}");
    let up = "Inst libfoo [1.5-1] (2.0-1 Debian:12/stable [amd64])\nInst foo-dev (2.0-1 Debian:12/stable [amd64])\n";
    let (code, stderr, calls) = run(up, &[], &["foo-dev"], false);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        calls.contains("install -y -qq --no-install-recommends foo-dev"),
        "{calls}"
    );
}

#[test]
fn allowed_changes_go_ahead_and_installed_packages_run_no_apt() {
    let (code, stderr, calls) = run(REMOVES_QEMU_UTILS, &[], &["qemu-system-misc"], true);
    assert_eq!(code, 0, "{stderr}");
    assert!(calls.contains("install -y"), "{calls}");
    let (code, stderr, calls) = run(
        REMOVES_QEMU_UTILS,
        &["cmake", "flex"],
        &["cmake", "flex"],
        false,
    );
    assert_eq!((code, calls.as_str()), (0, ""), "no apt at all: {stderr}");
    let (_, _, calls) = run("", &["cmake"], &["cmake", "flex"], false);
    assert!(
        calls.contains("--no-install-recommends flex") && !calls.contains("cmake"),
        "only the missing: {calls}"
    );
}
