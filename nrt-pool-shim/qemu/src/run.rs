//! One kernel on one core, start to finish, without the engine: a device memory of its own
//! with the tensors placed in HBM, the argument blob in the core's data scratch area, the
//! output read back from device memory.

use std::path::Path;
use std::time::{Duration, Instant};

use neuroncustomop::descriptor::{isa_dtype_size, ArgTensor};
use neuroncustomop::runtime::{scratch, ArgBlob, ARG_BLOB_MAGIC, ARG_TYPE_TENSOR, MAX_ARGS};

use nrt_pool_engine::memory::DeviceMemory;

use crate::core::{qemu_for, Completion, Platform, QemuError, XtensaCore};
use crate::layout;

/// An input tensor: `NEURON_ISA_TPB_DTYPE` element type, shape, bytes (C order).
#[derive(Clone, Debug)]
pub struct ArgIn {
    pub dtype: u8,
    pub shape: Vec<u32>,
    pub data: Vec<u8>,
}

/// What a run gave: the output's bytes and the kernel's completion (status, stdio).
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub output: Vec<u8>,
    pub completion: Completion,
}

fn bytes_of(dtype: u8, shape: &[u32]) -> Option<u64> {
    shape
        .iter()
        .try_fold(isa_dtype_size(dtype) as u64, |n, &d| {
            n.checked_mul(u64::from(d))
        })
}

/// Runs kernel `kernel` of `image` (an ELF linked for core 0, named `name` in reports) on
/// one QEMU core under `board`: `args` are its inputs, `out` its output's element type and
/// shape; the runtime is told the launch has one core.
pub fn run_kernel(
    board: &Path,
    image: &[u8],
    name: &Path,
    kernel: &[u8],
    args: &[ArgIn],
    out: (u8, &[u32]),
    timeout: Duration,
) -> Result<RunOutcome, QemuError> {
    let bad = |why: String| QemuError::Image {
        path: name.to_path_buf(),
        why,
    };
    if args.len() > MAX_ARGS {
        return Err(bad(format!(
            "{} arguments; a kernel takes at most {MAX_ARGS}",
            args.len()
        )));
    }
    let mut sizes = Vec::with_capacity(args.len() + 1);
    for (i, a) in args.iter().enumerate() {
        if bytes_of(a.dtype, &a.shape) != Some(a.data.len() as u64) {
            return Err(bad(format!(
                "argument {i}: {} bytes for dtype {} shape {:?}",
                a.data.len(),
                a.dtype,
                a.shape
            )));
        }
        sizes.push(a.data.len() as u64);
    }
    let out_len = bytes_of(out.0, out.1).ok_or_else(|| bad("the output is too large".into()))?;
    sizes.push(out_len);
    // Each tensor 64-byte aligned with a 64-byte gap after it (DeviceMemory::alloc_hbm).
    let hbm = sizes
        .iter()
        .try_fold(0u64, |n, &s| n.checked_add(s.checked_add(128)?))
        .ok_or_else(|| bad("the tensors are too large".into()))?;
    let mut memory = DeviceMemory::with_reserve(hbm, layout::RESERVED_HBM)
        .map_err(|e| bad(format!("device memory for the tensors: {e}")))?;
    let mut place = |bytes: Option<&[u8]>, len: u64| -> Result<u64, QemuError> {
        let soc = memory
            .alloc_hbm(len, false)
            .map_err(|e| bad(e.to_string()))?
            .soc;
        if let Some(b) = bytes {
            memory
                .bytes(soc, b.len())
                .expect("placed above")
                .copy_from_slice(b);
        }
        Ok(soc)
    };
    let mut blob = ArgBlob {
        magic: ARG_BLOB_MAGIC,
        num_args: args.len() as u32,
        sbuf_base: 0,
        args: [ArgTensor::zeroed(); MAX_ARGS],
        types: [0; MAX_ARGS],
        reserved: [0; 6],
        output: ArgTensor::zeroed(),
    };
    for (i, a) in args.iter().enumerate() {
        let soc = place(Some(&a.data), a.data.len() as u64)?;
        blob.args[i] = ArgTensor::hbm(a.dtype, soc, &a.shape);
        blob.types[i] = ARG_TYPE_TENSOR;
    }
    let out_soc = place(None, out_len)?;
    blob.output = ArgTensor::hbm(out.0, out_soc, out.1);
    let (scratch_area, scratch_len) = memory.scratch_host(0);
    assert!(scratch::ARG_BLOB + size_of::<ArgBlob>() <= scratch_len);
    // SAFETY: the blob fits in core 0's data scratch area (asserted), which nothing else
    // touches before the core starts.
    unsafe {
        std::ptr::copy_nonoverlapping(
            blob_bytes(&blob).as_ptr(),
            scratch_area.add(scratch::ARG_BLOB),
            size_of::<ArgBlob>(),
        )
    };

    let deadline = Instant::now() + timeout;
    let qemu = qemu_for(board);
    let platform = Platform {
        qemu: &qemu,
        board,
        memory: &memory,
    };
    let mut core = XtensaCore::start(platform, image, name, 0, 1, deadline)?;
    let k = core.kernel(kernel).ok_or_else(|| {
        bad(format!(
            "no kernel {:?} (it registers {:?})",
            String::from_utf8_lossy(kernel),
            core.kernels()
                .iter()
                .map(|k| String::from_utf8_lossy(&k.name).into_owned())
                .collect::<Vec<_>>()
        ))
    })?;
    let completion = core.run(k, 1, deadline)?;
    core.quit();
    let output = memory
        .read(out_soc, out_len as usize)
        .expect("placed above")
        .to_vec();
    Ok(RunOutcome { output, completion })
}

/// The blob's bytes as the core reads them.
fn blob_bytes(b: &ArgBlob) -> &[u8] {
    // SAFETY: ArgBlob is repr(C) plain data of 560 bytes with no padding (its layout is
    // pinned by const asserts in the runtime), fully initialised above.
    unsafe {
        std::slice::from_raw_parts(
            (b as *const ArgBlob).cast::<u8>(),
            std::mem::size_of::<ArgBlob>(),
        )
    }
}
