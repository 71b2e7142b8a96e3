//! `make bench` rows of the Xtensa backend (issue #13): emulated Xtensa instructions per
//! second per core (a two-instruction loop, against the same loop run natively by the host
//! backend) and a 1 MiB elementwise op on 8 QEMU cores against the host backend, in one run.

use std::path::Path;

use nrt_pool_engine::tensor::{DType, HostTensor};
use nrt_pool_engine::{Launch, LaunchArg, PoolEngine, PoolImage};
use nrt_pool_qemu::XtensaBackend;
use nrt_pool_testkit as testkit;
use nrt_pool_testkit::bench::{Goal, Report, Sample};

fn engines(so: &Path, pool: &Path) -> (PoolEngine, PoolEngine) {
    let mut host = PoolEngine::new(64 << 20, PoolImage::default()).unwrap();
    host.load(so).unwrap();
    let mut xt = PoolEngine::with_backend(
        64 << 20,
        PoolImage::default(),
        Box::new(XtensaBackend::new(testkit::xtensa_board())),
    )
    .unwrap();
    xt.timeout = std::time::Duration::from_secs(600);
    xt.load(pool).unwrap();
    (host, xt)
}

fn timed(e: &mut PoolEngine, l: &Launch, reps: usize, per: u32) -> Sample {
    Sample::measure(reps, per, || {
        e.launch(l)
            .unwrap_or_else(|err| panic!("{}: {err}", l.kernel));
    })
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = Report::new("xtensa");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());

    // The examples' ReLU library (examples/mlp): each core image's loaded bytes against the
    // vendor's 64 KiB staged-library limit (#25, D79).
    let (_, relu_pool) =
        testkit::build_example_with_image(dir.path(), "mlp_ops", "mlp", "relu.cpp", false);
    let sizes =
        nrt_pool_build::device_image::loaded_sizes(&std::fs::read(&relu_pool).unwrap()).unwrap();
    let largest = sizes.iter().map(|s| s.total()).max().unwrap_or(0);
    report.size_row(
        "examples/mlp ReLU: loaded bytes per core image (text+data+bss)",
        largest,
        nrt_pool_build::device_image::VENDOR_STAGED_LIMIT,
    );

    let b = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ops");
    let (so, pool) = testkit::build_with_image(
        dir.path(),
        "count",
        &b.join("count.schema"),
        &[b.join("count.cpp")],
    );
    let (mut host, mut xt) = engines(&so, &pool);
    let iterations: i32 = 50_000_000;
    let n = HostTensor::new(DType::I32, vec![1], iterations.to_le_bytes().to_vec()).unwrap();
    let l = Launch {
        kernel: "count_loop".into(),
        args: vec![LaunchArg::hbm(n)],
        output: host
            .output_for(
                "count_loop",
                &[LaunchArg::hbm(
                    HostTensor::new(DType::I32, vec![1], vec![0; 4]).unwrap(),
                )],
            )
            .unwrap(),
        cores: 1,
    };
    let instructions = 2 * iterations as u32;
    let ours = timed(&mut xt, &l, 5, instructions);
    let native = timed(&mut host, &l, 5, instructions);
    report.row(
        "emulated Xtensa instruction, 1 QEMU core vs native (2-instr loop)",
        ours,
        native,
        Goal::None,
    );
    println!(
        "    = {:.0} M emulated Xtensa instructions/s per core (median; {:.0}..{:.0})",
        1e-6 / ours.median,
        1e-6 / ours.max,
        1e-6 / ours.min
    );

    let (so, pool) = testkit::examples_with_image(dir.path());
    let (mut host, mut xt) = engines(&so, &pool);
    let elems = (1u64 << 20) / 4;
    let x = HostTensor::from_f32(
        vec![elems],
        &(0..elems)
            .map(|i| (i % 1000) as f32 * 0.5 - 9.0)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let args = vec![LaunchArg::hbm(x), LaunchArg::f32(1.5), LaunchArg::f32(-2.0)];
    let l = Launch {
        kernel: "scale_add_mc".into(),
        output: host.output_for("scale_add_mc", &args).unwrap(),
        args,
        cores: 8,
    };
    let ours = timed(&mut xt, &l, 5, 1);
    let base = timed(&mut host, &l, 5, 1);
    report.row(
        &format!("1 MiB scale_add_mc, 8 QEMU cores vs host backend ({cpus} CPUs)"),
        ours,
        base,
        Goal::None,
    );
}
