//! One kernel on one core, start to finish: the tensors placed in the HBM window, the
//! argument blob in the data scratch area, the output read back.

use std::path::Path;
use std::time::{Duration, Instant};

use neuroncustomop::descriptor::{isa_dtype_size, ArgTensor};
use neuroncustomop::runtime::{scratch, ArgBlob, ARG_BLOB_MAGIC, ARG_TYPE_TENSOR, MAX_ARGS};

use crate::core::{Completion, QemuError, XtensaCore};
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
    // Tensors one after another from the window's tensor area, 64-byte aligned.
    let mut next = layout::TENSORS_SOC;
    let mut place = |len: u64| -> Result<u64, QemuError> {
        let at = next;
        next = at
            .checked_add(len.div_ceil(64) * 64)
            .filter(|&e| e <= layout::TENSORS_END)
            .ok_or_else(|| {
                bad(format!(
                    "the tensors need more than the {} MiB the core's HBM window holds",
                    (layout::TENSORS_END - layout::TENSORS_SOC) >> 20
                ))
            })?;
        Ok(at)
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
    let mut loads = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if bytes_of(a.dtype, &a.shape) != Some(a.data.len() as u64) {
            return Err(bad(format!(
                "argument {i}: {} bytes for dtype {} shape {:?}",
                a.data.len(),
                a.dtype,
                a.shape
            )));
        }
        let soc = place(a.data.len() as u64)?;
        blob.args[i] = ArgTensor::hbm(a.dtype, soc, &a.shape);
        blob.types[i] = ARG_TYPE_TENSOR;
        loads.push((soc, &a.data[..]));
    }
    let out_len = bytes_of(out.0, out.1).ok_or_else(|| bad("the output is too large".into()))?;
    let out_soc = place(out_len)?;
    blob.output = ArgTensor::hbm(out.0, out_soc, out.1);

    let deadline = Instant::now() + timeout;
    let mut core = XtensaCore::start(board, image, name, 0, 1, deadline)?;
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
    for (soc, data) in loads {
        core.load(local(soc), data)?;
    }
    core.load(local(out_soc), &vec![0u8; out_len as usize])?;
    core.load(
        layout::DATA_SCRATCH + scratch::ARG_BLOB as u32,
        blob_bytes(&blob),
    )?;
    let completion = core.run(k, 1, deadline)?;
    let output = core.dump(local(out_soc), out_len as u32, deadline)?;
    core.quit();
    Ok(RunOutcome { output, completion })
}

fn local(soc: u64) -> u32 {
    layout::local_of(soc).expect("placed inside the HBM window")
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
