//! `make demo`: the whole chain on the simulated device. libnrt's microcode sequence with
//! the provider (claim handshake, load records), then the example op library built with the
//! op build helper, registered as the Pool image through `nrt_set_pool_eng_ucode`, the
//! engine initialised, and each example launched through the launch FFI, its output checked
//! against a reference computed here, independently of the emulator.

use std::ffi::{c_void, CStr};
use std::fmt::Write as _;
use std::path::PathBuf;

use nrt_pool_engine::check::{Check, Checks};
use nrt_pool_engine::tensor::{HostTensor, Location};
use nrt_pool_engine::{ArgValue, Call, CallOptions, Called, Destination, EmuError, Output};
use std::time::Instant;

use nrt_pool_build as opbuild;
use nrt_pool_open::{OpenOptions, Pool};
use nrt_pool_shim::launch::{
    nrt_pool_last_error, nrt_pool_launch_v1, nrt_pool_tensor, NRT_POOL_LOCATION_HBM, NRT_POOL_OK,
};
use nrt_pool_shim::seam::{
    nrt_pool_close, nrt_pool_init, nrt_set_pool_eng_ucode, nrt_ucode_img, nrt_ucode_info,
};
use nrt_sim_device::bringup;

pub struct DemoOptions {
    pub provider: PathBuf,
    pub examples: PathBuf,
    /// The host archive of the device's data model (D97).
    pub archive: PathBuf,
    pub include: PathBuf,
    /// The device path: the Xtensa archive, the Pool core link script and the QEMU board.
    pub device: DeviceFiles,
    /// The Xtensa tools the device builds run.
    pub xtensa: opbuild::XtensaTools,
    /// The 32-bit core runner (device-model registration and cores).
    pub core_runner: PathBuf,
    /// Where the profiled Xtensa launch's flame graph is written (it outlives the demo's
    /// work folder).
    pub flame_graph: PathBuf,
}

/// What running the examples as Xtensa Pool images on QEMU needs.
pub struct DeviceFiles {
    pub archive: PathBuf,
    pub link_script: PathBuf,
    pub board: PathBuf,
}

fn tensor(data: *mut c_void, dtype: u8, n: u64) -> nrt_pool_tensor {
    nrt_pool_tensor {
        data,
        shape: [n, 0, 0, 0, 0, 0, 0, 0],
        rank: 1,
        dtype,
        location: NRT_POOL_LOCATION_HBM,
        reserved: [0; 2],
    }
}

fn last_error() -> String {
    // SAFETY: a NUL-terminated thread-local string.
    unsafe { CStr::from_ptr(nrt_pool_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn launch(kernel: &CStr, cores: u32, argv: &[*mut c_void]) -> Result<f64, String> {
    let t = Instant::now();
    // SAFETY: argv holds one live slot per parameter of the kernel's schema.
    let rc = unsafe { nrt_pool_launch_v1(kernel.as_ptr(), cores, argv.as_ptr(), 0, -1) };
    if rc != NRT_POOL_OK {
        return Err(format!(
            "{}: launch returned {rc}: {}",
            kernel.to_string_lossy(),
            last_error()
        ));
    }
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// Runs the demo; the report, or what went wrong.
pub fn run(o: &DemoOptions) -> Result<String, String> {
    let mut report = String::new();
    let b = bringup::run(&bringup::Options {
        provider: o.provider.clone(),
        cayman_library: None,
    })
    .map_err(|e| format!("provider bring-up: {e}"))?;
    let _ = writeln!(
        report,
        "provider   {}: claim handshake and {} load / {} unload record(s) on the simulated device, {} memhandles left",
        o.provider.display(),
        b.load_records.len(),
        b.unload_records.len(),
        b.live_memhandles_after
    );

    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    // The device path is built with the host libraries, once, where its tools are here.
    let missing = device_missing(o);
    let pool_image = |name: &str| {
        missing.is_empty().then(|| opbuild::DeviceImage {
            out: work.path().join(format!("lib{name}.pool")),
            archive: o.device.archive.clone(),
            link_script: o.device.link_script.clone(),
        })
    };
    let lib = work.path().join("libexample_ops.so");
    let sources = ["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"].map(|s| o.examples.join(s));
    let built = opbuild::build(&opbuild::BuildOptions {
        schema: o.examples.join("ops.schema"),
        sources: sources.to_vec(),
        out: lib.clone(),
        setup: opbuild::BuildSetup {
            archive: o.archive.clone(),
            data_model: opbuild::DataModel::Device,
            include: o.include.clone(),
            // Device objects too, where the Xtensa g++ is installed (`make tools`).
            device_objects: o.xtensa.installed().then(|| work.path().join("device")),
            device_image: pool_image("example_ops"),
            xtensa: o.xtensa.clone(),
            core_runner: o.core_runner.clone(),
            cxx: std::env::var("CXX").unwrap_or_else(|_| "g++".into()),
            flags: Default::default(),
            on_compiled: None,
        },
    })
    .map_err(|e| format!("building the examples: {e}"))?;
    let _ = writeln!(
        report,
        "build      {} kernel(s) from {}; device objects: {}",
        built.kernels.len(),
        o.examples.join("ops.schema").display(),
        match &built.device {
            Some(v) => format!("{} Xtensa object(s)", v.len()),
            None => format!(
                "UNSUPPORTED ({} is not installed)",
                opbuild::XtensaTools::CXX
            ),
        }
    );

    register_image(&lib, &mut report)?;

    scale_add_launches(&mut report)?;
    hello_launch(&mut report)?;
    if nrt_pool_close() != 0 {
        return Err(format!("nrt_pool_close: {}", last_error()));
    }
    let mut pools: Vec<PathBuf> = built.device_image.clone().into_iter().collect();
    pools.extend(neuron_examples(o, work.path(), &pool_image, &mut report)?);
    check_gallery(o, work.path(), &mut report)?;
    device_examples(o, &pools, &missing, &mut report)?;
    let _ = writeln!(
        report,
        "ok: provider, seam, op build helpers and emulator agree with the reference"
    );
    Ok(report)
}

/// The built library as the Pool image libnrt registers (`nrt_set_pool_eng_ucode`), and
/// the engine initialised with it.
fn register_image(lib: &std::path::Path, report: &mut String) -> Result<(), String> {
    let mut image = std::fs::read(lib).map_err(|e| e.to_string())?;
    let info = nrt_ucode_info {
        iram: nrt_ucode_img {
            bin: image.as_mut_ptr().cast(),
            size: image.len(),
        },
        dram: nrt_ucode_img {
            bin: std::ptr::null_mut(),
            size: 0,
        },
    };
    // SAFETY: `info` and the image outlive nrt_pool_init, which copies them.
    let rc = unsafe { nrt_set_pool_eng_ucode(&info) };
    if rc != 0 {
        return Err(format!("nrt_set_pool_eng_ucode returned {rc}"));
    }
    if nrt_pool_init() != 0 {
        return Err(format!("nrt_pool_init: {}", last_error()));
    }
    let _ = writeln!(report, "seam       nrt_set_pool_eng_ucode: {} byte Pool image registered; engine initialised with it", image.len());

    Ok(())
}

/// scale_add / scale_add_mc: out = x * alpha + beta over 1M floats, on 1 and 8 cores.
fn scale_add_launches(report: &mut String) -> Result<(), String> {
    let n = 1 << 20;
    let mut x: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32) * 0.125 - 60.0).collect();
    let (mut alpha, mut beta) = (1.5f32, -2.25f32);
    let want: Vec<f32> = x.iter().map(|v| v * alpha + beta).collect();
    for (kernel, cores) in [(c"scale_add", 1u32), (c"scale_add_mc", 8)] {
        let mut out = vec![0f32; n];
        let mut tx = tensor(x.as_mut_ptr().cast(), 10, n as u64);
        let mut to = tensor(out.as_mut_ptr().cast(), 10, n as u64);
        let argv = [
            (&mut tx as *mut nrt_pool_tensor).cast(),
            (&mut alpha as *mut f32).cast(),
            (&mut beta as *mut f32).cast(),
            (&mut to as *mut nrt_pool_tensor).cast(),
        ];
        let ms = launch(kernel, cores, &argv)?;
        let bad = out.iter().zip(&want).position(|(a, b)| a != b);
        if let Some(i) = bad {
            return Err(format!(
                "{}: out[{i}] = {}, reference {}",
                kernel.to_string_lossy(),
                out[i],
                want[i]
            ));
        }
        let _ = writeln!(
            report,
            "launch     {:<13} {cores} core(s)  {n} f32  {ms:8.2} ms  matches reference",
            kernel.to_string_lossy()
        );
    }

    Ok(())
}

/// hello: out = x + core id over each core's slice; core 0 prints.
fn hello_launch(report: &mut String) -> Result<(), String> {
    let m = 64usize;
    let mut xi: Vec<i32> = (0..m as i32).map(|v| v * 10).collect();
    let mut oi = vec![0i32; m];
    let mut tx = tensor(xi.as_mut_ptr().cast(), 8, m as u64);
    let mut to = tensor(oi.as_mut_ptr().cast(), 8, m as u64);
    let argv = [
        (&mut tx as *mut nrt_pool_tensor).cast(),
        (&mut to as *mut nrt_pool_tensor).cast(),
    ];
    let ms = launch(c"hello", 8, &argv)?;
    for (i, v) in oi.iter().enumerate() {
        let core = i * 8 / m;
        if *v != xi[i] + core as i32 {
            return Err(format!(
                "hello: out[{i}] = {v}, reference {}",
                xi[i] + core as i32
            ));
        }
    }
    let _ = writeln!(
        report,
        "launch     {:<13} 8 core(s)  {m} i32  {ms:8.2} ms  matches reference (its output above)",
        "hello"
    );
    Ok(())
}

/// The Custom C++ Operators examples (examples/mlp, examples/multicore): built as
/// custom_op.load builds them, run by NS::OP with outputs from their shape functions, each
/// checked against a reference computed here.
/// Returns their Pool images (when the device path is available).
fn neuron_examples(
    o: &DemoOptions,
    work: &std::path::Path,
    image: &dyn Fn(&str) -> Option<opbuild::DeviceImage>,
    report: &mut String,
) -> Result<Vec<PathBuf>, String> {
    let root = o.examples.parent().unwrap_or(std::path::Path::new("."));
    let build = |name: &str, dir: &str, compute: &str, multicore: bool| {
        opbuild::build(&opbuild::OpBuildOptions {
            name: name.into(),
            compute: vec![root.join(dir).join(compute)],
            shape: vec![root.join(dir).join("shape.cpp")],
            build_directory: work.to_path_buf(),
            multicore,
            setup: host_setup(o, image(name)),
        })
        .map_err(|e| format!("building examples/{dir}: {e}"))
    };
    let mlp = build("mlp_ops", "mlp", "relu.cpp", false)?;
    let tiles = build("tiles", "multicore", "relu_tiles.cpp", true)?;
    let _ = writeln!(
        report,
        "build      {} op(s) of mlp_ops and {} of tiles (multicore) from examples/mlp and examples/multicore",
        mlp.ops.ops.len(),
        tiles.ops.ops.len()
    );
    let (rows, cols) = (256u64, 129u64);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 97.0)
        .collect();
    let g: Vec<f32> = (0..rows * cols).map(|i| (i % 13) as f32 - 6.0).collect();
    let t = |v: &[f32]| HostTensor::from_f32(vec![rows, cols], v).map_err(|e| e.to_string());
    let relu: Vec<f32> = x.iter().map(|&v| if v > 0.0 { v } else { 0.0 }).collect();
    let grad: Vec<f32> = x
        .iter()
        .zip(&g)
        .map(|(&v, &d)| if v > 0.0 { d } else { 0.0 })
        .collect();
    let affine: Vec<f32> = x.iter().map(|&v| v * 2.0 + 0.5).collect();
    let cases: Vec<(&PathBuf, &str, Vec<ArgValue<'static>>, Vec<f32>)> = vec![
        (
            &mlp.library,
            "mlp_ops::relu_forward",
            vec![hbm(t(&x)?)],
            relu.clone(),
        ),
        (
            &mlp.library,
            "mlp_ops::relu_backward",
            vec![hbm(t(&g)?), hbm(t(&x)?)],
            grad,
        ),
        (
            &mlp.library,
            "mlp_ops::axpb",
            vec![hbm(t(&x)?), f32(2.0), f32(0.5)],
            affine,
        ),
        (&tiles.library, "tiles::relu", vec![hbm(t(&x)?)], relu),
    ];
    let mut opened: Option<(&PathBuf, Pool)> = None;
    for (lib, op, args, want) in cases {
        let engine = match &mut opened {
            Some((l, pool)) if *l == lib => pool,
            _ => {
                let pool = Pool::open(lib, &OpenOptions::default()).map_err(|e| e.to_string())?;
                &mut opened.insert((lib, pool)).1
            }
        };
        let cores = engine.loaded.default_cores();
        let done = call(engine, op, &args, Some(cores), options(Checks::NONE, false))
            .map_err(|e| e.to_string())?;
        let got = done
            .output
            .and_then(|t| t.to_f32())
            .ok_or("a Float output")?;
        if got != want {
            let i = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!(
                "{op}: out[{i}] = {}, reference {}",
                got[i], want[i]
            ));
        }
        let _ = writeln!(
            report,
            "launch     {op:<22} {cores} core(s)  {} f32  {:8.2} ms  matches reference",
            rows * cols,
            done.run.elapsed.as_secs_f64() * 1e3
        );
    }
    Ok([mlp.device_image, tiles.device_image]
        .into_iter()
        .flatten()
        .collect())
}

/// The demo's build setup: the host archive and headers, $CXX, no extra flags and no
/// device objects; a Pool image when `image` says where.
fn host_setup(o: &DemoOptions, image: Option<opbuild::DeviceImage>) -> opbuild::BuildSetup {
    opbuild::BuildSetup {
        archive: o.archive.clone(),
        data_model: opbuild::DataModel::Device,
        include: o.include.clone(),
        cxx: std::env::var("CXX").unwrap_or_else(|_| "g++".into()),
        flags: Default::default(),
        device_objects: None,
        device_image: image,
        xtensa: o.xtensa.clone(),
        core_runner: o.core_runner.clone(),
        on_compiled: None,
    }
}

/// `--check` at work: the gallery's multicore kernel that leaves the remainder
/// unwritten (examples/check-gallery) is caught, and its clean twin passes every check.
fn check_gallery(
    o: &DemoOptions,
    work: &std::path::Path,
    report: &mut String,
) -> Result<(), String> {
    let dir = o
        .examples
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join("check-gallery");
    let built = opbuild::build(&opbuild::OpBuildOptions {
        name: "gallery".into(),
        compute: vec![dir.join("faulty.cpp")],
        shape: vec![dir.join("shape.cpp")],
        build_directory: work.to_path_buf(),
        multicore: true,
        setup: host_setup(o, None),
    })
    .map_err(|e| format!("building examples/check-gallery: {e}"))?;
    let mut engine =
        Pool::open(&built.library, &OpenOptions::default()).map_err(|e| e.to_string())?;
    let n = 1003u64;
    let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let x = HostTensor::from_f32(vec![n], &x).map_err(|e| e.to_string())?;
    let args = [ArgValue::Tensor(x, Location::Hbm)];
    let mut checked = |op: &str| {
        call(
            &mut engine,
            op,
            &args,
            None,
            options(Checks::DEFAULT, false),
        )
        .map(|c| c.check.findings)
        .map_err(|e| format!("{op}: {e}"))
    };
    let found = checked("gallery::remainder")?;
    let caught = found.iter().any(|f| {
        f.check == Check::Init
            && f.ranges == [(1000, 1003)]
            && f.what == "never written by any core"
    });
    if !caught {
        return Err(format!(
            "--check missed the gallery's remainder bug: {found:?}"
        ));
    }
    let clean = checked("gallery::clean")?;
    if !clean.is_empty() {
        return Err(format!(
            "the gallery's clean kernel did not check clean: {clean:?}"
        ));
    }
    let _ = writeln!(
        report,
        "check      gallery::remainder on 8 cores, {n} f32 (examples/check-gallery):\n           {}\n           gallery::clean passes every check",
        found[0]
    );
    Ok(())
}

/// What the device path needs that is not here (the Xtensa g++, QEMU, the Xtensa archive,
/// the board); empty when it can run.
fn device_missing(o: &DemoOptions) -> Vec<String> {
    // The QEMU the Xtensa backend will start (beside the board, installed, or
    // $NRT_POOL_QEMU), not whichever one is on PATH.
    let qemu = nrt_pool_qemu::qemu_for(&o.device.board);
    let qemu_ok = std::process::Command::new(&qemu)
        .arg("--version")
        .output()
        .is_ok_and(|r| r.status.success());
    [
        (!o.xtensa.installed()).then(|| opbuild::XtensaTools::CXX.to_string()),
        (!qemu_ok).then(|| qemu.display().to_string()),
        (!o.device.archive.is_file()).then(|| o.device.archive.display().to_string()),
        (!o.device.board.is_file()).then(|| o.device.board.display().to_string()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The device path: the examples' Pool images (windowed Xtensa objects linked for the 8
/// cores, built with their host libraries) run by the engine on QEMU Xtensa cores, each
/// output compared byte for byte (stdout too) with the same launch on the host backend.
/// Reported UNSUPPORTED, loudly, where the Xtensa tools, QEMU or the board are missing.
fn device_examples(
    o: &DemoOptions,
    libs: &[PathBuf],
    missing: &[String],
    report: &mut String,
) -> Result<(), String> {
    if !missing.is_empty() {
        let _ = writeln!(
            report,
            "device     UNSUPPORTED: the Xtensa path needs {} (make tools; make customop-archives)",
            missing.join(", ")
        );
        return Ok(());
    }
    if libs.len() != 3 {
        return Err(format!("{} Pool images built, 3 expected", libs.len()));
    }
    let _ = writeln!(
        report,
        "device     3 Pool images (libexample_ops, libmlp_ops, libtiles), built with the host libraries: 8 windowed Xtensa core images each, org 0x84000000 + i*0x200000"
    );
    let cases = device_cases()?;
    let mut loaded = usize::MAX;
    let mut last = None;
    let small = OpenOptions {
        hbm_bytes: 64 << 20,
        board: Some(o.device.board.clone()),
        ..OpenOptions::default()
    };
    // Each Pool image runs on Xtensa cores, and the parity check runs its host build
    // beside it and compares output bytes and stdout.
    let mut xt: Option<Pool> = None;
    for (lib, kernel, args, cores) in cases {
        let xt = match &mut xt {
            Some(pool) if lib == loaded => pool,
            _ => {
                loaded = lib;
                xt.insert(Pool::open(&libs[lib], &small).map_err(|e| e.to_string())?)
            }
        };
        let cores = cores.unwrap_or_else(|| xt.loaded.default_cores());
        let parity = Checks::parse("parity").map_err(|e| e.to_string())?;
        let d = call(xt, kernel, &args, Some(cores), options(parity, false))
            .map_err(|e| format!("{kernel} (xtensa): {e}"))?;
        let ms = d.phases.run.as_secs_f64() * 1e3;
        if let Some(why) = d.check.findings.first().map(ToString::to_string) {
            return Err(format!(
                "{kernel}: the Xtensa cores differ from the host build: {why}"
            ));
        }
        if let Some(note) = d.check.notes.first() {
            return Err(format!("{kernel}: {note}"));
        }
        let _ = writeln!(
            report,
            "xtensa     {kernel:<22} {cores} QEMU core(s) {:>6} element(s) {ms:8.2} ms  agrees with the host backend{}",
            d.spec.shape.iter().product::<u64>(),
            if d.run.stdout.is_empty() { "" } else { " (stdout too)" }
        );
        last = Some((kernel, args, cores));
    }
    // One profile (--profile): the last example again, instructions by function and core.
    if let (Some((kernel, args, cores)), Some(xt)) = (last, xt.as_mut()) {
        call(xt, kernel, &args, Some(cores), options(Checks::NONE, true))
            .map_err(|e| format!("{kernel} (xtensa, profiled): {e}"))?;
        let p = xt
            .take_profile()
            .ok_or_else(|| format!("{kernel}: the profiled launch gave no profile"))?;
        if p.top().is_empty() {
            return Err(format!("{kernel}: the profile counted no instructions"));
        }
        for line in p.report(5).lines().take(8) {
            let _ = writeln!(report, "profile    {line}");
        }
        // Written as `nrt-pool run --profile=FILE.svg` writes it.
        let views = nrt_pool_open::views::LaunchViews {
            trace: None,
            profile: Some(o.flame_graph.clone()),
        };
        views
            .write(xt, Some(&p), &Default::default())
            .map_err(|e| format!("--flame-graph: {e}"))?;
        let shown = std::fs::canonicalize(&o.flame_graph).unwrap_or_else(|_| o.flame_graph.clone());
        let _ = writeln!(
            report,
            "profile    flame graph (all cores, then each; open it in a browser): {}",
            shown.display()
        );
    }
    Ok(())
}

/// One call of `kernel` through the opened pool on `cores` (None: the library's default),
/// its output derived by the engine and brought back to the host, with `options`.
fn call(
    e: &mut Pool,
    kernel: &str,
    args: &[ArgValue<'_>],
    cores: Option<usize>,
    options: CallOptions,
) -> Result<Called, EmuError> {
    let target = e.target(kernel)?;
    e.call(Call {
        target: &target,
        args: args.iter().map(ArgValue::view).collect(),
        output: Output::Derive,
        to: Destination::Host,
        cores,
        options,
    })
}

/// A call's options: these checks, profiled or not.
fn options(checks: Checks, profile: bool) -> CallOptions {
    CallOptions {
        checks: Some(checks),
        profile: Some(profile),
        ..CallOptions::default()
    }
}

/// A tensor argument, in HBM.
fn hbm(t: HostTensor) -> ArgValue<'static> {
    ArgValue::Tensor(t, Location::Hbm)
}

/// A `float` scalar argument (a schema kernel's).
fn f32(v: f32) -> ArgValue<'static> {
    ArgValue::Scalar(
        nrt_pool_engine::tensor::DType::F32,
        v.to_le_bytes().to_vec(),
    )
}

/// The device path's cases: (Pool image, kernel or op, arguments, cores; `None`: the
/// library's default).
fn device_cases() -> Result<Vec<DeviceCase>, String> {
    let n = 4096u64;
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 97.0)
        .collect();
    let t = |v: &[f32]| HostTensor::from_f32(vec![n / 64, 64], v).map_err(|e| e.to_string());
    let flat = HostTensor::from_f32(vec![n], &x).map_err(|e| e.to_string())?;
    let ints = HostTensor::new(
        nrt_pool_engine::tensor::DType::I32,
        vec![64],
        (0..64i32).flat_map(|v| (v * 10).to_le_bytes()).collect(),
    )
    .map_err(|e| e.to_string())?;
    Ok(vec![
        (
            0,
            "scale_add",
            vec![hbm(flat.clone()), f32(1.5), f32(-2.25)],
            Some(1),
        ),
        (
            0,
            "scale_add_mc",
            vec![hbm(flat), f32(1.5), f32(-2.25)],
            Some(8),
        ),
        (0, "hello", vec![hbm(ints)], Some(8)),
        (1, "mlp_ops::relu_forward", vec![hbm(t(&x)?)], None),
        (
            1,
            "mlp_ops::axpb",
            vec![hbm(t(&x)?), f32(2.0), f32(0.5)],
            None,
        ),
        (1, "mlp_ops::describe", vec![hbm(t(&x)?)], None),
        (2, "tiles::relu", vec![hbm(t(&x)?)], None),
    ])
}

/// One of the device path's cases.
type DeviceCase = (usize, &'static str, Vec<ArgValue<'static>>, Option<usize>);
