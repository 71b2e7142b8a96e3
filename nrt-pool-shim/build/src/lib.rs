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

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use nrt_pool_schema::{self as schema, demangle, DType, KernelSig, ParamKind};

pub mod device_image;
mod neuron_ops;
mod wrapper;
pub mod xtensa_asm;

pub use device_image::DeviceImage;
pub use neuron_ops::{build_op_library, OpBuildOptions, OpBuildReport};
pub use wrapper::generate_wrapper;
pub(crate) use wrapper::{EXCEPTION_GUARD, HOST_STDIO};

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

pub struct BuildOptions {
    pub schema: PathBuf,
    pub sources: Vec<PathBuf>,
    pub out: PathBuf,
    /// The host libneuroncustomop.a.
    pub archive: PathBuf,
    /// Where neuron_customop.hpp lives.
    pub include: PathBuf,
    /// Also compile Xtensa device objects into this folder (needs the Xtensa g++).
    pub device_objects: Option<PathBuf>,
    /// Also link the device objects into a Pool image.
    pub device_image: Option<DeviceImage>,
    pub cxx: String,
    /// Extra include folders and compiler flags, host and device.
    pub flags: CompileFlags,
    pub on_compiled: OnCompiled,
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
        "device objects were asked for, but {XTENSA_CXX} is not installed (make tools installs it)"
    )]
    NoDeviceCompiler,
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

const VERSION_SCRIPT: &str = "{\n  global:\n    entry_func;\n    _Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE;\n    nrt_pool_op_schema;\n  local:\n    *;\n};\n";

pub(crate) fn run(cmd: &mut Command) -> Result<(), BuildError> {
    let tool = format!("{cmd:?}");
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

/// Builds the op library (and device objects when asked for). Nothing is written at the
/// destination unless everything built: a failure leaves no library and no device folder.
pub fn build(o: &BuildOptions) -> Result<BuildReport, BuildError> {
    let text = std::fs::read_to_string(&o.schema).map_err(io(&o.schema))?;
    let kernels = schema::parse(&text).map_err(|source| BuildError::Schema {
        path: o.schema.clone(),
        source,
    })?;
    if kernels.is_empty() {
        return Err(BuildError::Empty(o.schema.clone()));
    }
    for (what, path, hint) in [
        (
            "libneuroncustomop.a (host)",
            &o.archive,
            "run `make customop-archives`",
        ),
        (
            "neuron_customop.hpp",
            &o.include.join("neuron_customop.hpp"),
            "pass --include DIR",
        ),
    ] {
        if !path.exists() {
            return Err(BuildError::Missing {
                what,
                path: path.clone(),
                hint,
            });
        }
    }
    for s in &o.sources {
        if !s.is_file() {
            return Err(BuildError::NoSource(s.clone()));
        }
    }
    check_device(&o.device_objects, &o.device_image)?;
    o.flags.check()?;
    let work = tempfile::tempdir().map_err(io(Path::new("temporary directory")))?;
    let wrapper = work.path().join("nrt_pool_op_wrapper.cpp");
    std::fs::write(&wrapper, generate_wrapper(&kernels, &text)).map_err(io(&wrapper))?;
    let map = work.path().join("op.map");
    std::fs::write(&map, VERSION_SCRIPT).map_err(io(&map))?;
    // Every source to an object first, so that the kernels can be checked against the
    // schema before anything is linked.
    let host_cxx = |src: &Path, obj: &Path| host_cxx(&o.cxx, &o.include, &o.flags, src, obj);
    let objs = compile_all(
        &o.sources,
        &work.path().join("host"),
        &o.on_compiled,
        |s, d| run(&mut host_cxx(s, d)),
    )?;
    let wrapper_obj = work.path().join("nrt_pool_op_wrapper.o");
    run(&mut host_cxx(&wrapper, &wrapper_obj)).map_err(|e| match e {
        BuildError::Compile { stderr, .. } => BuildError::Wrapper(stderr),
        e => e,
    })?;
    check_kernels(&kernels, &wrapper_obj, &objs)?;
    let tmp_out = work.path().join("libop.so");
    run(Command::new(&o.cxx)
        .args(["-shared", "-fPIC"])
        .args(&objs)
        .arg(&wrapper_obj)
        .arg(&o.archive)
        .arg(format!("-Wl,--version-script={}", map.display()))
        .arg("-o")
        .arg(&tmp_out))?;
    // Device objects before anything is put in place: a source that does not build for
    // the device fails the whole build.
    let (device, image) = stage_device(
        || Ok([o.sources.as_slice(), std::slice::from_ref(&wrapper)].concat()),
        work.path(),
        o.device_objects.as_deref(),
        o.device_image.as_ref(),
        &o.include,
        &o.flags,
        &o.on_compiled,
    )?;
    put_in_place(&tmp_out, &o.out)?;
    let (device, device_image) = place_device(device, image)?;
    Ok(BuildReport {
        kernels,
        library: o.out.clone(),
        device,
        device_image,
    })
}

/// Refuses device outputs the Xtensa tools or runtime files cannot give.
pub(crate) fn check_device(
    objects: &Option<PathBuf>,
    image: &Option<DeviceImage>,
) -> Result<(), BuildError> {
    if (objects.is_some() || image.is_some()) && !xtensa_cxx_installed() {
        return Err(BuildError::NoDeviceCompiler);
    }
    if let Some(d) = image {
        d.check()?;
    }
    Ok(())
}

/// A Pool image linked in the work folder, and where it goes.
pub(crate) type StagedImage = (PathBuf, PathBuf);

/// The device objects of `sources` (and their Pool image) staged in `work`, when either is
/// asked for; nothing is put in place yet.
pub(crate) fn stage_device(
    sources: impl FnOnce() -> Result<Vec<PathBuf>, BuildError>,
    work: &Path,
    objects: Option<&Path>,
    image: Option<&DeviceImage>,
    include: &Path,
    flags: &CompileFlags,
    on_compiled: &OnCompiled,
) -> Result<(Option<StagedDevice>, Option<StagedImage>), BuildError> {
    if objects.is_none() && image.is_none() {
        return Ok((None, None));
    }
    let device = StagedDevice::compile(&sources()?, work, objects, include, flags, on_compiled)?;
    let staged = stage_image(Some(&device), image, work)?;
    Ok((Some(device), staged))
}

/// Links the staged device objects into a Pool image in the work folder, when asked.
pub(crate) fn stage_image(
    device: Option<&StagedDevice>,
    image: Option<&DeviceImage>,
    work: &Path,
) -> Result<Option<(PathBuf, PathBuf)>, BuildError> {
    match (device, image) {
        (Some(dev), Some(d)) => {
            let objs: Vec<PathBuf> = dev
                .objs
                .iter()
                .filter_map(|p| p.file_name())
                .map(|n| dev.staged.join(n))
                .collect();
            Ok(Some((device_image::stage(&objs, d, work)?, d.out.clone())))
        }
        _ => Ok(None),
    }
}

/// Puts the device objects and the Pool image in place (after the library).
pub(crate) fn place_device(
    device: Option<StagedDevice>,
    image: Option<(PathBuf, PathBuf)>,
) -> Result<(Option<Vec<PathBuf>>, Option<PathBuf>), BuildError> {
    let device = match device {
        Some(d) if d.dir.is_some() => Some(d.put_in_place()?),
        _ => None,
    };
    let image = match image {
        Some((staged, out)) => {
            put_in_place(&staged, &out)?;
            Some(out)
        }
        None => None,
    };
    Ok((device, image))
}

/// Device objects compiled into the build's work folder, put in place only once the
/// library is: a failed build leaves no device folder.
pub(crate) struct StagedDevice {
    staged: PathBuf,
    /// Where the objects go (None: only a Pool image was asked for).
    dir: Option<PathBuf>,
    objs: Vec<PathBuf>,
}

impl StagedDevice {
    /// Compiles `sources` for the device into `work/device`, for `dir` later.
    pub(crate) fn compile(
        sources: &[PathBuf],
        work: &Path,
        dir: Option<&Path>,
        include: &Path,
        flags: &CompileFlags,
        on_compiled: &OnCompiled,
    ) -> Result<StagedDevice, BuildError> {
        let staged = work.join("device");
        let objs = compile_all(sources, &staged, on_compiled, |src, obj| {
            device_compile(include, flags, src, obj)
        })?;
        Ok(StagedDevice {
            staged,
            dir: dir.map(Path::to_path_buf),
            objs,
        })
    }

    /// Replaces `dir` with the staged objects; their paths there.
    pub(crate) fn put_in_place(self) -> Result<Vec<PathBuf>, BuildError> {
        let Some(dir) = self.dir else {
            return Ok(Vec::new());
        };
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        copy_dir(&self.staged, &dir)?;
        Ok(self
            .objs
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| dir.join(n))
            .collect())
    }
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

/// Renames (or, across file systems, copies) the finished library into place.
pub(crate) fn put_in_place(tmp: &Path, dst: &Path) -> Result<(), BuildError> {
    if std::fs::rename(tmp, dst).is_ok() {
        return Ok(());
    }
    // Copy beside the destination, then rename: still never a half-written library.
    let parent = dst
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let side = parent.join(format!(
        ".{}.partial",
        dst.file_name().unwrap_or_default().to_string_lossy()
    ));
    let r = std::fs::copy(tmp, &side).and_then(|_| std::fs::rename(&side, dst));
    if r.is_err() {
        let _ = std::fs::remove_file(&side);
    }
    r.map_err(io(dst))
}

pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<(), BuildError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for e in std::fs::read_dir(from).map_err(io(from))? {
        let e = e.map_err(io(from))?;
        std::fs::copy(e.path(), to.join(e.file_name())).map_err(io(to))?;
    }
    Ok(())
}

/// The kernels the wrapper calls must be defined, with the same signature, by the
/// sources: otherwise the library would only fail at run time, as an undefined symbol.
fn check_kernels(
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

pub const XTENSA_CXX: &str = "xtensa-lx106-elf-g++";

pub fn xtensa_cxx_installed() -> bool {
    Command::new(XTENSA_CXX)
        .arg("--version")
        .output()
        .is_ok_and(|r| r.status.success())
}

/// A windowed-ABI device object: the Xtensa g++ emits windowed assembly
/// (`-mabi=windowed`), [`xtensa_asm::windowed`] encodes the windowed instructions the lx106
/// assembler lacks, and GNU as assembles it with its literals in the text section (D53).
pub(crate) fn device_compile(
    include: &Path,
    flags: &CompileFlags,
    src: &Path,
    obj: &Path,
) -> Result<(), BuildError> {
    let asm = obj.with_extension("s");
    run(&mut device_cxx(
        include,
        &libcxx_headers()?,
        flags,
        src,
        &asm,
    ))?;
    assemble_windowed(&asm, obj)?;
    std::fs::remove_file(&asm).map_err(io(&asm))
}

/// Assembles windowed-ABI Xtensa assembly (from GCC or rustc) with the lx106 GNU assembler:
/// the windowed instructions encoded by [`xtensa_asm::windowed`], literals in the text
/// section. `obj` appears only when assembly succeeded (written beside it, then renamed).
pub fn assemble_windowed(asm: &Path, obj: &Path) -> Result<(), BuildError> {
    let text = std::fs::read_to_string(asm).map_err(io(asm))?;
    let encoded = xtensa_asm::windowed(&text).map_err(|e| BuildError::Compile {
        tool: format!("windowed assembly of {}", asm.display()),
        stderr: e.to_string(),
    })?;
    let windowed = obj.with_extension("windowed.s");
    let partial = obj.with_extension("o.partial");
    std::fs::write(&windowed, encoded).map_err(io(&windowed))?;
    let assembled = run(Command::new(XTENSA_AS)
        .arg("--text-section-literals")
        .arg(&windowed)
        .arg("-o")
        .arg(&partial))
    .and_then(|()| std::fs::rename(&partial, obj).map_err(io(obj)));
    let _ = std::fs::remove_file(&partial);
    std::fs::remove_file(&windowed).map_err(io(&windowed))?;
    assembled
}

pub const XTENSA_AS: &str = "xtensa-lx106-elf-as";

/// The host C++ compiler's command for an op library's object `obj` from `src`.
pub(crate) fn host_cxx(
    cxx: &str,
    include: &Path,
    flags: &CompileFlags,
    src: &Path,
    obj: &Path,
) -> Command {
    let mut c = Command::new(cxx);
    // Stack-clash probes: a frame larger than a page touches each page in turn, so a kernel
    // that outgrows its host core's stack hits the guard below it (a reported stack
    // overflow, D79) instead of jumping over it into other memory.
    c.args([
        "-std=c++17",
        "-O3",
        "-fPIC",
        "-Wall",
        "-fstack-clash-protection",
        "-c",
    ]);
    flags.add_includes(&mut c);
    c.arg("-I").arg(include);
    flags.add_cflags(&mut c);
    c.arg(src).arg("-o").arg(obj);
    c
}

/// Where device builds find the C++ library: LLVM's libc++ headers (the library the
/// vendor's device toolchain ships, D72). `NRT_POOL_LIBCXX` names another copy.
pub const LIBCXX_HEADERS: &str = "/usr/lib/llvm-14/include/c++/v1";

/// The libc++ header folder device builds use, or what to install.
pub fn libcxx_headers() -> Result<PathBuf, BuildError> {
    let path = std::env::var_os("NRT_POOL_LIBCXX")
        .map_or_else(|| PathBuf::from(LIBCXX_HEADERS), PathBuf::from);
    if path.join("vector").is_file() && path.join("__config").is_file() {
        Ok(path)
    } else {
        Err(BuildError::Missing {
            what: "libc++ headers (the C++ library of device builds)",
            path,
            hint: "make tools installs them: apt-get install libc++-14-dev; NRT_POOL_LIBCXX names another folder",
        })
    }
}

/// The Xtensa g++ command for windowed-ABI assembly of `src`: include (the op API), then
/// the system folders include/device/libcxx (libc++'s configuration for a core), libc++
/// and include/device, in that order (libc++'s C header wrappers reach include/device's
/// C headers by `#include_next`).
pub(crate) fn device_cxx(
    include: &Path,
    libcxx: &Path,
    flags: &CompileFlags,
    src: &Path,
    asm: &Path,
) -> Command {
    let mut c = Command::new(XTENSA_CXX);
    c.args([
        "-std=c++17",
        // As the vendor's device build: small code, each function and object in a section
        // of its own so the link keeps only what the op uses (#25, D79).
        "-Os",
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
    ])
    .arg("-isystem")
    .arg(include.join("device/libcxx"))
    .arg("-isystem")
    .arg(libcxx)
    .arg("-isystem")
    .arg(include.join("device"));
    flags.add_includes(&mut c);
    c.arg("-I").arg(include);
    flags.add_cflags(&mut c);
    c.arg(src).arg("-o").arg(asm);
    c
}
