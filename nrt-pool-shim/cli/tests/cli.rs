//! `nrt-pool` as an op author uses it: build, list, run with .npy files, and the errors a
//! mistake gets (exit 2 usage, 1 error, 3 device fault), never a half-written output.

use nrt_pool_testkit as common;

use std::path::Path;
use std::process::{Command, Output};

use nrt_pool_cli::npy;
use nrt_pool_engine::tensor::{DType, HostTensor};

fn nrt_pool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nrt-pool"))
        .args(args)
        .output()
        .unwrap()
}

/// `nrt-pool build --schema SCHEMA --out OUT` with this checkout's archive and headers, to
/// be given sources (and flags).
fn nrt_pool_build_command(schema: &str, out: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nrt-pool"));
    c.args(["build", "--schema", schema, "--out", out, "--archive"])
        .arg(common::archive())
        .arg("--include")
        .arg(common::root().join("include"));
    c
}

/// `nrt-pool build --data-model=host` with this checkout's x86-64 archive and headers: for
/// kernels that use what only the host build has (POSIX calls, iostreams; D97).
fn nrt_pool_build_host_model(schema: &str, out: &str, rest: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nrt-pool"))
        .args([
            "build",
            "--data-model=host",
            "--schema",
            schema,
            "--out",
            out,
            "--archive",
        ])
        .arg(common::lp64_archive())
        .arg("--include")
        .arg(common::root().join("include"))
        .args(rest)
        .output()
        .unwrap()
}

/// `nrt-pool build` with this checkout's archive and headers.
fn nrt_pool_build(schema: &str, out: &str, rest: &[&str]) -> Output {
    nrt_pool_build_command(schema, out)
        .args(rest)
        .output()
        .unwrap()
}

/// `--device-image` with this checkout's Xtensa archive and core link script.
fn device_image_flags() -> [std::ffi::OsString; 5] {
    [
        "--device-image".into(),
        "--device-archive".into(),
        common::xtensa_archive().into(),
        "--device-link-script".into(),
        common::root()
            .join("customop-device/xtensa/pool-core.ld")
            .into(),
    ]
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn build_list_and_run_with_npy_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ex = common::root().join("examples/ops");
    let lib = d.join("libops.so");
    let o = nrt_pool_build(
        s(&ex.join("ops.schema")),
        s(&lib),
        &[
            s(&ex.join("scale_add.cpp")),
            s(&ex.join("scale_add_mc.cpp")),
            s(&ex.join("hello.cpp")),
        ],
    );
    assert!(o.status.success(), "{:?}", text(&o));

    // Device objects of the same sources, only when asked for (they need the Xtensa g++,
    // which make tools installs).
    let dev = d.join("device");
    let lib2 = d.join("libops2.so");
    let o = nrt_pool_build(
        s(&ex.join("ops.schema")),
        s(&lib2),
        // hello.cpp prints: it compiles against include/device/stdio.h (D34).
        &[
            "--device-objects",
            s(&dev),
            s(&ex.join("scale_add.cpp")),
            s(&ex.join("scale_add_mc.cpp")),
            s(&ex.join("hello.cpp")),
        ],
    );
    if nrt_pool_build::XtensaTools::on_path().installed() {
        assert!(o.status.success(), "{:?}", text(&o));
        for obj in ["scale_add.o", "hello.o", "nrt_pool_op_wrapper.o"] {
            let elf = std::fs::read(dev.join(obj)).unwrap();
            // ELF32, little-endian, relocatable, EM_XTENSA (94).
            assert_eq!(
                (&elf[..4], elf[4], elf[5], elf[16], elf[18]),
                (&b"\x7fELF"[..], 1, 1, 1, 94),
                "{obj}"
            );
        }
    } else {
        eprintln!(
            "UNSUPPORTED: {} not installed; device objects not checked",
            nrt_pool_build::XtensaTools::CXX
        );
        assert_eq!(o.status.code(), Some(1));
        assert!(text(&o).1.contains("is not installed"), "{:?}", text(&o));
        assert!(!lib2.exists() && !dev.exists());
    }

    // An ordinary op (C headers included) builds by default: device objects only when
    // asked for; a source that does not build for the device then fails the build,
    // leaving no library and no device folder.
    let ordinary = d.join("host_only.cpp");
    std::fs::write(
        &ordinary,
        "#ifdef __XTENSA__\n#error this kernel is host-only\n#endif\n\
         #include <math.h>\n#include <stdlib.h>\n#include <string.h>\n\
         #include \"neuron_customop.hpp\"\n\
         void k(const neuron::Tensor &, neuron::Tensor &) {}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("k.schema"),
        "k(tensor<f32> x) -> tensor<f32> like x\n",
    )
    .unwrap();
    let klib = d.join("libk.so");
    let o = nrt_pool_build(s(&d.join("k.schema")), s(&klib), &[s(&ordinary)]);
    assert!(o.status.success() && klib.exists(), "{:?}", text(&o));
    assert!(!d.join("libk.device").exists());
    std::fs::remove_file(&klib).unwrap();
    let kdev = d.join("kdev");
    let o = nrt_pool_build(
        s(&d.join("k.schema")),
        s(&klib),
        &["--device-objects", s(&kdev), s(&ordinary)],
    );
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    if nrt_pool_build::XtensaTools::on_path().installed() {
        assert!(
            text(&o).1.contains("this kernel is host-only"),
            "{:?}",
            text(&o)
        );
    }
    assert!(!klib.exists() && !kdev.exists());

    let o = nrt_pool(&["list", s(&lib)]);
    assert_eq!(
        text(&o).0,
        "scale_add(tensor<f32> x, f32 alpha, f32 beta) -> tensor<f32> like x\n\
         scale_add_mc(tensor<f32> x, f32 alpha, f32 beta) -> tensor<f32> like x\n\
         hello(tensor<i32> x) -> tensor<i32> like x\n"
    );

    let x: Vec<f32> = (0..5000).map(|i| i as f32 / 7.0).collect();
    npy::write(
        &d.join("x.npy"),
        &HostTensor::from_f32(vec![50, 100], &x).unwrap(),
    )
    .unwrap();
    for (kernel, cores, arg) in [
        ("scale_add", "1", "x.npy"),
        ("scale_add_mc", "8", "x.npy@sbuf"),
    ] {
        let out = d.join(format!("{kernel}.npy"));
        let o = nrt_pool(&[
            "run",
            s(&lib),
            kernel,
            "--arg",
            s(&d.join(arg)),
            "--arg",
            "-0.5",
            "--arg",
            "f32:3",
            "--out",
            s(&out),
            "--cores",
            cores,
        ]);
        assert!(o.status.success(), "{:?}", text(&o));
        assert!(text(&o)
            .1
            .contains(&format!("ok: {kernel} on {cores} core(s)")));
        let got = npy::read(&out, None).unwrap();
        assert_eq!(got.shape, vec![50, 100]);
        let want: Vec<f32> = x.iter().map(|v| v * -0.5 + 3.0).collect();
        assert_eq!(got.to_f32().unwrap(), want);
    }

    let xi = HostTensor::new(
        DType::I32,
        vec![16],
        (0..16i32).flat_map(|v| v.to_le_bytes()).collect(),
    )
    .unwrap();
    npy::write(&d.join("i.npy"), &xi).unwrap();
    let o = nrt_pool(&[
        "run",
        s(&lib),
        "hello",
        "--arg",
        s(&d.join("i.npy")),
        "--out",
        s(&d.join("h.npy")),
        "--cores",
        "8",
    ]);
    assert_eq!(
        text(&o).0,
        "hello from core 0 of 8: 2 elements, sum 1\n",
        "{:?}",
        text(&o)
    );
}

#[test]
fn mistakes_get_clear_errors_and_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = common::examples(d);
    let faults = common::faults(d);
    npy::write(
        &d.join("x.npy"),
        &HostTensor::from_f32(vec![4], &[1.0; 4]).unwrap(),
    )
    .unwrap();
    npy::write(
        &d.join("i.npy"),
        &HostTensor::zeros(DType::I32, vec![4]).unwrap(),
    )
    .unwrap();
    std::fs::write(d.join("bad.npy"), b"\x93NUMPY garbage").unwrap();
    let out = d.join("out.npy");
    let x = s(&d.join("x.npy")).to_string();
    let (ipath, badpath) = (d.join("i.npy"), d.join("bad.npy"));
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["run", s(&lib), "nope", "--out", s(&out)],
            1,
            "unknown kernel 'nope'; the library registers: scale_add, scale_add_mc, hello",
        ),
        (
            vec![
                "run",
                s(&lib),
                "scale_add",
                "--arg",
                &x,
                "--arg",
                "1",
                "--out",
                s(&out),
            ],
            1,
            "takes 3 argument(s)",
        ),
        (
            vec![
                "run",
                s(&lib),
                "scale_add",
                "--arg",
                s(&ipath),
                "--arg",
                "1",
                "--arg",
                "1",
                "--out",
                s(&out),
            ],
            1,
            "argument 0 (tensor<f32> x): ",
        ),
        (
            vec![
                "run",
                s(&lib),
                "scale_add",
                "--arg",
                s(&badpath),
                "--arg",
                "1",
                "--arg",
                "1",
                "--out",
                s(&out),
            ],
            1,
            "bad.npy: not a .npy file",
        ),
        (
            vec![
                "run",
                s(&lib),
                "scale_add",
                "--arg",
                &x,
                "--arg",
                "one",
                "--arg",
                "1",
                "--out",
                s(&out),
            ],
            1,
            "one: not a f32 value",
        ),
        (
            vec![
                "run",
                s(&lib),
                "scale_add",
                "--arg",
                &x,
                "--arg",
                "1",
                "--arg",
                "1",
                "--out",
                s(&out),
                "--cores",
                "9",
            ],
            2,
            "invalid value '9' for '--cores <CORES>': 9 is not in 1..=8",
        ),
        (
            vec!["run", s(&lib), "scale_add", "--arg", &x],
            2,
            "the following required arguments were not provided:\n  --out <OUT>",
        ),
        (
            vec!["run", "/no/such/lib.so", "k", "--out", s(&out)],
            1,
            "/no/such/lib.so: no such file",
        ),
        (
            vec!["list"],
            2,
            "the following required arguments were not provided:\n  <LIB>",
        ),
        (
            vec!["frobnicate"],
            2,
            "unrecognized subcommand 'frobnicate'",
        ),
        // A mistyped option is named, with the right one suggested.
        (
            vec!["run", s(&lib), "scale_add", "--core", "2", "--out", s(&out)],
            2,
            "tip: a similar argument exists: '--cores'",
        ),
        (
            vec![
                "run",
                s(&faults),
                "call_abort",
                "--arg",
                &x,
                "--out",
                s(&out),
            ],
            3,
            "device fault in kernel 'call_abort' on core 0: fatal error: customop: abort()",
        ),
    ];
    // What a file holds, against what the parameter takes.
    let f8 = d.join("f8.npy");
    let mut img = npy::encode(&HostTensor::zeros(DType::I64, vec![4]).unwrap());
    let at = img.windows(3).position(|w| w == b"<i8").unwrap();
    img[at..at + 3].copy_from_slice(b"<f8");
    std::fs::write(&f8, img).unwrap();
    let empty = d.join("empty.npy");
    let mut img = npy::encode(&HostTensor::from_f32(vec![1], &[0.0]).unwrap());
    let at = img.windows(5).position(|w| w == b"(1, )").unwrap();
    img[at..at + 5].copy_from_slice(b"(0, )");
    img.truncate(img.len() - 4);
    std::fs::write(&empty, img).unwrap();
    let mut cases = cases;
    let (f8s, emptys) = (s(&f8).to_string(), s(&empty).to_string());
    let owned: Vec<(Vec<String>, i32, String)> = vec![
        (
            vec!["--arg".into(), f8s.clone()],
            1,
            format!("argument 0 (tensor<f32> x): {f8s} holds '<f8' elements, the parameter is f32 ('<f4' in a .npy file); convert it, e.g. x.astype(np.float32)"),
        ),
        (
            vec!["--arg".into(), emptys.clone()],
            1,
            format!("argument 0 (tensor<f32> x): {emptys}: shape [0] has no elements"),
        ),
    ];
    let owned_args: Vec<Vec<String>> = owned
        .iter()
        .map(|(first, _, _)| {
            let mut v: Vec<String> = vec!["run".into(), s(&lib).into(), "scale_add".into()];
            v.extend(first.iter().cloned());
            v.extend(
                ["--arg", "1", "--arg", "1", "--out", s(&out)]
                    .iter()
                    .map(|a| a.to_string()),
            );
            v
        })
        .collect();
    for ((_, code, msg), args) in owned.iter().zip(&owned_args) {
        cases.push((
            args.iter().map(String::as_str).collect(),
            *code,
            msg.as_str(),
        ));
    }
    for t in ["inf", "1e30", "-1", "0", "NaN", "soon"] {
        let mut args = vec![
            "run",
            s(&lib),
            "scale_add",
            "--arg",
            &x,
            "--arg",
            "1",
            "--arg",
            "1",
        ];
        args.extend(["--out", s(&out), "--timeout", t]);
        cases.push((args, 2, "a number of seconds above 0 and at most 86400"));
    }
    for shape in ["0", "4,0", "x", "-1"] {
        cases.push((
            vec![
                "run",
                s(&lib),
                "scale_add",
                "--out",
                s(&out),
                "--out-dtype",
                "f32",
                "--out-shape",
                shape,
            ],
            2,
            "each dimension a whole number above 0",
        ));
    }
    for (args, code, msg) in cases {
        let o = nrt_pool(&args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: expected '{msg}' in:\n{err}");
        assert!(!out.exists(), "{args:?} left an output file");
    }
    let o = nrt_pool(&[
        "run",
        s(&faults),
        "spin",
        "--arg",
        &x,
        "--out",
        s(&out),
        "--timeout",
        "0.5",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        text(&o).1.contains("timeout: still running after"),
        "{:?}",
        text(&o)
    );
}

#[test]
fn libraries_without_a_schema_take_typed_scalars_and_an_explicit_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = common::hand_written_ops(d);
    assert_eq!(
        text(&nrt_pool(&["list", s(&lib)])).0,
        "axpb\ntranspose\ntcm_scale\n"
    );
    let x: Vec<f32> = (0..6).map(|v| v as f32).collect();
    npy::write(
        &d.join("x.npy"),
        &HostTensor::from_f32(vec![6], &x).unwrap(),
    )
    .unwrap();
    npy::write(
        &d.join("a.npy"),
        &HostTensor::from_f32(vec![1], &[2.0]).unwrap(),
    )
    .unwrap();
    let out = d.join("out.npy");
    let o = nrt_pool(&[
        "run",
        s(&lib),
        "axpb",
        "--arg",
        s(&d.join("x.npy")),
        "--arg",
        s(&d.join("a.npy")),
        "--arg",
        "i32:5",
        "--out",
        s(&out),
        "--out-dtype",
        "f32",
        "--out-shape",
        "6",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let want: Vec<f32> = x.iter().map(|v| v * 2.0 + 5.0).collect();
    assert_eq!(npy::read(&out, None).unwrap().to_f32().unwrap(), want);
    std::fs::remove_file(&out).unwrap();
    let bare = nrt_pool(&["run", s(&lib), "axpb", "--arg", "5", "--out", s(&out)]);
    assert_eq!(bare.status.code(), Some(2));
    assert!(
        text(&bare)
            .1
            .contains("no schema for this argument; write TYPE:VALUE"),
        "{:?}",
        text(&bare)
    );
    let no_out = nrt_pool(&["run", s(&lib), "axpb", "--arg", "i32:5", "--out", s(&out)]);
    assert_eq!(no_out.status.code(), Some(1));
    assert!(
        text(&no_out)
            .1
            .contains("carries no schema; give the output's dtype and shape"),
        "{:?}",
        text(&no_out)
    );
    assert!(!out.exists());
}

#[test]
fn fortran_order_npy_inputs_run_like_c_order_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = common::examples(d);
    // A (2, 3) float32 array saved in Fortran order: memory holds the columns.
    let c: Vec<f32> = (0..6).map(|v| v as f32).collect();
    let columns: Vec<f32> = vec![c[0], c[3], c[1], c[4], c[2], c[5]];
    let mut img = npy::encode(&HostTensor::from_f32(vec![2, 3], &columns).unwrap());
    let at = img.windows(5).position(|w| w == b"False").unwrap();
    img[at..at + 5].copy_from_slice(b"True ");
    std::fs::write(d.join("f.npy"), img).unwrap();
    let out = d.join("out.npy");
    let o = nrt_pool(&[
        "run",
        s(&lib),
        "scale_add",
        "--arg",
        s(&d.join("f.npy")),
        "--arg",
        "2",
        "--arg",
        "1",
        "--out",
        s(&out),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let got = npy::read(&out, None).unwrap();
    assert_eq!(got.shape, vec![2, 3]);
    let want: Vec<f32> = c.iter().map(|v| v * 2.0 + 1.0).collect();
    assert_eq!(got.to_f32().unwrap(), want);
}

#[test]
fn builds_refuse_kernels_the_sources_do_not_define_as_declared() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let schema = d.join("k.schema");
    std::fs::write(
        &schema,
        "k(tensor<f32> x, f32 a) -> tensor<f32> like x\nm(tensor<f32> x) -> tensor<f32> like x\n",
    )
    .unwrap();
    let src = |name: &str, body: &str| {
        let p = d.join(name);
        std::fs::write(&p, format!("#include \"neuron_customop.hpp\"\n{body}\n")).unwrap();
        p
    };
    let m = "void m(const neuron::Tensor &, neuron::Tensor &) {}";
    let cases = [
        (
            src("wrong.cpp", &format!("void k(const neuron::Tensor &, int, neuron::Tensor &) {{}}\n{m}")),
            "kernel 'k': the schema declares k(neuron::Tensor const&, float, neuron::Tensor&), but the sources define k(neuron::Tensor const&, int, neuron::Tensor&)",
        ),
        (
            src("missing.cpp", m),
            "kernel 'k': the schema declares k(neuron::Tensor const&, float, neuron::Tensor&), but no source defines it",
        ),
        (
            src("none.cpp", "static int unused;"),
            "kernel 'k': the schema declares",
        ),
        (
            src("namespaced.cpp", &format!("namespace ops {{ void k(const neuron::Tensor &, float, neuron::Tensor &) {{}} }}\n{m}")),
            "no source defines it",
        ),
    ];
    let lib = d.join("libk.so");
    for (source, msg) in cases {
        let o = nrt_pool_build(s(&schema), s(&lib), &[s(&source)]);
        assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
        assert!(text(&o).1.contains(msg), "{msg}\n{:?}", text(&o));
        assert!(!lib.exists());
    }
    let o = nrt_pool_build(s(&schema), s(&lib), &[s(&d.join("nope.cpp"))]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).1.contains(&format!(
            "source file {} does not exist",
            d.join("nope.cpp").display()
        )),
        "{:?}",
        text(&o)
    );
    // The right definitions build; a parameter may share its kernel's name.
    std::fs::write(
        &schema,
        "k(tensor<f32> k, f32 xor_) -> tensor<f32> like k\nm(tensor<f32> out) -> tensor<f32> like out\n",
    )
    .unwrap();
    let good = src(
        "good.cpp",
        &format!("void k(const neuron::Tensor &, float, neuron::Tensor &) {{}}\n{m}"),
    );
    let o = nrt_pool_build(s(&schema), s(&lib), &[s(&good)]);
    assert!(o.status.success() && lib.exists(), "{:?}", text(&o));
    // Both op models link with every symbol resolved (one build core): a kernel
    // that calls a function no source defines fails the build, not the first launch.
    let calls = src(
        "calls.cpp",
        &format!(
            "float helper_nobody_defines(float);\n\
             void k(const neuron::Tensor &, float a, neuron::Tensor &) {{ helper_nobody_defines(a); }}\n{m}"
        ),
    );
    std::fs::remove_file(&lib).unwrap();
    let o = nrt_pool_build(s(&schema), s(&lib), &[s(&calls)]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    assert!(
        text(&o).1.contains("helper_nobody_defines"),
        "{:?}",
        text(&o)
    );
    assert!(!lib.exists(), "nothing is left behind");
}

#[test]
fn a_library_whose_constructor_faults_is_reported_not_fatal_to_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let lib = common::ctors(dir.path(), "ctorfault", "#define CTOR_FAULT 1");
    for args in [
        vec!["list", s(&lib)],
        vec![
            "run",
            s(&lib),
            "from_table",
            "--out",
            s(&dir.path().join("o.npy")),
        ],
    ] {
        let o = nrt_pool(&args);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {:?}", text(&o));
        assert!(
            text(&o).1.contains("libctorfault.so: device fault while loading the op library (its static constructors)"),
            "{:?}",
            text(&o)
        );
    }
    // A constructor that allocates (ordinary global tables) is fine.
    let lib = common::ctors(dir.path(), "ctors", "");
    let o = nrt_pool(&["list", s(&lib)]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(
        text(&o).0,
        "from_table(tensor<f32> x) -> tensor<f32> like x\n"
    );
}

#[test]
fn kernel_output_reaches_the_terminal_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let faults = common::faults(dir.path());
    let out = dir.path().join("o.npy");
    let o = nrt_pool(&[
        "run",
        s(&faults),
        "print_bytes",
        "--arg",
        "0",
        "--out",
        s(&out),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(o.stdout, b"caf\xe9 \xff\n");
}

#[test]
fn every_command_answers_help_and_version_and_completions_are_built_in() {
    for sub in ["", "list", "run", "build", "bringup", "demo", "completions"] {
        let args: Vec<&str> = [sub, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let o = nrt_pool(&args);
        assert!(o.status.success(), "{args:?}");
        assert!(
            text(&o).0.contains("Usage: nrt-pool"),
            "{args:?}: {:?}",
            text(&o)
        );
        let args: Vec<&str> = [sub, "--version"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let o = nrt_pool(&args);
        assert!(o.status.success(), "{args:?}");
        assert!(
            text(&o).0.starts_with("nrt-pool"),
            "{args:?}: {:?}",
            text(&o)
        );
        assert!(text(&o).0.contains(env!("CARGO_PKG_VERSION")));
    }
    for (shell, marker) in [
        ("bash", "complete -F _nrt__pool"),
        ("zsh", "#compdef nrt-pool"),
        ("fish", "complete -c nrt-pool"),
    ] {
        let o = nrt_pool(&["completions", shell]);
        assert!(o.status.success() && text(&o).0.contains(marker), "{shell}");
        assert!(
            text(&o).0.contains("build-directory"),
            "{shell}: options are completed"
        );
    }
}

#[test]
fn list_and_run_print_json_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = common::examples(d);
    let o = nrt_pool(&["list", s(&lib), "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["kernels"][0]["name"], "scale_add");
    assert_eq!(
        doc["kernels"][0]["signature"],
        "scale_add(tensor<f32> x, f32 alpha, f32 beta) -> tensor<f32> like x"
    );
    npy::write(
        &d.join("x.npy"),
        &HostTensor::from_f32(vec![2, 3], &[1.0; 6]).unwrap(),
    )
    .unwrap();
    let out = d.join("y.npy");
    let o = nrt_pool(&[
        "run",
        s(&lib),
        "hello",
        "--arg",
        s(&d.join("x.npy")),
        "--out",
        s(&out),
        "--json",
    ]);
    // hello takes an i32 tensor: a clear error, no JSON.
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let o = nrt_pool(&[
        "run",
        s(&lib),
        "scale_add",
        "--arg",
        s(&d.join("x.npy")),
        "--arg",
        "2",
        "--arg",
        "1",
        "--out",
        s(&out),
        "--json",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (doc["op"].as_str(), doc["cores"].as_u64()),
        (Some("scale_add"), Some(1))
    );
    assert_eq!(doc["output"]["dtype"], "f32");
    assert_eq!(doc["output"]["shape"], serde_json::json!([2, 3]));
    assert_eq!(
        npy::read(&out, None).unwrap().to_f32().unwrap(),
        vec![3.0; 6]
    );
}

/// Long work shows progress on a terminal (a pty from `script`) and nothing when stderr is
/// a pipe; `--repeat` launches N times and reports the median.
#[test]
fn repeated_launches_show_progress_only_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let schema = d.join("slow.schema");
    std::fs::write(&schema, "slow(tensor<i32> x) -> tensor<i32> like x\n").unwrap();
    let src = d.join("slow.cpp");
    std::fs::write(
        &src,
        "#include <unistd.h>\n#include \"neuron_customop.hpp\"\n\
         void slow(const neuron::Tensor &x, neuron::Tensor &out) {\n\
           usleep(450000);\n\
           auto a = x.accessor<int32_t, 1>(); auto b = out.accessor<int32_t, 1>();\n\
           for (int64_t i = 0; i < x.numel(); i++) b[i] = a[i] + 1;\n}\n",
    )
    .unwrap();
    let lib = d.join("libslow.so");
    let o = nrt_pool_build_host_model(s(&schema), s(&lib), &[s(&src)]);
    assert!(o.status.success(), "{:?}", text(&o));
    let x = d.join("x.npy");
    npy::write(
        &x,
        &HostTensor::new(DType::I32, vec![2], vec![1, 0, 0, 0, 2, 0, 0, 0]).unwrap(),
    )
    .unwrap();
    let out = d.join("y.npy");
    let args = [
        "run",
        s(&lib),
        "slow",
        "--arg",
        s(&x),
        "--out",
        s(&out),
        "--repeat",
        "4",
    ];

    // A pipe: the report, no drawing.
    let o = nrt_pool(&args);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("in 4 launches, median "), "{err}");
    assert!(
        !err.contains('\x1b') && !err.contains("launches 1/4"),
        "{err:?}"
    );
    let y = npy::read(&out, None).unwrap();
    assert_eq!(y.data, vec![2, 0, 0, 0, 3, 0, 0, 0]);

    // A terminal: after a second, the bar (then cleared before the report).
    let line = std::iter::once(env!("CARGO_BIN_EXE_nrt-pool"))
        .chain(args)
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let o = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{shown}");
    assert!(
        shown.contains("launches 2/4") || shown.contains("launches 3/4"),
        "{shown:?}"
    );
    assert!(shown.contains("in 4 launches, median "), "{shown:?}");
}

/// `run --timings` accounts for the time from start to output file, phase by phase.
#[test]
fn run_timings_break_the_time_down() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = common::examples(d);
    let x = d.join("x.npy");
    npy::write(
        &x,
        &HostTensor::from_f32(vec![4], &[1.0, 2.0, 3.0, 4.0]).unwrap(),
    )
    .unwrap();
    let out = d.join("y.npy");
    let base = [
        "run",
        s(&lib),
        "scale_add",
        "--arg",
        s(&x),
        "--arg",
        "2",
        "--arg",
        "1",
    ];
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--out", s(&out), "--timings"])
        .collect();
    let o = nrt_pool(&args);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for phase in [
        "library load",
        "input read (.npy)",
        "output shape",
        "launch: inputs into device memory",
        "launch: run on the cores",
        "launch: output out of device memory",
        "output write (.npy)",
        "total",
    ] {
        assert!(err.lines().any(|l| l.starts_with(phase)), "{phase}: {err}");
    }
    // A little-endian C-order input goes straight into device memory and the output is
    // written from there: nothing is copied in or out by the launch.
    assert!(
        err.lines()
            .any(|l| l.starts_with("output write (.npy) from device memory")),
        "{err}"
    );
    let copied = |phase: &str| {
        let line = err.lines().find(|l| l.starts_with(phase)).unwrap();
        line[phase.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        copied("launch: inputs into device memory"),
        "0.000",
        "{err}"
    );
    assert_eq!(
        copied("launch: output out of device memory"),
        "0.000",
        "{err}"
    );
    let mut args = args;
    args.extend(["--json", "--repeat", "2"]);
    let o = nrt_pool(&args);
    assert!(o.status.success(), "{:?}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &doc["timings_ms"];
    let phases = t["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 8, "{t}");
    let sum: f64 = phases.iter().map(|p| p["ms"].as_f64().unwrap()).sum();
    let total = t["total"].as_f64().unwrap();
    assert!(
        phases.iter().all(|p| p["ms"].as_f64().unwrap() >= 0.0),
        "{t}"
    );
    assert!(
        (sum - total).abs() < 0.01 && total > 0.0,
        "{sum} vs {total}: {t}"
    );
    assert_eq!(doc["launches"], 2);
    // Without --timings, no timings.
    let o = nrt_pool(&[&base[..], &["--out", s(&out), "--json"]].concat());
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc["timings_ms"].is_null(), "{doc}");
}

/// The device path from the command line: `build --device-image` writes libNAME.pool beside
/// the library, `run` takes either build (`--isa` or the file kind) and both give the same
/// bytes; a broken or missing Pool image is an error naming it, and nothing is written.
#[test]
fn pool_images_build_list_and_run_on_xtensa_cores() {
    let dir = tempfile::tempdir().unwrap();
    let ex = common::root().join("examples/ops");
    let so = dir.path().join("libops.so");
    let b = nrt_pool_build_command(s(&ex.join("ops.schema")), s(&so))
        .args(device_image_flags())
        .args(["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"].map(|f| ex.join(f)))
        .output()
        .unwrap();
    let (out, err) = text(&b);
    assert!(b.status.success(), "{out}{err}");
    let pool = dir.path().join("libops.pool");
    assert!(out.contains("libops.pool (8 Xtensa cores)"), "{out}");
    let list = nrt_pool(&["list", s(&pool)]);
    assert!(
        text(&list).0.contains("scale_add_mc(tensor<f32> x"),
        "{:?}",
        text(&list)
    );

    let x = dir.path().join("x.npy");
    let t = HostTensor::from_f32(
        vec![300],
        &(0..300).map(|i| i as f32 * 0.5 - 7.0).collect::<Vec<_>>(),
    )
    .unwrap();
    npy::write(&x, &t).unwrap();
    let board = common::xtensa_board();
    let run = |lib: &Path, isa: &[&str], out: &Path| {
        let mut args = vec![
            "run",
            s(lib),
            "scale_add_mc",
            "--arg",
            s(&x),
            "--arg",
            "1.5",
            "--arg",
            "-2",
            "--cores",
            "8",
            "--out",
            s(out),
        ];
        args.extend_from_slice(isa);
        Command::new(env!("CARGO_BIN_EXE_nrt-pool"))
            .args(&args)
            .env("NRT_POOL_XTENSA_BOARD", &board)
            .output()
            .unwrap()
    };
    let (host_out, xt_out, xt2_out) = (
        dir.path().join("h.npy"),
        dir.path().join("x1.npy"),
        dir.path().join("x2.npy"),
    );
    for (o, lib, isa) in [
        (&host_out, &so, &[][..]),
        (&xt_out, &pool, &[][..]),
        (&xt2_out, &so, &["--isa", "xtensa"][..]),
    ] {
        let r = run(lib, isa, o);
        assert!(r.status.success(), "{:?}", text(&r));
    }
    let h = std::fs::read(&host_out).unwrap();
    assert_eq!(std::fs::read(&xt_out).unwrap(), h);
    assert_eq!(std::fs::read(&xt2_out).unwrap(), h);

    // A truncated image, and --isa xtensa with no image beside the library.
    let bytes = std::fs::read(&pool).unwrap();
    let cut = dir.path().join("libcut.pool");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let o = dir.path().join("never.npy");
    let r = run(&cut, &[], &o);
    assert_eq!(r.status.code(), Some(1), "{:?}", text(&r));
    assert!(
        text(&r).1.contains("the Pool image is truncated"),
        "{:?}",
        text(&r)
    );
    std::fs::remove_file(&pool).unwrap();
    let r = run(&so, &["--isa", "xtensa"], &o);
    assert_eq!(r.status.code(), Some(1), "{:?}", text(&r));
    assert!(text(&r).1.contains("libops.pool beside"), "{:?}", text(&r));
    assert!(!o.exists(), "no output after an error");
}

/// An op image larger than its core's 2 MiB slot fails the device build by name (the next
/// core's image starts there), and neither the library nor the Pool image is written.
#[test]
fn a_device_image_beyond_its_slot_fails_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("big.schema"),
        "big(tensor<f32> x) -> tensor<f32> like x\n",
    )
    .unwrap();
    std::fs::write(
        d.join("big.cpp"),
        "#include \"neuron_customop.hpp\"\n\
         float big_table[600000];\n\
         void big(const neuron::Tensor &x, neuron::Tensor &out) {\n\
             auto in = x.read_stream_accessor<float>();\n\
             auto o = out.write_stream_accessor<float>();\n\
             for (int64_t i = 0; i < x.numel(); i++) { big_table[i * 7] = in.read(); o.write(big_table[i * 3]); }\n\
         }\n",
    )
    .unwrap();
    let so = d.join("libbig.so");
    let b = nrt_pool_build_command(s(&d.join("big.schema")), s(&so))
        .args(device_image_flags())
        .arg(d.join("big.cpp"))
        .output()
        .unwrap();
    let (out, err) = text(&b);
    assert!(!b.status.success(), "{out}{err}");
    assert!(err.contains("exceeds its core's 2 MiB slot"), "{err}");
    assert!(!so.exists() && !d.join("libbig.pool").exists());
}

/// A host build's `std::cout`/`std::cerr` go through the stdio channel in order with
/// printf, and a raw write to fd 1 lands in the launch's stderr: nothing a kernel prints
/// reaches `nrt-pool run --json`'s stdout, which stays one JSON document (D70).
#[test]
fn iostreams_and_raw_writes_stay_in_the_launch_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("talk.schema"),
        "talk(tensor<f32> x) -> tensor<f32> like x\n",
    )
    .unwrap();
    std::fs::write(
        d.join("talk.cpp"),
        "#include <iostream>\n#include <unistd.h>\n#include \"neuron_customop.hpp\"\n\
         struct Early { Early() { std::cout << \"constructed\" << std::endl; } } early;\n\
         void talk(const neuron::Tensor &x, neuron::Tensor &out) {\n\
             auto in = x.read_stream_accessor<float>();\n\
             auto o = out.write_stream_accessor<float>();\n\
             for (int64_t i = 0; i < x.numel(); i++) o.write(in.read());\n\
             printf(\"one\\n\");\n\
             std::cout << \"two \" << x.numel() << std::endl;\n\
             printf(\"three\\n\");\n\
             std::cerr << \"to cerr\\n\";\n\
             std::clog << \"to clog\" << std::flush;\n\
             if (write(1, \"raw fd 1\\n\", 9) != 9) printf(\"short write\\n\");\n\
         }\n",
    )
    .unwrap();
    let so = d.join("libtalk.so");
    let b = nrt_pool_build_host_model(s(&d.join("talk.schema")), s(&so), &[s(&d.join("talk.cpp"))]);
    assert!(b.status.success(), "{:?}", text(&b));
    let x = d.join("x.npy");
    npy::write(
        &x,
        &HostTensor::from_f32(vec![3], &[1.0, 2.0, 3.0]).unwrap(),
    )
    .unwrap();
    let r = nrt_pool(&[
        "run",
        s(&so),
        "talk",
        "--arg",
        s(&x),
        "--out",
        s(&d.join("y.npy")),
        "--json",
    ]);
    let (out, err) = text(&r);
    assert!(r.status.success(), "{out}{err}");
    assert!(
        out.trim_start().starts_with('{') && out.lines().count() == 1,
        "{out}"
    );
    assert!(
        err.contains("constructed\none\ntwo 3\nthree\n"),
        "the kernel's stdout, in order: {err}"
    );
    for line in ["to cerr", "to clog", "raw fd 1"] {
        assert!(err.contains(line), "{line}: {err}");
    }
}

/// What a core lacks (files, clocks: D72) is declared for the C++ library's <c*> headers,
/// but a kernel that calls it fails its device build naming the function, before any link;
/// a stream header fails saying why; and without libc++'s headers the build says what to
/// install.
#[test]
fn a_device_build_names_what_a_core_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("files.schema"),
        "files(tensor<f32> x) -> tensor<f32> like x\n",
    )
    .unwrap();
    std::fs::write(
        d.join("files.cpp"),
        "#include <cstdio>\n#include <ctime>\n#include <vector>\n\
         #include \"neuron_customop.hpp\"\n\
         void files(const neuron::Tensor &x, neuron::Tensor &out) {\n\
             std::vector<float> v(size_t(x.numel()));\n\
             std::FILE *f = std::fopen(\"table.bin\", \"rb\");\n\
             if (f) std::fclose(f);\n\
             printf(\"%ld\\n\", long(std::clock()) + long(v.size()));\n\
         }\n",
    )
    .unwrap();
    let so = d.join("libfiles.so");
    let build = |libcxx: Option<&str>| {
        let mut c = nrt_pool_build_command(s(&d.join("files.schema")), s(&so));
        c.args(device_image_flags()).arg(d.join("files.cpp"));
        if let Some(dir) = libcxx {
            c.env("NRT_POOL_LIBCXX", dir);
        }
        c.output().unwrap()
    };
    let b = build(None);
    let (out, err) = text(&b);
    assert!(!b.status.success(), "{out}{err}");
    for f in ["fopen", "fclose", "clock"] {
        assert!(
            err.contains(&format!(
                "{f} is not available in device builds (docs/decisions.md D72)"
            )),
            "{f}: {err}"
        );
    }
    assert!(!so.exists() && !d.join("libfiles.pool").exists());

    // Streams need locales a core does not have: the header says so, and what to use.
    std::fs::write(
        d.join("files.cpp"),
        "#include <sstream>\n#include \"neuron_customop.hpp\"\n\
         void files(const neuron::Tensor &x, neuron::Tensor &out) {\n\
             std::ostringstream s; s << x.numel();\n\
         }\n",
    )
    .unwrap();
    let b = build(None);
    let (out, err) = text(&b);
    assert!(!b.status.success(), "{out}{err}");
    assert!(
        err.contains("<sstream> is not available in device builds")
            && err.contains("print with printf or snprintf"),
        "{err}"
    );

    // A compiled part of libc++ the device runtime lacks fails the link, explained.
    std::fs::write(
        d.join("files.cpp"),
        "#include <chrono>\n#include <cstdio>\n#include \"neuron_customop.hpp\"\n\
         void files(const neuron::Tensor &x, neuron::Tensor &out) {\n\
             auto t = std::chrono::steady_clock::now();\n\
             printf(\"%lld\\n\", (long long)t.time_since_epoch().count() + x.numel());\n\
         }\n",
    )
    .unwrap();
    let b = build(None);
    let (out, err) = text(&b);
    assert!(!b.status.success(), "{out}{err}");
    assert!(
        err.contains("undefined reference to `std::__1::chrono::steady_clock::now()'")
            && err.contains("compiled parts of libc++ that the device runtime does not provide"),
        "{err}"
    );

    let b = build(Some(s(&d.join("no-libcxx-here"))));
    let (out, err) = text(&b);
    assert!(!b.status.success(), "{out}{err}");
    assert!(
        err.contains("libc++ headers") && err.contains("libc++-14-dev"),
        "{err}"
    );
}

/// Device memory on huge pages (D66) or in a memfd (`NRT_POOL_HUGE_PAGES=0`): the same
/// output bytes. 3 MiB in and out, so the input's `sendfile`, the cores' writes across 2 MiB
/// pages and the output's populated read (1 MiB and more) all run.
#[test]
fn both_device_memory_backings_give_the_same_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = common::examples(d);
    let n = 3 << 18;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1009) as f32 * 0.25 - 7.0).collect();
    let x = d.join("x.npy");
    npy::write(&x, &HostTensor::from_f32(vec![n as u64], &xs).unwrap()).unwrap();
    let run = |out: &Path, huge: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_nrt-pool"))
            .env("NRT_POOL_HUGE_PAGES", huge)
            .args(["run", s(&lib), "scale_add_mc", "--arg", s(&x)])
            .args(["--arg", "2", "--arg", "1", "--cores", "8", "--out", s(out)])
            .output()
            .unwrap();
        assert!(o.status.success(), "{:?}", text(&o));
        std::fs::read(out).unwrap()
    };
    let huge = run(&d.join("huge.npy"), "1");
    let memfd = run(&d.join("memfd.npy"), "0");
    assert_eq!(huge, memfd);
    let y = npy::read(&d.join("huge.npy"), None).unwrap();
    let want: Vec<u8> = xs
        .iter()
        .flat_map(|v| (v * 2.0 + 1.0).to_le_bytes())
        .collect();
    assert_eq!(y.data, want);
}

/// `make demo`'s chain runs its device part on this machine: the Xtensa images on the QEMU
/// the backend starts (beside the board), not reported unsupported for want of a QEMU on
/// PATH (the project builds its own and installs none: D73).
#[test]
fn the_demo_runs_the_examples_on_xtensa_cores_too() {
    let root = common::root();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("flame.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_nrt-pool"))
        .arg("demo")
        .arg("--provider")
        .arg(root.join("target/release/libnrtucode_extisa.so"))
        .arg("--examples")
        .arg(root.join("examples/ops"))
        .arg("--flame-graph")
        .arg(&svg)
        .env_remove("NRT_POOL_QEMU")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("UNSUPPORTED"), "{stdout}");
    let agree = stdout
        .lines()
        .filter(|l| l.starts_with("xtensa ") && l.contains("agrees with the host backend"))
        .count();
    assert_eq!(agree, 7, "{stdout}");
    // The flame graph it names outlives the demo's work folder.
    assert!(
        stdout.contains(&format!("open it in a browser): {}", svg.display())),
        "{stdout}"
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.starts_with("<?xml") && drawn.contains("all cores"),
        "{}",
        &drawn[..200]
    );
}
