//! The Debian packages (`make deb`, cargo-deb) installed with `dpkg --root` into a scratch
//! root that already holds stand-ins for the vendor's packages (their real paths under
//! /opt/aws/neuron): ours install beside them without a file conflict, declare dependencies
//! dpkg can satisfy, work from where they land (the packaged nrt-pool builds an op from the
//! packaged headers and archive; a C consumer builds with the packaged pkg-config file and
//! runs it), and remove cleanly, leaving the vendor's files untouched.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{make, ok, root};

fn run(what: &str, cmd: &mut Command) -> String {
    String::from_utf8(ok(what, cmd.output().unwrap()).stdout).unwrap()
}

/// A binary package of `files` (path under / and contents), built with dpkg-deb.
fn package(dir: &Path, name: &str, version: &str, files: &[(&str, &str)]) -> PathBuf {
    let tree = dir.join(name);
    std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    std::fs::write(
        tree.join("DEBIAN/control"),
        format!(
            "Package: {name}\nVersion: {version}\nArchitecture: amd64\n\
             Maintainer: stand-in\nDescription: stand-in for {name}\n"
        ),
    )
    .unwrap();
    for (path, contents) in files {
        let f = tree.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, contents).unwrap();
    }
    let deb = dir.join(format!("{name}.deb"));
    run(
        "dpkg-deb --build",
        Command::new("dpkg-deb")
            .args(["--build", "--root-owner-group"])
            .arg(&tree)
            .arg(&deb),
    );
    deb
}

fn dpkg(scratch: &Path) -> Command {
    let mut c = Command::new("dpkg");
    c.arg(format!("--root={}", scratch.display()))
        .arg("--force-not-root")
        .arg("--force-script-chrootless");
    c
}

/// The vendor's files the stand-ins own (seeds 000-002 name these paths).
const VENDOR_FILES: [(&str, &str); 3] = [
    (
        "/opt/aws/neuron/lib/libnrtucode_extisa.so",
        "vendor provider",
    ),
    ("/opt/aws/neuron/lib/libnrt.so.1", "vendor runtime"),
    (
        "/opt/aws/neuron/gpsimd/custom_op/neuron/libneuroncustomop.a",
        "vendor device archive",
    ),
];

/// make test-full (CI) only: building and installing three .debs takes over a minute (D130).
mod full_tier {
    use super::*;

    #[test]
    fn packages_install_beside_the_vendors_work_and_remove_cleanly() {
        make(&["deb"]);
        let debs: Vec<PathBuf> = ["runtime", "dev", "tools"]
            .map(|v| {
                root().join(format!(
                    "target/debian/gpsimd-open-{v}_{}-1_amd64.deb",
                    env!("CARGO_PKG_VERSION")
                ))
            })
            .into();
        for d in &debs {
            assert!(d.exists(), "{} not built", d.display());
        }

        let tmp = tempfile::tempdir().unwrap();
        let scratch = tmp.path().join("root");
        let db = scratch.join("var/lib/dpkg");
        for d in ["info", "updates", "triggers"] {
            std::fs::create_dir_all(db.join(d)).unwrap();
        }
        std::fs::write(db.join("status"), "").unwrap();
        std::fs::write(db.join("available"), "").unwrap();

        // The vendor's packages, and stand-ins for the system packages ours depend on.
        let pkgs = tmp.path().join("pkgs");
        let mut first = vec![
            package(
                &pkgs,
                "aws-neuronx-runtime-lib",
                "2.31.24.0",
                &VENDOR_FILES[..2],
            ),
            package(
                &pkgs,
                "aws-neuronx-gpsimd-customop-lib",
                "0.21.2.0",
                &VENDOR_FILES[2..],
            ),
        ];
        // The system packages our Depends name (QEMU's libraries for the tools package).
        for sys in [
            "libc6",
            "gcc",
            "g++",
            "libglib2.0-0",
            "libpixman-1-0",
            "libfdt1",
        ] {
            first.push(package(&pkgs, sys, "99", &[]));
        }
        run("dpkg -i (vendor)", dpkg(&scratch).arg("-i").args(&first));
        // No --force-depends: our Depends must be satisfiable as written.
        run("dpkg -i (ours)", dpkg(&scratch).arg("-i").args(&debs));

        // Device builds need the Xtensa tools and libc++'s headers: recommended, not required.
        let tools = run("dpkg -s", dpkg(&scratch).args(["-s", "gpsimd-open-tools"]));
        assert!(
            tools.lines().any(|l| l.starts_with("Recommends:")
                && ["gcc-xtensa-lx106", "binutils-xtensa-lx106", "libc++-14-dev"]
                    .iter()
                    .all(|p| l.contains(p))),
            "{tools}"
        );

        for (path, contents) in VENDOR_FILES {
            let f = scratch.join(path.trim_start_matches('/'));
            assert_eq!(std::fs::read_to_string(&f).unwrap(), contents, "{path}");
        }
        // Every file of ours lies under /opt/gpsimd-open, except each package's copyright.
        let mut ours = Vec::new();
        for pkg in [
            "gpsimd-open-runtime",
            "gpsimd-open-dev",
            "gpsimd-open-tools",
        ] {
            let listed = run("dpkg -L", dpkg(&scratch).args(["-L", pkg]));
            for line in listed.lines().filter(|l| scratch.join(&l[1..]).is_file()) {
                assert!(
                    line.starts_with("/opt/gpsimd-open/")
                        || line == format!("/usr/share/doc/{pkg}/copyright"),
                    "{pkg} installs {line}"
                );
                ours.push(line.to_string());
            }
        }
        for want in [
            "/opt/gpsimd-open/lib/libnrtucode_extisa.so",
            "/opt/gpsimd-open/lib/libnrt_pool_shim.so",
            "/opt/gpsimd-open/lib/gpsimd-open/xtensa-q7-none-elf/libneuroncustomop.a",
            "/opt/gpsimd-open/lib/gpsimd-open/xtensa-q7-none-elf/pool-core.ld",
            "/opt/gpsimd-open/libexec/gpsimd-open/qemu-system-xtensa",
            "/opt/gpsimd-open/libexec/gpsimd-open/xtensa-elf-gdb",
            "/opt/gpsimd-open/libexec/gpsimd-open/libnrt-pool-profile.so",
            "/opt/gpsimd-open/libexec/gpsimd-open/libnrt-pool-access.so",
            "/opt/gpsimd-open/include/gpsimd-open/torch/torch.h",
            "/opt/gpsimd-open/lib/pkgconfig/nrt_pool.pc",
            "/opt/gpsimd-open/lib/cmake/GpsimdOpen/GpsimdOpenConfig.cmake",
            "/opt/gpsimd-open/bin/nrt-pool",
            "/opt/gpsimd-open/bin/customop-conformance",
            "/opt/gpsimd-open/share/bash-completion/completions/nrt-pool",
        ] {
            assert!(ours.iter().any(|l| l == want), "{want} not packaged");
        }

        // The packaged tools and libraries work where they landed.
        let prefix = scratch.join("opt/gpsimd-open");
        let version = run(
            "nrt-pool --version",
            Command::new(prefix.join("bin/nrt-pool")).arg("--version"),
        );
        assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
        let ex = root().join("examples/ops");
        let ops = tmp.path().join("libops.so");
        run(
            "packaged nrt-pool build",
            Command::new(prefix.join("bin/nrt-pool"))
                .args(["build", "--schema"])
                .arg(ex.join("ops.schema"))
                .arg("--out")
                .arg(&ops)
                .args(["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"].map(|s| ex.join(s))),
        );
        let flags = run(
            "pkg-config nrt_pool",
            Command::new("pkg-config")
                .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
                .args(["--cflags", "--libs", "nrt_pool"]),
        );
        assert!(flags.contains(&prefix.display().to_string()), "{flags}");
        let seam = tmp.path().join("seam");
        run(
            "gcc with the packaged pkg-config file",
            Command::new("gcc")
                .args(["-std=c11", "-Wall", "-Werror"])
                .arg(root().join("nrt-pool-shim/ffi/tests/c/seam.c"))
                .args(flags.split_whitespace())
                .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
                .arg("-o")
                .arg(&seam),
        );
        assert!(run("the packaged consumer", Command::new(&seam).arg(&ops)).contains("PASS"));

        // Removal takes all of ours and none of the vendor's.
        run(
            "dpkg -r",
            dpkg(&scratch).args([
                "-r",
                "gpsimd-open-tools",
                "gpsimd-open-dev",
                "gpsimd-open-runtime",
            ]),
        );
        for f in &ours {
            assert!(!scratch.join(&f[1..]).exists(), "{f} left behind");
        }
        for (path, contents) in VENDOR_FILES {
            let f = scratch.join(path.trim_start_matches('/'));
            assert_eq!(std::fs::read_to_string(&f).unwrap(), contents, "{path}");
        }
    }
}
