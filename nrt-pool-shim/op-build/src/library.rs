//! The one build core both op models share: the checks made before anything
//! compiles, the host compiles, the generated wrapper and the library's exports, the host
//! link, the device objects and Pool image, and putting everything in place only once all
//! of it built. The models differ only in how they learn their kernels
//! ([`crate::build`] of either [`crate::OpModel`]: a schema, or a NEURON_LIBRARY registration)
//! and in the wrapper they generate ([`Wrapper`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use nrt_pool_schema::{KernelSig, NeuronLibrary};

use crate::device_accesses::DeviceAccesses;
use crate::device_frames::DeviceFrames;
use crate::neuron_ops::{self, Kernel};
use crate::{
    compile_all, device_assembly, device_compile, device_image, device_model, device_object,
    device_plugin, host_cxx, io, libcxx_headers, op_api_pch, run, wrapper, BuildError,
    CompileFlags, DataModel, DeviceImage, OnCompiled, XtensaTools,
};

/// What the generated wrapper adds to an op library, by op model.
pub(crate) enum Wrapper<'a> {
    /// Schema kernels (`nrt-pool build SCHEMA`): launchers that pass the output last, and
    /// the schema text (`nrt_pool_op_schema()`).
    Schema {
        kernels: &'a [KernelSig],
        text: &'a str,
    },
    /// NEURON_LIBRARY ops (`custom_op.load`): launchers that take the kernel's returned
    /// tensor, the op metadata (`nrt_pool_op_library()`) and, on the host, the engine's
    /// shape entry (`nrt_pool_op_shape()`).
    Ops {
        lib: &'a NeuronLibrary,
        kernels: &'a [Kernel],
    },
}

impl Wrapper<'_> {
    /// The wrapper's C++ source, for the device build or the host build (whose launchers
    /// say when the library's code judges its stack by the device build's frames, D118).
    fn source(&self, target: WrapperFor) -> String {
        match self {
            Wrapper::Schema { kernels, text } => wrapper::generate_wrapper(kernels, text, target),
            Wrapper::Ops { lib, kernels } => neuron_ops::generate_wrapper(lib, kernels, target),
        }
    }

    /// The symbols the host library exports beyond the runtime's two.
    fn exports(&self) -> &'static [&'static str] {
        match self {
            Wrapper::Schema { .. } => &["nrt_pool_op_schema"],
            Wrapper::Ops { .. } => &["nrt_pool_op_library", "nrt_pool_op_shape"],
        }
    }
}

/// Which build a generated wrapper is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrapperFor {
    Device,
    /// Host cores; `judged`: the library's code keeps the device build's stack depth.
    Host {
        judged: bool,
    },
}

/// The host library's version script: the runtime's entry points and `exports`, nothing
/// else (op code's own symbols stay local, as in a device image).
pub(crate) fn version_script(exports: &[&str]) -> String {
    let mut s = format!(
        "{{\n  global:\n    {};\n    {};\n",
        customop_abi::handoff::ENTRY_SYMBOL,
        customop_abi::handoff::REGISTER_FUNCS_SYMBOL
    );
    for e in exports {
        s.push_str("    ");
        s.push_str(e);
        s.push_str(";\n");
    }
    s.push_str("  local:\n    *;\n};\n");
    s
}

/// What every op library's build shares, whichever its model: where the runtime and
/// headers are, the compiler and the author's flags, and the device outputs asked for.
pub struct BuildSetup {
    /// The host libneuroncustomop.a of `data_model` (the i386 device-model archive, or the
    /// x86-64 one).
    pub archive: PathBuf,
    /// The data model host cores run the library in (D97).
    pub data_model: DataModel,
    /// The op headers' folder (neuron_customop.hpp, torch/, neuron/, torchneuron/).
    pub include: PathBuf,
    /// The host C++ compiler.
    pub cxx: String,
    /// The 32-bit core runner, where a device-model build's registration runs (D114).
    pub core_runner: PathBuf,
    /// Extra include folders and compiler flags, host and device.
    pub flags: CompileFlags,
    /// Also compile Xtensa device objects into this folder (needs the Xtensa g++).
    pub device_objects: Option<PathBuf>,
    /// The Xtensa tools device outputs are built with.
    pub xtensa: XtensaTools,
    /// Also link the device objects into a Pool image.
    pub device_image: Option<DeviceImage>,
    pub on_compiled: OnCompiled,
}

/// Where a finished build put its device outputs (None: not asked for).
pub(crate) struct Placed {
    pub device: Option<Vec<PathBuf>>,
    pub device_image: Option<PathBuf>,
}

impl BuildSetup {
    /// What a build with this setup depends on beyond its sources (for the build record,
    /// `reuse.rs`): the flow's own version, the compiler and its version, the flags, the
    /// data model, the op headers' folder, and the archives and link script by digest.
    pub(crate) fn inputs(&self) -> String {
        let digest = |p: &Path| crate::reuse::digest_file(p).unwrap_or_else(|| "missing".into());
        let mut t = format!(
            "flow {} {}\ncxx {} {:?}\nmodel {:?}\ninclude {}\narchive {}\nflags {:?} {:?}\ndevice objects {:?}\n",
            env!("CARGO_PKG_VERSION"),
            env!("NRT_POOL_BUILD_FLOW"),
            self.cxx,
            crate::compiler_version(self.cxx.as_ref()),
            self.data_model,
            self.include.display(),
            digest(&self.archive),
            self.flags.extra_include_paths,
            self.flags.extra_cflags,
            self.device_objects,
        );
        if self.data_model == DataModel::Device {
            let libgcc = device_model::libgcc_beside(&self.archive);
            t.push_str(&format!("libgcc {}\n", digest(&libgcc)));
            // The device build's frames the host code judges its stack by (D118).
            let runtime = device_model::runtime_frames_beside(&self.archive);
            t.push_str(&format!(
                "device frames {} {:?}\n",
                digest(&runtime),
                crate::compiler_version(&self.xtensa.program(crate::XtensaTools::CXX)),
            ));
        }
        if let Some(d) = &self.device_image {
            t.push_str(&format!(
                "image {} {} {} {:?}\n",
                d.out.display(),
                digest(&d.archive),
                digest(&d.link_script),
                crate::compiler_version(&self.xtensa.program(crate::XtensaTools::CXX)),
            ));
        }
        t
    }

    /// Refuses a build that cannot succeed before anything compiles: no runtime archive, no
    /// op header `header` (under the include folder), a missing source, device outputs
    /// without the Xtensa tools, a flag the build cannot take.
    pub(crate) fn preflight<'s>(
        &self,
        header: &'static str,
        sources: impl IntoIterator<Item = &'s PathBuf>,
    ) -> Result<(), BuildError> {
        for (what, path, hint) in [
            (
                "libneuroncustomop.a (host)",
                self.archive.clone(),
                "run `make customop-archives`",
            ),
            (header, self.include.join(header), "pass --include DIR"),
        ] {
            if !path.exists() {
                return Err(BuildError::Missing { what, path, hint });
            }
        }
        crate::reuse::verify_installed("libneuroncustomop.a (host)", &self.archive)?;
        for s in sources {
            if !s.is_file() {
                return Err(BuildError::NoSource(s.clone()));
            }
        }
        if (self.device_objects.is_some() || self.device_image.is_some())
            && !self.xtensa.installed()
        {
            return Err(BuildError::NoDeviceCompiler);
        }
        if let Some(d) = &self.device_image {
            d.check()?;
        }
        let runs = Command::new(&self.cxx)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !runs {
            return Err(match self.data_model {
                DataModel::Device => BuildError::NoDeviceModelCompiler(self.cxx.clone()),
                DataModel::Host => BuildError::NoHostCompiler(self.cxx.clone()),
            });
        }
        if self.data_model == DataModel::Device {
            device_model::gcc_include(&self.cxx)?;
            libcxx_headers(&self.include)?;
            let libgcc = device_model::libgcc_beside(&self.archive);
            if !libgcc.is_file() {
                return Err(BuildError::Missing {
                    what: "libgcc.a (i386, beside the device-model archive)",
                    path: libgcc,
                    hint: "run `make customop-archives`",
                });
            }
            crate::reuse::verify_installed("libgcc.a (i386)", &libgcc)?;
        }
        self.flags.check()
    }

    /// The host compiler's command for `src`, in the setup's data model.
    pub(crate) fn host_command(&self, src: &Path, obj: &Path) -> Result<Command, BuildError> {
        self.host_command_opening_with(src, obj, src, None)
    }

    /// [`Self::host_command`], with the precompiled op API first when `opening` (the
    /// source the compile starts with: `src`, or one it includes first) opens with it
    /// (D106), and the device build's frames table of `src` where one is given (D118).
    pub(crate) fn host_command_opening_with(
        &self,
        src: &Path,
        obj: &Path,
        opening: &Path,
        frames: Option<&Path>,
    ) -> Result<Command, BuildError> {
        Ok(match self.data_model {
            DataModel::Host => host_cxx(&self.cxx, &self.include, &self.flags, src, obj),
            DataModel::Device => {
                let libcxx = libcxx_headers(&self.include)?;
                let gcc = device_model::gcc_include(&self.cxx)?;
                let command = |s: &Path, o: &Path| {
                    device_model::cxx(&self.cxx, &self.include, &libcxx, &gcc, &self.flags, s, o)
                };
                let mut c = command(src, obj);
                op_api_pch::add_when_opening_with_it(&mut c, opening, command);
                // (After the plugin: the tables exist only where it loads. The precompiled
                // header is the same for every source: it has none.)
                if let Some(table) = frames {
                    c.arg(device_plugin::frames_argument(table));
                }
                c
            }
        })
    }

    /// Compiles `sources` for the host into `dir`; their objects. With `frames`, each
    /// source's code judges its stack by its device build's frames (D118).
    pub(crate) fn compile_host(
        &self,
        sources: &[PathBuf],
        dir: &Path,
        frames: Option<&DeviceFrameTables<'_>>,
    ) -> Result<Vec<PathBuf>, BuildError> {
        compile_all(sources, dir, &self.on_compiled, |s, d| {
            let table = frames.and_then(|f| f.table(s, d));
            run(&mut self.host_command_opening_with(s, d, s, table.as_deref())?)
        })
    }

    /// The stage that gives host compiles the device build's frames, when this build can
    /// judge the stack by them (the device's data model, a compiler that loads the
    /// plugin, the Xtensa compiler); else None, said once per process (D118).
    pub(crate) fn device_frame_tables(&self, work: &Path) -> Option<DeviceFrameTables<'_>> {
        if self.data_model != DataModel::Device || device_plugin::argument(&self.cxx).is_none() {
            return None;
        }
        if !self.xtensa.installed() {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "note: no Xtensa compiler ({}): host cores judge a kernel's stack by x86 \
                     frames, which can put the edge a few hundred bytes from the device's \
                     (docs/decisions.md D94, D118)",
                    XtensaTools::CXX
                )
            });
            return None;
        }
        let runtime_table = device_model::runtime_frames_beside(&self.archive);
        let runtime = std::fs::read_to_string(&runtime_table).unwrap_or_else(|e| {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "note: {}: {e}; host cores do not count the device runtime's frames \
                     against a kernel's stack (make customop-archives writes it; D118)",
                    runtime_table.display()
                )
            });
            String::new()
        });
        Some(DeviceFrameTables {
            setup: self,
            dir: work.join("device-frames"),
            runtime,
            assembly: Mutex::new(HashMap::new()),
            failed: AtomicBool::new(false),
        })
    }

    /// Generates and compiles the host wrapper, lets `check` compare it with the op
    /// objects, links `objs` into the library (every symbol resolved: `-Wl,-z,defs`),
    /// builds the device outputs asked for from `device_sources` and the device wrapper,
    /// and only then puts the library at `out` and the device outputs in place.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn link(
        &self,
        work: &Path,
        wrapper: &Wrapper<'_>,
        objs: &[PathBuf],
        device_sources: &[PathBuf],
        frames: Option<&DeviceFrameTables<'_>>,
        out: &Path,
        check: impl FnOnce(&Path) -> Result<(), BuildError>,
    ) -> Result<Placed, BuildError> {
        // Its own folder, so its object is nrt_pool_op_wrapper.o in both models.
        let device_wrapper = work.join("device-wrapper");
        std::fs::create_dir_all(&device_wrapper).map_err(io(&device_wrapper))?;
        let dev_source = device_wrapper.join("nrt_pool_op_wrapper.cpp");
        std::fs::write(&dev_source, wrapper.source(WrapperFor::Device)).map_err(io(&dev_source))?;
        let wrapper_obj = work.join("nrt_pool_op_wrapper.o");
        // The host wrapper's frames are its device twin's (the launchers and wrappers
        // have the same names in both).
        let table = frames.and_then(|f| f.table(&dev_source, &wrapper_obj));
        let judged = table.is_some() && frames.is_some_and(|f| f.all_judged());
        let source = work.join("nrt_pool_op_wrapper.cpp");
        std::fs::write(&source, wrapper.source(WrapperFor::Host { judged }))
            .map_err(io(&source))?;
        let mut command = self.host_command_opening_with(
            &source,
            &wrapper_obj,
            &source,
            table.as_deref().filter(|_| judged),
        )?;
        run(&mut command).map_err(|e| match e {
            BuildError::Compile { stderr, .. } => BuildError::Wrapper(stderr),
            e => e,
        })?;
        check(&wrapper_obj)?;
        let map = work.join("op.map");
        std::fs::write(&map, version_script(wrapper.exports())).map_err(io(&map))?;
        let library = work.join("libop.so");
        match self.data_model {
            DataModel::Host => run(Command::new(&self.cxx)
                .args(["-shared", "-fPIC", "-Wl,-z,defs"])
                .args(objs)
                .arg(&wrapper_obj)
                .arg(&self.archive)
                .arg(format!("-Wl,--version-script={}", map.display()))
                .arg("-o")
                .arg(&library))?,
            DataModel::Device => {
                let all = [objs, std::slice::from_ref(&wrapper_obj)].concat();
                run(&mut device_model::link(
                    &self.cxx,
                    &all,
                    &self.archive,
                    &map,
                    &library,
                ))
                .map_err(device_image::explain_undefined_error)?
            }
        }
        // Device outputs before anything is put in place: a source that does not build
        // for the device fails the whole build.
        let device = if self.device_objects.is_some() || self.device_image.is_some() {
            let sources = [device_sources, std::slice::from_ref(&dev_source)].concat();
            Some(StagedDevice::compile(&sources, work, self, frames)?)
        } else {
            None
        };
        let image = match (&device, &self.device_image) {
            (Some(dev), Some(d)) => Some((
                device_image::stage(&self.xtensa, &dev.staged_objs(), d, work)?,
                d,
            )),
            _ => None,
        };
        put_in_place(&library, out)?;
        let device = match device {
            Some(d) if d.dir.is_some() => Some(d.put_in_place()?),
            _ => None,
        };
        let device_image = match image {
            Some((staged, d)) => {
                put_in_place(&staged, &d.out)?;
                Some(d.out.clone())
            }
            None => None,
        };
        Ok(Placed {
            device,
            device_image,
        })
    }
}

/// The device build's frames for host compiles in the device's data model (D118): each
/// source is first compiled for the device (to assembly, kept for the device objects when
/// those are built too), and its frames table is given to the host compile's plugin, so
/// the host build's code keeps the stack depth the device build's frames reach.
pub(crate) struct DeviceFrameTables<'a> {
    setup: &'a BuildSetup,
    dir: PathBuf,
    /// The device runtime's table (`D NAME BYTES` lines; empty where not installed).
    runtime: String,
    /// Source -> its device assembly.
    assembly: Mutex<HashMap<PathBuf, PathBuf>>,
    /// Whether a source's device compile failed (its code then keeps no depth).
    failed: AtomicBool,
}

impl DeviceFrameTables<'_> {
    /// The frames table of `src` (whose host object is `obj`), or None when its device
    /// compile fails (said once; the build goes on, judging that code by x86 frames).
    fn table(&self, src: &Path, obj: &Path) -> Option<PathBuf> {
        let stem = obj.file_stem()?.to_string_lossy().into_owned();
        let parent = obj.parent()?.file_name()?.to_string_lossy().into_owned();
        let dir = self.dir.join(parent);
        std::fs::create_dir_all(&dir).ok()?;
        let asm = dir.join(format!("{stem}.s"));
        let setup = self.setup;
        let made = device_assembly(&setup.xtensa, &setup.include, &setup.flags, src, &asm)
            .and_then(|()| std::fs::read_to_string(&asm).map_err(io(&asm)))
            .and_then(|text| {
                let table = dir.join(format!("{stem}.frames"));
                let mut frames = DeviceFrames::from_assembly(&text).to_plugin_text();
                frames.push_str(&self.runtime);
                // And its widest access by line: alignment as the device build has it (D125).
                frames.push_str(&DeviceAccesses::from_assembly(&text).to_plugin_text());
                std::fs::write(&table, frames).map_err(io(&table))?;
                Ok(table)
            });
        match made {
            Ok(table) => {
                let mut kept = self.assembly.lock().unwrap_or_else(|p| p.into_inner());
                kept.insert(src.to_path_buf(), asm);
                Some(table)
            }
            Err(e) => {
                // Said for the first source that fails.
                if !self.failed.swap(true, Ordering::Relaxed) {
                    let text = match &e {
                        BuildError::Compile { stderr, .. } => stderr.clone(),
                        e => e.to_string(),
                    };
                    let first = text.lines().find(|l| l.contains("error:")).unwrap_or(&text);
                    eprintln!(
                        "note: {} does not compile for the device ({first}); host cores \
                         judge this library's stack by x86 frames (D94, D118)",
                        src.display()
                    );
                }
                None
            }
        }
    }

    /// Whether every source given so far had its table.
    fn all_judged(&self) -> bool {
        !self.failed.load(Ordering::Relaxed)
    }

    /// The device assembly this stage made of `src`.
    fn assembly_of(&self, src: &Path) -> Option<PathBuf> {
        let kept = self.assembly.lock().unwrap_or_else(|p| p.into_inner());
        kept.get(src).cloned()
    }
}

/// Device objects compiled into the build's work folder, put in place only once the
/// library is: a failed build leaves no device folder.
struct StagedDevice {
    staged: PathBuf,
    /// Where the objects go (None: only a Pool image was asked for).
    dir: Option<PathBuf>,
    objs: Vec<PathBuf>,
}

impl StagedDevice {
    /// Compiles `sources` for the device into `work/device`, for `core`'s object folder.
    /// (Sources the frames stage already compiled to assembly are assembled from it.)
    fn compile(
        sources: &[PathBuf],
        work: &Path,
        core: &BuildSetup,
        frames: Option<&DeviceFrameTables<'_>>,
    ) -> Result<StagedDevice, BuildError> {
        let staged = work.join("device");
        let objs = compile_all(sources, &staged, &core.on_compiled, |src, obj| match frames
            .and_then(|f| f.assembly_of(src))
        {
            Some(asm) => {
                let mine = obj.with_extension("s");
                std::fs::copy(&asm, &mine).map_err(io(&mine))?;
                device_object(&core.xtensa, &mine, obj)
            }
            None => device_compile(&core.xtensa, &core.include, &core.flags, src, obj),
        })?;
        Ok(StagedDevice {
            staged,
            dir: core.device_objects.clone(),
            objs,
        })
    }

    /// The objects in the work folder.
    fn staged_objs(&self) -> Vec<PathBuf> {
        self.objs
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| self.staged.join(n))
            .collect()
    }

    /// Replaces `dir` with the staged objects; their paths there.
    fn put_in_place(self) -> Result<Vec<PathBuf>, BuildError> {
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

/// Copies the objects of `from` (not the compiles' dependency lists) into `to`.
fn copy_dir(from: &Path, to: &Path) -> Result<(), BuildError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for e in std::fs::read_dir(from).map_err(io(from))? {
        let e = e.map_err(io(from))?;
        if e.path().extension().is_some_and(|x| x == "deps") {
            continue;
        }
        std::fs::copy(e.path(), to.join(e.file_name())).map_err(io(to))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_model_exports_the_runtime_entries_and_its_own() {
        let script = version_script(&["nrt_pool_op_library", "nrt_pool_op_shape"]);
        assert_eq!(
            script,
            "{\n  global:\n    entry_func;\n    \
             _Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE;\n    \
             nrt_pool_op_library;\n    nrt_pool_op_shape;\n  local:\n    *;\n};\n"
        );
        assert!(
            version_script(&["nrt_pool_op_schema"]).contains("    nrt_pool_op_schema;\n  local:")
        );
    }
}
