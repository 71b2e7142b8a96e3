//! The one build core both op models share: the checks made before anything
//! compiles, the host compiles, the generated wrapper and the library's exports, the host
//! link, the device objects and Pool image, and putting everything in place only once all
//! of it built. The models differ only in how they learn their kernels
//! ([`crate::build`] of either [`crate::OpModel`]: a schema, or a NEURON_LIBRARY registration)
//! and in the wrapper they generate ([`Wrapper`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use nrt_pool_schema::{KernelSig, NeuronLibrary};

use crate::neuron_ops::{self, Kernel};
use crate::{
    compile_all, device_compile, device_image, device_model, host_cxx, io, libcxx_headers,
    op_api_pch, run, wrapper, BuildError, CompileFlags, DataModel, DeviceImage, OnCompiled,
    XtensaTools,
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
    /// The wrapper's C++ source, for the host build or the device build.
    fn source(&self, host: bool) -> String {
        match self {
            Wrapper::Schema { kernels, text } => wrapper::generate_wrapper(kernels, text),
            Wrapper::Ops { lib, kernels } => neuron_ops::generate_wrapper(lib, kernels, host),
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
        self.host_command_opening_with(src, obj, src)
    }

    /// [`Self::host_command`], with the precompiled op API first when `opening` (the
    /// source the compile starts with: `src`, or one it includes first) opens with it (D106).
    pub(crate) fn host_command_opening_with(
        &self,
        src: &Path,
        obj: &Path,
        opening: &Path,
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
                c
            }
        })
    }

    /// Compiles `sources` for the host into `dir`; their objects.
    pub(crate) fn compile_host(
        &self,
        sources: &[PathBuf],
        dir: &Path,
    ) -> Result<Vec<PathBuf>, BuildError> {
        compile_all(sources, dir, &self.on_compiled, |s, d| {
            run(&mut self.host_command(s, d)?)
        })
    }

    /// Generates and compiles the host wrapper, lets `check` compare it with the op
    /// objects, links `objs` into the library (every symbol resolved: `-Wl,-z,defs`),
    /// builds the device outputs asked for from `device_sources` and the device wrapper,
    /// and only then puts the library at `out` and the device outputs in place.
    pub(crate) fn link(
        &self,
        work: &Path,
        wrapper: &Wrapper<'_>,
        objs: &[PathBuf],
        device_sources: &[PathBuf],
        out: &Path,
        check: impl FnOnce(&Path) -> Result<(), BuildError>,
    ) -> Result<Placed, BuildError> {
        let source = work.join("nrt_pool_op_wrapper.cpp");
        std::fs::write(&source, wrapper.source(true)).map_err(io(&source))?;
        let wrapper_obj = work.join("nrt_pool_op_wrapper.o");
        run(&mut self.host_command(&source, &wrapper_obj)?).map_err(|e| match e {
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
            // Its own folder, so its object is nrt_pool_op_wrapper.o in both models.
            let dir = work.join("device-wrapper");
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
            let dev_source = dir.join("nrt_pool_op_wrapper.cpp");
            std::fs::write(&dev_source, wrapper.source(false)).map_err(io(&dev_source))?;
            let sources = [device_sources, std::slice::from_ref(&dev_source)].concat();
            Some(StagedDevice::compile(&sources, work, self)?)
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
    fn compile(
        sources: &[PathBuf],
        work: &Path,
        core: &BuildSetup,
    ) -> Result<StagedDevice, BuildError> {
        let staged = work.join("device");
        let objs = compile_all(sources, &staged, &core.on_compiled, |src, obj| {
            device_compile(&core.xtensa, &core.include, &core.flags, src, obj)
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
