//! The argument blob the host writes into a core's data scratch area before a launch, and
//! where in that area the runtime keeps its heaps (docs/decisions.md, "Data scratch map").

use core::mem::{offset_of, size_of};

use crate::descriptor::ArgTensor;

/// The layout of `data_scratch_map` (docs/decisions.md, "Data scratch map").
pub mod scratch {
    /// The argument blob the host writes before each launch ([`super::ArgBlob`]).
    pub const ARG_BLOB: usize = 0x800;
    /// Checking mode's notes ([`crate::checklog`]), between the blob and the dataram pool.
    pub const CHECK_LOG: usize = 0x1000;
    /// The dataram (TCM) heap's pool: 16 KiB.
    pub const DATARAM_POOL: usize = 0x3200;
    pub const DATARAM_POOL_SIZE: usize = 0x4000;
    /// The device libc heap's pool (malloc/free, C++ new/delete): the rest of the area, at
    /// least 8 KiB (D17).
    pub const LIBC_POOL: usize = 0x7200;
    pub const LIBC_POOL_SIZE: usize = 0x2000;
    /// The smallest data scratch area the runtime accepts (`start_exit.cpp:451`).
    pub const MIN_SIZE: usize = LIBC_POOL + LIBC_POOL_SIZE;
}

/// Most arguments a kernel takes.
pub const MAX_ARGS: usize = 10;
/// `ARG_TYPE` value of a tensor argument (the only kind; scalars are 1-element tensors).
pub const ARG_TYPE_TENSOR: u8 = 1;
/// "CARG": a blob the host has written.
pub const ARG_BLOB_MAGIC: u32 = 0x4752_4143;

/// What the host writes at `data_scratch_map + scratch::ARG_BLOB` before a launch.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ArgBlob {
    pub magic: u32,
    pub num_args: u32,
    /// SoC address SBUF tensor addresses are relative to (LOAD_POOL_ARGUMENT's sbuf base).
    pub sbuf_base: u64,
    pub args: [ArgTensor; MAX_ARGS],
    pub types: [u8; MAX_ARGS],
    /// Checking mode: the byte the runtime fills each heap block with when it
    /// hands it out (`torch::empty`'s HBM, `tcm_malloc`, `malloc`); 0: blocks as they are.
    pub check_fill: u8,
    pub reserved: [u8; 5],
    /// The destination (output) tensor.
    pub output: ArgTensor,
}

const _: () = assert!(size_of::<ArgBlob>() == 560);
const _: () = assert!(offset_of!(ArgBlob, args) == 16);
const _: () = assert!(offset_of!(ArgBlob, types) == 496);
const _: () = assert!(offset_of!(ArgBlob, output) == 512);
const _: () = assert!(offset_of!(ArgBlob, check_fill) == 506);
const _: () = assert!(scratch::ARG_BLOB + size_of::<ArgBlob>() <= scratch::CHECK_LOG);
const _: () =
    assert!(scratch::CHECK_LOG + crate::checklog::CHECK_LOG_SIZE <= scratch::DATARAM_POOL);

impl ArgBlob {
    /// A blob for `n` arguments relative to `sbuf_base`, nothing placed yet.
    pub const fn empty(n: u32, sbuf_base: u64) -> ArgBlob {
        ArgBlob {
            magic: ARG_BLOB_MAGIC,
            num_args: n,
            sbuf_base,
            args: [ArgTensor::zeroed(); MAX_ARGS],
            types: [0; MAX_ARGS],
            check_fill: 0,
            reserved: [0; 5],
            output: ArgTensor::zeroed(),
        }
    }
}
