//! Engine errors as Python exceptions: a device fault as `DeviceFault` with its core,
//! kind, address and output; wrong arguments as TypeError or ValueError.

use nrt_pool_engine::EmuError;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::DeviceFault;

/// An engine error as the Python exception an op author expects.
pub(crate) fn to_py(py: Python<'_>, e: EmuError) -> PyErr {
    match e {
        EmuError::Fault(f) => {
            let err = DeviceFault::new_err(f.to_string());
            let v = err.value(py);
            let _ = v.setattr("kernel", f.kernel.clone());
            let _ = v.setattr("core", f.core);
            let _ = v.setattr("kind", f.kind.describe());
            let _ = v.setattr("address", f.soc_addr.or(f.host_addr));
            let _ = v.setattr("stdout", pyo3::types::PyBytes::new(py, &f.stdout));
            let _ = v.setattr("stderr", pyo3::types::PyBytes::new(py, &f.stderr));
            // The op author's frames, innermost first: (file, line, function).
            let stack: Vec<(Option<String>, Option<u32>, Option<String>)> = f
                .op_frames()
                .map(|s| (s.file.clone(), s.line, s.function.clone()))
                .collect();
            let _ = v.setattr("stack", stack);
            err
        }
        EmuError::StartFault { .. } => DeviceFault::new_err(e.to_string()),
        EmuError::Signature { .. } | EmuError::TooManyArgs { .. } => {
            PyTypeError::new_err(e.to_string())
        }
        EmuError::UnknownTarget { .. } | EmuError::StaleTarget { .. } => {
            pyo3::exceptions::PyAttributeError::new_err(e.to_string())
        }
        EmuError::Argument { .. }
        | EmuError::Output { .. }
        | EmuError::Tensor(_)
        | EmuError::Cores(_)
        | EmuError::Shape { .. } => PyValueError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}
