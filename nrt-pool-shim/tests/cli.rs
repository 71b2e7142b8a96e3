//! `nrt-pool` as an op author uses it: build, list, run with .npy files, and the errors a
//! mistake gets (exit 2 usage, 1 error, 3 device fault), never a half-written output.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use nrt_pool_shim::emu::npy;
use nrt_pool_shim::emu::tensor::{DType, HostTensor};

fn nrt_pool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nrt-pool"))
        .args(args)
        .output()
        .unwrap()
}

/// `nrt-pool build` with this checkout's archive and headers.
fn nrt_pool_build(schema: &str, out: &str, rest: &[&str]) -> Output {
    let (archive, include) = (common::archive(), common::root().join("include"));
    let mut args = vec![
        "build",
        "--schema",
        schema,
        "--out",
        out,
        "--archive",
        s(&archive),
        "--include",
        s(&include),
    ];
    args.extend_from_slice(rest);
    nrt_pool(&args)
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

    // Device objects of the same sources, when the Xtensa g++ is installed (make tools).
    let dev = d.join("device");
    let o = nrt_pool_build(
        s(&ex.join("ops.schema")),
        s(&d.join("libops2.so")),
        // hello.cpp prints: it compiles against include/device/stdio.h (D34).
        &[
            "--device-objects",
            s(&dev),
            s(&ex.join("scale_add.cpp")),
            s(&ex.join("hello.cpp")),
        ],
    );
    assert!(o.status.success(), "{:?}", text(&o));
    if Command::new(nrt_pool_shim::opbuild::XTENSA_CXX)
        .arg("--version")
        .output()
        .is_ok()
    {
        for obj in ["scale_add.o", "hello.o", "op_wrapper.o"] {
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
            nrt_pool_shim::opbuild::XTENSA_CXX
        );
        assert!(text(&o).1.contains("UNSUPPORTED: no device objects"));
    }

    // A source that does not build for the device fails the build, leaving no library.
    if Command::new(nrt_pool_shim::opbuild::XTENSA_CXX)
        .arg("--version")
        .output()
        .is_ok()
    {
        let bad = d.join("host_only.cpp");
        std::fs::write(
            &bad,
            "#ifdef __XTENSA__\n#error this kernel is host-only\n#endif\n\
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
        let o = nrt_pool_build(s(&d.join("k.schema")), s(&klib), &[s(&bad)]);
        assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
        assert!(
            text(&o).1.contains("this kernel is host-only"),
            "{:?}",
            text(&o)
        );
        assert!(!klib.exists());
        let o = nrt_pool_build(
            s(&d.join("k.schema")),
            s(&klib),
            &["--no-device-objects", s(&bad)],
        );
        assert!(o.status.success() && klib.exists(), "{:?}", text(&o));
    }

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
            "x is tensor<f32>, got i32",
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
            "--cores 9: 1 to 8",
        ),
        (
            vec!["run", s(&lib), "scale_add", "--arg", &x],
            2,
            "run needs --out",
        ),
        (
            vec!["run", "/no/such/lib.so", "k", "--out", s(&out)],
            1,
            "/no/such/lib.so: no such file",
        ),
        (vec!["list"], 2, "list takes one library"),
        (vec!["frobnicate"], 2, "usage:"),
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
