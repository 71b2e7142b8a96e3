//! Test support for the Pool engine's crates (engine, FFI, CLI): op libraries built from
//! the examples and the test ops in `ops/`, and the paths they need.

use std::path::{Path, PathBuf};
use std::process::Command;

use nrt_pool_build::{self as opbuild, BuildOptions};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The test ops (`ops/`): kernels that fault, constructors, a hand-written C library.
pub fn ops_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ops")
}

/// The host archive of the device's data model (i386, D97): what op builds use by default.
/// The 32-bit core runner `make core-runner` builds (device-model registration runs in it).
pub fn core_runner() -> PathBuf {
    root().join("target/customop/i386-device/nrt-pool-core")
}

pub fn archive() -> PathBuf {
    let a = root().join("target/customop/i386-device/libneuroncustomop.a");
    assert!(
        a.exists(),
        "run `make customop-archives` first (make test does)"
    );
    a
}

/// The host archive of the host's data model (x86-64), for tests of that build.
pub fn lp64_archive() -> PathBuf {
    let a = root().join("target/customop/x86_64-unknown-linux-gnu/release/libneuroncustomop.a");
    assert!(
        a.exists(),
        "run `make customop-archives` first (make test does)"
    );
    a
}

/// Builds an op library with the op build helper.
pub fn build_ops(dir: &Path, name: &str, schema: &Path, sources: &[PathBuf]) -> PathBuf {
    schema_library(dir, name, schema, sources, false, Default::default()).library
}

/// [`build_ops`] in the host's data model (x86-64 with glibc and libstdc++, D97): for
/// libraries that use what only the host build has (exceptions, POSIX calls).
pub fn build_host_model_ops(dir: &Path, name: &str, schema: &Path, sources: &[PathBuf]) -> PathBuf {
    let setup = setup(opbuild::DataModel::Host, None, Default::default());
    opbuild::build(&BuildOptions {
        schema: schema.into(),
        sources: sources.to_vec(),
        out: dir.join(format!("lib{name}.so")),
        setup,
    })
    .unwrap_or_else(|e| panic!("building {name}: {e}"))
    .library
}

/// The build of NEURON_LIBRARY ops `name` from `compute` and `shape` into `dir`, in `model`
/// (no device outputs).
pub fn neuron_ops(
    dir: &Path,
    name: &str,
    compute: PathBuf,
    shape: PathBuf,
    multicore: bool,
    model: opbuild::DataModel,
) -> opbuild::OpBuildOptions {
    opbuild::OpBuildOptions {
        name: name.into(),
        compute: vec![compute],
        shape: vec![shape],
        build_directory: dir.into(),
        multicore,
        setup: setup(model, None, Default::default()),
    }
}

/// A build setup of the repository's headers and `model`'s archive.
fn setup(
    model: opbuild::DataModel,
    device_image: Option<opbuild::DeviceImage>,
    flags: opbuild::CompileFlags,
) -> opbuild::BuildSetup {
    opbuild::BuildSetup {
        archive: match model {
            opbuild::DataModel::Device => archive(),
            opbuild::DataModel::Host => lp64_archive(),
        },
        data_model: model,
        include: root().join("include"),
        device_objects: None,
        device_image,
        cxx: "g++".into(),
        flags,
        xtensa: Default::default(),
        core_runner: core_runner(),
        on_compiled: None,
    }
}

/// A schema-flow library in `dir`, with its Pool image when `image`.
fn schema_library(
    dir: &Path,
    name: &str,
    schema: &Path,
    sources: &[PathBuf],
    image: bool,
    flags: opbuild::CompileFlags,
) -> opbuild::BuildReport {
    opbuild::build(&BuildOptions {
        schema: schema.into(),
        sources: sources.to_vec(),
        out: dir.join(format!("lib{name}.so")),
        setup: nrt_pool_build::BuildSetup {
            archive: archive(),
            data_model: Default::default(),
            include: root().join("include"),
            device_objects: None,
            device_image: if image {
                device_image(dir.join(format!("lib{name}.pool")))
            } else {
                None
            },
            cxx: "g++".into(),
            flags,
            xtensa: Default::default(),
            core_runner: core_runner(),
            on_compiled: None,
        },
    })
    .unwrap_or_else(|e| panic!("building {name}: {e}"))
}

pub fn examples(dir: &Path) -> PathBuf {
    let ex = root().join("examples/ops");
    build_ops(
        dir,
        "ops",
        &ex.join("ops.schema"),
        &["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"].map(|s| ex.join(s)),
    )
}

pub fn faults(dir: &Path) -> PathBuf {
    let t = ops_dir();
    // Exceptions and abort(): the host build's (a device build refuses `throw`).
    build_host_model_ops(
        dir,
        "faults",
        &t.join("faults.schema"),
        &[t.join("faults.cpp")],
    )
}

/// The constructor test library (ops/ctors.cpp) with `defines` prepended.
pub fn ctors(dir: &Path, name: &str, defines: &str) -> PathBuf {
    let t = ops_dir();
    let src = dir.join(format!("{name}.cpp"));
    let body = std::fs::read_to_string(t.join("ctors.cpp")).unwrap();
    std::fs::write(&src, format!("{defines}\n{body}")).unwrap();
    // getpid() and write(): POSIX calls only the host build has, to see which process
    // runs the constructors.
    build_host_model_ops(dir, name, &t.join("ctors.schema"), &[src])
}

/// abi-tests' hand-written op library (no schema; `transpose` returns a tensor).
pub fn hand_written_ops(dir: &Path) -> PathBuf {
    let cpp = root().join("abi-tests/cpp");
    let lib = dir.join("libhand.so");
    let map = format!("-Wl,--version-script={}", cpp.join("op.map").display());
    cc(
        "g++",
        &[
            "-std=c++17".as_ref(),
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-I".as_ref(),
            root().join("include").as_os_str(),
            cpp.join("op_kernels.cpp").as_os_str(),
            lp64_archive().as_os_str(),
            map.as_ref(),
            "-o".as_ref(),
            lib.as_os_str(),
        ],
    );
    lib
}

/// Compiles C or C++ with warnings as errors.
pub fn cc(compiler: &str, args: &[&std::ffi::OsStr]) {
    let out = Command::new(compiler)
        .args(["-Wall", "-Werror", "-O1"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{compiler} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---- the device path (Xtensa Pool images on QEMU cores) ----

/// The Xtensa libneuroncustomop.a, the Pool core link script and the QEMU board, as
/// `make customop-archives` leaves them.
pub fn xtensa_archive() -> PathBuf {
    root().join("target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a")
}

pub fn xtensa_board() -> PathBuf {
    let b = root().join("target/customop/xtensa-q7-none-elf/pool-board.elf");
    assert!(
        b.exists(),
        "run `make customop-archives` first (make test does)"
    );
    b
}

/// Where `--device-image` writes a library's Pool image, linked with the built archive.
pub fn device_image(out: PathBuf) -> Option<opbuild::DeviceImage> {
    Some(opbuild::DeviceImage {
        out,
        archive: xtensa_archive(),
        link_script: root().join("customop-device/xtensa/pool-core.ld"),
    })
}

/// A schema-flow library and its Pool image: (libNAME.so, libNAME.pool).
pub fn build_with_image(
    dir: &Path,
    name: &str,
    schema: &Path,
    sources: &[PathBuf],
) -> (PathBuf, PathBuf) {
    build_with_image_flags(dir, name, schema, sources, &[])
}

/// [`build_with_image`] with extra compiler flags (`-DSTACK_SIZE=...`).
pub fn build_with_image_flags(
    dir: &Path,
    name: &str,
    schema: &Path,
    sources: &[PathBuf],
    cflags: &[&str],
) -> (PathBuf, PathBuf) {
    let flags = opbuild::CompileFlags {
        extra_cflags: cflags.iter().map(|f| f.to_string()).collect(),
        ..Default::default()
    };
    let r = schema_library(dir, name, schema, sources, true, flags);
    (r.library, r.device_image.expect("a Pool image"))
}

/// An AWS-style example (examples/FOLDER: COMPUTE and shape.cpp) and its Pool image.
pub fn build_example_with_image(
    dir: &Path,
    name: &str,
    folder: &str,
    compute: &str,
    multicore: bool,
) -> (PathBuf, PathBuf) {
    let ex = root().join("examples").join(folder);
    let r = opbuild::build(&opbuild::OpBuildOptions {
        name: name.into(),
        compute: vec![ex.join(compute)],
        shape: vec![ex.join("shape.cpp")],
        build_directory: dir.into(),
        multicore,
        setup: opbuild::BuildSetup {
            archive: archive(),
            data_model: Default::default(),
            include: root().join("include"),
            cxx: "g++".into(),
            flags: Default::default(),
            device_objects: None,
            device_image: device_image(dir.join(format!("lib{name}.pool"))),
            xtensa: Default::default(),
            core_runner: core_runner(),
            on_compiled: None,
        },
    })
    .unwrap_or_else(|e| panic!("building {name}: {e}"));
    (r.library, r.device_image.expect("a Pool image"))
}

/// examples/ops and its Pool image.
pub fn examples_with_image(dir: &Path) -> (PathBuf, PathBuf) {
    let ex = root().join("examples/ops");
    build_with_image(
        dir,
        "ops",
        &ex.join("ops.schema"),
        &["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"].map(|s| ex.join(s)),
    )
}
