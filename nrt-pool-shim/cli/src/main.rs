//! `nrt-pool`: develop and run GPSIMD custom ops without hardware.
//!
//!   nrt-pool list LIB.so
//!       the kernels an op library registers (and their signatures, if it carries a schema)
//!   nrt-pool run LIB.so KERNEL [--arg V]... --out OUT.npy [--cores N] [--timeout SECS]
//!                [--out-dtype T --out-shape D0,D1,..]
//!       runs a kernel on the emulated Pool engine; V is X.npy (a tensor in HBM),
//!       X.npy@sbuf (in SBUF), TYPE:VALUE (a scalar) or a number typed by the schema
//!   nrt-pool build --schema S --out LIB.so [--device-objects DIR] SRC...
//!       the op build helper: wrapper, get_func_* table, host library, and, when asked
//!       for, Xtensa device objects (needs the Xtensa g++)
//!   nrt-pool bringup [--provider PATH] [--cayman-library ELF]
//!       libnrt's microcode sequence on the simulated device
//!
//!   nrt-pool demo [--provider PATH] [--examples DIR]
//!       the whole chain: provider bring-up, the examples built, registered through the
//!       seam and run on the emulated engine, checked against a reference
//!
//! Exit status: 0 success, 1 error, 2 usage, 3 device fault.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use nrt_pool_build as opbuild;
use nrt_pool_cli::npy;
use nrt_pool_engine::tensor::{DType, Location};
use nrt_pool_engine::{EmuError, Launch, LaunchArg, OutputSpec, PoolEngine, PoolImage};
use nrt_pool_schema::{ArgKind, ParamKind};
use nrt_sim_device::bringup;

/// The longest `--timeout`: a day (a launch longer than that is a hang).
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

const USAGE: &str = "usage:
  nrt-pool list LIB.so
  nrt-pool run LIB.so KERNEL [--arg X.npy|X.npy@sbuf|TYPE:VALUE|NUMBER]... --out OUT.npy
               [--cores 1..8] [--timeout SECS] [--out-dtype T --out-shape D0,D1,...]
  nrt-pool build --schema FILE --out LIB.so [--device-objects DIR]
                 [--archive A] [--include DIR] SOURCES...
  nrt-pool bringup [--provider PATH/libnrtucode_extisa.so] [--cayman-library LIB.so]
  nrt-pool demo [--provider PATH] [--examples DIR]";

/// Files `make` puts beside this executable (target/<profile>/) and in the repository.
fn beside_exe(rel: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(rel)))
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .unwrap_or_else(|| PathBuf::from(rel))
}

/// The provider, the host device archive and the headers where `make` puts them.
fn default_provider() -> PathBuf {
    beside_exe("libnrtucode_extisa.so")
}

/// The installed layout (`make install`: PREFIX/bin beside PREFIX/lib/gpsimd-open and
/// PREFIX/include/gpsimd-open) first, else the repository's build tree.
fn default_archive() -> PathBuf {
    let installed = beside_exe("../lib/gpsimd-open/x86_64-unknown-linux-gnu/libneuroncustomop.a");
    if installed.exists() {
        return installed;
    }
    beside_exe("../customop/x86_64-unknown-linux-gnu/release/libneuroncustomop.a")
}

fn default_include() -> PathBuf {
    let installed = beside_exe("../include/gpsimd-open");
    if installed.join("torch/torch.h").exists() {
        return installed;
    }
    beside_exe("../../include")
}

/// `--option value` pairs (subcommands whose options all take a value); a missing value is
/// reported when the option is known.
fn option_pairs(args: &[String]) -> impl Iterator<Item = (&str, Result<&str, Failure>)> {
    args.chunks(2).map(|p| {
        let v = p
            .get(1)
            .map(String::as_str)
            .ok_or_else(|| Failure::Usage(format!("{} needs a value", p[0])));
        (p[0].as_str(), v)
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    let r = match args.first().map(String::as_str) {
        Some("list") => list(rest),
        Some("run") => run(rest),
        Some("build") => build(rest),
        Some("bringup") => bringup_cmd(rest),
        Some("demo") => demo(rest),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(Failure::Usage(String::new())),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            if !m.is_empty() {
                eprintln!("nrt-pool: {m}");
            }
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Error(m)) => {
            eprintln!("nrt-pool: {m}");
            ExitCode::from(1)
        }
        Err(Failure::Fault(m)) => {
            eprintln!("nrt-pool: {m}");
            ExitCode::from(3)
        }
    }
}

enum Failure {
    Usage(String),
    Error(String),
    Fault(String),
}

impl From<EmuError> for Failure {
    fn from(e: EmuError) -> Failure {
        match e {
            EmuError::Fault(f) => {
                // What core 0 printed before the fault is part of the report.
                echo(&f.stdout, &f.stderr);
                Failure::Fault(f.to_string())
            }
            // A library whose loading or start code faults: a device fault too.
            EmuError::StartFault { ref fault, .. } => {
                echo(&fault.stdout, &fault.stderr);
                Failure::Fault(e.to_string())
            }
            e => Failure::Error(e.to_string()),
        }
    }
}

/// The kernel's output, byte for byte (device text is not repaired into UTF-8).
fn echo(stdout: &[u8], stderr: &[u8]) {
    use std::io::Write;
    // Best effort, as print! is: a closed stdout must not turn a launch into a failure.
    let _ = std::io::stdout().write_all(stdout);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(stderr);
}

fn engine_with(lib: &Path) -> Result<PoolEngine, Failure> {
    let mut e = PoolEngine::new(nrt_pool_engine::DEFAULT_HBM_BYTES, PoolImage::default())?;
    e.load(lib)?;
    Ok(e)
}

fn list(args: &[String]) -> Result<(), Failure> {
    let [lib] = args else {
        return Err(Failure::Usage("list takes one library".into()));
    };
    let e = engine_with(Path::new(lib))?;
    if let Some(ops) = e.neuron_library() {
        for op in &ops.ops {
            let args: Vec<&str> = op.args.iter().map(|a| a.cxx()).collect();
            println!("{}::{}({})", ops.namespace, op.name, args.join(", "));
        }
        return Ok(());
    }
    let l = e.library().expect("loaded");
    for k in e.kernels() {
        match l.signature(k) {
            Some(sig) => println!("{sig}"),
            None => println!("{k}"),
        }
    }
    Ok(())
}

/// `nrt-pool run`'s options.
struct RunOptions {
    lib: String,
    kernel: String,
    values: Vec<String>,
    out: PathBuf,
    /// None: the library's default (8 for a multicore library, else 1).
    cores: Option<usize>,
    timeout: Option<Duration>,
    out_dtype: Option<DType>,
    out_shape: Option<Vec<u64>>,
}

fn parse_run(args: &[String]) -> Result<RunOptions, Failure> {
    let (Some(lib), Some(kernel)) = (args.first(), args.get(1)) else {
        return Err(Failure::Usage("run needs LIB.so and KERNEL".into()));
    };
    let mut values = Vec::new();
    let (mut out, mut cores, mut timeout, mut out_dtype, mut out_shape) =
        (None, None, None, None, None);
    let mut it = args[2..].iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| Failure::Usage(format!("{a} needs a value")))
        };
        match a.as_str() {
            "--arg" => values.push(val()?),
            "--out" => out = Some(PathBuf::from(val()?)),
            "--cores" => {
                let v = val()?;
                cores = Some(
                    v.parse()
                        .ok()
                        .filter(|c| (1..=8).contains(c))
                        .ok_or_else(|| Failure::Usage(format!("--cores {v}: 1 to 8")))?,
                );
            }
            "--timeout" => {
                let v = val()?;
                timeout = Some(
                    v.parse::<f64>()
                        .ok()
                        .filter(|s| *s > 0.0 && *s <= MAX_TIMEOUT_SECS)
                        .map(Duration::from_secs_f64)
                        .ok_or_else(|| {
                            Failure::Usage(format!(
                                "--timeout {v}: a number of seconds above 0 and at most {MAX_TIMEOUT_SECS}"
                            ))
                        })?,
                );
            }
            "--out-dtype" => {
                let v = val()?;
                out_dtype =
                    Some(DType::from_name(&v).ok_or_else(|| {
                        Failure::Usage(format!("--out-dtype {v}: unknown dtype"))
                    })?);
            }
            "--out-shape" => {
                let v = val()?;
                let dims: Option<Vec<u64>> = v
                    .split(',')
                    .map(|d| d.trim().parse().ok().filter(|&d| d > 0))
                    .collect();
                out_shape = Some(dims.ok_or_else(|| {
                    Failure::Usage(format!(
                        "--out-shape {v}: D0,D1,... with each dimension a whole number above 0"
                    ))
                })?);
            }
            other => return Err(Failure::Usage(format!("unknown option {other}"))),
        }
    }
    let out = out.ok_or_else(|| Failure::Usage("run needs --out OUT.npy".into()))?;
    Ok(RunOptions {
        lib: lib.clone(),
        kernel: kernel.clone(),
        values,
        out,
        cores,
        timeout,
        out_dtype,
        out_shape,
    })
}

fn run(args: &[String]) -> Result<(), Failure> {
    let RunOptions {
        lib,
        kernel,
        values,
        out,
        cores,
        timeout,
        out_dtype,
        out_shape,
    } = parse_run(args)?;
    let kernel = &kernel;
    let mut e = engine_with(Path::new(&lib))?;
    if let Some(t) = timeout {
        e.timeout = t;
    }
    let op = e
        .neuron_library()
        .map(|l| (l.namespace.clone(), l.op(kernel).cloned()));
    match &op {
        Some((ns, None)) => {
            let known = e.kernels().iter().map(|k| format!("{ns}::{k}")).collect();
            return Err(EmuError::UnknownKernel {
                kernel: kernel.clone(),
                known,
            }
            .into());
        }
        None if !e.kernels().iter().any(|k| k == kernel) => {
            return Err(EmuError::UnknownKernel {
                kernel: kernel.clone(),
                known: e.kernels().to_vec(),
            }
            .into());
        }
        _ => {}
    }
    let op = op.and_then(|(_, o)| o);
    let sig = e.library().and_then(|l| l.signature(kernel)).cloned();
    let mut launch_args = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let (want, what) = match (&op, sig.as_ref().and_then(|s| s.params.get(i))) {
            (Some(op), _) => match op.args.get(i) {
                Some(ArgKind::Tensor) => {
                    (Want::Tensor(None), format!("argument {i} (torch::Tensor)"))
                }
                Some(k) => (Want::OpScalar(*k), format!("argument {i} ({k})")),
                None => (Want::Any, format!("argument {i}")),
            },
            (None, Some(p)) => (
                match &p.kind {
                    ParamKind::Tensor { dtype, .. } => Want::Tensor(Some(*dtype)),
                    ParamKind::Scalar(dt) => Want::Scalar(*dt),
                },
                format!("argument {i} ({} {})", p.kind, p.name),
            ),
            (None, None) => (Want::Any, format!("argument {i}")),
        };
        launch_args.push(parse_arg(v, want).map_err(|f| match f {
            Failure::Error(m) => Failure::Error(format!("{what}: {m}")),
            other => other,
        })?);
    }
    let output = match (out_dtype, out_shape) {
        (Some(dtype), Some(shape)) => OutputSpec {
            dtype,
            shape,
            location: Location::Hbm,
        },
        (None, None) if op.is_some() => e.op_output(kernel, &launch_args)?,
        (None, None) => e.output_for(kernel, &launch_args)?,
        _ => {
            return Err(Failure::Usage(
                "give both --out-dtype and --out-shape".into(),
            ))
        }
    };
    let cores = cores.unwrap_or_else(|| e.default_cores());
    let done = e.launch(&Launch {
        kernel: kernel.clone(),
        args: launch_args,
        output,
        cores,
    })?;
    echo(&done.stdout, &done.stderr);
    if done.stdio_dropped > 0 {
        eprintln!(
            "nrt-pool: {} bytes of kernel output did not fit the stdio ring",
            done.stdio_dropped
        );
    }
    npy::write(&out, &done.output).map_err(|e| Failure::Error(e.to_string()))?;
    eprintln!(
        "ok: {kernel} on {cores} core(s) in {:.3} ms -> {} ({} {:?})",
        done.elapsed.as_secs_f64() * 1e3,
        out.display(),
        done.output.dtype,
        done.output.shape
    );
    Ok(())
}

/// What a parameter takes, as far as the library says.
#[derive(Clone, Copy)]
enum Want {
    /// Nothing known: tensors from .npy files, scalars as TYPE:VALUE.
    Any,
    /// A tensor (of this dtype, when the schema says).
    Tensor(Option<DType>),
    /// A scalar of this dtype (schema libraries).
    Scalar(DType),
    /// A NEURON_LIBRARY op's scalar: double (passed as f32: the device has no f64),
    /// int64_t (i64), or torch::Scalar (i64 for a whole number, else f32).
    OpScalar(ArgKind),
}

fn parse_arg(v: &str, want: Want) -> Result<LaunchArg, Failure> {
    // TYPE:FILE.npy reads a tensor as TYPE (bf16 travels in .npy files as raw uint16).
    let (want, v) = match v.split_once(':') {
        Some((t, f)) if f.contains(".npy") => match DType::from_name(t) {
            Some(dt) => (Want::Tensor(Some(dt)), f),
            None => return Err(Failure::Usage(format!("{v}: unknown dtype {t}"))),
        },
        _ => (want, v),
    };
    let (path, loc) = match v.rsplit_once('@') {
        Some((p, l)) if p.ends_with(".npy") => (
            p,
            Location::from_name(l)
                .ok_or_else(|| Failure::Usage(format!("{v}: location is hbm or sbuf")))?,
        ),
        _ => (v, Location::Hbm),
    };
    if path.ends_with(".npy") {
        let hint = match want {
            Want::Tensor(dtype) => dtype,
            _ => None,
        };
        let t = npy::read(Path::new(path), hint).map_err(|e| match (e, hint) {
            (npy::NpyError::Dtype { path, descr, .. }, Some(want)) => Failure::Error(format!(
                "{path} holds '{descr}' elements, the parameter is {want} ('{}' in a .npy file); convert it, e.g. x.astype(np.{})",
                want.npy_descr(),
                want.numpy_name()
            )),
            (e, _) => Failure::Error(e.to_string()),
        })?;
        if let Some(want) = hint {
            if t.dtype != want {
                return Err(Failure::Error(format!(
                    "{path} holds {} ('{}') elements, the parameter is {want} ('{}'); convert it, e.g. x.astype(np.{})",
                    t.dtype,
                    t.dtype.npy_descr(),
                    want.npy_descr(),
                    want.numpy_name()
                )));
            }
        }
        return Ok(LaunchArg::Tensor(t, loc));
    }
    let (dtype, text) = match (v.split_once(':'), want) {
        (Some((t, x)), _) => (
            DType::from_name(t).ok_or_else(|| Failure::Usage(format!("{v}: unknown dtype {t}")))?,
            x,
        ),
        (None, Want::Scalar(dt)) => (dt, v),
        (None, Want::OpScalar(ArgKind::Double)) => (DType::F32, v),
        (None, Want::OpScalar(ArgKind::Long)) => (DType::I64, v),
        (None, Want::OpScalar(_)) if v.trim().parse::<i64>().is_ok() => (DType::I64, v),
        (None, Want::OpScalar(_)) => (DType::F32, v),
        (None, Want::Tensor(_)) => {
            return Err(Failure::Error(format!(
                "{v}: this parameter is a tensor; pass a .npy file"
            )))
        }
        (None, Want::Any) => {
            return Err(Failure::Usage(format!(
                "{v}: the library has no schema for this argument; write TYPE:VALUE"
            )))
        }
    };
    let bytes = dtype
        .parse_scalar(text)
        .ok_or_else(|| Failure::Error(format!("{v}: not a {dtype} value")))?;
    Ok(LaunchArg::Scalar(dtype, bytes))
}

fn build(args: &[String]) -> Result<(), Failure> {
    if args.iter().any(|a| a == "--name") {
        return build_ops(args);
    }
    let mut o = opbuild::BuildOptions {
        schema: PathBuf::new(),
        sources: Vec::new(),
        out: PathBuf::new(),
        archive: default_archive(),
        include: default_include(),
        device_objects: None,
        cxx: std::env::var("CXX").unwrap_or_else(|_| "g++".into()),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .map(PathBuf::from)
                .ok_or_else(|| Failure::Usage(format!("{a} needs a value")))
        };
        match a.as_str() {
            "--schema" => o.schema = val()?,
            "--out" => o.out = val()?,
            "--archive" => o.archive = val()?,
            "--include" => o.include = val()?,
            "--device-objects" => o.device_objects = Some(val()?),
            // Device objects are built only when asked for; kept for older scripts.
            "--no-device-objects" => o.device_objects = None,
            s if s.starts_with("--") => return Err(Failure::Usage(format!("unknown option {s}"))),
            s => o.sources.push(s.into()),
        }
    }
    if o.schema.as_os_str().is_empty() || o.out.as_os_str().is_empty() || o.sources.is_empty() {
        return Err(Failure::Usage(
            "build needs --schema, --out and sources".into(),
        ));
    }
    let r = opbuild::build(&o).map_err(|e| Failure::Error(e.to_string()))?;
    for k in &r.kernels {
        println!("{k}");
    }
    if let Some(objs) = &r.device {
        println!("device objects: {}", objs.len());
    }
    println!("built {}", r.library.display());
    Ok(())
}

/// `nrt-pool build --name NAME --compute SRC... --shape SRC... [--multicore]
/// [--build-directory DIR]`: an op library in the Custom C++ Operators style, as
/// `custom_op.load` builds it.
fn build_ops(args: &[String]) -> Result<(), Failure> {
    let mut o = opbuild::OpBuildOptions {
        name: String::new(),
        compute: Vec::new(),
        shape: Vec::new(),
        build_directory: PathBuf::from("."),
        multicore: false,
        archive: default_archive(),
        include: default_include(),
        cxx: std::env::var("CXX").unwrap_or_else(|_| "g++".into()),
        device_objects: None,
    };
    // --compute and --shape take every following value up to the next option.
    let mut list: Option<&str> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| Failure::Usage(format!("{a} needs a value")))
        };
        match a.as_str() {
            "--name" => o.name = val()?,
            "--build-directory" => o.build_directory = val()?.into(),
            "--archive" => o.archive = val()?.into(),
            "--include" => o.include = val()?.into(),
            "--device-objects" => o.device_objects = Some(val()?.into()),
            "--multicore" => o.multicore = true,
            "--verbose" => {}
            "--compute" | "--shape" => {
                list = Some(if a == "--compute" { "compute" } else { "shape" })
            }
            s if s.starts_with("--") => return Err(Failure::Usage(format!("unknown option {s}"))),
            s => match list {
                Some("compute") => o.compute.push(s.into()),
                Some(_) => o.shape.push(s.into()),
                None => {
                    return Err(Failure::Usage(format!(
                        "{s}: name sources after --compute or --shape"
                    )))
                }
            },
        }
    }
    if o.name.is_empty() || o.compute.is_empty() || o.shape.is_empty() {
        return Err(Failure::Usage(
            "build needs --name, --compute SRC... and --shape SRC...".into(),
        ));
    }
    let r = opbuild::build_op_library(&o).map_err(|e| Failure::Error(e.to_string()))?;
    for op in &r.ops.ops {
        let args: Vec<&str> = op.args.iter().map(|a| a.cxx()).collect();
        println!(
            "{}::{}({}) -> torch::Tensor  [kernel {}]",
            r.ops.namespace,
            op.name,
            args.join(", "),
            op.kernel
        );
    }
    if let Some(objs) = &r.device {
        println!("device objects: {}", objs.len());
    }
    println!(
        "built {}{}",
        r.library.display(),
        if r.ops.multicore { " (multicore)" } else { "" }
    );
    Ok(())
}

fn bringup_cmd(args: &[String]) -> Result<(), Failure> {
    let mut opts = bringup::Options {
        provider: default_provider(),
        cayman_library: None,
    };
    for (a, v) in option_pairs(args) {
        match a {
            "--provider" => opts.provider = v?.into(),
            "--cayman-library" => opts.cayman_library = Some(v?.into()),
            other => return Err(Failure::Usage(format!("unknown option {other}"))),
        }
    }
    let report = bringup::run(&opts).map_err(|e| Failure::Error(format!("bringup: {e}")))?;
    print!("{report}");
    println!(
        "ok: {} provider log lines, {} load / {} unload record(s), {} staged Cayman library, {} device memhandles left",
        report.provider_log_lines,
        report.load_records.len() + report.cayman_load_records.len(),
        report.unload_records.len() + report.cayman_unload_records.len(),
        report.cayman_load_records.len(),
        report.live_memhandles_after
    );
    Ok(())
}

fn demo(args: &[String]) -> Result<(), Failure> {
    let mut o = nrt_pool_cli::demo::DemoOptions {
        provider: default_provider(),
        examples: beside_exe("../../examples/ops"),
        archive: default_archive(),
        include: default_include(),
    };
    for (a, v) in option_pairs(args) {
        match a {
            "--provider" => o.provider = v?.into(),
            "--examples" => o.examples = v?.into(),
            other => return Err(Failure::Usage(format!("unknown option {other}"))),
        }
    }
    let report = nrt_pool_cli::demo::run(&o).map_err(|e| Failure::Error(format!("demo: {e}")))?;
    print!("{report}");
    Ok(())
}
