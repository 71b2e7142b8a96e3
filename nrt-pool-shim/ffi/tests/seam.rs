//! `nrt_set_pool_eng_ucode` and the launch FFI from C, as a runtime uses them: linked
//! against libnrt_pool_shim.so, and through LD_PRELOAD in front of a stand-in libnrt whose
//! symbols all fail (so a pass proves the shim's symbols won). A NULL `nrt_ucode_info`
//! faults, as libnrt's unguarded read does.

use nrt_pool_testkit as common;

use std::path::PathBuf;
use std::process::Command;

fn shim_dir() -> PathBuf {
    let d = common::root().join("target/release");
    assert!(
        d.join("libnrt_pool_shim.so").exists(),
        "run `cargo build --release` first (make test does)"
    );
    d
}

/// A C test program (`c_program`) to run against the shim library built here.
fn c_run(exe: &std::path::Path) -> Command {
    let mut c = Command::new(exe);
    c.env("LD_LIBRARY_PATH", shim_dir());
    c
}

/// A C test program's run: it exited 0 and said PASS (else its output is the failure);
/// its stdout and stderr.
fn passed(run: &std::process::Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(
        run.status.success() && stdout.contains("PASS"),
        "{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

/// tests/c/`name`.c built into `dir`, linked against the shim library.
fn c_program(dir: &std::path::Path, name: &str) -> PathBuf {
    let root = common::root();
    let exe = dir.join(name);
    common::cc(
        "gcc",
        &[
            "-std=gnu11".as_ref(),
            "-pthread".as_ref(),
            "-I".as_ref(),
            root.join("include").as_os_str(),
            root.join(format!("nrt-pool-shim/ffi/tests/c/{name}.c"))
                .as_os_str(),
            "-L".as_ref(),
            shim_dir().as_os_str(),
            "-lnrt_pool_shim".as_ref(),
            "-o".as_ref(),
            exe.as_os_str(),
        ],
    );
    exe
}

/// A NEURON_LIBRARY op library `name` built for the host in `dir`.
fn host_op_library(dir: &std::path::Path, name: &str, compute: PathBuf, shape: PathBuf) -> PathBuf {
    op_library(dir, name, compute, shape, false)
}

/// The same, `--multicore` when `multicore`.
fn op_library(
    dir: &std::path::Path,
    name: &str,
    compute: PathBuf,
    shape: PathBuf,
    multicore: bool,
) -> PathBuf {
    op_library_in(dir, name, compute, shape, multicore, Default::default())
}

/// [`op_library`] in the data model `model` (D97).
fn op_library_in(
    dir: &std::path::Path,
    name: &str,
    compute: PathBuf,
    shape: PathBuf,
    multicore: bool,
    model: nrt_pool_build::DataModel,
) -> PathBuf {
    nrt_pool_build::build(&common::neuron_ops(
        dir, name, compute, shape, multicore, model,
    ))
    .unwrap()
    .library
}

#[test]
fn the_seam_and_launch_ffi_work_linked_and_preloaded() {
    let dir = tempfile::tempdir().unwrap();
    let ops = common::examples(dir.path());
    let src = common::root().join("nrt-pool-shim/ffi/tests/c");
    let include = common::root().join("include");
    let lib_dir = shim_dir();

    // seam.c, linked against `-l{lib}` from `lib_dir`.
    let seam_program = |name: &str, lib_dir: &std::path::Path, lib: &str| {
        let exe = dir.path().join(name);
        common::cc(
            "gcc",
            &[
                "-std=gnu11".as_ref(),
                "-pthread".as_ref(),
                "-I".as_ref(),
                include.as_os_str(),
                src.join("seam.c").as_os_str(),
                "-L".as_ref(),
                lib_dir.as_os_str(),
                format!("-l{lib}").as_ref(),
                "-o".as_ref(),
                exe.as_os_str(),
            ],
        );
        exe
    };

    // Linked.
    let linked = seam_program("seam_linked", &lib_dir, "nrt_pool_shim");
    let run = Command::new(&linked)
        .arg(&ops)
        .env("LD_LIBRARY_PATH", &lib_dir)
        .output()
        .unwrap();
    let (stdout, stderr) = passed(&run);
    assert!(
        stderr.contains("device 1 is out of range"),
        "the no-op is diagnosed: {stderr}"
    );
    assert_eq!(
        stdout.matches("buffered before init").count(),
        1,
        "{stdout}"
    );

    // Through LD_PRELOAD, in front of a stand-in libnrt.
    let stub = dir.path().join("libnrt.so");
    common::cc(
        "gcc",
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-I".as_ref(),
            include.as_os_str(),
            src.join("stub_libnrt.c").as_os_str(),
            "-o".as_ref(),
            stub.as_os_str(),
        ],
    );
    let preloaded = seam_program("seam_preloaded", dir.path(), "nrt");
    let without = Command::new(&preloaded)
        .arg(&ops)
        .env("LD_LIBRARY_PATH", dir.path())
        .output()
        .unwrap();
    assert!(!without.status.success(), "the stand-in alone must fail");
    let with = Command::new(&preloaded)
        .arg(&ops)
        .env("LD_LIBRARY_PATH", dir.path())
        .env("LD_PRELOAD", lib_dir.join("libnrt_pool_shim.so"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&with.stdout);
    assert!(
        with.status.success() && stdout.contains("PASS"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&with.stderr)
    );

    // A device (Xtensa) image: registered and initialised, reported as not runnable here;
    // and the stock image (nothing registered).
    for mode in ["xtensa", "stock"] {
        let r = Command::new(&linked)
            .args([ops.as_os_str(), mode.as_ref()])
            .env("LD_LIBRARY_PATH", &lib_dir)
            .output()
            .unwrap();
        assert!(
            r.status.success() && String::from_utf8_lossy(&r.stdout).contains("PASS"),
            "{mode}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }

    // NULL: a SIGSEGV, as in libnrt.
    let null = Command::new(&linked)
        .args([ops.as_os_str(), "null".as_ref()])
        .env("LD_LIBRARY_PATH", &lib_dir)
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        null.status.signal(),
        Some(libc::SIGSEGV),
        "{:?}",
        null.status
    );
}

#[test]
fn the_shim_exports_only_its_c_api() {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(shim_dir().join("libnrt_pool_shim.so"))
        .output()
        .unwrap();
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(" T "))
        .filter_map(|l| l.split_whitespace().nth(2).map(String::from))
        .collect();
    assert!(names.contains(&"nrt_set_pool_eng_ucode".to_string()));
    assert!(names.contains(&"nrt_pool_launch_v1".to_string()));
    let stray: Vec<&String> = names
        .iter()
        .filter(|n| !(n.starts_with("nrt_pool_") || *n == "nrt_set_pool_eng_ucode"))
        .collect();
    assert!(
        stray.is_empty(),
        "unexpected exports (an op library's symbols would collide): {stray:?}"
    );
}

/// examples/mlp built for the host, once for the tests that use it (they only load it),
/// under target/ (a static's temporary folder would never be removed).
fn mlp_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = common::root();
            let dir = root.join("target/tmp/seam-mlp");
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            host_op_library(
                &dir,
                "mlp_ops",
                root.join("examples/mlp/relu.cpp"),
                root.join("examples/mlp/shape.cpp"),
            )
        })
        .clone()
}

#[test]
fn neuron_library_ops_launch_through_the_v2_entry_points() {
    let dir = tempfile::tempdir().unwrap();
    let library = mlp_library();
    let exe = c_program(dir.path(), "ops_v2");
    let run = c_run(&exe).arg(&library).output().unwrap();
    passed(&run);
}

/// Checked launches: nrt_pool_set_checks, NRT_POOL_CHECK_FOUND with the
/// findings in nrt_pool_last_error, the output written; nrt_pool_set_suppressions; and
/// $GPSIMD_OPEN_CHECK at init.
#[test]
fn checked_launches_report_their_findings() {
    let dir = tempfile::tempdir().unwrap();
    let gallery = common::root().join("examples/check-gallery");
    let library = op_library(
        dir.path(),
        "gallery",
        gallery.join("faulty.cpp"),
        gallery.join("shape.cpp"),
        true,
    );
    let exe = c_program(dir.path(), "checks");
    let run = c_run(&exe)
        .arg(&library)
        .env_remove("GPSIMD_OPEN_CHECK")
        .output()
        .unwrap();
    passed(&run);
    // The suppressions' summary at close: which entry matched, which never did.
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(".supp:2 matched 1 finding(s): init op=gallery::remainder"),
        "{stderr}"
    );
    assert!(
        stderr.contains(".supp:3 never matched: race kernel=nobody"),
        "{stderr}"
    );
    // The variable checks from init: the program's first, unchecked launch now finds.
    let run = c_run(&exe)
        .arg(&library)
        .env("GPSIMD_OPEN_CHECK", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    assert!(stderr.contains("unchecked launch"), "{stderr}");
    let run = c_run(&exe)
        .arg(&library)
        .env("GPSIMD_OPEN_CHECK", "bogus")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("$GPSIMD_OPEN_CHECK: unknown check 'bogus'"),
        "{stderr}"
    );
}

/// 8 threads x 300 op-output + launch pairs on one engine, and the same in two processes
/// at once (two engines): every call succeeds and is exact, and nothing is left after
/// close.
#[test]
fn eight_threads_share_an_engine_and_two_engines_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let library = mlp_library();
    let exe = c_program(dir.path(), "threads_v2");
    let spawn = || {
        c_run(&exe)
            .arg(&library)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    passed(&spawn().wait_with_output().unwrap());
    let (a, b) = (spawn(), spawn());
    passed(&a.wait_with_output().unwrap());
    passed(&b.wait_with_output().unwrap());
}

/// The parity check through the FFI: a library registered by path compares
/// each launch with its Pool image beside it (tests/c/parity.c).
#[test]
fn the_ffi_parity_check_compares_with_the_pool_image_beside_a_registered_library() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::root();
    let compute = dir.path().join("parity.cpp");
    std::fs::write(
        &compute,
        "#include <stdint.h>\n#include <torch/torch.h>\n\
         torch::Tensor clz_zero(const torch::Tensor &x) {\n\
           torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);\n\
           auto in = x.accessor<float, 1>(); auto out = y.accessor<float, 1>();\n\
           // __builtin_clz/ctz of 0 are undefined: x86's and the device's instructions differ.\n\
           for (int64_t i = 0; i < x.numel(); i++) {\n\
             unsigned v = (unsigned)(in[i] + 8.0f);\n\
             out[i] = (float)__builtin_clz(v) + 100.0f * (float)__builtin_ctz(v);\n\
           }\n\
           return y;\n\
         }\n\
         torch::Tensor twice(const torch::Tensor &x) {\n\
           torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);\n\
           auto in = x.accessor<float, 1>(); auto out = y.accessor<float, 1>();\n\
           for (int64_t i = 0; i < x.numel(); i++) out[i] = 2.0f * in[i];\n\
           return y;\n\
         }\n",
    )
    .unwrap();
    let shape = dir.path().join("shape.cpp");
    std::fs::write(
        &shape,
        "#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n\
         torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }\n\
         NEURON_LIBRARY(parity_ops, m) { m.def(\"clz_zero\", &s, \"clz_zero\"); m.def(\"twice\", &s, \"twice\"); }\n",
    )
    .unwrap();
    let built = nrt_pool_build::build(&nrt_pool_build::OpBuildOptions {
        name: "parity".into(),
        compute: vec![compute],
        shape: vec![shape],
        build_directory: dir.path().into(),
        multicore: false,
        setup: nrt_pool_build::BuildSetup {
            archive: common::archive(),
            data_model: Default::default(),
            include: root.join("include"),
            cxx: "g++".into(),
            flags: Default::default(),
            device_objects: None,
            device_image: Some(nrt_pool_build::DeviceImage {
                out: dir.path().join("libparity.pool"),
                archive: root
                    .join("target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a"),
                link_script: root.join("customop-device/xtensa/pool-core.ld"),
            }),
            xtensa: Default::default(),
            core_runner: common::core_runner(),
            on_compiled: None,
        },
    })
    .unwrap();
    let exe = c_program(dir.path(), "parity");
    let run = c_run(&exe)
        .arg(&built.library)
        .env_remove("GPSIMD_OPEN_CHECK")
        .output()
        .unwrap();
    passed(&run);
}

/// An Xtensa Pool image registered through the seam as its IRAM/DRAM pair runs on QEMU
/// cores: a C runtime launches through the versioned FFI and checks every element.
#[test]
fn a_registered_pool_image_runs_on_xtensa_cores() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::root();
    let ex = root.join("examples/ops");
    let pool = dir.path().join("libops.pool");
    nrt_pool_build::build(&nrt_pool_build::BuildOptions {
        schema: ex.join("ops.schema"),
        sources: ["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"]
            .map(|s| ex.join(s))
            .to_vec(),
        out: dir.path().join("libops.so"),
        setup: nrt_pool_build::BuildSetup {
            archive: common::archive(),
            data_model: Default::default(),
            include: root.join("include"),
            device_objects: None,
            device_image: Some(nrt_pool_build::DeviceImage {
                out: pool.clone(),
                archive: root
                    .join("target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a"),
                link_script: root.join("customop-device/xtensa/pool-core.ld"),
            }),
            cxx: "g++".into(),
            flags: Default::default(),
            xtensa: Default::default(),
            core_runner: common::core_runner(),
            on_compiled: None,
        },
    })
    .unwrap();
    let exe = c_program(dir.path(), "pool_image");
    // The board is found beside the shim library (the build tree's here).
    let run = c_run(&exe)
        .arg(&pool)
        .env_remove("NRT_POOL_XTENSA_BOARD")
        .output()
        .unwrap();
    passed(&run);
}

/// Faults in op code through the v2 entry points (tests/c/faults.c): a faulting kernel or
/// shape function is NRT_POOL_ERR_FAULT with what it printed first on the caller's stdout;
/// start code faulting in the cores a launch starts is NRT_POOL_ERR_LIBRARY.
#[test]
fn faults_in_op_code_give_the_documented_codes() {
    let dir = tempfile::tempdir().unwrap();
    let compute = dir.path().join("faulty.cpp");
    std::fs::write(
        &compute,
        r#"#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <torch/torch.h>

// Start code that faults (saying so first) while the marker file named by FAULTY_MARKER
// exists, and else says it ran (once per library load, as on hardware, however many core
// processes run it).
__attribute__((constructor)) static void start(void) {
    const char *m = getenv("FAULTY_MARKER");
    if (m && access(m, F_OK) == 0) {
        printf("start code faults\n");
        *(volatile int *)nullptr = 1;
    }
    printf("start code ran\n");
}

torch::Tensor copy(const torch::Tensor &x) {
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    torch::mul_out(y, x, 1);
    return y;
}

torch::Tensor boom(const torch::Tensor &x) {
    printf("boom: before the fault\n");
    *(volatile float *)nullptr = 1.0f;
    return x;
}

torch::Tensor bad_shape(const torch::Tensor &x) { return x; }
"#,
    )
    .unwrap();
    let shape = dir.path().join("shape.cpp");
    std::fs::write(
        &shape,
        r#"#include <stdio.h>
#include <torch/torch.h>
#include "torchneuron/register.h"

torch::Tensor like_input(torch::Tensor x) {
    printf("shape of copy or boom\n");
    return torch::empty(x.sizes(), torch::kFloat);
}
torch::Tensor faulting_shape(torch::Tensor x) {
    printf("shape: before the fault\n");
    *(volatile int *)nullptr = 1;
    return x;
}

NEURON_LIBRARY(faulty_ops, m) {
    m.def("copy", &like_input, "copy");
    m.def("boom", &like_input, "boom");
    m.def("bad_shape", &faulting_shape, "bad_shape");
}
"#,
    )
    .unwrap();
    // getenv and access(): POSIX calls of the host's data model (D97).
    let library = op_library_in(
        dir.path(),
        "faulty_ops",
        compute,
        shape,
        false,
        nrt_pool_build::DataModel::Host,
    );
    let exe = c_program(dir.path(), "faults");
    let marker = dir.path().join("fault-at-start");
    let run = c_run(&exe)
        .arg(&library)
        .arg(&marker)
        .env("FAULTY_MARKER", &marker)
        .output()
        .unwrap();
    let (stdout, _) = passed(&run);
    // What op code printed reaches stdout once per call, a shape function's too (it runs
    // before each of the four launches that get past the argument checks).
    for (printed, times) in [
        ("shape: before the fault\n", 1),
        ("boom: before the fault\n", 1),
        ("shape of copy or boom\n", 4),
        // At the registration that worked, not again when launches start cores; and what
        // the start code printed before faulting at the first registration.
        ("start code ran\n", 1),
        ("start code faults\n", 1),
    ] {
        assert_eq!(
            stdout.matches(printed).count(),
            times,
            "{printed:?} in {stdout}"
        );
    }
}

/// A C output + launch pair runs the op's shape function once (tests/c/prepared.c, ABI 4):
/// the launch takes what `nrt_pool_op_output_v2` found for the same inputs and output;
/// other inputs, another output or a library registered since run it again.
#[test]
fn an_output_and_launch_pair_runs_the_shape_function_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = common::root();
    let library = host_op_library(
        dir.path(),
        "mlp_ops",
        root.join("examples/mlp/relu.cpp"),
        root.join("nrt-pool-shim/ffi/tests/c/counted_shape.cpp"),
    );
    let exe = c_program(dir.path(), "prepared");
    let run = c_run(&exe).arg(&library).output().unwrap();
    let (stdout, _) = passed(&run);
    // Runs of the shape function before each PAIRS line, and that line's expectation.
    let mut ran = 0;
    let mut seen = Vec::new();
    for line in stdout.lines() {
        if line == "shape function ran" {
            ran += 1;
        } else if let Some(want) = line.strip_prefix("PAIRS ") {
            seen.push((ran, want.parse::<usize>().unwrap()));
        }
    }
    assert_eq!(seen.len(), 3, "{stdout}");
    for (ran, want) in seen {
        assert_eq!(ran, want, "shape function runs: {stdout}");
    }
}

/// `Output::Derived` with `Arguments::Validate` (repeated launches of the CLI and Python)
/// skips an op's shape function but still validates the arguments against the op; only a
/// pair's second half (`Arguments::Validated`, the launch FFI's) skips both.
#[test]
fn a_derived_output_still_validates_the_arguments() {
    use nrt_pool_engine::tensor::{HostTensor, Location};
    use nrt_pool_engine::{ArgValue, Arguments, Call, CallOptions, Destination, Output};
    let library = mlp_library();
    let o = nrt_pool_open::OpenOptions::default();
    let mut e = nrt_pool_open::Pool::open(&library, &o).unwrap();
    let target = e.target("mlp_ops::axpb").unwrap();
    let x = HostTensor::from_f32(vec![4, 6], &[1.5; 24]).unwrap();
    let args = || {
        vec![
            ArgValue::Tensor(x.clone(), Location::Hbm),
            ArgValue::Double(2.0),
            ArgValue::Double(0.5),
        ]
    };
    let spec = e.output(&target, args(), Output::Derive).unwrap();
    let call = |args, output| Call {
        target: &target,
        args,
        output,
        to: Destination::Host,
        cores: None,
        options: CallOptions::default(),
    };
    let derived = |spec| Output::Derived(spec, Arguments::Validate);
    let done = e.call(call(args(), derived(spec.clone()))).unwrap();
    assert_eq!(done.output.unwrap().to_f32().unwrap(), vec![3.5; 24]);
    // A number where the op takes a tensor: refused, the output known or not.
    let wrong = vec![
        ArgValue::Long(3),
        ArgValue::Double(2.0),
        ArgValue::Double(0.5),
    ];
    let err = e.call(call(wrong, derived(spec))).unwrap_err();
    assert!(
        !matches!(err, nrt_pool_engine::EmuError::Fault(_)) && err.to_string().contains("axpb"),
        "refused before any launch: {err}"
    );
}
