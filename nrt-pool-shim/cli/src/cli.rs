// nrt-pool's command line, declared with clap. Shared by the binary and build.rs (which
// generates the shell completions from it), so it depends on clap and std only.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Develop and run GPSIMD custom ops without hardware, on the emulated Pool engine.
#[derive(Parser, Debug)]
#[command(
    name = "nrt-pool",
    version,
    propagate_version = true,
    after_help = "Exit status: 0 success, 1 error, 2 usage, 3 device fault."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The ops (NS::OP) or kernels an op library registers, with their arguments
    List(ListArgs),
    /// Run an op or kernel on the emulated Pool engine (tensors from and to .npy files)
    Run(RunArgs),
    /// Build an op library: --name/--compute/--shape as custom_op.load does, or the
    /// schema layer with --schema/--out and sources
    Build(BuildArgs),
    /// libnrt's microcode sequence on the simulated device, through a provider
    Bringup(BringupArgs),
    /// The whole chain: provider bring-up, the examples built, registered through the
    /// seam and run on the emulated engine, checked against a reference
    Demo(DemoArgs),
    /// Start gdb attached to a core that `nrt-pool run --gdb[=CORE]` stopped, with the
    /// library's symbols, breakpoints at the kernel and where it returns, run to the kernel
    Gdb(GdbArgs),
    /// Print a shell completion script (generated at build time)
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// Where kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IsaArg {
    /// The library's host build (libNAME.so) in core processes
    Host,
    /// The library's Pool image (libNAME.pool) on QEMU Xtensa cores
    Xtensa,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// The op library (libNAME.so, or libNAME.pool for Xtensa cores)
    pub lib: PathBuf,
    /// Where kernels run (default: by the file: a Pool image on Xtensa cores); the build
    /// beside the named one is used when the other is asked for
    #[arg(long, value_enum)]
    pub isa: Option<IsaArg>,
    /// Print JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The op library (libNAME.so, or libNAME.pool for Xtensa cores)
    pub lib: PathBuf,
    /// Where kernels run (default: by the file: a Pool image on Xtensa cores); the build
    /// beside the named one is used when the other is asked for
    #[arg(long, value_enum)]
    pub isa: Option<IsaArg>,
    /// The op (NS::OP or OP) or kernel to run
    pub kernel: String,
    /// An argument, in order: X.npy (a tensor in HBM), X.npy@sbuf (in SBUF), TYPE:X.npy
    /// (read as TYPE, e.g. bf16), TYPE:VALUE (a scalar), or a number typed by the op
    #[arg(long = "arg", value_name = "V", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// Where the output goes (.npy), written only when the launch succeeds
    #[arg(long)]
    pub out: PathBuf,
    /// Cores to run on (default: 8 for a multicore library, else 1)
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub cores: Option<u8>,
    /// Seconds a launch may run before its cores are stopped
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, allow_hyphen_values = true)]
    pub timeout: Option<f64>,
    /// The output's dtype, for libraries without shape functions or schema (u8, i32, f32, ...)
    #[arg(long, requires = "out_shape")]
    pub out_dtype: Option<String>,
    /// The output's shape D0,D1,... (with --out-dtype)
    #[arg(long, value_name = "D0,D1,...", requires = "out_dtype", value_parser = parse_shape, allow_hyphen_values = true)]
    pub out_shape: Option<Shape>,
    /// Print the result as JSON on stdout (the kernel's own output then goes to stderr)
    #[arg(long)]
    pub json: bool,
    /// Launch N times (timing, soak): the output file holds the last launch's result and
    /// the report gives the median time; progress shows on a terminal after a second
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub repeat: u64,
    /// Print where the time went, from start to output file (library load, input read,
    /// output shape, the launch's phases, output write) on stderr, or in the JSON
    #[arg(long)]
    pub timings: bool,
    /// Check what the device would hide (the launch runs again under other conditions):
    /// LIST is init, race, memory, rules, cores, parity, leftovers or all, comma-separated
    /// (default: all but cores, parity and leftovers; also $GPSIMD_OPEN_CHECK). parity runs
    /// the launch on the other build beside LIB too (Xtensa cores for a .so) and compares
    /// outputs, stdout and faults; leftovers runs it again right after itself and compares.
    /// Findings go to stderr (or the JSON) and the exit status is 4 when there are any; the
    /// output is written all the same
    #[arg(long, value_name = "LIST", num_args = 0..=1, require_equals = true, default_missing_value = "default")]
    pub check: Option<String>,
    /// Keep findings judged benign out of the report: FILE has one entry per line, a check
    /// (or *) and fields op=, kernel=, tensor=, elements=A..B, at=FILE:LINE; stderr (or
    /// the JSON) says which entries matched and which never did. A run whose findings were
    /// all suppressed exits 5
    #[arg(long, value_name = "FILE")]
    pub suppress: Option<PathBuf>,
    /// Write the findings (parity differences and faults too) as SARIF 2.1.0 to FILE, each
    /// at its source line, suppressed ones marked so
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Show printf from every core, each line prefixed with its core ("[core 3] ...");
    /// an emulator aid: hardware shows core 0's alone, the default (also
    /// $GPSIMD_OPEN_ALL_CORES_STDIO=1)
    #[arg(long)]
    pub all_cores_stdio: bool,
    /// Stop core CORE (default 0) at the launch's start and wait for a debugger: prints how
    /// to attach (`nrt-pool gdb LIB CORE`); the launch then has no timeout
    #[arg(long, value_name = "CORE", num_args = 0..=1, require_equals = true, default_missing_value = "0",
          value_parser = clap::value_parser!(u8).range(0..=7))]
    pub gdb: Option<u8>,
    /// Profile the launch: on Xtensa cores instructions executed by function and core (a
    /// QEMU plugin), on host cores each core's wall time and instruction count; the top
    /// functions go to stderr (or the JSON), and FILE, if given, gets an SVG flame graph
    /// (FILE.svg: all cores folded, then each core, functions labelled with their source
    /// lines) or else folded stacks (`core N;FUNCTION COUNT`) for flame-graph tools
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true, default_missing_value = "",
          value_parser = clap::value_parser!(std::ffi::OsString))]
    pub profile: Option<std::ffi::OsString>,
    /// Write the launch as a trace (Trace Event JSON, for Perfetto, chrome://tracing or
    /// speedscope) to FILE: a track per core with the kernel, its functions (Xtensa cores:
    /// on the device-time estimate) and the tensor copies; faults and findings as instants
    /// at their source lines. Profiles the launch
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct GdbArgs {
    /// The op library the debug launch runs
    pub lib: PathBuf,
    /// The core it stopped
    #[arg(default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub core: u8,
    /// Arguments for gdb after the session's own (e.g. -batch -ex next -ex 'print x')
    #[arg(last = true, allow_hyphen_values = true)]
    pub gdb_args: Vec<std::ffi::OsString>,
}

/// A tensor shape given on the command line.
#[derive(Clone, Debug)]
pub struct Shape(pub Vec<u64>);

/// The longest `--timeout`: a day (a launch longer than that is a hang).
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

pub fn parse_timeout(v: &str) -> Result<f64, String> {
    v.parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0 && *s <= MAX_TIMEOUT_SECS)
        .ok_or_else(|| format!("a number of seconds above 0 and at most {MAX_TIMEOUT_SECS}"))
}

pub fn parse_shape(v: &str) -> Result<Shape, String> {
    v.split(',')
        .map(|d| d.trim().parse::<u64>().ok().filter(|&d| d > 0))
        .collect::<Option<Vec<u64>>>()
        .map(Shape)
        .ok_or_else(|| "D0,D1,... with each dimension a whole number above 0".to_string())
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The library's name: writes BUILD_DIRECTORY/libNAME.so (NEURON_LIBRARY ops)
    #[arg(long, requires_all = ["compute", "shape"], conflicts_with_all = ["schema", "out"])]
    pub name: Option<String>,
    /// Compute sources (the kernel functions)
    #[arg(long, num_args = 1.., value_name = "SRC")]
    pub compute: Vec<PathBuf>,
    /// Shape sources (shape functions and their NEURON_LIBRARY registration)
    #[arg(long, num_args = 1.., value_name = "SRC")]
    pub shape: Vec<PathBuf>,
    /// Run the library's ops on all 8 cores by default
    #[arg(long)]
    pub multicore: bool,
    /// Where libNAME.so goes
    #[arg(long, default_value = ".")]
    pub build_directory: PathBuf,
    /// The schema layer: a schema file of kernel signatures
    #[arg(long, requires = "out")]
    pub schema: Option<PathBuf>,
    /// The schema layer: the library to write
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The schema layer: kernel sources
    pub sources: Vec<PathBuf>,
    /// The data model host cores run the library in: `device` (i386 with the device's type
    /// sizes and libraries, what the device computes; needs g++-multilib) or `host` (x86-64,
    /// the host's; results can differ from the device's). D97
    #[arg(long, value_name = "MODEL", default_value = "device", value_parser = ["device", "host"])]
    pub data_model: String,
    /// The host libneuroncustomop.a (default: the installed or built one)
    #[arg(long)]
    pub archive: Option<PathBuf>,
    /// The directory holding torch/, neuron/, neuron_customop.hpp (default: the installed
    /// or repository one)
    #[arg(long)]
    pub include: Option<PathBuf>,
    /// Also compile Xtensa device objects into this directory (needs the Xtensa g++)
    #[arg(long, value_name = "DIR")]
    pub device_objects: Option<PathBuf>,
    /// No device objects (the default; kept for older scripts)
    #[arg(long, hide = true)]
    pub no_device_objects: bool,
    /// Also link the device objects into a Pool image for the 8 cores: libNAME.pool beside
    /// the library (needs the Xtensa tools)
    #[arg(long)]
    pub device_image: bool,
    /// The Xtensa libneuroncustomop.a for --device-image (default: the installed or built one)
    #[arg(long, value_name = "ARCHIVE")]
    pub device_archive: Option<PathBuf>,
    /// The Pool core link script for --device-image (default: the installed or repository one)
    #[arg(long, value_name = "LD")]
    pub device_link_script: Option<PathBuf>,
    /// Define a macro in every compile, host and device: -D STACK_SIZE=20000 (as
    /// custom_op.load's extra_cflags=['-DSTACK_SIZE=20000']); repeatable
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub define: Vec<String>,
    /// Search DIR for headers in every compile, before the op headers (extra_include_paths);
    /// repeatable
    #[arg(short = 'I', value_name = "DIR")]
    pub include_path: Vec<PathBuf>,
    /// Pass FLAG to every compile, host and device, after the build's own (extra_cflags):
    /// --cflag=-O1; repeatable
    #[arg(long = "cflag", value_name = "FLAG", allow_hyphen_values = true)]
    pub cflag: Vec<String>,
    /// Say what is built
    #[arg(long)]
    pub verbose: bool,
}

#[derive(Args, Debug)]
pub struct BringupArgs {
    /// The provider (libnrtucode_extisa.so) to drive (default: the one beside nrt-pool)
    #[arg(long)]
    pub provider: Option<PathBuf>,
    /// Also prelink and stage this Xtensa library on a Cayman Q7 POOL core
    #[arg(long, value_name = "ELF")]
    pub cayman_library: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// The provider (libnrtucode_extisa.so) to drive (default: the one beside nrt-pool)
    #[arg(long)]
    pub provider: Option<PathBuf>,
    /// The schema-layer examples (examples/ops; mlp/ and multicore/ are its siblings)
    #[arg(long)]
    pub examples: Option<PathBuf>,
    /// Where the profiled Xtensa launch's flame graph goes (an SVG to open in a browser)
    #[arg(long, value_name = "FILE", default_value = "demo-profile.svg")]
    pub flame_graph: PathBuf,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}
