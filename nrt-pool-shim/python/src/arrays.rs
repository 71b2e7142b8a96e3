//! NumPy arrays in and out: a tensor's dtype from an array's kind and item size, a view of
//! an array's bytes, and an output as (uint8 bytes, dtype name, shape).

use numpy::{PyArray1, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use nrt_pool_engine::tensor::{DType, HostTensor};

/// The dtype of a NumPy array by kind and item size.
pub(crate) fn dtype_of(kind: u8, size: usize) -> Option<DType> {
    Some(match (kind, size) {
        (b'f', 4) => DType::F32,
        (b'f', 2) => DType::F16,
        (b'i', 1) => DType::I8,
        (b'u', 1) => DType::U8,
        (b'i', 2) => DType::I16,
        (b'u', 2) => DType::U16,
        (b'i', 4) => DType::I32,
        (b'u', 4) => DType::U32,
        (b'i', 8) => DType::I64,
        (b'u', 8) => DType::U64,
        _ => return None,
    })
}

/// A C-contiguous native-endian NumPy array's dtype, shape and bytes, in place (`bf16`:
/// its uint16 words are bfloat16 bits). The bytes live as long as the array's binding.
pub(crate) fn view_of<'a>(
    a: &'a Bound<'_, PyUntypedArray>,
    bf16: bool,
) -> PyResult<(DType, Vec<u64>, &'a [u8])> {
    let d = a.dtype();
    let mut dtype = dtype_of(d.kind(), d.itemsize()).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "arrays of dtype {} cannot be passed to a kernel (float32, float16, bfloat16, int8/16/32/64, uint8 and the unsigned raw types)",
            d.str().map(|s| s.to_string()).unwrap_or_default()
        ))
    })?;
    if bf16 {
        if dtype != DType::U16 {
            return Err(PyTypeError::new_err(
                "bfloat16 arrays carry their bits as uint16",
            ));
        }
        dtype = DType::BF16;
    }
    if !a.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "internal: the array is not C-contiguous",
        ));
    }
    let shape: Vec<u64> = if a.ndim() == 0 {
        vec![1]
    } else {
        a.shape().iter().map(|&s| s as u64).collect()
    };
    let n = a.len() * d.itemsize();
    // SAFETY: a C-contiguous array's data spans len * itemsize bytes from its data pointer,
    // kept alive by `a`; it is read while this thread holds the GIL (no Python code runs).
    let bytes =
        unsafe { std::slice::from_raw_parts((*a.as_array_ptr()).fields.data as *const u8, n) };
    Ok((dtype, shape, bytes))
}

/// An array argument: a NumPy array, or ("bf16", uint16 array) for bfloat16.
pub(crate) fn array_arg<'py>(
    v: &Bound<'py, PyAny>,
) -> Option<PyResult<(Bound<'py, PyUntypedArray>, bool)>> {
    if let Ok(t) = v.cast::<PyTuple>() {
        return Some(t.get_item(1).and_then(|a| {
            a.cast_into::<PyUntypedArray>()
                .map(|a| (a, true))
                .map_err(|e| PyTypeError::new_err(e.to_string()))
        }));
    }
    v.cast::<PyUntypedArray>()
        .ok()
        .map(|a| Ok((a.clone(), false)))
}

/// A host tensor as (uint8 array of its bytes, dtype name, shape) for the Python layer.
/// A tensor for the Python layer: (uint8 array of its bytes, dtype name, shape).
pub(crate) type Bytes<'py> = (Bound<'py, PyArray1<u8>>, &'static str, Vec<u64>);

pub(crate) fn array_of<'py>(py: Python<'py>, t: HostTensor) -> Bytes<'py> {
    let name = t.dtype.name();
    (PyArray1::from_vec(py, t.data), name, t.shape)
}
