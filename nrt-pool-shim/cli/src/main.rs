//! `nrt-pool`: develop and run GPSIMD custom ops without hardware. The command line is
//! declared in `cli.rs` (clap; `nrt-pool --help`, `nrt-pool SUBCOMMAND --help`); this file
//! carries each subcommand out.
//!
//! Exit status: 0 success (and checks, if asked, found nothing), 1 error, 2 usage (a
//! malformed suppression file too), 3 device fault, 4 checks found something, 5 checks found
//! only what the suppressions keep out.

mod cli;
mod run;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use serde_json::json;

use cli::{BringupArgs, BuildArgs, Cli, Command, DemoArgs, GdbArgs, IsaArg, ListArgs, Shell};
use nrt_pool_build as opbuild;
use nrt_pool_cli::progress::Progress;
use nrt_pool_engine::EmuError;
use nrt_pool_open::installation::{self, Part};
use nrt_pool_open::{Environment, OpenError, OpenOptions, Pool};
use nrt_sim_device::bringup;

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

/// The host archive: installed (`make install`: PREFIX/bin beside PREFIX/lib/gpsimd-open),
/// else the build tree's (`nrt_pool_open::installation`).
fn default_archive(model: opbuild::DataModel) -> PathBuf {
    installation::find(match model {
        opbuild::DataModel::Device => Part::DeviceModelArchive,
        opbuild::DataModel::Host => Part::HostArchive,
    })
}

/// The Xtensa archive and the Pool core link script for --device-image.
fn default_device_files() -> (PathBuf, PathBuf) {
    (
        installation::find(Part::XtensaArchive),
        installation::find(Part::LinkScript),
    )
}

/// The Pool image `--device-image` asks for, written to `out`.
fn device_image(a: &BuildArgs, out: PathBuf) -> Option<opbuild::DeviceImage> {
    if !a.device_image {
        return None;
    }
    let (archive, link_script) = default_device_files();
    Some(opbuild::DeviceImage {
        out,
        archive: a.device_archive.clone().unwrap_or(archive),
        link_script: a.device_link_script.clone().unwrap_or(link_script),
    })
}

fn default_include() -> PathBuf {
    installation::find(Part::Include)
}

/// The Xtensa tools device builds run: the installation's (a wheel carries them), else
/// PATH's.
fn xtensa_tools() -> opbuild::XtensaTools {
    opbuild::XtensaTools::carried_in_or_path(&installation::find(Part::XtensaTools))
}

fn main() -> ExitCode {
    // Usage errors (exit 2), --help and --version (exit 0) are clap's.
    let cli = Cli::parse();
    let r = match cli.command {
        Command::List(a) => list(a),
        Command::Run(a) => run::run(a),
        Command::Build(a) => build(a),
        Command::Bringup(a) => bringup_cmd(a),
        Command::Demo(a) => demo(a),
        Command::Gdb(a) => gdb(a),
        Command::Completions { shell } => {
            print!("{}", completions(shell));
            Ok(())
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliFailure::Usage(m)) => {
            eprintln!("nrt-pool: {m}\n(see nrt-pool --help)");
            ExitCode::from(2)
        }
        Err(CliFailure::Error(m)) => {
            eprintln!("nrt-pool: {m}");
            ExitCode::from(1)
        }
        Err(CliFailure::Fault(m)) => {
            eprintln!("nrt-pool: {m}");
            ExitCode::from(3)
        }
        Err(CliFailure::Found(m)) => {
            eprintln!("nrt-pool: {m}");
            ExitCode::from(4)
        }
        Err(CliFailure::Suppressed(m)) => {
            eprintln!("nrt-pool: {m}");
            ExitCode::from(5)
        }
    }
}

/// The completion scripts build.rs generated from cli.rs.
fn completions(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => include_str!(concat!(env!("OUT_DIR"), "/nrt-pool.bash")),
        Shell::Zsh => include_str!(concat!(env!("OUT_DIR"), "/_nrt-pool")),
        Shell::Fish => include_str!(concat!(env!("OUT_DIR"), "/nrt-pool.fish")),
    }
}

enum CliFailure {
    Usage(String),
    Error(String),
    Fault(String),
    /// `--check` found something (the output is written): exit status 4.
    Found(String),
    /// `--check` found only what `--suppress` keeps out (the output is written): exit 5.
    Suppressed(String),
}

impl From<EmuError> for CliFailure {
    fn from(e: EmuError) -> CliFailure {
        match e {
            EmuError::Fault(f) => {
                // What core 0 printed before the fault is part of the report.
                echo(&f.stdout, &f.stderr);
                CliFailure::Fault(f.to_string())
            }
            // A library whose loading or start code faults: a device fault too.
            EmuError::StartFault { ref fault, .. } => {
                echo(&fault.stdout, &fault.stderr);
                CliFailure::Fault(e.to_string())
            }
            e => CliFailure::Error(e.to_string()),
        }
    }
}

impl CliFailure {
    /// The same failure, its message prefixed with where it happened.
    fn context(self, at: &str) -> CliFailure {
        match self {
            CliFailure::Usage(m) => CliFailure::Usage(format!("{at}: {m}")),
            CliFailure::Error(m) => CliFailure::Error(format!("{at}: {m}")),
            CliFailure::Fault(m) => CliFailure::Fault(format!("{at}: {m}")),
            CliFailure::Found(m) => CliFailure::Found(format!("{at}: {m}")),
            CliFailure::Suppressed(m) => CliFailure::Suppressed(format!("{at}: {m}")),
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

/// `nrt-pool gdb LIB CORE`: gdb attached to the core a debug launch of LIB stopped, with
/// the session's symbols and breakpoints; exits as gdb does.
fn gdb(a: GdbArgs) -> Result<(), CliFailure> {
    let s = nrt_pool_engine::debug::DebugSession::read(usize::from(a.core))
        .map_err(|e| CliFailure::Error(e.to_string()))?;
    let same = |p: &Path| std::fs::canonicalize(p).ok();
    // The session runs LIB or its other build (LIB.so named for a launch of LIB.pool).
    let ours = [
        a.lib.clone(),
        a.lib.with_extension("so"),
        a.lib.with_extension("pool"),
    ];
    if !ours
        .iter()
        .any(|l| same(l).is_some() && same(l) == same(&s.library))
    {
        return Err(CliFailure::Error(format!(
            "core {}'s debug session runs {}, not {}",
            s.core,
            s.library.display(),
            a.lib.display()
        )));
    }
    let gdb = match s.isa.as_str() {
        "xtensa" => nrt_pool_qemu::gdb_for(&installation::board()),
        _ => PathBuf::from("gdb"),
    };
    let status = std::process::Command::new(&gdb)
        .args(s.gdb_args())
        .args(&a.gdb_args)
        .status()
        .map_err(|e| {
            CliFailure::Error(format!(
                "cannot run {} ({e}){}",
                gdb.display(),
                if s.isa == "xtensa" {
                    ": make customop-archives builds the Xtensa gdb beside QEMU"
                } else {
                    ": install gdb (make tools does)"
                }
            ))
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(CliFailure::Error(format!(
            "{} ended with {status}",
            gdb.display()
        )))
    }
}

/// Each core image's loaded size, and the warning above the vendor's staged-library limit.
fn report_image_sizes(pool: &Path) {
    use nrt_pool_build::device_image::{loaded_sizes, size_report};
    match std::fs::read(pool)
        .map_err(|e| e.to_string())
        .and_then(|b| loaded_sizes(&b))
    {
        Ok(sizes) => {
            let (lines, warning) = size_report(&sizes);
            for l in lines {
                println!("{l}");
            }
            if let Some(w) = warning {
                eprintln!("{w}");
            }
        }
        Err(e) => eprintln!(
            "warning: {}: cannot read the image sizes: {e}",
            pool.display()
        ),
    }
}

/// A pool with `lib` loaded on the cores `isa` asks for (else `$GPSIMD_OPEN_ISA`, else the
/// file's: a Pool image runs on Xtensa cores; asked for the other, the build beside `lib`
/// is used), the environment's call defaults applied when `env` is given.
fn engine_with(
    lib: &Path,
    isa: Option<IsaArg>,
    env: Option<Environment>,
) -> Result<Pool, CliFailure> {
    let environment = env.unwrap_or_default();
    // --isa, else $GPSIMD_OPEN_ISA (read with the rest of the environment), else the file's.
    let isa = isa
        .map(|i| match i {
            IsaArg::Host => nrt_pool_open::Isa::Host,
            IsaArg::Xtensa => nrt_pool_open::Isa::Xtensa,
        })
        .or(environment.isa);
    let o = OpenOptions {
        environment,
        ..OpenOptions::default()
    }
    .with_isa(isa);
    Pool::open(lib, &o).map_err(|e| match e {
        OpenError::Engine(e) => e.into(),
        other => CliFailure::Error(other.to_string()),
    })
}

fn list(a: ListArgs) -> Result<(), CliFailure> {
    let e = engine_with(&a.lib, a.isa, None)?;
    if let Some(ops) = e.loaded.neuron_library() {
        if a.json {
            let list: Vec<_> = ops
                .ops
                .iter()
                .map(|op| {
                    json!({
                        "name": format!("{}::{}", ops.namespace, op.name),
                        "kernel": op.kernel,
                        "args": op.args.iter().map(|k| k.cxx()).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let doc = json!({
                "library": a.lib.display().to_string(),
                "namespace": ops.namespace,
                "multicore": ops.multicore,
                "ops": list,
            });
            println!("{doc}");
            return Ok(());
        }
        for op in &ops.ops {
            let args: Vec<&str> = op.args.iter().map(|k| k.cxx()).collect();
            println!("{}::{}({})", ops.namespace, op.name, args.join(", "));
        }
        return Ok(());
    }
    let l = e.loaded.library().expect("loaded");
    if a.json {
        let kernels: Vec<_> = e
            .loaded
            .kernels()
            .iter()
            .map(|k| json!({"name": k, "signature": l.signature(k).map(|s| s.to_string())}))
            .collect();
        println!(
            "{}",
            json!({"library": a.lib.display().to_string(), "kernels": kernels})
        );
        return Ok(());
    }
    for k in e.loaded.kernels() {
        match l.signature(k) {
            Some(sig) => println!("{sig}"),
            None => println!("{k}"),
        }
    }
    Ok(())
}

/// The build's per-source callback, stepping `progress` with the source's file name.
fn compiled_step(progress: &Progress) -> std::sync::Arc<dyn Fn(&Path) + Send + Sync> {
    let step = progress.stepper();
    std::sync::Arc::new(move |src: &Path| {
        step(
            src.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        )
    })
}

/// The -D, -I and --cflag flags as the build takes them (-D's first, then --cflag's).
fn compile_flags(a: &BuildArgs) -> opbuild::CompileFlags {
    opbuild::CompileFlags {
        extra_cflags: a
            .define
            .iter()
            .map(|d| format!("-D{d}"))
            .chain(a.cflag.iter().cloned())
            .collect(),
        extra_include_paths: a.include_path.clone(),
    }
}

/// What both kinds of build share: the runtime and headers (or the defaults), the host
/// compiler ($CXX or g++), the flags, and the device outputs asked for (the Pool image at
/// `image`).
fn build_setup(a: &BuildArgs, image: PathBuf) -> opbuild::BuildSetup {
    let data_model = opbuild::DataModel::from_name(&a.data_model).unwrap_or_default();
    opbuild::BuildSetup {
        archive: a
            .archive
            .clone()
            .unwrap_or_else(|| default_archive(data_model)),
        data_model,
        include: a.include.clone().unwrap_or_else(default_include),
        cxx: std::env::var("CXX").unwrap_or_else(|_| "g++".into()),
        core_runner: installation::core_runner(),
        flags: compile_flags(a),
        // --no-device-objects is the default, kept for older scripts.
        device_objects: a.device_objects.clone().filter(|_| !a.no_device_objects),
        device_image: device_image(a, image),
        xtensa: xtensa_tools(),
        on_compiled: None,
    }
}

/// How many compiles a build makes: `host` sources and the wrapper, and with device
/// outputs `device` sources and the device wrapper.
fn compiles(setup: &opbuild::BuildSetup, host: usize, device: usize) -> u64 {
    let dev = setup.device_objects.is_some() || setup.device_image.is_some();
    (host + 1 + if dev { device + 1 } else { 0 }) as u64
}

fn build(a: BuildArgs) -> Result<(), CliFailure> {
    if a.name.is_some() {
        return build_ops(a);
    }
    let (Some(schema), Some(out)) = (a.schema.clone(), a.out.clone()) else {
        return Err(CliFailure::Usage(
            "build needs --name with --compute and --shape, or --schema with --out and sources"
                .into(),
        ));
    };
    if a.sources.is_empty() {
        return Err(CliFailure::Usage(
            "build --schema needs kernel sources".into(),
        ));
    }
    let mut setup = build_setup(&a, out.with_extension("pool"));
    let progress = Progress::start(
        "compiled",
        Some(compiles(&setup, a.sources.len(), a.sources.len())),
    );
    setup.on_compiled = Some(compiled_step(&progress));
    let o = opbuild::BuildOptions {
        schema,
        sources: a.sources,
        out,
        setup,
    };
    let r = opbuild::build(&o).map_err(|e| CliFailure::Error(e.to_string()));
    drop(progress);
    let r = r?;
    for k in &r.kernels {
        println!("{k}");
    }
    if let Some(objs) = &r.device {
        println!("device objects: {}", objs.len());
    }
    if let Some(p) = &r.device_image {
        println!("built {} (8 Xtensa cores)", p.display());
        report_image_sizes(p);
    }
    println!(
        "built {} ({})",
        r.library.display(),
        host_cores(&a.data_model)
    );
    Ok(())
}

/// What a host library's line says of where it runs (D97).
fn host_cores(data_model: &str) -> String {
    match opbuild::DataModel::from_name(data_model).unwrap_or_default() {
        opbuild::DataModel::Device => "host cores, in the device's data model".into(),
        opbuild::DataModel::Host => {
            "host cores, in the host's data model: results can differ from the device's".into()
        }
    }
}

/// `nrt-pool build --name NAME --compute SRC... --shape SRC... [--multicore]
/// [--build-directory DIR]`: an op library in the Custom C++ Operators style, as
/// `custom_op.load` builds it.
fn build_ops(a: BuildArgs) -> Result<(), CliFailure> {
    let name = a.name.clone().unwrap_or_default();
    let data_model = a.data_model.clone();
    let mut setup = build_setup(&a, a.build_directory.join(format!("lib{name}.pool")));
    let progress = Progress::start(
        "compiled",
        Some(compiles(&setup, a.compute.len() + a.shape.len(), a.compute.len()) - 1),
    );
    setup.on_compiled = Some(compiled_step(&progress));
    let o = opbuild::OpBuildOptions {
        name,
        compute: a.compute,
        shape: a.shape,
        build_directory: a.build_directory,
        multicore: a.multicore,
        setup,
    };
    if a.verbose {
        eprintln!(
            "nrt-pool: building lib{}.so in {} from {} compute and {} shape source(s)",
            o.name,
            o.build_directory.display(),
            o.compute.len(),
            o.shape.len()
        );
    }
    let r = opbuild::build(&o).map_err(|e| CliFailure::Error(e.to_string()));
    drop(progress);
    let r = r?;
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
    if let Some(p) = &r.device_image {
        println!("built {} (8 Xtensa cores)", p.display());
        report_image_sizes(p);
    }
    println!(
        "built {} ({}{})",
        r.library.display(),
        host_cores(&data_model),
        if r.ops.multicore { "; multicore" } else { "" }
    );
    Ok(())
}

fn bringup_cmd(a: BringupArgs) -> Result<(), CliFailure> {
    let opts = bringup::Options {
        provider: a.provider.unwrap_or_else(default_provider),
        cayman_library: a.cayman_library,
    };
    let report = bringup::run(&opts).map_err(|e| CliFailure::Error(format!("bringup: {e}")))?;
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

fn demo(a: DemoArgs) -> Result<(), CliFailure> {
    let o = nrt_pool_cli::demo::DemoOptions {
        provider: a.provider.unwrap_or_else(default_provider),
        examples: a
            .examples
            .unwrap_or_else(|| beside_exe("../../examples/ops")),
        archive: default_archive(opbuild::DataModel::Device),
        include: default_include(),
        device: {
            let (archive, link_script) = default_device_files();
            nrt_pool_cli::demo::DeviceFiles {
                archive,
                board: installation::board(),
                link_script,
            }
        },
        xtensa: xtensa_tools(),
        core_runner: installation::core_runner(),
        flame_graph: a.flame_graph,
    };
    let report =
        nrt_pool_cli::demo::run(&o).map_err(|e| CliFailure::Error(format!("demo: {e}")))?;
    print!("{report}");
    Ok(())
}
