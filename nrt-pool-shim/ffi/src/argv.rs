//! A checked view of a launch's argument vector, shared by `nrt_pool_launch_v1`,
//! `nrt_pool_op_output_v2` and `nrt_pool_launch_v2`: each slot is read once, through the
//! header's types, and checked (NULL, dtype, rank, location, size) before any byte count
//! is computed from it. What the view hands out borrows from the caller for the call.

use std::ffi::c_void;
use std::marker::PhantomData;

use nrt_pool_engine::tensor::{self, DType, Location};
use nrt_pool_engine::{ArgValue, OutputSpec};

use crate::boundary::Failure;
use crate::launch::{
    nrt_pool_scalar, nrt_pool_tensor, NRT_POOL_LOCATION_HBM, NRT_POOL_LOCATION_SBUF,
};

/// The caller's `argv`: `len` slots, each a pointer the caller owns for the call.
pub(crate) struct Argv<'a> {
    slots: &'a [*mut c_void],
    /// The kernel or op, for messages.
    name: &'a str,
}

/// A tensor slot, checked: its dtype, shape and location, and its data pointer.
pub(crate) struct TensorSlot<'a> {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub location: Location,
    data: *mut u8,
    /// Bytes of `shape` in `dtype` (checked to fit).
    len: usize,
    call: PhantomData<&'a mut [u8]>,
}

impl<'a> Argv<'a> {
    /// The view of `len` slots at `argv`.
    ///
    /// # Safety
    /// `argv` is NULL or holds `len` readable slot pointers, each NULL or pointing at the
    /// header's type for its parameter, live for `'a` (the launch FFI's contract).
    pub unsafe fn new(
        argv: *const *mut c_void,
        len: usize,
        name: &'a str,
    ) -> Result<Argv<'a>, Failure> {
        if argv.is_null() {
            if len == 0 {
                return Ok(Argv { slots: &[], name });
            }
            return Err(Failure::argument(format!("{name}: argv is NULL")));
        }
        // SAFETY: the function's contract: `len` readable slots.
        let slots = unsafe { std::slice::from_raw_parts(argv, len) };
        Ok(Argv { slots, name })
    }

    /// A message about the slot named `what` ("argument 2", "the output").
    fn bad_as(&self, what: &str, m: impl std::fmt::Display) -> Failure {
        Failure::argument(format!("{}: {what}: {m}", self.name))
    }

    fn slot(&self, i: usize) -> Result<*mut c_void, Failure> {
        self.slot_as(i, &format!("argument {i}"))
    }

    /// Slot `i`'s pointer, named `what` in messages when it is NULL or missing.
    fn slot_as(&self, i: usize, what: &str) -> Result<*mut c_void, Failure> {
        match self.slots.get(i) {
            Some(p) if !p.is_null() => Ok(*p),
            Some(_) => Err(self.bad_as(what, "is NULL")),
            None => Err(self.bad_as(what, "missing")),
        }
    }

    /// Slot `i` as the output tensor (messages name it so).
    pub fn output(&self, i: usize, want: Option<DType>) -> Result<TensorSlot<'a>, Failure> {
        self.tensor_as(i, want, "the output")
    }

    /// Slot `i` as a tensor of `want` (or of its own dtype, `None`).
    pub fn tensor(&self, i: usize, want: Option<DType>) -> Result<TensorSlot<'a>, Failure> {
        self.tensor_as(i, want, &format!("argument {i}"))
    }

    /// Slot `i` as a tensor, named `what` in messages.
    fn tensor_as(
        &self,
        i: usize,
        want: Option<DType>,
        what: &str,
    ) -> Result<TensorSlot<'a>, Failure> {
        let bad = |m: String| self.bad_as(what, m);
        let p = self.slot_as(i, what)?;
        // SAFETY: a tensor slot (the contract of `new`); read by value, never kept.
        let t = unsafe { std::ptr::read(p as *const nrt_pool_tensor) };
        let dtype =
            DType::from_isa(t.dtype).ok_or_else(|| bad(format!("dtype code {}", t.dtype)))?;
        if let Some(w) = want.filter(|&w| w != dtype) {
            return Err(bad(format!(
                "dtype code {} but the kernel takes {w} ({})",
                t.dtype,
                w.isa()
            )));
        }
        if t.rank == 0 || t.rank > 8 || t.data.is_null() {
            return Err(bad(format!("rank {} (1 to 8) or NULL data", t.rank)));
        }
        let location = match t.location {
            NRT_POOL_LOCATION_HBM => Location::Hbm,
            NRT_POOL_LOCATION_SBUF => Location::Sbuf,
            x => return Err(bad(format!("location {x}"))),
        };
        let shape = t.shape[..t.rank as usize].to_vec();
        // Before any byte count is computed from the caller's shape: no zero dimension,
        // and a size that fits.
        tensor::validate_rank(&shape).map_err(|e| bad(e.to_string()))?;
        let len = tensor::byte_len(&shape, dtype)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad(format!("shape {shape:?} is too large")))?;
        Ok(TensorSlot {
            dtype,
            shape,
            location,
            data: t.data.cast(),
            len,
            call: PhantomData,
        })
    }

    /// Slot `i` as one value of `dtype`, its little-endian bytes.
    pub fn scalar(&self, i: usize, dtype: DType) -> Result<ArgValue<'a>, Failure> {
        let p = self.slot(i)?;
        // SAFETY: the slot holds one value of the dtype (the contract of `new`).
        let b = unsafe { std::slice::from_raw_parts(p as *const u8, dtype.size()) };
        Ok(ArgValue::Scalar(dtype, b.to_vec()))
    }

    /// Slot `i` as a `double`.
    pub fn double(&self, i: usize) -> Result<f64, Failure> {
        let p = self.slot(i)?;
        // SAFETY: a double slot (the contract of `new`); unaligned callers tolerated.
        Ok(unsafe { std::ptr::read_unaligned(p as *const f64) })
    }

    /// Slot `i` as an `int64_t`.
    pub fn long(&self, i: usize) -> Result<i64, Failure> {
        let p = self.slot(i)?;
        // SAFETY: an int64_t slot (the contract of `new`).
        Ok(unsafe { std::ptr::read_unaligned(p as *const i64) })
    }

    /// Slot `i` as a `torch::Scalar` (`nrt_pool_scalar`): an integral or a floating value.
    pub fn torch_scalar(&self, i: usize) -> Result<ArgValue<'a>, Failure> {
        let p = self.slot(i)?;
        // SAFETY: an nrt_pool_scalar slot (the contract of `new`).
        let s = unsafe { std::ptr::read_unaligned(p as *const nrt_pool_scalar) };
        Ok(if s.is_integral != 0 {
            ArgValue::Long(s.integer)
        } else {
            ArgValue::Double(s.floating)
        })
    }
}

impl<'a> TensorSlot<'a> {
    /// The tensor as a call argument, its bytes borrowed from the caller.
    pub fn value(&self) -> ArgValue<'a> {
        // SAFETY: the slot's data spans its shape's bytes for the call (the contract of
        // `Argv::new`; `len` was computed from the checked shape).
        let data = unsafe { std::slice::from_raw_parts(self.data as *const u8, self.len) };
        ArgValue::Bytes {
            dtype: self.dtype,
            shape: self.shape.clone(),
            data,
            location: self.location,
        }
    }

    /// The tensor as an output: its dtype, shape and location.
    pub fn spec(&self) -> OutputSpec {
        OutputSpec {
            dtype: self.dtype,
            shape: self.shape.clone(),
            location: self.location,
        }
    }

    /// The caller's buffer an output lands in.
    ///
    /// # Safety
    /// No other view of the slot's data is alive while the buffer is (an output slot is
    /// not also an input: the launch FFI's contract).
    pub unsafe fn buffer(&self) -> &'a mut [u8] {
        // SAFETY: the function's contract and that of `Argv::new`.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.len) }
    }
}
