//! The Pool emulator end to end: op libraries built with the op build helper on the host
//! libneuroncustomop.a, loaded, marshalled and run on 1 or 8 isolated cores; every STATUS
//! path of the start code, every launch-argument error, each fault kind and the stdio ring.

use nrt_pool_testkit as common;

use std::path::Path;
use std::time::Duration;

use nrt_pool_engine::adapters::{KernelLaunch, LaunchVerbs};
use nrt_pool_engine::tensor::{DType, HostTensor, Location};
use nrt_pool_engine::{EmuError, LaunchArg, OutputSpec, PoolEngine, PoolImage, DEFAULT_HBM_BYTES};
use nrt_pool_host::control::FaultKind;

fn engine(lib: &Path) -> PoolEngine {
    let mut e = nrt_pool_host::host_engine(256 << 20, PoolImage::default()).unwrap();
    e.load(lib).unwrap();
    e
}

fn f32_out(shape: &[u64]) -> OutputSpec {
    OutputSpec {
        dtype: DType::F32,
        shape: shape.to_vec(),
        location: Location::Hbm,
    }
}

fn launch(
    e: &mut PoolEngine,
    kernel: &str,
    args: Vec<LaunchArg>,
    cores: usize,
) -> Result<nrt_pool_engine::adapters::Completion, EmuError> {
    let output = e.loaded.output_for(kernel, &args)?;
    e.launch(&KernelLaunch {
        kernel: kernel.into(),
        args,
        output,
        cores,
    })
}

#[track_caller]
fn fault(
    r: Result<nrt_pool_engine::adapters::Completion, EmuError>,
) -> nrt_pool_engine::DeviceFault {
    match r {
        Err(EmuError::Fault(f)) => *f,
        Err(e) => panic!("expected a device fault, got {e}"),
        Ok(_) => panic!("expected a device fault, the launch completed"),
    }
}

#[test]
fn example_ops_match_an_independent_reference_on_1_and_8_cores() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::examples(dir.path()));
    assert_eq!(e.loaded.kernels(), ["scale_add", "scale_add_mc", "hello"]);
    // 300000 floats: more than one 16 MiB translation window is not needed, but many TCM tiles.
    let n = 300_000usize;
    let x: Vec<f32> = (0..n).map(|i| (i as f32).sin() * 100.0).collect();
    let want: Vec<f32> = x.iter().map(|v| v * 0.75 + 2.0).collect();
    let xt = HostTensor::from_f32(vec![n as u64], &x).unwrap();
    for (kernel, cores, loc) in [
        ("scale_add", 1, Location::Hbm),
        ("scale_add_mc", 8, Location::Hbm),
        ("scale_add_mc", 1, Location::Hbm),
        ("scale_add_mc", 8, Location::Sbuf),
        ("scale_add", 1, Location::Sbuf),
    ] {
        let done = launch(
            &mut e,
            kernel,
            vec![
                LaunchArg::Tensor(xt.clone(), loc),
                LaunchArg::f32(0.75),
                LaunchArg::f32(2.0),
            ],
            cores,
        )
        .unwrap_or_else(|err| panic!("{kernel} on {cores}: {err}"));
        assert_eq!(done.results, vec![0; cores]);
        assert_eq!(
            done.output.to_f32().unwrap(),
            want,
            "{kernel} on {cores} core(s), x in {loc:?}"
        );
    }
}

#[test]
fn get_cpu_id_is_true_per_core_and_only_core_0_prints() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::examples(dir.path()));
    let n = 100i32;
    let x = HostTensor::new(
        DType::I32,
        vec![n as u64],
        (0..n).flat_map(|v| v.to_le_bytes()).collect(),
    )
    .unwrap();
    for cores in [1usize, 8] {
        let done = launch(&mut e, "hello", vec![LaunchArg::hbm(x.clone())], cores).unwrap();
        let out: Vec<i32> = done
            .output
            .data
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        for (i, v) in out.iter().enumerate() {
            let core = (0..cores as i64)
                .find(|c| (i as i64) < n as i64 * (c + 1) / cores as i64)
                .unwrap();
            assert_eq!(*v, i as i32 + core as i32, "element {i} on {cores} cores");
        }
        let text = String::from_utf8(done.stdout).unwrap();
        let per = n as usize / cores;
        let sum: i64 = (0..per as i64).sum();
        assert_eq!(
            text,
            format!("hello from core 0 of {cores}: {per} elements, sum {sum}\n")
        );
    }
}

#[test]
fn every_dtype_marshals_in_hbm_and_sbuf() {
    let dir = tempfile::tempdir().unwrap();
    let cxx = |t: DType| match t {
        DType::U64 => "uint64_t",
        DType::I8 => "int8_t",
        DType::U8 => "uint8_t",
        DType::I16 => "int16_t",
        DType::U16 => "uint16_t",
        DType::I32 => "int32_t",
        DType::U32 => "uint32_t",
        DType::I64 => "int64_t",
        DType::F32 | DType::F16 | DType::BF16 => "float",
    };
    let mut schema = String::new();
    let mut src = String::from(
        "#include <stdio.h>\n#include \"neuron_customop.hpp\"\n\
         static void copy(const neuron::Tensor &x, neuron::Tensor &out, size_t esize) {\n\
           size_t n = size_t(x.numel()) * esize;\n\
           char *buf = static_cast<char *>(at::neuron::tcm_malloc(4096));\n\
           for (size_t at = 0; at < n; at += 4096) {\n\
             unsigned k = unsigned(n - at < 4096 ? n - at : 4096);\n\
             neuron_memcpy(static_cast<void *>(buf), x.soc_addr() + at, k);\n\
             neuron_memcpy(out.soc_addr() + at, static_cast<void *>(buf), k);\n\
           }\n\
           at::neuron::tcm_free(buf);\n\
           printf(\"dtype %u location %u numel %lld\\n\", x.dtype(), x.descriptor()->location, (long long)x.numel());\n\
         }\n",
    );
    for t in DType::ALL {
        schema.push_str(&format!(
            "copy_{t}(tensor<{t}> x, {t} s) -> tensor<{t}> like x\n"
        ));
        let store = if t.is_float() && t != DType::F32 {
            String::new()
        } else {
            format!("neuron::element<{}>(out.soc_addr(), 0) = s;", cxx(t))
        };
        src.push_str(&format!(
            "void copy_{t}(const neuron::Tensor &x, {} s, neuron::Tensor &out) {{ copy(x, out, {}); {store} }}\n",
            cxx(t),
            t.size()
        ));
    }
    std::fs::write(dir.path().join("dt.schema"), &schema).unwrap();
    std::fs::write(dir.path().join("dt.cpp"), &src).unwrap();
    let lib = common::build_ops(
        dir.path(),
        "dt",
        &dir.path().join("dt.schema"),
        &[dir.path().join("dt.cpp")],
    );
    let mut e = engine(&lib);
    for (i, t) in DType::ALL.into_iter().enumerate() {
        let loc = if i % 2 == 0 {
            Location::Hbm
        } else {
            Location::Sbuf
        };
        let shape = vec![3, 5, 7];
        let data: Vec<u8> = (0..105 * t.size()).map(|b| (b * 7 + i) as u8).collect();
        let x = HostTensor::new(t, shape.clone(), data.clone()).unwrap();
        let s = t.parse_scalar("9").unwrap();
        let done = launch(
            &mut e,
            &format!("copy_{t}"),
            vec![LaunchArg::Tensor(x, loc), LaunchArg::Scalar(t, s.clone())],
            1,
        )
        .unwrap();
        let mut want = data;
        if !(t.is_float() && t != DType::F32) {
            want[..t.size()].copy_from_slice(&s);
        }
        assert_eq!(done.output.data, want, "{t} in {loc:?}");
        let code = if loc == Location::Hbm { 2 } else { 1 };
        assert_eq!(
            String::from_utf8(done.stdout).unwrap(),
            format!("dtype {} location {code} numel 105\n", t.isa())
        );
    }
}

#[test]
fn start_code_statuses_and_broken_libraries_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::ops_dir().join("status_lib.c");
    let status_lib = |name: &str, defines: &[&str]| {
        let lib = dir.path().join(format!("lib{name}.so"));
        let mut args: Vec<&std::ffi::OsStr> = vec!["-shared".as_ref(), "-fPIC".as_ref()];
        args.extend(defines.iter().map(|d| std::ffi::OsStr::new(*d)));
        args.extend([src.as_os_str(), "-o".as_ref(), lib.as_os_str()]);
        common::cc("gcc", &args);
        lib
    };
    let mut e = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    let names = [
        "",
        "SUNDA_UCODE_LIB_FAILURE",
        "SUNDA_UCODE_LIB_FAILURE_ABI_MISMATCH",
        "SUNDA_UCODE_LIB_FAILURE_OPCODE_TO_KERNEL_MAP",
        "SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS",
    ];
    for status in 1..=4u32 {
        let lib = status_lib(&format!("status{status}"), &[&format!("-DSTATUS={status}")]);
        let err = e.load(&lib).unwrap_err();
        assert!(
            matches!(err, EmuError::Entry { status: s, .. } if s == status),
            "{err}"
        );
        assert!(err.to_string().contains(names[status as usize]), "{err}");
    }
    assert_eq!(e.load(&status_lib("status0", &[])).unwrap(), ["only"]);
    let err = e
        .load(&status_lib("mismatch", &["-DMISMATCH"]))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("registered 2 kernel name(s) but register_funcs reported 1"),
        "{err}"
    );

    // Our archive's own refusal: a table of 0x8000 kernels.
    let t = common::ops_dir();
    let many = dir.path().join("libmany.so");
    common::cc(
        "g++",
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-I".as_ref(),
            common::root().join("include").as_os_str(),
            t.join("too_many_kernels.cpp").as_os_str(),
            common::lp64_archive().as_os_str(),
            "-Wl,-u,entry_func".as_ref(),
            "-o".as_ref(),
            many.as_os_str(),
        ],
    );
    let err = e.load(&many).unwrap_err();
    assert!(matches!(err, EmuError::Entry { status: 4, .. }), "{err}");

    // Missing, foreign and incomplete libraries.
    let err = e.load(&dir.path().join("nope.so")).unwrap_err().to_string();
    assert!(err.contains("nope.so: no such file"), "{err}");
    std::fs::write(dir.path().join("junk.so"), b"not an ELF").unwrap();
    let err = e.load(&dir.path().join("junk.so")).unwrap_err().to_string();
    assert!(err.contains("junk.so: cannot load"), "{err}");
    let bare = dir.path().join("libbare.so");
    std::fs::write(
        dir.path().join("bare.c"),
        "int answer(void) { return 42; }\n",
    )
    .unwrap();
    common::cc(
        "gcc",
        &[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            dir.path().join("bare.c").as_os_str(),
            "-o".as_ref(),
            bare.as_os_str(),
        ],
    );
    let err = e.load(&bare).unwrap_err().to_string();
    assert!(err.contains("does not export entry_func"), "{err}");
    // A failed load keeps the library that was loaded before; a fresh engine has none.
    assert_eq!(e.loaded.kernels(), ["only"]);
    let mut e = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    assert!(matches!(
        e.launch(&KernelLaunch {
            kernel: "k".into(),
            args: vec![],
            output: f32_out(&[1]),
            cores: 1
        }),
        Err(EmuError::NoLibrary)
    ));
}

#[test]
fn bad_launches_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::examples(dir.path()));
    let x = HostTensor::from_f32(vec![4], &[1.0; 4]).unwrap();
    let good = || {
        vec![
            LaunchArg::hbm(x.clone()),
            LaunchArg::f32(1.0),
            LaunchArg::f32(1.0),
        ]
    };
    let run =
        |e: &mut PoolEngine, kernel: &str, args: Vec<LaunchArg>, out: OutputSpec, cores: usize| {
            e.launch(&KernelLaunch {
                kernel: kernel.into(),
                args,
                output: out,
                cores,
            })
            .unwrap_err()
            .to_string()
        };
    let err = run(&mut e, "nope", good(), f32_out(&[4]), 1);
    assert!(
        err.contains(
            "unknown kernel 'nope'; the library registers: scale_add, scale_add_mc, hello"
        ),
        "{err}"
    );
    let err = run(
        &mut e,
        "scale_add",
        vec![LaunchArg::f32(0.0); 11],
        f32_out(&[4]),
        1,
    );
    assert!(
        err.contains("11 arguments; a kernel takes at most 10"),
        "{err}"
    );
    let err = run(&mut e, "scale_add", good()[..2].to_vec(), f32_out(&[4]), 1);
    assert!(err.contains("takes 3 argument(s)"), "{err}");
    let mut wrong = good();
    wrong[0] = LaunchArg::hbm(HostTensor::zeros(DType::I32, vec![4]).unwrap());
    let err = run(&mut e, "scale_add", wrong, f32_out(&[4]), 1);
    assert!(err.contains("x is tensor<f32>, got i32"), "{err}");
    let mut wrong = good();
    wrong[1] = LaunchArg::i32(1);
    let err = run(&mut e, "scale_add", wrong, f32_out(&[4]), 1);
    assert!(err.contains("alpha is a f32 scalar, got i32"), "{err}");
    let err = run(&mut e, "scale_add", good(), f32_out(&[5]), 1);
    assert!(
        err.contains("the output is f32 [4], the launch asked for f32 [5]"),
        "{err}"
    );
    for cores in [0, 9] {
        let err = run(&mut e, "scale_add", good(), f32_out(&[4]), cores);
        assert!(err.contains(&format!("{cores} cores requested")), "{err}");
    }
    let big = HostTensor::zeros(DType::F32, vec![40 << 20]).unwrap();
    let err = run(
        &mut e,
        "scale_add",
        vec![
            LaunchArg::Tensor(big, Location::Sbuf),
            LaunchArg::f32(1.0),
            LaunchArg::f32(1.0),
        ],
        f32_out(&[40 << 20]),
        1,
    );
    assert!(err.contains("SBUF holds"), "{err}");
    // Still usable.
    assert!(launch(&mut e, "scale_add", good(), 1).is_ok());
}

#[test]
fn each_fault_kind_is_reported_and_the_host_survives() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::faults(dir.path()));
    e.defaults.timeout = Duration::from_secs(2);
    let x = || {
        vec![LaunchArg::hbm(
            HostTensor::from_f32(vec![2], &[1.0, 2.0]).unwrap(),
        )]
    };

    // A guard page: the first byte after HBM.
    let end = e.tensors.memory.hbm.soc + e.tensors.memory.hbm.size;
    let addr = HostTensor::new(DType::U64, vec![1], end.to_le_bytes().to_vec()).unwrap();
    let f = fault(launch(&mut e, "guard_read", vec![LaunchArg::hbm(addr)], 1));
    assert_eq!(
        (f.kind, f.core, f.soc_addr, f.kernel.as_str()),
        (FaultKind::Memory, 0, Some(end), "guard_read")
    );
    assert!(
        f.to_string().contains(&format!(
            "device fault in kernel 'guard_read' on core 0: memory fault (read) at SoC address {end:#x} by the instruction at guard_read("
        )),
        "{f}"
    );

    // A SoC address no window maps: the runtime's translation says which.
    let unmapped = HostTensor::new(DType::U64, vec![1], 0x1000u64.to_le_bytes().to_vec()).unwrap();
    let f = fault(launch(
        &mut e,
        "guard_read",
        vec![LaunchArg::hbm(unmapped)],
        1,
    ));
    assert_eq!(f.kind, FaultKind::Fatal);
    assert!(
        f.message.contains(
            "translation.cpp: no device memory backs the window at SoC address 0x0 (+0x1000000 bytes)"
        ),
        "{f}"
    );

    let f = fault(launch(&mut e, "call_abort", x(), 1));
    assert_eq!(f.kind, FaultKind::Fatal);
    assert!(f.message.contains("abort()"), "{f}");
    // On 8 cores each core's assert fails; the report holds the faulting core's message
    // once, named by its core, not the host program.
    let f = fault(launch(&mut e, "failed_assert", x(), 8));
    assert_eq!((f.kind, f.message.as_str()), (FaultKind::Abort, "SIGABRT"));
    let err = String::from_utf8_lossy(&f.stderr).into_owned();
    assert_eq!(err.matches("Assertion").count(), 1, "{err}");
    assert!(err.starts_with(&format!("pool core {}: ", f.core)), "{err}");
    let f = fault(launch(&mut e, "throw_exception", x(), 1));
    assert_eq!(f.kind, FaultKind::Fatal);
    assert_eq!(
        String::from_utf8_lossy(&f.stderr),
        "uncaught exception: boom\n"
    );
    let f = fault(launch(&mut e, "pull_too_many", x(), 1));
    assert_eq!(f.kind, FaultKind::Fatal);
    assert!(f.message.contains("arg_parser.hpp:66"), "{f}");
    let f = fault(launch(
        &mut e,
        "divide_by_zero",
        vec![LaunchArg::hbm(
            HostTensor::zeros(DType::I32, vec![1]).unwrap(),
        )],
        1,
    ));
    assert_eq!(
        (f.kind, f.message.as_str()),
        (FaultKind::Trap, "SIGFPE: integer division by zero")
    );
    let shown = f.to_string();
    assert!(
        shown.contains("trap: SIGFPE: integer division by zero at instruction divide_by_zero(")
            && shown.contains("in libfaults.so (host 0x")
            && !shown.contains("at host address"),
        "{shown}"
    );
    let f = fault(launch(&mut e, "call_exit", x(), 1));
    assert_eq!(f.kind, FaultKind::Exited);
    assert!(f.message.contains("exited with code 7"), "{f}");
    let t0 = std::time::Instant::now();
    let f = fault(launch(&mut e, "spin", x(), 8));
    assert_eq!(f.kind, FaultKind::Timeout);
    assert!(t0.elapsed() < Duration::from_secs(20));

    // Core 5 of 8 reads host address 16; the others complete.
    let f = fault(launch(&mut e, "fault_on_core", vec![LaunchArg::i32(5)], 8));
    assert_eq!(
        (f.kind, f.core, f.host_addr, f.soc_addr),
        (FaultKind::Memory, 5, Some(16), None)
    );
    assert!(
        f.to_string()
            .contains("at host address 0x10 (outside device memory)"),
        "{f}"
    );

    // A core keeps its library (and its globals) between launches; a faulted core restarts
    // fresh, and loading a library starts every core afresh.
    let count = |e: &mut PoolEngine| {
        let d = launch(e, "counter", vec![LaunchArg::i32(0)], 1).unwrap();
        i32::from_le_bytes(d.output.data[..4].try_into().unwrap())
    };
    assert_eq!((count(&mut e), count(&mut e), count(&mut e)), (1, 2, 3));
    assert_eq!(
        fault(launch(&mut e, "call_abort", x(), 1)).kind,
        FaultKind::Fatal
    );
    assert_eq!(count(&mut e), 1);
    let lib = e.loaded.library().unwrap().path.clone();
    count(&mut e);
    e.load(&lib).unwrap();
    assert_eq!(count(&mut e), 1);

    // The engine still runs kernels.
    let done = launch(&mut e, "fault_on_core", vec![LaunchArg::i32(-1)], 8).unwrap();
    let ids: Vec<i32> = done
        .output
        .data
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ids, (0..8).collect::<Vec<_>>());
}

#[test]
fn the_stdio_ring_carries_core_0_and_counts_what_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::faults(dir.path()));
    let done = launch(&mut e, "chatty", vec![LaunchArg::i32(100)], 8).unwrap();
    let text = String::from_utf8(done.stdout).unwrap();
    assert_eq!(text.lines().count(), 100);
    assert!(text.lines().all(|l| l.ends_with("from core 0")), "{text}");
    assert_eq!(done.stdio_dropped, 0);
    let ring = nrt_pool_host::control::RING_ENTRIES;
    let done = launch(&mut e, "chatty", vec![LaunchArg::i32(ring as i32 + 50)], 1).unwrap();
    let text = String::from_utf8(done.stdout).unwrap();
    assert_eq!(text.lines().count(), ring);
    assert_eq!(
        done.stdio_dropped as usize,
        50 * "line 00000 from core 0\n".len()
    );
}

#[test]
fn default_engine_holds_large_tensors() {
    let e = nrt_pool_host::host_engine(DEFAULT_HBM_BYTES, PoolImage::default()).unwrap();
    assert!(e.tensors.memory.hbm.size >= DEFAULT_HBM_BYTES);
    assert!(e.loaded.kernels().is_empty());
}

#[test]
fn a_returned_tensor_is_copied_into_the_output_and_a_taken_one_is_not() {
    // abi-tests' hand-written op library (no schema): `transpose` returns its scratch tensor
    // through customop_return_tensor; `axpb` writes the destination it took.
    let dir = tempfile::tempdir().unwrap();
    let lib = common::hand_written_ops(dir.path());
    let mut e = engine(&lib);
    assert!(e.loaded.library().unwrap().schema.is_none());
    let err = e
        .loaded
        .output_for("transpose", &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("carries no schema"), "{err}");
    let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let done = e
        .launch(&KernelLaunch {
            kernel: "transpose".into(),
            args: vec![
                LaunchArg::hbm(HostTensor::from_f32(vec![3, 4], &x).unwrap()),
                LaunchArg::hbm(HostTensor::zeros(DType::F32, vec![4, 3]).unwrap()),
            ],
            output: f32_out(&[4, 3]),
            cores: 1,
        })
        .unwrap();
    let want: Vec<f32> = (0..12).map(|k| x[(k % 3) * 4 + k / 3]).collect();
    assert_eq!(done.output.to_f32().unwrap(), want);
    // A returned tensor of the wrong size is a fatal rule, not a silent partial copy.
    let f = fault(e.launch(&KernelLaunch {
        kernel: "transpose".into(),
        args: vec![
            LaunchArg::hbm(HostTensor::from_f32(vec![3, 4], &x).unwrap()),
            LaunchArg::hbm(HostTensor::zeros(DType::F32, vec![4, 3]).unwrap()),
        ],
        output: f32_out(&[5]),
        cores: 1,
    }));
    assert_eq!(f.kind, FaultKind::Fatal);
    assert!(f.message.contains("utypes.hpp:65"), "{f}");
}

#[test]
fn device_tensors_chain_launches_without_host_copies() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::examples(dir.path()));
    let n = 10_000u64;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = e
        .tensors
        .upload(&HostTensor::from_f32(vec![n], &x).unwrap())
        .unwrap();
    let first = dx.soc;
    let d1 = e.tensors.alloc_device(DType::F32, vec![n]).unwrap();
    let d2 = e.tensors.alloc_device(DType::F32, vec![n]).unwrap();
    assert!(d1.soc != dx.soc && d2.soc != d1.soc);
    e.launch_into(
        "scale_add_mc",
        &[
            LaunchArg::Device(dx.clone()),
            LaunchArg::f32(2.0),
            LaunchArg::f32(1.0),
        ],
        &d1,
        8,
    )
    .unwrap();
    // The first result feeds the second launch; a host-copied launch in between does not
    // disturb the device tensors.
    let small = launch(
        &mut e,
        "scale_add",
        vec![
            LaunchArg::hbm(HostTensor::from_f32(vec![3], &[1.0; 3]).unwrap()),
            LaunchArg::f32(1.0),
            LaunchArg::f32(1.0),
        ],
        1,
    )
    .unwrap();
    assert_eq!(small.output.to_f32().unwrap(), vec![2.0; 3]);
    e.launch_into(
        "scale_add_mc",
        &[
            LaunchArg::Device(d1.clone()),
            LaunchArg::f32(0.5),
            LaunchArg::f32(-1.0),
        ],
        &d2,
        8,
    )
    .unwrap();
    let got = e.tensors.download(&d2).unwrap().to_f32().unwrap();
    assert_eq!(
        got,
        x.iter()
            .map(|v| (v * 2.0 + 1.0) * 0.5 - 1.0)
            .collect::<Vec<_>>()
    );
    // Device tensors are checked against the schema like host ones.
    let wrong = e.tensors.alloc_device(DType::I32, vec![n]).unwrap();
    let err = e
        .launch_into(
            "scale_add_mc",
            &[
                LaunchArg::Device(wrong),
                LaunchArg::f32(1.0),
                LaunchArg::f32(1.0),
            ],
            &d2,
            1,
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("x is tensor<f32>, got i32"),
        "{err}"
    );
    let longer = e.tensors.alloc_device(DType::F32, vec![n + 1]).unwrap();
    let err = e
        .launch_into(
            "scale_add_mc",
            &[
                LaunchArg::Device(dx),
                LaunchArg::f32(1.0),
                LaunchArg::f32(1.0),
            ],
            &longer,
            1,
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("the output is f32 [10000]"),
        "{err}"
    );
    // HBM is finite and device tensors can be released.
    assert!(matches!(
        e.tensors.alloc_device(DType::F32, vec![1 << 30]),
        Err(EmuError::Memory(_))
    ));
    e.tensors.free_device_tensors();
    assert_eq!(
        e.tensors.alloc_device(DType::F32, vec![n]).unwrap().soc,
        first
    );
}

#[test]
fn static_constructors_run_only_inside_the_cores() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let lib = common::ctors(
        dir.path(),
        "ctors",
        &format!("#define PID_FILE {:?}", pids.to_str().unwrap()),
    );
    let mut e = engine(&lib);
    let x = HostTensor::from_f32(vec![4], &[0.0; 4]).unwrap();
    let done = launch(&mut e, "from_table", vec![LaunchArg::hbm(x)], 2).unwrap();
    assert_eq!(done.output.to_f32().unwrap(), vec![0.0, 0.5, 1.0, 1.5]);
    let ran: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    // The probe and the two cores each loaded the library; this process never did.
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert!(!ran.contains(&std::process::id()), "{ran:?}");
}

#[test]
fn a_faulting_constructor_is_a_device_fault_naming_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let lib = common::ctors(dir.path(), "ctorfault", "#define CTOR_FAULT 1");
    let mut e = nrt_pool_host::host_engine(1 << 26, PoolImage::default()).unwrap();
    let err = e.load(&lib).unwrap_err();
    let EmuError::StartFault { path, fault } = &err else {
        panic!("{err}")
    };
    assert_eq!(path, &lib.display().to_string());
    assert_eq!(
        (fault.kind, fault.phase, fault.host_addr),
        (
            FaultKind::Memory,
            nrt_pool_host::control::PHASE_LOAD,
            Some(8)
        )
    );
    let shown = err.to_string();
    assert!(
        shown.contains("libctorfault.so: device fault while loading the op library (its static constructors) on core 0: memory fault (write) at host address 0x8"),
        "{shown}"
    );
    // The engine is still usable.
    e.load(&common::faults(dir.path())).unwrap();
}

#[test]
fn a_write_past_the_output_is_caught_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::faults(dir.path()));
    for (cores, loc) in [(1, Location::Hbm), (3, Location::Sbuf)] {
        let x = HostTensor::from_f32(vec![5], &[1.0; 5]).unwrap();
        let r = e.launch(&KernelLaunch {
            kernel: "write_one_past".into(),
            args: vec![LaunchArg::hbm(x)],
            output: OutputSpec {
                dtype: DType::F32,
                shape: vec![5],
                location: loc,
            },
            cores,
        });
        let f = fault(r);
        assert_eq!((f.kind, f.access), (FaultKind::Memory, Some("write")));
        assert_eq!(
            f.tensor.as_deref(),
            Some("the output (20 bytes) at offset 20")
        );
        assert!(f.core < cores);
        let shown = f.to_string();
        assert!(
            shown.contains("in kernel 'write_one_past' on core")
                && shown.contains(
                    "memory fault: write past the end of the output (20 bytes) at offset 20"
                ),
            "{shown}"
        );
    }
    // With the guards off the same kernel corrupts silently, as hardware would.
    e.tensors.guard_tensors = false;
    let x = HostTensor::from_f32(vec![5], &[1.0; 5]).unwrap();
    assert!(launch(&mut e, "write_one_past", vec![LaunchArg::hbm(x)], 1).is_ok());
}

#[test]
fn tensors_without_elements_are_refused_naming_the_argument() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::examples(dir.path()));
    for shape in [vec![0], vec![0, 4], vec![3, 0]] {
        let x = HostTensor::new(DType::F32, shape.clone(), vec![]);
        let err = match x {
            Err(e) => EmuError::from(e),
            Ok(x) => launch(
                &mut e,
                "scale_add",
                vec![LaunchArg::hbm(x), LaunchArg::f32(1.0), LaunchArg::f32(0.0)],
                1,
            )
            .unwrap_err(),
        };
        assert!(
            err.to_string()
                .contains(&format!("shape {shape:?} has no elements")),
            "{err}"
        );
    }
    // Through a device tensor the argument is named.
    let err = e
        .launch_into(
            "scale_add",
            &[
                LaunchArg::Device(nrt_pool_engine::DeviceTensor {
                    dtype: DType::F32,
                    shape: vec![3, 0],
                    soc: e.tensors.memory.hbm.soc,
                }),
                LaunchArg::f32(1.0),
                LaunchArg::f32(0.0),
            ],
            &nrt_pool_engine::DeviceTensor {
                dtype: DType::F32,
                shape: vec![3, 0],
                soc: e.tensors.memory.hbm.soc,
            },
            1,
        )
        .unwrap_err();
    assert!(err.to_string().contains("has no elements"), "{err}");
}

/// Checking mode at the engine's level: a correct multicore kernel checks clean
/// with its output in HBM and in SBUF (placed with each run), and the caller gets the
/// unchecked launch's bytes.
#[test]
fn checked_launches_of_a_correct_kernel_find_nothing_wherever_the_output_lies() {
    use nrt_pool_engine::check::Checks;
    use nrt_pool_engine::{Call, CallOptions, Destination, Output};
    let dir = tempfile::tempdir().unwrap();
    let mut e = engine(&common::examples(dir.path()));
    let n = 10_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i as f32).cos() * 10.0).collect();
    let want: Vec<f32> = x.iter().map(|v| v * 0.75 + 2.0).collect();
    let xt = HostTensor::from_f32(vec![n as u64], &x).unwrap();
    let args = vec![
        LaunchArg::Tensor(xt, Location::Hbm),
        LaunchArg::f32(0.75),
        LaunchArg::f32(2.0),
    ];
    for loc in [Location::Hbm, Location::Sbuf] {
        let mut output = e.loaded.output_for("scale_add_mc", &args).unwrap();
        output.location = loc;
        let target = e.target("scale_add_mc").unwrap();
        let called = e
            .call(Call {
                target: &target,
                args: args.iter().map(nrt_pool_engine::adapters::value).collect(),
                output: Output::Derived(output, nrt_pool_engine::Arguments::Validate),
                to: Destination::Host,
                cores: Some(8),
                // The options of this call alone: the engine's default stays unchecked.
                options: CallOptions {
                    checks: Some(Checks::ALL),
                    ..CallOptions::default()
                },
            })
            .unwrap();
        assert!(
            called.check.findings.is_empty(),
            "{loc:?}: {:?}",
            called.check.findings
        );
        assert_eq!(called.output.unwrap().to_f32().unwrap(), want, "{loc:?}");
        assert_eq!(called.check.checks, Checks::ALL);
    }
    assert_eq!(
        e.defaults.checks,
        Checks::NONE,
        "a call's options leave the engine's as they were"
    );
}

/// A call names what it runs once: the engine resolves a `Target`, names an
/// unknown one with the library's list, and refuses a target resolved against a library
/// since loaded again rather than run a same-named kernel of another load.
#[test]
fn a_target_is_resolved_once_and_refused_after_another_load() {
    use nrt_pool_engine::{ArgValue, Call, CallOptions, Destination, Output, TargetModel};
    let dir = tempfile::tempdir().unwrap();
    let lib = common::examples(dir.path());
    let mut e = engine(&lib);
    let t = e.target("scale_add").unwrap();
    assert_eq!(
        (t.name.as_str(), t.kernel.as_str()),
        ("scale_add", "scale_add")
    );
    assert!(matches!(t.model, TargetModel::Schema(_)), "{:?}", t.model);
    let err = e.target("nope").unwrap_err().to_string();
    assert!(
        err.starts_with("unknown kernel 'nope'; the library registers: scale_add"),
        "{err}"
    );
    let x = HostTensor::from_f32(vec![4], &[1.0; 4]).unwrap();
    let call = |t| Call {
        target: t,
        args: vec![
            ArgValue::Tensor(x.clone(), Location::Hbm),
            ArgValue::Scalar(DType::F32, 2.0f32.to_le_bytes().to_vec()),
            ArgValue::Scalar(DType::F32, 1.0f32.to_le_bytes().to_vec()),
        ],
        output: Output::Derive,
        to: Destination::Host,
        cores: Some(1),
        options: CallOptions::default(),
    };
    let out = e.call(call(&t)).unwrap().output.unwrap();
    assert_eq!(out.to_f32().unwrap(), vec![3.0; 4]);
    e.load(&lib).unwrap();
    let stale = e.call(call(&t)).unwrap_err();
    assert!(matches!(stale, EmuError::StaleTarget { .. }), "{stale}");
    let again = e.target("scale_add").unwrap();
    assert!(e.call(call(&again)).is_ok());
}
