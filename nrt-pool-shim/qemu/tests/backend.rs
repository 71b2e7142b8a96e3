//! The engine's Xtensa backend: the same launches on host builds and on Pool
//! images running on QEMU cores (1 and 8), compared byte for byte, stdio included.

use std::path::Path;

use nrt_pool_engine::adapters::{KernelLaunch, LaunchVerbs};
use nrt_pool_engine::tensor::{DType, HostTensor, Location};
use nrt_pool_engine::{EmuError, LaunchArg, PoolEngine, PoolImage};
use nrt_pool_testkit as testkit;

mod common;

fn xtensa_engine() -> PoolEngine {
    common::xtensa_engine(64 << 20)
}

fn f32s(n: u64, f: impl Fn(usize) -> f32) -> HostTensor {
    let data = (0..n as usize).flat_map(|i| f(i).to_le_bytes()).collect();
    HostTensor::new(DType::F32, vec![n], data).unwrap()
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

#[test]
fn the_engine_runs_pool_images_on_qemu_cores_as_it_runs_host_builds() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = testkit::examples_with_image(dir.path());
    let mut host = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    host.load(&so).unwrap();
    let mut xt = xtensa_engine();
    assert_eq!(xt.isa(), "xtensa");
    let names = xt.load(&pool).unwrap().to_vec();
    assert_eq!(names, ["scale_add", "scale_add_mc", "hello"]);
    assert!(
        xt.loaded.library().unwrap().schema.is_some(),
        "the image's schema"
    );

    let x = f32s(10_000, |i| ((i * 7919) % 1000) as f32 / 10.0 - 50.0);
    let ints = HostTensor::new(
        DType::I32,
        vec![64],
        (0..64i32).flat_map(|i| (i * 10).to_le_bytes()).collect(),
    )
    .unwrap();
    let cases: Vec<(&str, Vec<LaunchArg>, usize)> = vec![
        (
            "scale_add",
            vec![
                LaunchArg::hbm(x.clone()),
                LaunchArg::f32(1.5),
                LaunchArg::f32(-2.25),
            ],
            1,
        ),
        (
            "scale_add_mc",
            vec![
                LaunchArg::hbm(x.clone()),
                LaunchArg::f32(0.5),
                LaunchArg::f32(3.0),
            ],
            8,
        ),
        (
            "scale_add_mc",
            vec![
                LaunchArg::hbm(x.clone()),
                LaunchArg::f32(0.5),
                LaunchArg::f32(3.0),
            ],
            3,
        ),
        (
            "scale_add_mc",
            vec![
                LaunchArg::Tensor(x.clone(), Location::Sbuf),
                LaunchArg::f32(2.0),
                LaunchArg::f32(1.0),
            ],
            8,
        ),
        ("hello", vec![LaunchArg::hbm(ints.clone())], 8),
        ("hello", vec![LaunchArg::hbm(ints)], 1),
    ];
    for (kernel, args, cores) in cases {
        let h = launch(&mut host, kernel, args.clone(), cores)
            .unwrap_or_else(|e| panic!("{kernel} host: {e}"));
        let d =
            launch(&mut xt, kernel, args, cores).unwrap_or_else(|e| panic!("{kernel} xtensa: {e}"));
        assert_eq!(d.output.data, h.output.data, "{kernel} on {cores} core(s)");
        assert_eq!(
            String::from_utf8_lossy(&d.stdout),
            String::from_utf8_lossy(&h.stdout),
            "{kernel} on {cores} core(s): stdout"
        );
        assert_eq!(d.results, h.results, "{kernel}");
    }
}

/// A faulting kernel is a DeviceFault naming the kernel, the core and the symbolized PC;
/// the faulting core is restarted and the next launch works.
#[test]
fn faults_on_qemu_cores_are_device_faults_and_the_engine_survives() {
    let dir = tempfile::tempdir().unwrap();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/faults");
    let schema = t.join("device_faults.schema");
    let (_, pool) = testkit::build_with_image(
        dir.path(),
        "device_faults",
        &schema,
        &[t.join("device_faults.cpp")],
    );
    let mut xt = xtensa_engine();
    xt.defaults.timeout = std::time::Duration::from_secs(3);
    xt.load(&pool).unwrap();
    let x = f32s(4, |i| i as f32);
    for (kernel, cores, kind) in [
        ("illegal", 2, "Trap"),
        ("spin", 1, "Timeout"),
        ("pull_too_many", 1, "Fatal"),
    ] {
        match launch(&mut xt, kernel, vec![LaunchArg::hbm(x.clone())], cores) {
            Err(EmuError::Fault(f)) => {
                assert_eq!(f.kernel, kernel);
                assert_eq!(f.core, 0, "{f}");
                assert_eq!(format!("{:?}", f.kind), kind, "{f}");
                let text = f.to_string();
                if kernel != "pull_too_many" {
                    assert!(text.contains(&format!("({kernel}(")), "{text}");
                }
            }
            Err(e) => panic!("{kernel}: {e}"),
            Ok(_) => panic!("{kernel} completed"),
        }
    }
    // A store through a bad pointer names the address; the tensor's own bytes come back.
    let addr = HostTensor::new(DType::U32, vec![1], 0x4000_0010u32.to_le_bytes().to_vec()).unwrap();
    match launch(&mut xt, "bad_store", vec![LaunchArg::hbm(addr)], 1) {
        Err(EmuError::Fault(f)) => assert!(f.to_string().contains("address 0x40000010"), "{f}"),
        other => panic!("bad_store: {:?}", other.map(|c| c.output)),
    }
    // A write one past the output's end is found as a guard page would find it, naming the
    // tensor; without guards it passes unnoticed, as on hardware.
    let five = f32s(5, |_| 1.0);
    match launch(
        &mut xt,
        "write_one_past",
        vec![LaunchArg::hbm(five.clone())],
        1,
    ) {
        Err(EmuError::Fault(f)) => {
            assert_eq!(format!("{:?}", f.kind), "Memory", "{f}");
            assert_eq!(f.access, Some("write"), "{f}");
            assert_eq!(
                f.tensor.as_deref(),
                Some("the output (20 bytes) at offset 20"),
                "{f}"
            );
        }
        other => panic!("write_one_past: {:?}", other.map(|c| c.output)),
    }
    // A read past the input's end faults too, at its PC: the guard page is a hole in the
    // core's windows, not a pattern checked afterwards.
    match launch(
        &mut xt,
        "read_one_past",
        vec![LaunchArg::hbm(five.clone())],
        1,
    ) {
        Err(EmuError::Fault(f)) => {
            assert_eq!(format!("{:?}", f.kind), "Memory", "{f}");
            assert_eq!(f.access, Some("read"), "{f}");
            assert_eq!(
                f.tensor.as_deref(),
                Some("argument 0 (x) (20 bytes) at offset 20"),
                "{f}"
            );
            assert!(f.to_string().contains("(read_one_past("), "{f}");
        }
        other => panic!("read_one_past: {:?}", other.map(|c| c.output)),
    }
    xt.tensors.guard_tensors = false;
    assert!(launch(&mut xt, "write_one_past", vec![LaunchArg::hbm(five)], 1).is_ok());
    xt.tensors.guard_tensors = true;
    // The engine and its cores go on: a kernel that completes.
    let err = launch(&mut xt, "illegal", vec![LaunchArg::hbm(x.clone())], 1).unwrap_err();
    assert!(matches!(err, EmuError::Fault(_)));
    let load_at = |xt: &mut PoolEngine, local: u32| {
        let at = HostTensor::new(DType::U32, vec![1], local.to_le_bytes().to_vec()).unwrap();
        launch(xt, "bad_load", vec![LaunchArg::hbm(at)], 1)
    };
    // Core 0's own hbm_scratch (0x85000000) is in its window; core 2's (from 0x85C00000)
    // is hidden from it (#25): a load there is a fault naming the SoC address.
    let out = load_at(&mut xt, 0x8500_0040);
    assert!(
        out.is_ok(),
        "a load inside the window completes: {:?}",
        out.err().map(|e| e.to_string())
    );
    let err = load_at(&mut xt, 0x8600_0000).unwrap_err().to_string();
    assert!(
        err.contains("load from no memory") && err.contains("(SoC 0x4002000000)"),
        "{err}"
    );
}

/// Tensors far beyond the pinned hbm_scratch window, one straddling a 16 MiB boundary, are
/// reached through the dynamic windows (MEM_WINDOWn registers) in the shared device memory:
/// the same bytes as the host build.
#[test]
fn tensors_beyond_the_pinned_window_are_reached_through_dynamic_windows() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = testkit::examples_with_image(dir.path());
    // HBM ends 200 KiB past the 16 MiB boundary at 192 MiB, so the top resident tensor
    // straddles it.
    let hbm = (160 << 20) + (200 << 10);
    let mut host = nrt_pool_host::host_engine(hbm, PoolImage::default()).unwrap();
    host.load(&so).unwrap();
    let mut xt = common::xtensa_engine(hbm);
    xt.load(&pool).unwrap();
    let x = f32s(100_000, |i| (i % 977) as f32 * 0.25 - 100.0);
    let mut outs = Vec::new();
    for e in [&mut host, &mut xt] {
        let dx = e.tensors.upload(&x).unwrap();
        let out = e.tensors.alloc_device(DType::F32, vec![100_000]).unwrap();
        let block = |soc: u64| soc >> 24;
        assert_ne!(
            block(dx.soc),
            block(dx.soc + 400_000 - 1),
            "x straddles 16 MiB"
        );
        assert!(
            out.soc - 0x0040_0000_0000 >= 64 << 20,
            "beyond the pinned window"
        );
        e.launch_into(
            "scale_add_mc",
            &[
                LaunchArg::Device(dx),
                LaunchArg::f32(1.5),
                LaunchArg::f32(2.0),
            ],
            &out,
            8,
        )
        .unwrap_or_else(|err| panic!("{}: {err}", e.isa()));
        outs.push(e.tensors.download(&out).unwrap().data);
    }
    assert_eq!(outs[0], outs[1]);
    let first = f32::from_le_bytes(outs[1][..4].try_into().unwrap());
    assert_eq!(first, -100.0 * 1.5 + 2.0);
}

/// AWS-style ops: outputs from the shape functions of the host build beside the image,
/// the kernels on QEMU cores (the multicore op on 8).
#[test]
fn aws_style_ops_run_on_qemu_cores_with_host_shape_functions() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        testkit::build_example_with_image(dir.path(), "mlp", "mlp", "relu.cpp", false),
        testkit::build_example_with_image(dir.path(), "tiles", "multicore", "relu_tiles.cpp", true),
    ];
    let x = HostTensor::from_f32(
        vec![24, 17],
        &(0..24 * 17)
            .map(|i| ((i * 37) % 23) as f32 - 11.0)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    for ((so, pool), ops) in cases.iter().zip([
        vec![
            ("mlp_ops::relu_forward", vec![LaunchArg::hbm(x.clone())]),
            (
                "mlp_ops::axpb",
                vec![
                    LaunchArg::hbm(x.clone()),
                    LaunchArg::f32(2.0),
                    LaunchArg::f32(0.5),
                ],
            ),
            ("mlp_ops::describe", vec![LaunchArg::hbm(x.clone())]),
        ],
        vec![("tiles::relu", vec![LaunchArg::hbm(x.clone())])],
    ]) {
        let mut host = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
        host.load(so).unwrap();
        let mut xt = xtensa_engine();
        xt.load(pool).unwrap();
        assert!(xt.loaded.neuron_library().is_some(), "the image's op list");
        for (op, args) in ops {
            let cores = host.loaded.default_cores();
            assert_eq!(xt.loaded.default_cores(), cores);
            let run = |e: &mut PoolEngine| {
                let output = e
                    .op_output(op, &args)
                    .unwrap_or_else(|e| panic!("{op}: {e}"));
                e.launch(&KernelLaunch {
                    kernel: op.into(),
                    args: args.clone(),
                    output,
                    cores,
                })
                .unwrap_or_else(|e| panic!("{op}: {e}"))
            };
            let (h, d) = (run(&mut host), run(&mut xt));
            assert_eq!(d.output.data, h.output.data, "{op}");
            assert_eq!(d.stdout, h.stdout, "{op}");
        }
    }
}

/// The memcpy methods, DMA included, on both backends: the same bytes, every method taken.
#[test]
fn memcpy_methods_and_dma_work_on_xtensa_cores_as_on_host_cores() {
    let dir = tempfile::tempdir().unwrap();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ops");
    let (so, pool) = testkit::build_with_image(
        dir.path(),
        "runtime",
        &t.join("runtime.schema"),
        &[t.join("runtime.cpp")],
    );
    let mut host = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    host.load(&so).unwrap();
    let mut xt = xtensa_engine();
    xt.load(&pool).unwrap();
    let x = f32s(3000, |i| i as f32 * 0.25 - 100.0);
    for e in [&mut host, &mut xt] {
        let got = launch(e, "memcpy_methods", vec![LaunchArg::hbm(x.clone())], 1).unwrap();
        assert_eq!(
            got.output.data,
            x.data,
            "{}: every method copies, every method is taken",
            e.isa()
        );
    }
}
