//! `make install` into a temporary prefix, then consumers built against the installed tree
//! only, as a C/C++ team would: with pkg-config and with CMake's find_package(GpsimdOpen),
//! a C program on libnrt_pool_shim.so and a C++ op on libneuroncustomop.a, run with the
//! installed nrt-pool. Then `make uninstall` removes everything it installed, and a DESTDIR
//! install stages the same tree under DESTDIR.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{make, ok, root};

fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let out = ok(
        "pkg-config",
        Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
            .args(args)
            .output()
            .unwrap(),
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// The files an install put down, from its manifest.
fn manifest(prefix: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string(prefix.join("share/gpsimd-open/install_manifest.txt"))
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect()
}

#[test]
fn installed_tree_serves_pkg_config_and_cmake_consumers_and_uninstalls() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("usr");
    make(&["install-files", &format!("PREFIX={}", prefix.display())]);
    for f in [
        "lib/libnrtucode_extisa.so",
        "lib/libnrt_pool_shim.so",
        "lib/gpsimd-open/x86_64-unknown-linux-gnu/libneuroncustomop.a",
        "lib/gpsimd-open/xtensa-q7-none-elf/libneuroncustomop.a",
        "lib/gpsimd-open/xtensa-q7-none-elf/pool-core.ld",
        "lib/gpsimd-open/xtensa-q7-none-elf/sim-start.S",
        "lib/gpsimd-open/xtensa-q7-none-elf/window-vectors.inc",
        "lib/gpsimd-open/xtensa-q7-none-elf/pool-board.elf",
        "include/nrt_pool.h",
        "include/gpsimd-open/torch/torch.h",
        "include/gpsimd-open/torch/extension.h",
        "include/gpsimd-open/c10/util/Half.h",
        "include/gpsimd-open/c10/util/BFloat16.h",
        "include/gpsimd-open/c10/core/Scalar.h",
        "include/gpsimd-open/ATen/ATen.h",
        "include/gpsimd-open/torchneuron/register.h",
        "include/gpsimd-open/device/libcxx/__config_site",
        "include/gpsimd-open/device/inttypes.h",
        "bin/nrt-pool",
        "bin/nrtucode-tool",
        "bin/nrtucode-conformance",
        "bin/customop-conformance",
        "share/doc/gpsimd-open/nrt-pool.txt",
        "share/bash-completion/completions/nrt-pool",
        "share/zsh/site-functions/_nrt-pool",
        "share/fish/vendor_completions.d/nrt-pool.fish",
        "lib/pkgconfig/nrt_pool.pc",
        "lib/cmake/GpsimdOpen/GpsimdOpenConfig.cmake",
    ] {
        assert!(prefix.join(f).exists(), "{f} not installed");
    }
    // The provider keeps its SONAME; no header lands where a real libtorch's would.
    let readelf = ok(
        "readelf",
        Command::new("readelf")
            .arg("-d")
            .arg(prefix.join("lib/libnrtucode_extisa.so"))
            .output()
            .unwrap(),
    );
    assert!(String::from_utf8_lossy(&readelf.stdout).contains("[libnrtucode_extisa.so]"));
    for real in ["include/torch", "include/c10", "include/ATen"] {
        assert!(
            !prefix.join(real).exists(),
            "{real} would shadow a real libtorch's"
        );
    }

    // The installed nrt-pool builds an op from the installed headers and archive.
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let nrt_pool = prefix.join("bin/nrt-pool");
    let ex = root().join("examples/ops");
    let ops = work.join("libops.so");
    ok(
        "installed nrt-pool build",
        Command::new(&nrt_pool)
            .args(["build", "--schema"])
            .arg(ex.join("ops.schema"))
            .arg("--out")
            .arg(&ops)
            .args(["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"].map(|s| ex.join(s)))
            .output()
            .unwrap(),
    );

    // And a device image of kernels using the C++ standard library (libc++ configured by the
    // installed include/gpsimd-open/device, linked with the installed Xtensa archive).
    let stdlib = root().join("nrt-pool-shim/qemu/tests/stdlibxx");
    let built = ok(
        "installed nrt-pool build --device-image",
        Command::new(&nrt_pool)
            .args(["build", "--schema"])
            .arg(stdlib.join("stdlibxx.schema"))
            .arg("--out")
            .arg(work.join("libstdlibxx.so"))
            .arg("--device-image")
            .arg(stdlib.join("stdlibxx.cpp"))
            .output()
            .unwrap(),
    );
    assert!(
        work.join("libstdlibxx.pool").is_file(),
        "{}",
        String::from_utf8_lossy(&built.stdout)
    );

    // pkg-config: a C consumer of the launch FFI, and a C++ op on the device runtime.
    let mut cc = Command::new("gcc");
    cc.args(["-std=c11", "-Wall", "-Werror"])
        .arg(root().join("nrt-pool-shim/ffi/tests/c/seam.c"))
        .args(pkg_config(&prefix, &["--cflags", "--libs", "nrt_pool"]))
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .arg("-o")
        .arg(work.join("seam"));
    ok("gcc with pkg-config nrt_pool", cc.output().unwrap());
    let run = ok(
        "the pkg-config consumer",
        Command::new(work.join("seam")).arg(&ops).output().unwrap(),
    );
    assert!(String::from_utf8_lossy(&run.stdout).contains("PASS"));

    let cpp = root().join("abi-tests/cpp");
    let hand = work.join("libhand.so");
    let mut cxx = Command::new("g++");
    cxx.args(["-std=c++17", "-shared", "-fPIC"])
        .arg(cpp.join("op_kernels.cpp"))
        .args(pkg_config(
            &prefix,
            &["--cflags", "--libs", "neuroncustomop"],
        ))
        .arg(format!(
            "-Wl,--version-script={}",
            cpp.join("op.map").display()
        ))
        .arg("-o")
        .arg(&hand);
    ok("g++ with pkg-config neuroncustomop", cxx.output().unwrap());
    let listed = ok(
        "installed nrt-pool list",
        Command::new(&nrt_pool)
            .arg("list")
            .arg(&hand)
            .output()
            .unwrap(),
    );
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "axpb\ntranspose\ntcm_scale\n"
    );

    // CMake: find_package(GpsimdOpen) and the same two consumers.
    let proj = work.join("cmake");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(
        proj.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.13)\nproject(consumer C CXX)\n\
             find_package(GpsimdOpen 0.1 REQUIRED)\n\
             add_executable(seam {seam})\ntarget_link_libraries(seam GpsimdOpen::nrt_pool)\n\
             add_library(hand SHARED {ops})\ntarget_link_libraries(hand GpsimdOpen::neuroncustomop)\n\
             set_target_properties(hand PROPERTIES CXX_STANDARD 17)\n\
             target_link_options(hand PRIVATE -Wl,--version-script={map})\n",
            seam = root().join("nrt-pool-shim/ffi/tests/c/seam.c").display(),
            ops = cpp.join("op_kernels.cpp").display(),
            map = cpp.join("op.map").display(),
        ),
    )
    .unwrap();
    let build = proj.join("build");
    ok(
        "cmake configure",
        Command::new("cmake")
            .arg("-S")
            .arg(&proj)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
            .output()
            .expect("cmake (make tools installs it)"),
    );
    ok(
        "cmake build",
        Command::new("cmake")
            .arg("--build")
            .arg(&build)
            .output()
            .unwrap(),
    );
    let run = ok(
        "the CMake consumer",
        Command::new(build.join("seam")).arg(&ops).output().unwrap(),
    );
    assert!(String::from_utf8_lossy(&run.stdout).contains("PASS"));
    let listed = ok(
        "nrt-pool list of the CMake-built op",
        Command::new(&nrt_pool)
            .arg("list")
            .arg(build.join("libhand.so"))
            .output()
            .unwrap(),
    );
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "axpb\ntranspose\ntcm_scale\n"
    );

    // Uninstall removes every installed file and the directories it made.
    let files = manifest(&prefix);
    make(&["uninstall", &format!("PREFIX={}", prefix.display())]);
    for f in &files {
        assert!(!f.exists(), "{} left behind", f.display());
    }
    assert!(!prefix.join("include/gpsimd-open").exists());
    assert!(!prefix.join("lib/gpsimd-open").exists());
}

#[test]
fn destdir_stages_the_tree_under_destdir() {
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("stage");
    make(&[
        "install-files",
        "PREFIX=/opt/gpsimd-open",
        &format!("DESTDIR={}", stage.display()),
    ]);
    let staged = stage.join("opt/gpsimd-open");
    assert!(staged.join("lib/libnrt_pool_shim.so").exists());
    // pkg-config files locate the tree from where they are (relocatable).
    let flags = pkg_config(&staged, &["--cflags", "nrt_pool"]);
    assert!(
        flags
            .iter()
            .any(|f| f.contains("stage/opt/gpsimd-open/lib/pkgconfig/../../include")),
        "{flags:?}"
    );
    make(&[
        "uninstall",
        "PREFIX=/opt/gpsimd-open",
        &format!("DESTDIR={}", stage.display()),
    ]);
    assert!(!staged.join("lib/libnrt_pool_shim.so").exists());
}
