//! `gpsimd_open._native`: the emulated Pool engine and the op build flow for Python.
//! The Python layer (`gpsimd_open.custom_op`) gives them torch_neuronx's words.
//!
//! A [`Library`] owns one engine with the op library loaded (its cores persist between
//! calls). Arrays cross as NumPy arrays: an input is copied once, from its buffer straight
//! into device memory (the Python layer makes it C-contiguous and native-endian first), and
//! freed when the call ends; outputs come back as a byte array the Python layer views with
//! the right dtype and shape. Launches release the GIL.
//!
//! Threads (docs/decisions.md D75): every wait for a library's engine lock happens with
//! the GIL released, so a thread holding the engine and wanting the GIL back (to echo
//! stdio, build the result) never waits on a thread holding the GIL and wanting the
//! engine. Calls on one library are serialised (one engine, one launch at a time, as the
//! Pool engine runs one kernel at a time); calls on different libraries run in parallel.
//! A long launch on the main thread looks for Ctrl-C every 20 ms: KeyboardInterrupt stops
//! its cores (restarted at the next call, as after a timeout) and is raised.

mod arrays;
mod checks;
mod errors;
mod profile;
use arrays::{array_arg, array_of, view_of, Bytes};
use errors::to_py;
use profile::profile_dict;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use numpy::PyUntypedArray;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyTuple};

use nrt_pool_engine::check::CheckReport;
use nrt_pool_engine::tensor::{DType, Location};
use nrt_pool_engine::{
    ArgValue, Call, CallOptions, Destination, DeviceTensor, EmuError, Output, Target,
};
use nrt_pool_open::installation::{self, Part};
use nrt_pool_open::views::LaunchViews;
use nrt_pool_open::{OpenError, OpenOptions, Pool};
use nrt_pool_schema::ArgKind;

pyo3::create_exception!(
    _native,
    DeviceFault,
    PyRuntimeError,
    "A kernel (or an op library's loading or shape function) faulted on the emulated Pool engine."
);

/// A checked launch argument: ready, or a NumPy array still to be copied into device
/// memory (`bf16`: its uint16 words are bfloat16 bits).
enum Pending<'py> {
    Ready(ArgValue<'static>),
    Array(Bound<'py, PyUntypedArray>, bool),
}

/// An op library loaded on its own emulated Pool engine.
#[pyclass(module = "gpsimd_open._native", frozen)]
pub struct Library {
    device: Arc<Device>,
    path: String,
}

/// A library's engine, shared with its device arrays (which give their memory back to it
/// when dropped, without the GIL).
struct Device {
    engine: Mutex<Pool>,
    /// Device arrays dropped while the engine was busy (another thread's launch): freed
    /// the next time the engine is taken.
    dropped: Mutex<Vec<DeviceTensor>>,
}

/// A tensor kept in the engine's device memory across calls; its memory goes back to the
/// engine when the array is dropped.
#[pyclass(module = "gpsimd_open._native", frozen)]
pub struct DeviceArray {
    lib: Py<Library>,
    device: Arc<Device>,
    tensor: DeviceTensor,
}

impl Drop for DeviceArray {
    fn drop(&mut self) {
        self.device.release(self.tensor.clone());
    }
}

impl Library {
    fn engine(&self, py: Python<'_>) -> MutexGuard<'_, Pool> {
        self.device.engine(py)
    }

    /// A device array of this library holding `tensor`.
    fn array(slf: &Bound<'_, Self>, tensor: DeviceTensor) -> DeviceArray {
        DeviceArray {
            lib: slf.clone().unbind(),
            device: slf.get().device.clone(),
            tensor,
        }
    }
}

impl Device {
    /// The engine, waited for with the GIL released (see the module's note on threads).
    fn engine(&self, py: Python<'_>) -> MutexGuard<'_, Pool> {
        let mut e = match self.engine.try_lock() {
            Some(e) => e,
            None => py.detach(|| self.engine.lock()),
        };
        self.free_dropped(&mut e);
        e
    }

    /// Frees the device arrays dropped while the engine was busy.
    fn free_dropped(&self, e: &mut Pool) {
        for d in self.dropped.lock().drain(..) {
            e.tensors.free_device(&d);
        }
    }

    /// A dropped device array's memory back to the engine: now if the engine is free, else
    /// when it is next taken (a drop may run with the GIL held, so it never waits).
    fn release(&self, d: DeviceTensor) {
        match self.engine.try_lock() {
            Some(mut e) => {
                e.tensors.free_device(&d);
                self.free_dropped(&mut e);
            }
            None => self.dropped.lock().push(d),
        }
    }
}

impl Library {
    /// What `op` names, resolved (NEURON_LIBRARY libraries).
    fn target(&self, py: Python<'_>, op: &str) -> PyResult<Target> {
        let e = self.engine(py);
        if e.loaded.neuron_library().is_none() {
            return Err(PyTypeError::new_err(
                "this library has no NEURON_LIBRARY ops (build it with custom_op.load)",
            ));
        }
        e.target(op).map_err(|err| to_py(py, err))
    }
}

#[pymethods]
impl Library {
    /// Loads an op library (built by `build` or `nrt-pool build`) on a fresh engine. Its
    /// static constructors run in the emulated cores, never in this process.
    /// A Pool image (`lib{name}.pool`) runs on emulated Xtensa cores under QEMU, with
    /// `board` (default: `$NRT_POOL_XTENSA_BOARD`, else where the package finds it:
    /// `nrt_pool_open::installation`). `isa` ("host" or "xtensa"; default
    /// `$GPSIMD_OPEN_ISA`, else the file's own) runs the build of that backend: the file
    /// beside `path` with the other suffix when `path` is the other's.
    #[new]
    #[pyo3(signature = (path, board=None, isa=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        board: Option<PathBuf>,
        isa: Option<&str>,
    ) -> PyResult<Self> {
        let env = nrt_pool_open::Environment::read("gpsimd_open")
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        // Who chose the backend, for the message when its build is missing.
        let (isa, chosen) = match isa {
            Some(name) => (
                Some(nrt_pool_open::environment::isa_from(name).map_err(|_| {
                    PyValueError::new_err(format!("isa='{name}': 'host' or 'xtensa'"))
                })?),
                format!("isa='{name}'"),
            ),
            None => (
                env.isa,
                format!(
                    "{}={}",
                    nrt_pool_open::environment::ISA_VAR,
                    env.isa.map_or("", |i| i.name())
                ),
            ),
        };
        let o = OpenOptions::default().with_board(board).with_isa(isa);
        let engine = py.detach(|| Pool::open(&path, &o)).map_err(|e| match e {
            OpenError::Engine(EmuError::Library(l)) => PyRuntimeError::new_err(l.to_string()),
            OpenError::Engine(other) => to_py(py, other),
            OpenError::NoSibling {
                isa,
                wanted,
                library,
            } => {
                let how = match isa {
                    nrt_pool_open::Isa::Xtensa => {
                        "custom_op.load(..., isa='xtensa') or `nrt-pool build --device-image`"
                    }
                    nrt_pool_open::Isa::Host => "custom_op.load(...) or `nrt-pool build`",
                };
                PyRuntimeError::new_err(format!(
                    "{chosen}: there is no {} beside {} to run on {} cores; build it with {how}",
                    wanted.file_name().map_or_else(
                        || wanted.display().to_string(),
                        |n| n.to_string_lossy().into_owned()
                    ),
                    library.display(),
                    isa.name()
                ))
            }
            other => PyRuntimeError::new_err(other.to_string()),
        })?;
        let loaded = nrt_pool_open::build_for(&path, engine.isa());
        Ok(Library {
            device: Arc::new(Device {
                engine: Mutex::new(engine),
                dropped: Mutex::new(Vec::new()),
            }),
            path: loaded.display().to_string(),
        })
    }

    /// Reads a suppression file (None: none): later calls' findings an entry matches are
    /// kept out of their reports (`nrt-pool run --suppress`'s format). A malformed line is
    /// a ValueError naming the file and line.
    fn set_suppressions(&self, py: Python<'_>, path: Option<PathBuf>) -> PyResult<()> {
        let s = path
            .map(|p| nrt_pool_engine::check::Suppressions::read(&p))
            .transpose()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.engine(py).set_suppressions(s);
        Ok(())
    }

    /// The suppression entries, each a dict of file, line, text and matched (the findings
    /// it kept out so far; 0: it never matched). Empty without a suppression file.
    fn suppressions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        let list = pyo3::types::PyList::empty(py);
        let e = self.engine(py);
        if let Some(s) = e.suppressions() {
            for (i, entry) in s.entries().iter().enumerate() {
                let d = pyo3::types::PyDict::new(py);
                d.set_item("file", &s.file)?;
                d.set_item("line", entry.line)?;
                d.set_item("text", &entry.text)?;
                d.set_item("matched", s.matched(i))?;
                list.append(d)?;
            }
        }
        Ok(list)
    }

    /// The file loaded (`path`, or the build beside it for the backend asked for).
    #[getter]
    fn path(&self) -> String {
        self.path.clone()
    }

    /// The other backend's build beside the loaded file, if there is one.
    #[getter]
    fn sibling(&self) -> Option<String> {
        nrt_pool_open::sibling(Path::new(&self.path)).map(|p| p.display().to_string())
    }

    /// The NEURON_LIBRARY namespace (None for libraries without one).
    #[getter]
    fn namespace(&self, py: Python<'_>) -> Option<String> {
        self.engine(py)
            .loaded
            .neuron_library()
            .map(|l| l.namespace.clone())
    }

    /// The compiler flags the library was built with (extra_include_paths as -IDIR, then
    /// extra_cflags; empty for libraries without NEURON_LIBRARY metadata).
    #[getter]
    fn cflags(&self, py: Python<'_>) -> Vec<String> {
        self.engine(py)
            .loaded
            .neuron_library()
            .map(|l| l.cflags.clone())
            .unwrap_or_default()
    }

    /// Whether the library was built for all cores (its default core count is then 8).
    #[getter]
    fn multicore(&self, py: Python<'_>) -> bool {
        self.engine(py)
            .loaded
            .neuron_library()
            .is_some_and(|l| l.multicore)
    }

    /// The ops: (name, argument kinds as C++ types).
    #[getter]
    fn ops(&self, py: Python<'_>) -> Vec<(String, Vec<&'static str>)> {
        self.engine(py)
            .loaded
            .neuron_library()
            .map(|l| {
                l.ops
                    .iter()
                    .map(|o| (o.name.clone(), o.args.iter().map(|a| a.cxx()).collect()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The core a launch stops for a debugger (None: none).
    #[getter]
    fn get_debug(&self, py: Python<'_>) -> Option<usize> {
        self.engine(py).defaults.debug.as_ref().map(|d| d.core)
    }

    #[setter]
    fn set_debug(&self, py: Python<'_>, core: Option<usize>) -> PyResult<()> {
        if core.is_some_and(|c| c >= 8) {
            return Err(PyValueError::new_err(
                "debug: a core number from 0 to 7, or None",
            ));
        }
        self.engine(py).defaults.debug =
            core.map(|c| nrt_pool_engine::debug::printing_request(c, "gpsimd_open"));
        Ok(())
    }

    /// Whether every core's printf reaches the caller, each line prefixed with its core.
    #[getter]
    fn get_all_cores_stdio(&self, py: Python<'_>) -> bool {
        self.engine(py).defaults.all_cores_stdio
    }

    #[setter]
    fn set_all_cores_stdio(&self, py: Python<'_>, all: bool) {
        self.engine(py).defaults.all_cores_stdio = all;
    }

    /// The engine's launch timeout in seconds.
    #[getter]
    fn get_timeout(&self, py: Python<'_>) -> f64 {
        self.engine(py).defaults.timeout.as_secs_f64()
    }

    #[setter]
    fn set_timeout(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        if !(seconds > 0.0 && seconds <= 86_400.0) {
            return Err(PyValueError::new_err(
                "timeout: seconds above 0 and at most 86400",
            ));
        }
        self.engine(py).defaults.timeout = std::time::Duration::from_secs_f64(seconds);
        Ok(())
    }

    /// Runs op `op` on `cores` cores (None: the library's default) and returns the output
    /// as (uint8 bytes, dtype name, shape); with `out`, writes a device array instead and
    /// returns None. With `check` (a check list: "default", "all", "init,race", ...), the
    /// call is checked and returns (output, findings, notes): each finding a dict.
    /// `debug` stops that core of this call for a debugger (the library's own setting
    /// otherwise).
    /// `profile` measures the launch and returns (result, profile dict). `trace` (a path)
    /// profiles the launch and writes its trace there (Trace Event JSON, D113); a launch
    /// that faults writes the fault's.
    #[pyo3(signature = (op, args, cores=None, out=None, check=None, debug=None, profile=false, trace=None))]
    #[allow(clippy::too_many_arguments)]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        op: &str,
        args: &Bound<'py, PyTuple>,
        cores: Option<usize>,
        out: Option<&Bound<'py, DeviceArray>>,
        check: Option<&str>,
        debug: Option<usize>,
        profile: bool,
        trace: Option<PathBuf>,
    ) -> PyResult<Py<PyAny>> {
        let views = LaunchViews {
            trace,
            profile: None,
        };
        let py = slf.py();
        if debug.is_some_and(|c| c >= 8) {
            return Err(PyValueError::new_err("debug: a core number from 0 to 7"));
        }
        let me = slf.get();
        let checks = checks::parse(check)?;
        let pending = {
            // Device arrays are checked to belong to this library by identity.
            let target = me.target(py, op)?;
            let kinds = target.op_args().unwrap_or_default();
            for (i, a) in args.iter().enumerate() {
                if let Ok(d) = a.cast::<DeviceArray>() {
                    if !d.get().lib.bind(py).is(slf) {
                        return Err(PyValueError::new_err(format!(
                            "{op}(): argument {i} lives in another library's device memory"
                        )));
                    }
                    if kinds.get(i) != Some(&ArgKind::Tensor) {
                        return Err(PyTypeError::new_err(format!(
                            "{op}(): argument {i} is not a tensor"
                        )));
                    }
                }
            }
            (me.launch_args_checked(py, op, kinds, args)?, target)
        };
        let (pending, target) = pending;
        if let Some(out) = out {
            if !out.get().lib.bind(py).is(slf) {
                return Err(PyValueError::new_err(
                    "out lives in another library's device memory",
                ));
            }
        }
        let mut guard = me.engine(py);
        let e: &mut Pool = &mut guard;
        // Ctrl-C on the main thread stops a launch. Python runs signal handlers on the main
        // thread only, so other threads' launches ask nothing (asking takes the GIL, which
        // would slow their waits for nothing).
        let signal: Arc<Mutex<Option<PyErr>>> = Arc::default();
        let interrupt: Option<nrt_pool_engine::Interrupt> = if on_main_thread(py)? {
            let seen = signal.clone();
            Some(Arc::new(move || {
                Python::attach(|py| match py.check_signals() {
                    Ok(()) => false,
                    Err(err) => {
                        *seen.lock() = Some(err);
                        true
                    }
                })
            }))
        } else {
            None
        };
        // This call's options travel with it; the library's settings stay as they are.
        let options = CallOptions {
            checks: Some(checks),
            profile: Some(profile || views.wanted()),
            debug: debug.map(|c| Some(nrt_pool_engine::debug::printing_request(c, "gpsimd_open"))),
            interrupt,
            ..CallOptions::default()
        };
        // Array arguments go straight from their NumPy buffers into device memory (one copy
        // each, GIL held), as device tensors this call frees again when it ends.
        let r = e.with_temporaries(|e| {
            Self::call_in(py, e, &target, pending, cores, out, options, &views)
        });
        let measured = if profile || views.wanted() {
            e.take_profile()
        } else {
            None
        };
        let raised = signal.lock().take();
        let (output, report) = match raised {
            Some(err) => return Err(err),
            None => r?,
        };
        views
            .write(e, measured.as_ref(), &report)
            .map_err(|err| PyOSError::new_err(err.to_string()))?;
        drop(guard);
        let output = output.into_pyobject(py)?.into_any().unbind();
        let output = match check {
            None => output,
            Some(_) => checks::with_report(py, output, &report)?,
        };
        if !profile {
            return Ok(output);
        }
        let p = match measured {
            Some(p) => profile_dict(py, &p)?.into_any().unbind(),
            None => py.None(),
        };
        Ok(PyTuple::new(py, [output, p])?.into_any().unbind())
    }

    /// The output (dtype name, shape) a call of `op` gives for arguments of these dtypes,
    /// shapes and values, from the op's shape function, run where a call runs it (core 0's
    /// process, never this one); no tensor data is placed, so a tensor argument is its
    /// (dtype name, shape) alone and a number is passed as a call takes it. torch's fake
    /// kernels (`gpsimd_open._torch`) ask this.
    fn output_spec(
        &self,
        py: Python<'_>,
        op: &str,
        args: &Bound<'_, PyTuple>,
    ) -> PyResult<(&'static str, Vec<u64>)> {
        let target = self.target(py, op)?;
        let kinds = target.op_args().unwrap_or_default();
        if args.len() != kinds.len() {
            return Err(PyTypeError::new_err(format!(
                "{op}() takes {} argument(s), got {}",
                kinds.len(),
                args.len()
            )));
        }
        let mut values = Vec::with_capacity(kinds.len());
        for (i, (kind, a)) in kinds.iter().zip(args.iter()).enumerate() {
            values.push(match kind {
                ArgKind::Tensor => {
                    let (name, shape): (String, Vec<u64>) = a.extract().map_err(|_| {
                        PyTypeError::new_err(format!(
                            "{op}(): argument {i} is a tensor: give its (dtype name, shape)"
                        ))
                    })?;
                    let dtype = DType::from_name(&name).ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "{op}(): argument {i}: unknown dtype '{name}'"
                        ))
                    })?;
                    ArgValue::Bytes {
                        dtype,
                        shape,
                        data: &[],
                        location: Location::Hbm,
                    }
                }
                _ => match self.launch_arg(py, op, i, *kind, &a)? {
                    Pending::Ready(v) => v,
                    Pending::Array(..) => unreachable!("only tensor kinds take arrays"),
                },
            });
        }
        let mut guard = self.engine(py);
        let e: &mut Pool = &mut guard;
        let spec = py
            .detach(|| e.output(&target, values, Output::Derive))
            .map_err(|err| to_py(py, err))?;
        Ok((spec.dtype.name(), spec.shape))
    }

    /// A device array holding a copy of `array` (("bf16", uint16 array) for bfloat16).
    fn upload(slf: &Bound<'_, Self>, array: &Bound<'_, PyAny>) -> PyResult<DeviceArray> {
        let (a, bf16) = array_arg(array)
            .unwrap_or_else(|| Err(PyTypeError::new_err("upload() takes a NumPy array")))?;
        let (dtype, shape, bytes) = view_of(&a, bf16)?;
        let d = slf
            .get()
            .engine(slf.py())
            .tensors
            .upload_bytes(dtype, shape, bytes)
            .map_err(|e| to_py(slf.py(), e))?;
        Ok(Library::array(slf, d))
    }

    /// A zeroed device array of `shape` and `dtype` (a dtype name: "f32", "bf16", ...).
    fn device_array(slf: &Bound<'_, Self>, shape: Vec<u64>, dtype: &str) -> PyResult<DeviceArray> {
        let dt = DType::from_name(dtype)
            .ok_or_else(|| PyValueError::new_err(format!("unknown dtype '{dtype}'")))?;
        let d = slf
            .get()
            .engine(slf.py())
            .tensors
            .alloc_device(dt, shape)
            .map_err(|e| to_py(slf.py(), e))?;
        Ok(Library::array(slf, d))
    }
}

impl Library {
    /// `call` once the arguments are checked and the engine is locked: one call through
    /// the engine's call path, array arguments read straight from their NumPy buffers.
    #[allow(clippy::too_many_arguments)]
    fn call_in<'py>(
        py: Python<'py>,
        e: &mut Pool,
        target: &Target,
        pending: Vec<Pending<'py>>,
        cores: Option<usize>,
        out: Option<&Bound<'py, DeviceArray>>,
        options: CallOptions,
        views: &LaunchViews,
    ) -> PyResult<(Option<Bytes<'py>>, CheckReport)> {
        let mut args = Vec::with_capacity(pending.len());
        for p in &pending {
            args.push(match p {
                Pending::Ready(a) => a.clone(),
                Pending::Array(a, bf16) => {
                    let (dtype, shape, data) = view_of(a, *bf16)?;
                    ArgValue::Bytes {
                        dtype,
                        shape,
                        data,
                        location: Location::Hbm,
                    }
                }
            });
        }
        let to = match out {
            Some(out) => Destination::Device(out.get().tensor.clone()),
            None => Destination::Host,
        };
        let called = py
            .detach(|| {
                e.call(Call {
                    target,
                    args,
                    output: Output::Derive,
                    to,
                    cores,
                    options,
                })
            })
            .map_err(|err| {
                if let nrt_pool_engine::EmuError::Fault(f) = &err {
                    // The fault's trace; the fault itself is what the caller hears of.
                    let _ = views.write_fault(f);
                }
                to_py(py, err)
            })?;
        echo(py, &called.run.stdout, &called.run.stderr)?;
        Ok((called.output.map(|t| array_of(py, t)), called.check))
    }

    fn launch_args_checked<'py>(
        &self,
        py: Python<'py>,
        op: &str,
        kinds: &[ArgKind],
        args: &Bound<'py, PyTuple>,
    ) -> PyResult<Vec<Pending<'py>>> {
        // Device arrays were checked by the caller; convert the rest.
        if args.len() != kinds.len() {
            let k: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
            return Err(PyTypeError::new_err(format!(
                "{op}() takes {} argument(s) ({}), got {}",
                kinds.len(),
                k.join(", "),
                args.len()
            )));
        }
        let mut out = Vec::with_capacity(kinds.len());
        for (i, a) in args.iter().enumerate() {
            if let Ok(d) = a.cast::<DeviceArray>() {
                out.push(Pending::Ready(ArgValue::Device(d.get().tensor.clone())));
                continue;
            }
            out.push(self.launch_arg(py, op, i, kinds[i], &a)?);
        }
        Ok(out)
    }

    fn launch_arg<'py>(
        &self,
        py: Python<'py>,
        op: &str,
        i: usize,
        kind: ArgKind,
        v: &Bound<'py, PyAny>,
    ) -> PyResult<Pending<'py>> {
        let _ = py;
        let bad = |what: String| {
            PyTypeError::new_err(format!("{op}(): argument {i} is a {kind}, got {what}"))
        };
        let type_name = || {
            v.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        };
        Ok(Pending::Ready(match kind {
            ArgKind::Tensor => {
                return match array_arg(v) {
                    Some(Ok((a, bf16))) => {
                        // Checked now (dtype, layout), copied once the engine is locked.
                        view_of(&a, bf16)?;
                        Ok(Pending::Array(a, bf16))
                    }
                    Some(Err(_)) => Err(bad("a tuple".into())),
                    None => Err(bad(format!("a {}", type_name()))),
                };
            }
            ArgKind::Double => {
                if v.cast::<PyUntypedArray>().is_ok() {
                    return Err(bad("an array".into()));
                }
                let x: f64 = v.extract().map_err(|_| bad(format!("a {}", type_name())))?;
                ArgValue::Double(x)
            }
            ArgKind::Long => {
                if v.is_instance_of::<PyFloat>() || v.cast::<PyUntypedArray>().is_ok() {
                    return Err(bad(format!("a {}", type_name())));
                }
                let x: i64 = v.extract().map_err(|_| bad(format!("a {}", type_name())))?;
                ArgValue::Long(x)
            }
            ArgKind::Scalar => {
                if v.is_instance_of::<PyInt>() {
                    ArgValue::Long(v.extract()?)
                } else if v.cast::<PyUntypedArray>().is_ok() {
                    return Err(bad("an array".into()));
                } else {
                    let x: f64 = v.extract().map_err(|_| bad(format!("a {}", type_name())))?;
                    ArgValue::Double(x)
                }
            }
        }))
    }
}

/// Whether this is Python's main thread (where its signal handlers run).
fn on_main_thread(py: Python<'_>) -> PyResult<bool> {
    let threading = py.import("threading")?;
    let main = threading.call_method0("main_thread")?;
    Ok(threading.call_method0("current_thread")?.is(&main))
}

/// What core 0 printed, to Python's streams: byte for byte through a stream's binary
/// buffer where it has one (a terminal, a file, pytest's capture); a text-only stream (a
/// notebook's) gets the bytes decoded as UTF-8, invalid sequences replaced.
fn echo(py: Python<'_>, stdout: &[u8], stderr: &[u8]) -> PyResult<()> {
    let sys = py.import("sys")?;
    for (name, bytes) in [("stdout", stdout), ("stderr", stderr)] {
        if bytes.is_empty() {
            continue;
        }
        let stream = sys.getattr(name)?;
        // Text already written to the stream goes first.
        stream.call_method0("flush")?;
        match stream.getattr("buffer") {
            Ok(buffer) => {
                buffer.call_method1("write", (pyo3::types::PyBytes::new(py, bytes),))?;
                buffer.call_method0("flush")?;
            }
            Err(_) => {
                let text = String::from_utf8_lossy(bytes);
                stream.call_method1("write", (text,))?;
                stream.call_method0("flush")?;
            }
        }
    }
    Ok(())
}

#[pymethods]
impl DeviceArray {
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.tensor.shape.clone()
    }

    #[getter]
    fn dtype(&self) -> &'static str {
        self.tensor.dtype.name()
    }

    /// The array's contents as (uint8 bytes, dtype name, shape).
    fn download<'py>(&self, py: Python<'py>) -> PyResult<Bytes<'py>> {
        let t = self
            .lib
            .get()
            .engine(py)
            .tensors
            .download(&self.tensor)
            .map_err(|e| to_py(py, e))?;
        Ok(array_of(py, t))
    }
}

/// Builds an op library as `custom_op.load` does: `build_directory/lib{name}.so`, and with
/// `isa="xtensa"` also its Pool image `lib{name}.pool` (returned then; `pool_image` builds
/// it beside a host build too, for the parity check); the compiler's message is in the
/// exception when a source does not build. Builds into one folder wait for each other, and
/// the folder's last build is kept when nothing it read changed: (path, whether it was
/// kept).
#[pyfunction]
#[pyo3(signature = (name, compute_srcs, shape_srcs, build_directory, multicore, include, archive, isa="host", extra_cflags=Vec::new(), extra_include_paths=Vec::new(), data_model="device", check=None))]
#[allow(clippy::too_many_arguments)] // custom_op.load's arguments, and where the runtime is
fn build(
    py: Python<'_>,
    name: String,
    compute_srcs: Vec<PathBuf>,
    shape_srcs: Vec<PathBuf>,
    build_directory: PathBuf,
    multicore: bool,
    include: PathBuf,
    archive: PathBuf,
    isa: &str,
    extra_cflags: Vec<String>,
    extra_include_paths: Vec<PathBuf>,
    data_model: &str,
    check: Option<&str>,
) -> PyResult<(String, bool)> {
    // The parity check compares with the other build: asked for (by `check`, the load's
    // resolved check list), the Pool image is built beside a host build too, where the
    // Xtensa compiler is installed.
    let parity = check
        .and_then(|c| nrt_pool_engine::check::Checks::parse(c).ok())
        .is_some_and(|c| c.has(nrt_pool_engine::check::Check::Parity));
    let xtensa = xtensa_tools();
    let pool_image = parity && xtensa.installed();
    let data_model = nrt_pool_build::DataModel::from_name(data_model).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "data_model={data_model:?}: 'device' or 'host'"
        ))
    })?;
    let device_image = match isa {
        "host" if !pool_image => None,
        "host" | "xtensa" => Some(nrt_pool_build::DeviceImage {
            out: build_directory.join(format!("lib{name}.pool")),
            archive: installation::find(Part::XtensaArchive),
            link_script: installation::find(Part::LinkScript),
        }),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "isa={other:?}: 'host' or 'xtensa'"
            )))
        }
    };
    let o = nrt_pool_build::OpBuildOptions {
        name,
        compute: compute_srcs,
        shape: shape_srcs,
        build_directory,
        multicore,
        setup: nrt_pool_build::BuildSetup {
            archive,
            data_model,
            include,
            cxx: std::env::var("CXX").unwrap_or_else(|_| "g++".into()),
            flags: nrt_pool_build::CompileFlags {
                extra_cflags,
                extra_include_paths,
            },
            device_objects: None,
            device_image,
            xtensa,
            core_runner: installation::core_runner(),
            on_compiled: None,
        },
    };
    let r = py
        .detach(|| nrt_pool_build::build_or_reuse(&o))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let served = match (isa, r.device_image) {
        ("xtensa", Some(image)) => image,
        _ => r.library,
    };
    Ok((served.display().to_string(), r.reused))
}

/// The Xtensa tools device builds run: those the package carries, else PATH's.
fn xtensa_tools() -> nrt_pool_build::XtensaTools {
    nrt_pool_build::XtensaTools::carried_in_or_path(&installation::find(Part::XtensaTools))
}

/// Whether the Xtensa cross compiler device builds need is installed.
#[pyfunction]
fn xtensa_cxx_installed() -> bool {
    xtensa_tools().installed()
}

/// Does nothing: the baseline of `make bench`'s Python call row (a call through this
/// binding that launches nothing).
#[pyfunction]
fn noop() {}

/// The environment's defaults, as `nrt-pool-open` reads them (the package reads no
/// variable itself): check (a list, or None), warn, all_cores_stdio, debug (a core, or
/// None), isa and data_model (names, or None). A value that cannot be used is a
/// ValueError naming its variable.
#[pyfunction]
fn environment(py: Python<'_>) -> PyResult<Py<pyo3::types::PyDict>> {
    let env = nrt_pool_open::Environment::read("gpsimd_open")
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item(
        "check",
        env.checks.any().then(|| env.checks.names().join(",")),
    )?;
    d.set_item("warn", env.warn)?;
    d.set_item("all_cores_stdio", env.all_cores_stdio)?;
    d.set_item("debug", env.debug.as_ref().map(|r| r.core))?;
    d.set_item("isa", env.isa.map(|i| i.name()))?;
    d.set_item("data_model", env.data_model.map(|m| m.name()))?;
    Ok(d.unbind())
}

/// Where `custom_op.load` builds op library `name` when it is given no folder.
#[pyfunction]
fn default_build_directory(name: &str) -> PathBuf {
    installation::default_build_directory(name)
}

/// Where the package finds a part of the installation ("include", "host-archive",
/// "xtensa-archive", "link-script", "board"): `$GPSIMD_OPEN_HOME`'s build tree, else
/// beside this module (an installed package), else the build tree it was built in.
#[pyfunction]
fn installed(part: &str) -> PyResult<String> {
    let p = Part::from_name(part).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "installed({part:?}): one of {}",
            Part::ALL.map(Part::name).join(", ")
        ))
    })?;
    Ok(installation::find(p).display().to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Library>()?;
    m.add_class::<DeviceArray>()?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(installed, m)?)?;
    m.add_function(wrap_pyfunction!(environment, m)?)?;
    m.add_function(wrap_pyfunction!(default_build_directory, m)?)?;
    m.add_function(wrap_pyfunction!(xtensa_cxx_installed, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)?;
    m.add("DeviceFault", m.py().get_type::<DeviceFault>())?;
    Ok(())
}
