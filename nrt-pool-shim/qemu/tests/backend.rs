//! The engine's Xtensa backend (issue #13): the same launches on host builds and on Pool
//! images running on QEMU cores (1 and 8), compared byte for byte, stdio included.

use std::path::{Path, PathBuf};

use nrt_pool_build::{self as opbuild, DeviceImage};
use nrt_pool_engine::tensor::{DType, HostTensor, Location};
use nrt_pool_engine::{EmuError, Launch, LaunchArg, PoolEngine, PoolImage};
use nrt_pool_qemu::XtensaBackend;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn board() -> PathBuf {
    root().join("target/customop/xtensa-q7-none-elf/pool-board.elf")
}

fn build_examples(dir: &Path) -> (PathBuf, PathBuf) {
    let ex = root().join("examples/ops");
    let so = dir.join("libops.so");
    let pool = dir.join("libops.pool");
    opbuild::build(&opbuild::BuildOptions {
        schema: ex.join("ops.schema"),
        sources: ["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"]
            .map(|s| ex.join(s))
            .to_vec(),
        out: so.clone(),
        archive: root()
            .join("target/customop/x86_64-unknown-linux-gnu/release/libneuroncustomop.a"),
        include: root().join("include"),
        device_objects: None,
        device_image: Some(DeviceImage {
            out: pool.clone(),
            archive: root().join("target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a"),
            link_script: root().join("customop-device/xtensa/pool-core.ld"),
        }),
        cxx: "g++".into(),
        on_compiled: None,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    (so, pool)
}

fn xtensa_engine() -> PoolEngine {
    PoolEngine::with_backend(
        64 << 20,
        PoolImage::default(),
        Box::new(XtensaBackend::new(board())),
    )
    .unwrap()
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
) -> Result<nrt_pool_engine::Completion, EmuError> {
    let output = e.output_for(kernel, &args)?;
    e.launch(&Launch {
        kernel: kernel.into(),
        args,
        output,
        cores,
    })
}

#[test]
fn the_engine_runs_pool_images_on_qemu_cores_as_it_runs_host_builds() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = build_examples(dir.path());
    let mut host = PoolEngine::new(64 << 20, PoolImage::default()).unwrap();
    host.load(&so).unwrap();
    let mut xt = xtensa_engine();
    assert_eq!(xt.isa(), "xtensa");
    let names = xt.load(&pool).unwrap().to_vec();
    assert_eq!(names, ["scale_add", "scale_add_mc", "hello"]);
    assert!(xt.library().unwrap().schema.is_some(), "the image's schema");

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
