//! The op build flow: kernel sources and a schema in, a host op library (and on request
//! Xtensa device objects) out, with the kernels checked against the schema.
//!
//! The open counterpart of `build_custom_op.py`: it generates the launcher wrapper and the
//! `get_func_*` table, checks the kernels the sources define against the schema, and links
//! the host op library against the host `libneuroncustomop.a`.
//!
//! A kernel is a C++ function taking its parameters in schema order and the output last:
//!
//! ```text
//! schema:  add_scalar(tensor<f32> x, f32 alpha) -> tensor<f32> like x
//! source:  void add_scalar(const neuron::Tensor &x, float alpha, neuron::Tensor &out);
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use nrt_pool_schema::{self as schema, demangle, DType, KernelSig, ParamKind};

pub mod device_accesses;
pub mod device_frames;
pub mod device_image;
pub mod device_model;
pub(crate) mod device_plugin;
mod entry_rows;
mod library;
mod neuron_ops;
mod op_api_pch;
mod reuse;
mod wrapper;
pub mod xtensa_asm;
mod xtensa_tools;

pub use device_image::DeviceImage;
pub use library::BuildSetup;
use library::Wrapper;
pub use library::WrapperFor;
pub use neuron_ops::{build_or_reuse, OpBuild, OpBuildOptions, OpBuildReport};
pub use nrt_pool_schema::DataModel;
pub use op_api_pch::PCH_ENV;
pub use wrapper::generate_wrapper;
pub(crate) use wrapper::{EXCEPTION_GUARD, HOST_STDIO};
pub use xtensa_tools::XtensaTools;

/// Called with each source once it is compiled (from the compiling thread), so a front end
/// can show progress; `None` is quiet.
pub type OnCompiled = Option<std::sync::Arc<dyn Fn(&Path) + Send + Sync>>;

/// The largest STACK_SIZE a build accepts: the guide's 400 KB (the vendor header's own
/// assert allows 4 MiB; D79), as the runtime and the header's NRT_POOL_MAX_STACK_SIZE say.
pub use customop_abi::MAX_STACK_SIZE;

/// What an author adds to every compile of an op library, host and device alike
/// (`custom_op.load(extra_cflags=..., extra_include_paths=...)`, `nrt-pool build -D -I
/// --cflag`): include folders searched before the op headers, then the flags after the
/// build's own (so `-O1` or `-DSTACK_SIZE=20000` take effect). D74.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompileFlags {
    pub extra_cflags: Vec<String>,
    pub extra_include_paths: Vec<PathBuf>,
}

impl CompileFlags {
    /// Adds the include folders (`-I DIR` each), for before the op headers' `-I`.
    fn add_includes(&self, c: &mut Command) {
        for dir in &self.extra_include_paths {
            c.arg("-I").arg(dir);
        }
    }

    /// Adds the flags, for after the build's own.
    fn add_cflags(&self, c: &mut Command) {
        c.args(&self.extra_cflags);
    }

    /// Refuses what would break the build's own command line (an empty flag, an output or
    /// mode switch of its own), naming the flag.
    pub fn check(&self) -> Result<(), BuildError> {
        for f in &self.extra_cflags {
            // "-o..." is an output name ("-O2" is not: options are case-sensitive).
            let bad =
                f.is_empty() || ["-c", "-S", "-E"].contains(&f.as_str()) || f.starts_with("-o");
            if bad {
                return Err(BuildError::Flag(f.clone()));
            }
            // -DSTACK_SIZE=N with a number: its range (other spellings meet the header's
            // static_assert).
            if let Some(v) = f.strip_prefix("-DSTACK_SIZE=") {
                let v = v.trim_end_matches(['u', 'U']);
                let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                    Some(hex) => u64::from_str_radix(hex, 16).ok(),
                    None => v.parse::<u64>().ok(),
                };
                if n.is_some_and(|n| n == 0 || n > u64::from(MAX_STACK_SIZE)) {
                    return Err(BuildError::StackSize {
                        flag: f.clone(),
                        max: MAX_STACK_SIZE,
                    });
                }
            }
        }
        Ok(())
    }
}

/// A schema library's build (`nrt-pool build SCHEMA -o OUT SOURCES`).
pub struct BuildOptions {
    pub schema: PathBuf,
    pub sources: Vec<PathBuf>,
    pub out: PathBuf,
    /// The runtime, headers, compilers and device outputs (as for every op library).
    pub setup: BuildSetup,
}

#[derive(Debug)]
pub struct BuildReport {
    pub kernels: Vec<KernelSig>,
    pub library: PathBuf,
    /// Device objects built (None: not asked for).
    pub device: Option<Vec<PathBuf>>,
    /// The Pool image written (None: not asked for).
    pub device_image: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Schema {
        path: PathBuf,
        source: schema::SchemaError,
    },
    #[error("{0}: the schema declares no kernel")]
    Empty(PathBuf),
    #[error("{what} at {path} does not match the digest written beside it when it was made (a damaged file): {hint}")]
    Damaged {
        what: &'static str,
        path: PathBuf,
        hint: &'static str,
    },
    #[error("{what} not found at {path} ({hint})")]
    Missing {
        what: &'static str,
        path: PathBuf,
        hint: &'static str,
    },
    #[error("{tool} failed:\n{stderr}")]
    Compile { tool: String, stderr: String },
    #[error("source file {0} does not exist")]
    NoSource(PathBuf),
    #[error(
        "compiler flag {0:?} cannot be added: the build sets its own output and mode (-c/-S/-E/-o)"
    )]
    Flag(String),
    #[error(
        "{flag}: STACK_SIZE must be 1 to {max} bytes (the guide supports at most 400 KB of \
         kernel stack; docs/decisions.md D79)"
    )]
    StackSize { flag: String, max: u32 },
    #[error("the generated wrapper does not compile (a schema name clashes with C++ or the runtime?):\n{0}")]
    Wrapper(String),
    #[error("kernel '{kernel}': the schema declares {schema}, but {}", match sources.as_slice() {
        [] => "no source defines it (a global C++ function of that name)".to_string(),
        s => format!("the sources define {}", s.join(" and ")),
    })]
    KernelMismatch {
        kernel: String,
        schema: String,
        sources: Vec<String>,
    },
    #[error(
        "device builds need the Xtensa cross compiler {}, which this installation does not \
         carry and PATH does not have: pip install --force-reinstall gpsimd-open (its wheel \
         carries GCC for Xtensa), or on Debian and Ubuntu apt-get install gcc-xtensa-lx106 \
         binutils-xtensa-lx106 (make tools does)",
        XtensaTools::CXX
    )]
    NoDeviceCompiler,
    #[error(
        "{0} cannot compile for host cores in the device's data model (i386, D97): it is \
         not GCC, or not found, or not built for -m32 (apt-get install g++ on Debian and \
         Ubuntu, dnf install gcc-c++ on Amazon Linux; CXX names another), or build in the \
         host's data model (--data-model=host, whose results can differ from the device's)"
    )]
    NoDeviceModelCompiler(String),
    #[error(
        "{0} does not run: op libraries are built with the host's C++ compiler (apt-get \
         install g++ on Debian and Ubuntu, dnf install gcc-c++ on Amazon Linux; CXX names \
         another)"
    )]
    NoHostCompiler(String),
    #[error("a compiler thread failed")]
    Crashed,
    #[error("library name '{0}': use letters, digits and '_' (it becomes lib{0}.so)")]
    BadName(String),
    #[error("the shape sources' NEURON_LIBRARY registration failed: {0}")]
    Registration(String),
    #[error("op '{op}': {why}")]
    Op { op: String, why: String },
    #[error("compute function {0} has no shape registration (no m.def in NEURON_LIBRARY names it as a kernel); register it, or make a helper static")]
    Unregistered(String),
}

pub(crate) fn run(cmd: &mut Command) -> Result<(), BuildError> {
    let tool = format!("{cmd:?}");
    reuse::record_dependencies(cmd);
    let out = cmd.output().map_err(|source| BuildError::Io {
        path: PathBuf::from(cmd.get_program()),
        source,
    })?;
    if !out.status.success() {
        return Err(BuildError::Compile {
            tool,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(())
}

/// An op model's build options: a schema library ([`BuildOptions`]) or NEURON_LIBRARY ops
/// as `custom_op.load` builds them ([`OpBuildOptions`]). Sealed: the two are all there is.
pub trait OpModel: sealed::Sealed {
    /// What a build of this model reports.
    type Report;
    #[doc(hidden)]
    fn build_library(&self) -> Result<Self::Report, BuildError>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::BuildOptions {}
    impl Sealed for super::OpBuildOptions {}
}

impl OpModel for BuildOptions {
    type Report = BuildReport;
    fn build_library(&self) -> Result<BuildReport, BuildError> {
        build_schema_library(self)
    }
}

/// Builds an op library of either model, and its device objects and Pool image when asked
/// for: the one build entry (`nrt-pool build`, `custom_op.load`, the demo and tests).
/// Nothing is written at the destination unless everything built: a failure leaves no
/// library and no device folder.
pub fn build<M: OpModel>(o: &M) -> Result<M::Report, BuildError> {
    o.build_library()
}

/// [`build`] for a schema library.
fn build_schema_library(o: &BuildOptions) -> Result<BuildReport, BuildError> {
    let text = std::fs::read_to_string(&o.schema).map_err(io(&o.schema))?;
    let kernels = schema::parse(&text).map_err(|source| BuildError::Schema {
        path: o.schema.clone(),
        source,
    })?;
    if kernels.is_empty() {
        return Err(BuildError::Empty(o.schema.clone()));
    }
    let core = &o.setup;
    core.preflight("neuron_customop.hpp", &o.sources)?;
    let work = tempfile::tempdir().map_err(io(Path::new("temporary directory")))?;
    // Every source to an object first, so that the kernels can be checked against the
    // schema before anything is linked.
    let frames = core.device_frame_tables(work.path());
    let objs = core.compile_host(&o.sources, &work.path().join("host"), frames.as_ref())?;
    let wrapper = Wrapper::Schema {
        kernels: &kernels,
        text: &text,
    };
    let placed = core.link(
        work.path(),
        &wrapper,
        &objs,
        &o.sources,
        frames.as_ref(),
        &o.out,
        |wrapper_obj| validate_kernels(&kernels, wrapper_obj, &objs),
    )?;
    Ok(BuildReport {
        kernels,
        library: o.out.clone(),
        device: placed.device,
        device_image: placed.device_image,
    })
}

/// Names the folder where builds keep what they make once per compiler (the alignment
/// plugin, D105; precompiled op API headers, D106) instead of `$XDG_CACHE_HOME/gpsimd-open`.
pub const CACHE_ENV: &str = "NRT_POOL_CACHE";

/// The build cache folder: `$NRT_POOL_CACHE`, `$XDG_CACHE_HOME/gpsimd-open` or
/// `~/.cache/gpsimd-open` (the temporary folder's when there is no home). Where that
/// cannot be written (a read-only or full disk), this user's private folder in the
/// temporary directory instead, said once per process.
pub(crate) fn cache_dir() -> PathBuf {
    let wanted = configured_cache_dir();
    type Chosen = Vec<(PathBuf, PathBuf)>;
    static CHOSEN: std::sync::Mutex<Chosen> = std::sync::Mutex::new(Vec::new());
    let mut chosen = CHOSEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, c)) = chosen.iter().find(|(w, _)| *w == wanted) {
        return c.clone();
    }
    let c = match writable(&wanted) {
        Ok(()) => wanted.clone(),
        Err(why) => {
            let private = private_cache_dir();
            eprintln!(
                "note: the build cache {} cannot be written ({why}); this process keeps its \
                 entries in {} instead",
                wanted.display(),
                private.display()
            );
            private
        }
    };
    chosen.push((wanted, c.clone()));
    c
}

fn configured_cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(CACHE_ENV) {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("gpsimd-open")
}

/// Whether an entry can be written in `dir`: it exists or can be made, and takes a file
/// of a few pages (a full disk refuses one).
fn writable(dir: &Path) -> Result<(), String> {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut probe = tempfile::Builder::new()
        .prefix(".probe")
        .tempfile_in(dir)
        .map_err(|e| e.to_string())?;
    probe
        .write_all(&[0; 16384])
        .and_then(|()| probe.as_file().sync_all())
        .map_err(|e| e.to_string())
}

/// This user's private cache in the temporary directory (made with mode 0700; one that
/// is not this user's, or that others may write, is not used: then one for this process).
fn private_cache_dir() -> PathBuf {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = user_id();
    let shared = std::env::temp_dir().join(format!("gpsimd-open-cache-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&shared);
    let ours = std::fs::symlink_metadata(&shared)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o022 == 0);
    if ours {
        return shared;
    }
    let own = std::env::temp_dir().join(format!("gpsimd-open-cache-{uid}-{}", std::process::id()));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&own);
    own
}

/// The user this process runs as (cache entries of another user are not trusted).
pub(crate) fn user_id() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A compiler's version (`-dumpfullversion`), asked once per compiler and process: what
/// the build cache keys its entries by (D105, D106), as GCC loads neither a plugin nor a
/// precompiled header made by another version.
pub(crate) fn compiler_version(program: &std::ffi::OsStr) -> Option<String> {
    type Known = Vec<(std::ffi::OsString, Option<String>)>;
    static KNOWN: std::sync::Mutex<Known> = std::sync::Mutex::new(Vec::new());
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, v)) = known.iter().find(|(p, _)| p == program) {
        return v.clone();
    }
    let v = Command::new(program)
        .arg("-dumpfullversion")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty());
    known.push((program.to_owned(), v.clone()));
    v
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError {
    let path = path.to_path_buf();
    move |source| BuildError::Io { path, source }
}

/// Compiles each source to `dir/<stem>.o` (two at a time), in order; the first failure
/// is the error.
pub(crate) fn compile_all(
    sources: &[PathBuf],
    dir: &Path,
    on_compiled: &OnCompiled,
    compile: impl Fn(&Path, &Path) -> Result<(), BuildError> + Sync,
) -> Result<Vec<PathBuf>, BuildError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    // <stem>.o, numbered only where two sources share a stem.
    let mut objs: Vec<PathBuf> = Vec::with_capacity(sources.len());
    for (i, src) in sources.iter().enumerate() {
        let stem = src.file_stem().unwrap_or_default().to_string_lossy();
        let mut obj = dir.join(format!("{stem}.o"));
        if objs.contains(&obj) {
            obj = dir.join(format!("{stem}-{i}.o"));
        }
        objs.push(obj);
    }
    let jobs: Vec<(&PathBuf, &PathBuf)> = sources.iter().zip(&objs).collect();
    let results: Vec<Result<(), BuildError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(2).max(1))
            .map(|part| {
                let compile = &compile;
                scope.spawn(move || {
                    part.iter()
                        .map(|(src, obj)| {
                            let r = compile(src, obj);
                            if let (Ok(()), Some(f)) = (&r, on_compiled) {
                                f(src);
                            }
                            r
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec![Err(BuildError::Crashed)]))
            .collect()
    });
    results.into_iter().collect::<Result<(), _>>()?;
    Ok(objs)
}

/// The kernels the wrapper calls must be defined, with the same signature, by the
/// sources: otherwise the library would only fail at run time, as an undefined symbol.
fn validate_kernels(
    kernels: &[KernelSig],
    wrapper_obj: &Path,
    objs: &[PathBuf],
) -> Result<(), BuildError> {
    let wanted = object_symbols(wrapper_obj, false)?;
    let mut defined = Vec::new();
    for o in objs {
        defined.extend(object_symbols(o, true)?);
    }
    for k in kernels {
        // The wrapper calls ::name(...): a global C++ function, mangled _Z<len><name>...
        let prefix = format!("_Z{}{}", k.name.len(), k.name);
        let is_kernel = |s: &&Vec<u8>| {
            s.starts_with(prefix.as_bytes())
                && !s[prefix.len()..].first().is_some_and(u8::is_ascii_digit)
        };
        let Some(want) = wanted.iter().find(is_kernel) else {
            return Err(BuildError::Wrapper(format!(
                "the wrapper does not call kernel '{}'",
                k.name
            )));
        };
        if defined.contains(want) {
            continue;
        }
        let others: Vec<String> = defined
            .iter()
            .filter(|s| is_kernel(s) || s.as_slice() == k.name.as_bytes())
            .map(|s| demangle(s))
            .collect();
        return Err(BuildError::KernelMismatch {
            kernel: k.name.clone(),
            schema: demangle(want),
            sources: others,
        });
    }
    Ok(())
}

/// An object's global symbols: defined ones (`defined`) or undefined ones.
pub(crate) fn object_symbols(path: &Path, defined: bool) -> Result<Vec<Vec<u8>>, BuildError> {
    use object::{Object, ObjectSymbol};
    let bytes = std::fs::read(path).map_err(io(path))?;
    let file = object::File::parse(&*bytes).map_err(|e| BuildError::Io {
        path: path.into(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
    })?;
    Ok(file
        .symbols()
        .filter(|s| s.is_global() && s.is_undefined() != defined)
        .filter_map(|s| s.name_bytes().ok().map(<[u8]>::to_vec))
        .collect())
}

/// A windowed-ABI device object: the Xtensa g++ emits windowed assembly
/// (`-mabi=windowed`), [`xtensa_asm::windowed`] encodes the windowed instructions the lx106
/// assembler lacks, and GNU as assembles it with its literals in the text section (D53).
pub(crate) fn device_compile(
    tools: &XtensaTools,
    include: &Path,
    flags: &CompileFlags,
    src: &Path,
    obj: &Path,
) -> Result<(), BuildError> {
    let asm = obj.with_extension("s");
    device_assembly(tools, include, flags, src, &asm)?;
    device_object(tools, &asm, obj)
}

/// The device object `obj` from GCC's assembly `asm` (removed after).
pub(crate) fn device_object(tools: &XtensaTools, asm: &Path, obj: &Path) -> Result<(), BuildError> {
    // gdb's `break KERNEL` stops after the argument stores, in the kernel (D116).
    let text = std::fs::read_to_string(asm).map_err(io(asm))?;
    std::fs::write(asm, entry_rows::after_argument_stores(&text)).map_err(io(asm))?;
    assemble_windowed(tools, asm, obj)?;
    std::fs::remove_file(asm).map_err(io(asm))
}

/// Compiles `src` for the device into windowed-ABI assembly `asm` (GCC's, as it wrote it).
pub(crate) fn device_assembly(
    tools: &XtensaTools,
    include: &Path,
    flags: &CompileFlags,
    src: &Path,
    asm: &Path,
) -> Result<(), BuildError> {
    let libcxx = libcxx_headers(include)?;
    let command = |s: &Path, o: &Path| device_cxx(tools, include, &libcxx, flags, s, o);
    let mut c = command(src, asm);
    // The op API precompiled for this command, where the source opens with it (D106).
    op_api_pch::add_when_opening_with_it(&mut c, src, command);
    run(&mut c)
}

/// Assembles windowed-ABI Xtensa assembly (from GCC or rustc) with the lx106 GNU assembler:
/// the windowed instructions encoded by [`xtensa_asm::windowed`], literals in the text
/// section. `obj` appears only when assembly succeeded (written beside it, then renamed).
pub fn assemble_windowed(tools: &XtensaTools, asm: &Path, obj: &Path) -> Result<(), BuildError> {
    let text = std::fs::read_to_string(asm).map_err(io(asm))?;
    let encoded = xtensa_asm::windowed(&text).map_err(|e| BuildError::Compile {
        tool: format!("windowed assembly of {}", asm.display()),
        stderr: e.to_string(),
    })?;
    let windowed = obj.with_extension("windowed.s");
    let partial = obj.with_extension("o.partial");
    std::fs::write(&windowed, encoded).map_err(io(&windowed))?;
    let assembled = run(tools
        .assembler()
        .arg("--text-section-literals")
        .arg(&windowed)
        .arg("-o")
        .arg(&partial))
    .and_then(|()| std::fs::rename(&partial, obj).map_err(io(obj)));
    let _ = std::fs::remove_file(&partial);
    std::fs::remove_file(&windowed).map_err(io(&windowed))?;
    assembled
}

/// Flags host op builds take so host cores follow the device where a compiler flag can
/// make them (D92).
pub const DEVICE_RULES_ON_HOST: &[&str] = &[
    "-funsigned-char",
    "-fsanitize=alignment",
    // Undefined operations a Pool core answers otherwise: named in checked launches (D95).
    "-fsanitize=float-cast-overflow,builtin",
];

/// How host builds of op code are compiled, in either data model. Stack-clash probes: a
/// frame larger than a page touches each page in turn, so a kernel that outgrows its host
/// core's stack hits the guard below it (a reported stack overflow, D79) instead of jumping
/// over it into other memory. -g: fault reports name the source line and its callers from
/// the library's DWARF (without variable tracking, which costs the compile time and most of
/// the size, D83).
pub(crate) const HOST_CODEGEN: &[&str] = &[
    "-std=c++17",
    "-O3",
    "-g",
    "-fno-var-tracking",
    "-fPIC",
    "-Wall",
    "-fstack-clash-protection",
];

/// The host C++ compiler's command for an op library's object `obj` from `src`.
pub(crate) fn host_cxx(
    cxx: &str,
    include: &Path,
    flags: &CompileFlags,
    src: &Path,
    obj: &Path,
) -> Command {
    let mut c = Command::new(cxx);
    c.args(HOST_CODEGEN).arg("-c");
    // The device's rules where x86 differs and a flag can say so (D92): plain `char` is
    // unsigned on a Pool core; an access through a misaligned pointer faults there (the
    // runtime's handler for this check applies the device's rule and reports it).
    c.args(DEVICE_RULES_ON_HOST);
    flags.add_includes(&mut c);
    c.arg("-I").arg(include);
    flags.add_cflags(&mut c);
    c.arg(src).arg("-o").arg(obj);
    c
}

/// Where device builds find the C++ library: LLVM's libc++ headers (the library the
/// vendor's device toolchain ships, D72). `NRT_POOL_LIBCXX` names another copy.
pub const LIBCXX_HEADERS: &str = "/usr/lib/llvm-14/include/c++/v1";

/// Where an installation that carries its own libc++ headers (the Python wheel, D99) keeps
/// them, under the op author's include folder.
pub const CARRIED_LIBCXX: &str = "libc++/v1";

/// The libc++ header folder device builds use, or what to install: `$NRT_POOL_LIBCXX`, the
/// copy carried beside the op author's headers in `include`, then the system's.
pub fn libcxx_headers(include: &Path) -> Result<PathBuf, BuildError> {
    let path = match std::env::var_os("NRT_POOL_LIBCXX") {
        Some(p) => PathBuf::from(p),
        None => [include.join(CARRIED_LIBCXX), PathBuf::from(LIBCXX_HEADERS)]
            .into_iter()
            .find(|p| is_libcxx(p))
            .unwrap_or_else(|| PathBuf::from(LIBCXX_HEADERS)),
    };
    if is_libcxx(&path) {
        Ok(path)
    } else {
        Err(BuildError::Missing {
            what: "libc++ headers (the C++ library of device builds)",
            path,
            hint: "make tools installs them: apt-get install libc++-14-dev; NRT_POOL_LIBCXX names another folder",
        })
    }
}

fn is_libcxx(path: &Path) -> bool {
    path.join("vector").is_file() && path.join("__config").is_file()
}

/// The system folders of builds against the device's C library, in order: the libc++
/// configuration for a core, libc++, then `include/device` (libc++'s C header wrappers
/// reach its C headers by `#include_next`). Device builds and host builds in the device's
/// data model (D97) both use them.
pub(crate) fn device_system_includes(c: &mut Command, include: &Path, libcxx: &Path) {
    c.arg("-isystem")
        .arg(include.join("device/libcxx"))
        .arg("-isystem")
        .arg(libcxx)
        .arg("-isystem")
        .arg(include.join("device"));
}

/// The Xtensa g++ command for windowed-ABI assembly of `src`: include (the op API), then
/// the system folders include/device/libcxx (libc++'s configuration for a core), libc++
/// and include/device, in that order (libc++'s C header wrappers reach include/device's
/// C headers by `#include_next`).
pub(crate) fn device_cxx(
    tools: &XtensaTools,
    include: &Path,
    libcxx: &Path,
    flags: &CompileFlags,
    src: &Path,
    asm: &Path,
) -> Command {
    let mut c = tools.cxx();
    c.args([
        "-std=c++17",
        // As the vendor's device build: small code, each function and object in a section
        // of its own so the link keeps only what the op uses (#25, D79).
        "-Os",
        // Line tables and names for fault reports and gdb (not loaded: the image's size is
        // the same); without variable tracking, whose location lists made the assembly 7x
        // larger and the build half as slow again (D83).
        "-g",
        // GCC writes the line table itself, with a row at each function's first byte: with
        // `.loc` directives the assembler attaches a row to the next instruction only, and
        // the windowed `entry` reaches it as data bytes (xtensa_asm), so gdb found no line
        // at a function's start and stopped before its prologue stored the arguments
        // (D102).
        "-gno-as-loc-support",
        "-fno-var-tracking",
        "-ffunction-sections",
        "-fdata-sections",
        "-S",
        "-mabi=windowed",
        "-mlongcalls",
        "-ffreestanding",
        "-fno-exceptions",
        "-fno-rtti",
        // An integer division by zero traps, as on the host (SIGFPE) and on any Xtensa
        // (QUOS raises an exception, libgcc's __divsi3 runs `ill`); the archive's
        // compiler-builtins division would return a number (D69).
        "-fsanitize=integer-divide-by-zero",
        "-fsanitize-undefined-trap-on-error",
        "-nostdinc++",
    ]);
    device_system_includes(&mut c, include, libcxx);
    flags.add_includes(&mut c);
    c.arg("-I").arg(include);
    flags.add_cflags(&mut c);
    c.arg(src).arg("-o").arg(asm);
    c
}
