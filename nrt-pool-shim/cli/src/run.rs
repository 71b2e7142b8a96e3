//! `nrt-pool run`: arguments from `.npy` files and TYPE:VALUE texts, one call through the
//! engine's call path per launch (`--repeat`), the output to a `.npy` file, the report and
//! `--timings`.

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nrt_pool_cli::npy;
use nrt_pool_cli::progress::Progress;
use nrt_pool_engine::check::{CheckReport, Checks, Suppressions};
use nrt_pool_engine::debug;
use nrt_pool_engine::schema::{ArgKind, ParamKind};
use nrt_pool_engine::tensor::{DType, Location};
use nrt_pool_engine::{
    ArgValue, Arguments, Call, CallOptions, Called, Destination, EmuError, LaunchPhases, Output,
    OutputSpec, Target,
};
use nrt_pool_open::environment::Asked;
use nrt_pool_open::sarif::SarifLog;
use nrt_pool_open::views::{LaunchViews, ViewError};
use nrt_pool_open::{Environment, Pool};
use serde_json::json;

use super::{echo, engine_with, CliFailure};
use crate::cli::RunArgs;

/// `run --timings`: wall time from start to output file, by phase.
struct Timings {
    started: Instant,
    last: Instant,
    /// Time already attributed inside the current lap (the launch's own phases).
    inside: Duration,
    rows: Vec<(&'static str, Duration)>,
}

impl Timings {
    fn new(started: Instant) -> Timings {
        Timings {
            started,
            last: started,
            inside: Duration::ZERO,
            rows: Vec::new(),
        }
    }

    /// A phase measured elsewhere, inside the current lap.
    fn add(&mut self, what: &'static str, d: Duration) {
        self.inside += d;
        self.rows.push((what, d));
    }

    /// The time since the last lap (less what `add` attributed) is `what`'s.
    fn lap(&mut self, what: &'static str) {
        let now = Instant::now();
        let d = (now - self.last).saturating_sub(self.inside);
        self.rows.push((what, d));
        self.last = now;
        self.inside = Duration::ZERO;
    }

    fn total(&self) -> Duration {
        self.last - self.started
    }

    fn print(&self) {
        let total = self.total().as_secs_f64().max(1e-9);
        for (what, d) in &self.rows {
            eprintln!(
                "{what:<48} {:>10.3} ms {:>5.1}%",
                d.as_secs_f64() * 1e3,
                100.0 * d.as_secs_f64() / total
            );
        }
        eprintln!("{:<48} {:>10.3} ms", "total", total * 1e3);
    }

    /// The phases in order, then the total.
    fn json(&self) -> serde_json::Value {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let rows = self
            .rows
            .iter()
            .map(|(what, d)| json!({"phase": what, "ms": ms(*d)}));
        json!({"phases": rows.collect::<Vec<_>>(), "total": ms(self.total())})
    }
}

pub(crate) fn run(a: RunArgs) -> Result<(), CliFailure> {
    let RunArgs {
        lib,
        isa,
        kernel,
        args: values,
        out,
        cores,
        timeout,
        out_dtype,
        out_shape,
        json,
        repeat,
        timings,
        check,
        suppress,
        report: sarif,
        all_cores_stdio,
        gdb,
        profile,
        trace,
    } = a;
    let mut clock = Timings::new(Instant::now());
    let given = given_output(out_dtype, out_shape)?;
    let asked = Asked {
        checks: check
            .as_deref()
            .map(|list| Checks::parse(list).map_err(|m| CliFailure::Usage(format!("--check: {m}"))))
            .transpose()?,
        all_cores_stdio,
        debug: gdb.map(|core| debug::printing_request(usize::from(core), "nrt-pool")),
    };
    let (mut e, checks) = open_for_run(&lib, isa, asked, timeout, suppress.as_deref())?;
    clock.lap("library load (probed in a core process)");
    let target = e.target(&kernel)?;
    let args = read_args(&mut e, &target, &values)?;
    clock.lap("input read (.npy)");
    // The output, found once (the op's shape function or the kernel's schema, checked
    // against --out-dtype/--out-shape where given); every launch then passes it as known.
    let output = e.output(&target, args.iter().map(ArgValue::view).collect(), given)?;
    clock.lap("output shape");
    // Inputs read straight into device memory make the output a device tensor too, written
    // to its file from there: no host copy of either (nothing to copy in or out).
    let on_device =
        output.location == Location::Hbm && !args.iter().any(|a| matches!(a, ArgValue::Tensor(..)));
    let device_out = match on_device {
        true => Some(e.tensors.alloc_device(output.dtype, output.shape.clone())?),
        false => None,
    };
    let launches = Launches {
        target: &target,
        cores: cores.map_or_else(|| e.loaded.default_cores(), usize::from),
        args,
        output,
        device_out,
        options: CallOptions {
            profile: Some(profile.is_some() || trace.is_some()),
            ..CallOptions::default()
        },
        sarif: RefCell::new(SarifLog::default()),
        fault: RefCell::new(None),
    };
    let ran = launches.run(&mut e, repeat, json, &mut clock);
    // The SARIF log and the suppressions' summary, also for a launch that faulted.
    let suppressed = launches.ci_reports(&e, sarif.as_deref(), json)?;
    let views = LaunchViews {
        trace: trace.clone(),
        profile: profile
            .as_ref()
            .filter(|f| !f.is_empty())
            .map(PathBuf::from),
    };
    if let Some(f) = launches.fault.borrow().as_ref() {
        views.write_fault(f).map_err(view_failure)?;
    }
    let (done, elapsed) = ran?;
    let written = match (&done.output, &launches.device_out) {
        (Some(t), _) => npy::write(&out, t),
        (None, Some(d)) => npy::write_device(&out, &e, d),
        (None, None) => unreachable!("a launch gives a host output or writes a device one"),
    };
    written.map_err(|e| CliFailure::Error(e.to_string()))?;
    clock.lap(if launches.device_out.is_some() {
        "output write (.npy) from device memory"
    } else {
        "output write (.npy)"
    });
    // The output is in place and the process ends after the report, so the engine is not
    // torn down core by core (each waited for in turn): host cores die with this process
    // (PDEATHSIG), QEMU cores end when their channel closes, and the kernel frees device
    // memory.
    let profiled = e.take_profile();
    views
        .write(&e, profiled.as_ref(), &done.check)
        .map_err(view_failure)?;
    std::mem::forget(e);
    if timings && !json {
        clock.print();
    }
    let report = Report {
        launches: &launches,
        done: &done,
        elapsed: &elapsed,
        out: &out,
    };
    if json {
        let mut doc = report.json(timings.then(|| clock.json()), checks, profiled.as_ref());
        if suppress.is_some() {
            doc["suppressions"] = json!(suppressed);
        }
        println!("{doc}");
    } else {
        report.print(profiled.as_ref());
    }
    checked(done.check.findings.len(), done.check.suppressed.len())
}

/// The pool a run launches on: `lib` on the cores asked for, with the flags' and the
/// environment's call defaults, its timeout and suppressions; and the checks it makes.
fn open_for_run(
    lib: &Path,
    isa: Option<crate::cli::IsaArg>,
    asked: Asked,
    timeout: Option<f64>,
    suppress: Option<&Path>,
) -> Result<(Pool, Checks), CliFailure> {
    let env =
        Environment::read_after("nrt-pool", asked).map_err(|e| CliFailure::Usage(e.to_string()))?;
    let checks = env.checks;
    let mut e = engine_with(lib, isa, Some(env))?;
    // The process's engine waits this long for its cores (shape functions too).
    if let Some(t) = timeout {
        e.defaults.timeout = Duration::from_secs_f64(t);
    }
    if let Some(file) = suppress {
        let s = Suppressions::read(file)
            .map_err(|err| CliFailure::Usage(format!("--suppress: {err}")))?;
        e.set_suppressions(Some(s));
    }
    Ok((e, checks))
}

/// A view that could not be written, named by its flag.
fn view_failure(e: ViewError) -> CliFailure {
    CliFailure::Error(format!("--{e}"))
}

/// What `--out-dtype` and `--out-shape` say of the output (both or neither).
fn given_output(
    dtype: Option<String>,
    shape: Option<crate::cli::Shape>,
) -> Result<Output, CliFailure> {
    let dtype = match dtype {
        Some(t) => Some(DType::from_name(&t).ok_or_else(|| {
            CliFailure::Usage(format!(
                "--out-dtype {t}: one of {}",
                DType::ALL.map(DType::name).join(" ")
            ))
        })?),
        None => None,
    };
    match (dtype, shape.map(|s| s.0)) {
        (Some(dtype), Some(shape)) => Ok(Output::Stated(OutputSpec {
            dtype,
            shape,
            location: Location::Hbm,
        })),
        (None, None) => Ok(Output::Derive),
        _ => Err(CliFailure::Usage(
            "give both --out-dtype and --out-shape".into(),
        )),
    }
}

/// The call's arguments from their texts (`.npy` files, TYPE:VALUE), each read as the
/// kernel's schema or the op's signature takes it.
fn read_args<'a>(
    e: &mut Pool,
    target: &Target,
    values: &[String],
) -> Result<Vec<ArgValue<'a>>, CliFailure> {
    let (op, sig) = (target.op_args(), target.signature());
    let mut args = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let (want, what) = match (op, sig.and_then(|s| s.params.get(i))) {
            (Some(op), _) => match op.get(i) {
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
        args.push(parse_arg(v, want, e).map_err(|f| match f {
            CliFailure::Error(m) => CliFailure::Error(format!("{what}: {m}")),
            other => other,
        })?);
    }
    Ok(args)
}

/// The launches `run` makes: one call each, with the output found once.
struct Launches<'a> {
    target: &'a Target,
    cores: usize,
    args: Vec<ArgValue<'a>>,
    output: OutputSpec,
    /// The output's device tensor, when inputs and output stay in device memory.
    device_out: Option<nrt_pool_engine::DeviceTensor>,
    options: CallOptions,
    /// The last launch's findings (or fault) as SARIF, for `--report`.
    sarif: RefCell<SarifLog>,
    /// The last launch's fault, for `--trace`.
    fault: RefCell<Option<nrt_pool_engine::DeviceFault>>,
}

impl Launches<'_> {
    /// One launch.
    fn once(&self, e: &mut Pool) -> Result<Called, EmuError> {
        let to = match &self.device_out {
            Some(d) => Destination::Device(d.clone()),
            None => Destination::Host,
        };
        let c = e.call(Call {
            target: self.target,
            args: self.args.iter().map(ArgValue::view).collect(),
            output: Output::Derived(self.output.clone(), Arguments::Validate),
            to,
            cores: Some(self.cores),
            options: self.options.clone(),
        });
        let mut log = SarifLog::default();
        match &c {
            Ok(c) => log.add_report(&c.check, e.suppressions()),
            Err(EmuError::Fault(f)) => {
                log.add_fault(f);
                *self.fault.borrow_mut() = Some((**f).clone());
            }
            Err(_) => {}
        }
        *self.sarif.borrow_mut() = log;
        let mut c = c?;
        // With inputs and output in device memory nothing is copied in or out: the whole
        // launch is its run on the cores (as --timings has always reported it).
        if self.device_out.is_some() {
            c.phases = LaunchPhases {
                run: c.run.elapsed,
                ..LaunchPhases::default()
            };
        }
        Ok(c)
    }

    /// What a CI pipeline reads after the launches (a fault too): the last launch's SARIF
    /// log written to `sarif`, and the suppressions' summary, said on stderr (unless the
    /// JSON carries it) and returned.
    fn ci_reports(
        &self,
        e: &Pool,
        sarif: Option<&Path>,
        json: bool,
    ) -> Result<Vec<String>, CliFailure> {
        if let Some(file) = sarif {
            self.sarif
                .borrow()
                .write(file)
                .map_err(|err| CliFailure::Error(format!("--report {}: {err}", file.display())))?;
        }
        let summary = e
            .suppressions()
            .map(Suppressions::summary)
            .unwrap_or_default();
        if !json {
            for line in &summary {
                eprintln!("nrt-pool: {line}");
            }
        }
        Ok(summary)
    }

    /// `repeat` launches, each one's kernel output shown: the last one, and every
    /// launch's time sorted.
    fn run(
        &self,
        e: &mut Pool,
        repeat: u64,
        json: bool,
        clock: &mut Timings,
    ) -> Result<(Called, Vec<Duration>), CliFailure> {
        let progress = (repeat > 1).then(|| Progress::start("launches", Some(repeat)));
        let mut elapsed = Vec::with_capacity(usize::try_from(repeat).unwrap_or(0).min(1 << 16));
        let mut done = self.once(e)?;
        let mut phases = done.phases;
        elapsed.push(done.run.elapsed);
        for i in 1..repeat {
            if let Some(p) = &progress {
                p.step(format!("{:.3} ms", done.run.elapsed.as_secs_f64() * 1e3));
            }
            // Each launch's kernel output is shown; the output file holds the last one's.
            echo_launch(&done, json);
            done = self.once(e).map_err(|err| {
                CliFailure::from(err).context(&format!("launch {} of {repeat}", i + 1))
            })?;
            elapsed.push(done.run.elapsed);
            phases.place += done.phases.place;
            phases.run += done.phases.run;
            phases.read += done.phases.read;
        }
        drop(progress);
        elapsed.sort();
        echo_launch(&done, json);
        clock.add("launch: inputs into device memory", phases.place);
        clock.add("launch: run on the cores (core start included)", phases.run);
        clock.add("launch: output out of device memory", phases.read);
        clock.lap("launch: other (checks, reports, kernel output)");
        Ok((done, elapsed))
    }
}

/// What `run` says at the end: a line (or a JSON document) with the times, the output,
/// the checks' findings and the profile.
struct Report<'a> {
    launches: &'a Launches<'a>,
    done: &'a Called,
    /// Every launch's time, sorted.
    elapsed: &'a [Duration],
    out: &'a Path,
}

impl Report<'_> {
    fn median(&self) -> Duration {
        self.elapsed[self.elapsed.len() / 2]
    }

    fn json(
        &self,
        timings: Option<serde_json::Value>,
        checks: Checks,
        profiled: Option<&nrt_pool_engine::profile::Profile>,
    ) -> serde_json::Value {
        let (l, done) = (self.launches, self.done);
        json!({
            "op": l.target.name,
            "cores": l.cores,
            "elapsed_ms": done.run.elapsed.as_secs_f64() * 1e3,
            "launches": self.elapsed.len(),
            "timings_ms": timings,
            "median_ms": self.median().as_secs_f64() * 1e3,
            "stdio_dropped": done.run.stdio_dropped,
            "output": {
                "path": self.out.display().to_string(),
                "dtype": l.output.dtype.name(),
                "shape": l.output.shape,
            },
            "check": checks.any().then(|| check_json(&done.check)),
            "profile": profiled.map(profile_json),
        })
    }

    fn print(&self, profiled: Option<&nrt_pool_engine::profile::Profile>) {
        if let Some(p) = profiled {
            eprint!("{}", p.report(PROFILE_TOP));
        }
        print_checks(&self.done.check);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let timing = match self.elapsed.len() {
            1 => format!("{:.3} ms", ms(self.done.run.elapsed)),
            n => format!(
                "{n} launches, median {:.3} ms (min {:.3}, max {:.3})",
                ms(self.median()),
                ms(self.elapsed[0]),
                ms(self.elapsed[n - 1])
            ),
        };
        let l = self.launches;
        eprintln!(
            "ok: {} on {} core(s) in {timing} -> {} ({} {:?})",
            l.target.name,
            l.cores,
            self.out.display(),
            l.output.dtype,
            l.output.shape,
        );
    }
}

/// Functions `--profile` lists.
const PROFILE_TOP: usize = 15;

/// `--profile` under `--json`: each core's wall time, instructions and functions, and the
/// functions over all cores with their shares.
fn profile_json(p: &nrt_pool_engine::profile::Profile) -> serde_json::Value {
    json!({
        "isa": p.isa,
        "kernel": p.kernel,
        "cores": p.cores.iter().map(|c| json!({
            "core": c.core,
            "wall_ms": c.wall.map(|w| w.as_secs_f64() * 1e3),
            "instructions": c.instructions,
            "functions": c.functions.iter().map(|(f, n)| json!({"function": f, "instructions": n})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "functions": p.top().iter().map(|(f, n, share)| json!({"function": f, "instructions": n, "share": share})).collect::<Vec<_>>(),
    })
}

/// The last launch's findings and notes, one line each, on stderr.
fn print_checks(report: &CheckReport) {
    for n in &report.notes {
        eprintln!("nrt-pool: note: {n}");
    }
    for f in &report.findings {
        eprintln!("nrt-pool: {f}");
    }
}

/// A check report as JSON records.
fn check_json(report: &CheckReport) -> serde_json::Value {
    json!({
        "checks": report.checks.names(),
        "notes": report.notes.iter().map(|n| json!({
            "check": n.check.map(|c| c.name()),
            "kind": n.kind.name(),
            "text": n.text,
        })).collect::<Vec<_>>(),
        "findings": report.findings.iter().map(|f| json!({
            "check": f.check.name(),
            "kernel": f.kernel,
            "cores": f.cores,
            "tensor": f.tensor,
            "what": f.what,
            "ranges": f.ranges.iter().map(|(a, b)| [a, b]).collect::<Vec<_>>(),
            "range_count": f.range_count,
            "elements": f.elements,
            "message": f.to_string(),
        })).collect::<Vec<_>>(),
    })
}

/// Exit status 4 when the checks found anything (the output is written all the same).
fn checked(found: usize, suppressed: usize) -> Result<(), CliFailure> {
    match (found, suppressed) {
        (0, 0) => Ok(()),
        (0, n) => Err(CliFailure::Suppressed(format!(
            "the checks found {n} problem(s), all suppressed (--suppress); the output was written"
        ))),
        (n, _) => Err(CliFailure::Found(format!(
            "the checks found {n} problem(s) (listed above); the output was written all the same"
        ))),
    }
}

/// A launch's kernel output (stdout, stderr) and any stdio-ring loss. With `--json`,
/// stdout carries the JSON document, so the kernel's output goes to stderr.
fn echo_launch(done: &Called, json: bool) {
    if json {
        let _ = std::io::stderr().write_all(&done.run.stdout);
        let _ = std::io::stderr().write_all(&done.run.stderr);
    } else {
        echo(&done.run.stdout, &done.run.stderr);
    }
    if done.run.stdio_dropped > 0 {
        eprintln!(
            "nrt-pool: {} bytes of kernel output did not fit the stdio ring",
            done.run.stdio_dropped
        );
    }
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

fn parse_arg(v: &str, want: Want, engine: &mut Pool) -> Result<ArgValue<'static>, CliFailure> {
    // TYPE:FILE.npy reads a tensor as TYPE (bf16 travels in .npy files as raw uint16).
    let (want, v) = match v.split_once(':') {
        Some((t, f)) if f.contains(".npy") => match DType::from_name(t) {
            Some(dt) => (Want::Tensor(Some(dt)), f),
            None => return Err(CliFailure::Usage(format!("{v}: unknown dtype {t}"))),
        },
        _ => (want, v),
    };
    let (path, loc) = match v.rsplit_once('@') {
        Some((p, l)) if p.ends_with(".npy") => (
            p,
            Location::from_name(l)
                .ok_or_else(|| CliFailure::Usage(format!("{v}: location is hbm or sbuf")))?,
        ),
        _ => (v, Location::Hbm),
    };
    if path.ends_with(".npy") {
        let hint = match want {
            Want::Tensor(dtype) => dtype,
            _ => None,
        };
        // Into HBM straight from the file where the bytes need no reordering.
        if loc == Location::Hbm {
            if let Some(d) = npy::read_into_device(Path::new(path), hint, engine)
                .map_err(|e| CliFailure::Error(e.to_string()))?
            {
                return Ok(ArgValue::Device(d));
            }
        }
        let t = npy::read(Path::new(path), hint).map_err(|e| match (e, hint) {
            (npy::NpyError::Dtype { path, descr, .. }, Some(want)) => CliFailure::Error(format!(
                "{path} holds '{descr}' elements, the parameter is {want} ('{}' in a .npy file); convert it, e.g. x.astype(np.{})",
                want.npy_descr(),
                want.numpy_name()
            )),
            (e, _) => CliFailure::Error(e.to_string()),
        })?;
        if let Some(want) = hint {
            if t.dtype != want {
                return Err(CliFailure::Error(format!(
                    "{path} holds {} ('{}') elements, the parameter is {want} ('{}'); convert it, e.g. x.astype(np.{})",
                    t.dtype,
                    t.dtype.npy_descr(),
                    want.npy_descr(),
                    want.numpy_name()
                )));
            }
        }
        return Ok(ArgValue::Tensor(t, loc));
    }
    let (dtype, text) = match (v.split_once(':'), want) {
        (Some((t, x)), _) => (
            DType::from_name(t)
                .ok_or_else(|| CliFailure::Usage(format!("{v}: unknown dtype {t}")))?,
            x,
        ),
        (None, Want::Scalar(dt)) => (dt, v),
        // An op's double (or a floating torch::Scalar) and int64_t (or an integral one): the
        // engine applies the device's rule (doubles as f32, D44).
        (None, Want::OpScalar(kind)) => {
            let integral = v.trim().parse::<i64>();
            return match (kind, integral) {
                (ArgKind::Long, Ok(n)) | (ArgKind::Scalar, Ok(n)) => Ok(ArgValue::Long(n)),
                (ArgKind::Long, Err(_)) => Err(CliFailure::Error(format!("{v}: not a i64 value"))),
                _ => v
                    .trim()
                    .parse::<f64>()
                    .map(ArgValue::Double)
                    .map_err(|_| CliFailure::Error(format!("{v}: not a f32 value"))),
            };
        }
        (None, Want::Tensor(_)) => {
            return Err(CliFailure::Error(format!(
                "{v}: this parameter is a tensor; pass a .npy file"
            )))
        }
        (None, Want::Any) => {
            return Err(CliFailure::Usage(format!(
                "{v}: the library has no schema for this argument; write TYPE:VALUE"
            )))
        }
    };
    let bytes = dtype
        .parse_scalar(text)
        .ok_or_else(|| CliFailure::Error(format!("{v}: not a {dtype} value")))?;
    Ok(ArgValue::Scalar(dtype, bytes))
}
