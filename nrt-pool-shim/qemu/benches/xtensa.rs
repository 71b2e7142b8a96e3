//! `make bench` rows of the Xtensa backend: emulated Xtensa instructions
//! per second per core (a two-instruction loop, against the same loop run natively by the
//! host backend), a 1 MiB elementwise op on 8 QEMU cores against the host backend, a whole
//! `nrt-pool run` of a small op on 8 Xtensa cores against the same run on host cores, and
//! the examples' standard-accessor ReLU over 131072 elements on one QEMU core, in one run.

use std::path::Path;

use nrt_pool_benchkit::{Goal, Report, Sample};
use nrt_pool_engine::adapters::{KernelLaunch, LaunchVerbs};
use nrt_pool_engine::tensor::{DType, HostTensor};
use nrt_pool_engine::{LaunchArg, PoolEngine, PoolImage};
use nrt_pool_qemu::XtensaBackend;
use nrt_pool_testkit as testkit;

fn engines(so: &Path, pool: &Path) -> (PoolEngine, PoolEngine) {
    let mut host = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    host.load(so).unwrap();
    let mut xt = PoolEngine::with_backend(
        64 << 20,
        PoolImage::default(),
        Box::new(
            XtensaBackend::new(testkit::xtensa_board())
                .with_shape_cores(Box::new(nrt_pool_host::HostBackend::default())),
        ),
    )
    .unwrap();
    xt.defaults.timeout = std::time::Duration::from_secs(600);
    xt.load(pool).unwrap();
    (host, xt)
}

fn timed(e: &mut PoolEngine, l: &KernelLaunch, reps: usize, per: u32) -> Sample {
    Sample::measure(reps, per, || {
        e.launch(l)
            .unwrap_or_else(|err| panic!("{}: {err}", l.kernel));
    })
}

/// `l` on `ours` and on `base`, timed in turns.
fn versus(
    ours: &mut PoolEngine,
    base: &mut PoolEngine,
    l: &KernelLaunch,
    reps: usize,
) -> [Sample; 2] {
    Sample::interleaved(
        reps,
        1,
        [
            &mut || {
                ours.launch(l).unwrap();
            },
            &mut || {
                base.launch(l).unwrap();
            },
        ],
    )
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = Report::new("xtensa");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // The examples' ReLU library (examples/mlp), in the size row and the last row.
    let relu = testkit::build_example_with_image(dir.path(), "mlp_ops", "mlp", "relu.cpp", false);
    if report.wants("loaded bytes per core image") {
        size_row(&mut report, &relu.1);
    }
    if report.wants("emulated Xtensa instruction") {
        instruction_row(&mut report, dir.path());
    }
    let (so, pool) = testkit::examples_with_image(dir.path());
    if report.wants("1 MiB scale_add_mc") {
        mib_row(&mut report, &so, &pool, cpus);
    }
    if report.wants("whole nrt-pool run") {
        run_row(&mut report, dir.path(), &so, &pool);
    }
    if report.wants("examples/mlp ReLU (standard accessors)") {
        relu_row(&mut report, &relu.0, &relu.1);
    }
}

/// Each core image's loaded bytes against the vendor's 64 KiB staged-library limit (#25,
/// D79).
fn size_row(report: &mut Report, relu_pool: &Path) {
    let sizes =
        nrt_pool_build::device_image::loaded_sizes(&std::fs::read(relu_pool).unwrap()).unwrap();
    let largest = sizes.iter().map(|s| s.total()).max().unwrap_or(0);
    report.size_row(
        "examples/mlp ReLU: loaded bytes per core image (text+data+bss)",
        largest,
        nrt_pool_build::device_image::VENDOR_STAGED_LIMIT,
    );
}

/// Emulated instructions per second: a two-instruction loop against it run natively.
fn instruction_row(report: &mut Report, dir: &Path) {
    let b = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ops");
    let (so, pool) = testkit::build_with_image(
        dir,
        "count",
        &b.join("count.schema"),
        &[b.join("count.cpp")],
    );
    let (mut host, mut xt) = engines(&so, &pool);
    let iterations: i32 = 50_000_000;
    let n = HostTensor::new(DType::I32, vec![1], iterations.to_le_bytes().to_vec()).unwrap();
    let l = KernelLaunch {
        kernel: "count_loop".into(),
        args: vec![LaunchArg::hbm(n)],
        output: host
            .loaded
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
}

/// A 1 MiB elementwise op on 8 QEMU cores against the host backend.
fn mib_row(report: &mut Report, so: &Path, pool: &Path, cpus: usize) {
    let (mut host, mut xt) = engines(so, pool);
    let elems = (1u64 << 20) / 4;
    let x = HostTensor::from_f32(
        vec![elems],
        &(0..elems)
            .map(|i| (i % 1000) as f32 * 0.5 - 9.0)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let args = vec![LaunchArg::hbm(x), LaunchArg::f32(1.5), LaunchArg::f32(-2.0)];
    let l = KernelLaunch {
        kernel: "scale_add_mc".into(),
        output: host.loaded.output_for("scale_add_mc", &args).unwrap(),
        args,
        cores: 8,
    };
    let [ours, base] = versus(&mut xt, &mut host, &l, 5);
    report.row(
        &format!("1 MiB scale_add_mc, 8 QEMU cores vs host backend ({cpus} CPUs)"),
        ours,
        base,
        // Issue #29: at most 40x the host backend's time.
        Goal::RatioAtLeast(1.0 / 40.0),
    );
}

/// A whole `nrt-pool run` of a small op on 8 Xtensa cores against host cores.
fn run_row(report: &mut Report, dir: &Path, so: &Path, pool: &Path) {
    // A whole `nrt-pool run` of a small op: library load, 8 cores started, one launch, the
    // output written; the same run on host cores is the baseline (at most 10x).
    let nrt_pool = testkit::root().join("target/release/nrt-pool");
    let x = dir.join("x.npy");
    let mut npy =
        b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (64,), }"
            .to_vec();
    npy.resize(10 + 0x76 - 1, b' ');
    npy.push(b'\n');
    for i in 0..64 {
        npy.extend_from_slice(&(i as f32 - 30.0).to_le_bytes());
    }
    std::fs::write(&x, &npy).unwrap();
    let run = |lib: &Path| {
        let status = std::process::Command::new(&nrt_pool)
            .arg("run")
            .arg(lib)
            .arg("scale_add_mc")
            .args(["--arg"])
            .arg(&x)
            .args(["--arg", "1.5", "--arg", "-2", "--cores", "8", "--out"])
            .arg(dir.join("y.npy"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "nrt-pool run {}", lib.display());
    };
    let [ours, base] = Sample::interleaved(5, 1, [&mut || run(pool), &mut || run(so)]);
    report.row(
        "whole nrt-pool run, small op, 8 Xtensa cores vs host cores",
        ours,
        base,
        Goal::RatioAtLeast(0.1),
    );
}

/// The examples' standard-accessor ReLU on one warm QEMU core.
fn relu_row(report: &mut Report, relu_so: &Path, relu_pool: &Path) {
    // The examples' ReLU (standard accessors) over 131072 elements on one warm QEMU core
    // (at most 100 ms), against the host backend.
    let (mut host, mut relu) = engines(relu_so, relu_pool);
    let elems = 131_072u64;
    let x = HostTensor::from_f32(
        vec![elems],
        &(0..elems)
            .map(|i| (i % 200) as f32 - 100.0)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let args = vec![LaunchArg::hbm(x)];
    let l = KernelLaunch {
        kernel: "mlp_ops::relu_forward".into(),
        output: host.op_output("mlp_ops::relu_forward", &args).unwrap(),
        args,
        cores: 1,
    };
    let [ours, base] = versus(&mut relu, &mut host, &l, 3);
    report.row(
        "examples/mlp ReLU (standard accessors), 131072 f32, 1 QEMU core vs host backend",
        ours,
        base,
        Goal::AtMost(std::time::Duration::from_millis(100)),
    );
}
