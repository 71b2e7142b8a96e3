//! The opened handle: one engine on the cores a library's file names, its
//! environment's defaults applied, and the other build's engine for the parity check. A
//! front end's launch reads: open a `Pool` -> resolve a [`Target`] -> [`Pool::call`] ->
//! the result.

use std::ops::{Deref, DerefMut};
use std::path::Path;

use nrt_pool_engine::check::{Check, Suppressions};
use nrt_pool_engine::{Call, Called, Destination, EmuError, PoolEngine, PoolImage};
use nrt_pool_host::HostBackend;
use nrt_pool_schema::pool_image;

use crate::parity::{Comparison, ParityInputs, ThisRun, Twin};
use crate::{build_for, installation, is_host_library, Isa, OpenError, OpenOptions};

/// An opened Pool engine and what goes with it. It derefs to the engine for its parts
/// (tensors, the loaded library, defaults); calls go through [`Pool::call`], which makes
/// the parity check the engine alone cannot.
pub struct Pool {
    engine: PoolEngine,
    isa: Isa,
    /// The other build's engine (`--check=parity`), opened when first asked.
    twin: Twin,
    /// How it was opened (the environment read once, at open): a reload's twin opens so.
    options: OpenOptions,
    /// Findings judged benign, kept out of each call's report (`--suppress`).
    suppressions: Option<Suppressions>,
}

/// Host cores with the 32-bit core runner of this installation (D97).
fn host_cores() -> HostBackend {
    HostBackend::with_core_runner(&installation::core_runner())
}

/// Why a registered image has no parity twin.
const REGISTERED_TWIN: &str = "the Pool image registered through nrt_set_pool_eng_ucode \
    is bytes, not a file beside its other build: name that build in \
    $GPSIMD_OPEN_PARITY_BUILD, or register the library by path \
    (nrt_pool_register_library)";

/// The parity twin's note for an engine opened with no library file.
const NO_FILE_TWIN: &str =
    "the engine was opened without a library file (no other build to compare with)";

impl Pool {
    /// An engine with no library loaded, on `isa`'s cores, the options' defaults applied.
    pub fn without_library(isa: Isa, image: PoolImage, o: &OpenOptions) -> Result<Pool, OpenError> {
        let mut engine = match isa {
            Isa::Host => PoolEngine::with_backend(o.hbm_bytes, image, Box::new(host_cores()))?,
            Isa::Xtensa => PoolEngine::with_backend(
                o.hbm_bytes,
                image,
                Box::new(
                    nrt_pool_qemu::XtensaBackend::new(
                        o.board.clone().unwrap_or_else(installation::board),
                    )
                    .with_shape_cores(Box::new(host_cores())),
                ),
            )?,
        };
        o.environment.apply(&mut engine);
        Ok(Pool {
            engine,
            isa,
            twin: Twin::Unavailable(NO_FILE_TWIN.into()),
            options: o.clone(),
            suppressions: None,
        })
    }

    /// An engine with `library` loaded: on the cores `o.isa` names (the build beside
    /// `library` when that is the other ISA), else on those the file is built for; the
    /// other build beside it is the parity check's. The library's static constructors run
    /// in the emulated cores, never in this process.
    pub fn open(library: &Path, o: &OpenOptions) -> Result<Pool, OpenError> {
        let mut pool = Pool::open_alone(library, o)?;
        let path = build_for(library, pool.isa);
        pool.twin = twin_beside(&path, pool.isa, o);
        Ok(pool)
    }

    /// [`Pool::open`] with no parity twin (the twin's own engine).
    pub(crate) fn open_alone(library: &Path, o: &OpenOptions) -> Result<Pool, OpenError> {
        let isa = o.isa.unwrap_or_else(|| Isa::of(library));
        let path = build_for(library, isa);
        if path != library && !path.is_file() {
            return Err(OpenError::NoSibling {
                isa,
                wanted: path,
                library: library.to_path_buf(),
            });
        }
        let mut pool = Pool::without_library(isa, PoolImage::default(), o)?;
        pool.engine.load(&path)?;
        Ok(pool)
    }

    /// An engine for the Pool image `nrt_set_pool_eng_ucode` registered (the launch FFI):
    /// an Xtensa Pool image's IRAM/DRAM pair runs on Xtensa cores; a host library
    /// registered as the IRAM image on host cores; anything else (or nothing) leaves the
    /// engine without a library, as the stock image does. Its parity twin is the build
    /// `$GPSIMD_OPEN_PARITY_BUILD` names.
    pub fn open_image(image: PoolImage, o: &OpenOptions) -> Result<Pool, OpenError> {
        const LABEL: &str = "the registered Pool image";
        if pool_image::parse_pair(&image.iram, &image.dram).is_ok() {
            let file = pool_image::write_file_from_pair(&image.iram, &image.dram);
            let mut pool = Pool::without_library(Isa::Xtensa, image, o)?;
            pool.engine.load_image(&file, LABEL)?;
            pool.twin = registered_twin(Isa::Xtensa, o);
            return Ok(pool);
        }
        let host_library = is_host_library(&image.iram);
        let mut pool = Pool::without_library(Isa::Host, image, o)?;
        if host_library {
            let iram = pool.engine.image().iram.clone();
            pool.engine.load_image(&iram, LABEL)?;
            pool.twin = registered_twin(Isa::Host, o);
        } else {
            pool.twin = Twin::Unavailable(REGISTERED_TWIN.into());
        }
        Ok(pool)
    }

    /// Loads `library` in place of the loaded one, on these cores (the launch FFI's
    /// `nrt_pool_register_library`); the other build beside it becomes the parity
    /// check's.
    pub fn reload(&mut self, library: &Path) -> Result<&[String], OpenError> {
        self.engine.load(library)?;
        self.twin = twin_beside(library, Isa::of(library), &self.options);
        Ok(self.engine.loaded.kernels())
    }

    /// Calls a kernel or an op on the engine and, where the call's checks include parity,
    /// again on the other build's cores, adding what differs to the report (or, where the
    /// launch faults here, whether it completes there to the fault). Findings name a
    /// source line where the library's debug information has one; the suppressions keep
    /// out what they match.
    pub fn call(&mut self, call: Call<'_>) -> Result<Called, EmuError> {
        let target = call.target;
        let mut called = self.call_with_parity(call)?;
        let engine = &self.engine;
        called.check.place_unsourced(|| engine.kernel_line(target));
        if let Some(s) = self.suppressions.as_mut() {
            s.apply(target, &mut called.check);
        }
        Ok(called)
    }

    /// Suppressions every later call's report is filtered through (None: none).
    pub fn set_suppressions(&mut self, s: Option<Suppressions>) {
        self.suppressions = s;
    }

    /// The suppressions, with what each matched so far.
    pub fn suppressions(&self) -> Option<&Suppressions> {
        self.suppressions.as_ref()
    }

    /// [`Pool::call`]'s launch, with the parity check where asked.
    fn call_with_parity(&mut self, call: Call<'_>) -> Result<Called, EmuError> {
        let settings = self.engine.defaults.for_call(&call.options);
        if !settings.checks.has(Check::Parity) {
            return self.engine.call(call);
        }
        if !self.twin.available() {
            let mut called = self.engine.call(call)?;
            called.check.notes.push(self.twin.unavailable_note());
            return Ok(called);
        }
        let Call {
            target,
            args,
            output,
            mut to,
            cores,
            options,
        } = call;
        let cores = cores.unwrap_or_else(|| self.engine.loaded.default_cores());
        let comparison = Comparison {
            twin: &mut self.twin,
            here: self.isa,
            target,
            // Taken before the launch, which may write its device tensors.
            inputs: ParityInputs::of(&self.engine, &args),
            cores,
            settings,
        };
        let called = self.engine.call(Call {
            target,
            args,
            output,
            to: to.reborrow(),
            cores: Some(cores),
            options,
        });
        match called {
            Err(EmuError::Fault(mut f)) => {
                comparison.of_fault(&mut f);
                Err(EmuError::Fault(f))
            }
            Err(e) => Err(e),
            Ok(mut called) => {
                let output = match (&called.output, &to) {
                    (Some(t), _) => t.data.clone(),
                    (None, Destination::Buffer(b)) => b.to_vec(),
                    (None, Destination::Device(d)) => self
                        .engine
                        .tensors
                        .device_bytes(d)
                        .unwrap_or_default()
                        .to_vec(),
                    (None, Destination::Host) => Vec::new(),
                };
                let this = ThisRun {
                    output: &output,
                    stdout: &called.run.stdout,
                };
                let mut report = std::mem::take(&mut called.check);
                comparison.of_run(&called.spec, this, &mut report);
                called.check = report;
                Ok(called)
            }
        }
    }

    /// Runs `f`, then releases every device tensor allocated while it ran (a binding's
    /// arguments copied in for one call), whether `f` succeeded or not; nested, the inner
    /// call's tensors go with the outer one's. ([`PoolEngine::with_temporaries`] for the
    /// pool, so calls inside make the parity check.)
    pub fn with_temporaries<R>(&mut self, f: impl FnOnce(&mut Pool) -> R) -> R {
        if !self.engine.tensors.begin_temporaries() {
            return f(self);
        }
        let r = f(self);
        self.engine.tensors.end_temporaries();
        r
    }

    /// The cores the engine runs.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    pub fn engine(&self) -> &PoolEngine {
        &self.engine
    }

    pub fn engine_mut(&mut self) -> &mut PoolEngine {
        &mut self.engine
    }
}

impl Deref for Pool {
    type Target = PoolEngine;
    fn deref(&self) -> &PoolEngine {
        &self.engine
    }
}

impl DerefMut for Pool {
    fn deref_mut(&mut self) -> &mut PoolEngine {
        &mut self.engine
    }
}

/// The parity check's other engine for `library` on `isa`: the other build beside it,
/// opened when a launch first asks (D93).
fn twin_beside(library: &Path, isa: Isa, o: &OpenOptions) -> Twin {
    let other = build_for(library, isa.other());
    if !other.is_file() {
        return Twin::Unavailable(format!(
            "no {} beside {} to compare with (`nrt-pool build --device-image` or \
             `custom_op.load(..., isa=\"xtensa\")` writes both)",
            other.display(),
            library.display()
        ));
    }
    Twin::at(other, isa.other(), o)
}

/// The parity twin of a registered image running on `isa`: the build the environment's
/// `$GPSIMD_OPEN_PARITY_BUILD` names (the other ISA's), or why there is none.
fn registered_twin(isa: Isa, o: &OpenOptions) -> Twin {
    let var = crate::environment::PARITY_BUILD_VAR;
    match o.environment.parity_build.clone() {
        Some(p) if Isa::of(&p) == isa.other() && p.is_file() => Twin::at(p, isa.other(), o),
        Some(p) => Twin::Unavailable(format!(
            "${var} names {}, which is not a {} build (a {} file)",
            p.display(),
            isa.other().name(),
            isa.other().extension()
        )),
        None => Twin::Unavailable(REGISTERED_TWIN.into()),
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("isa", &self.isa)
            .field("twin", &self.twin)
            .finish_non_exhaustive()
    }
}
