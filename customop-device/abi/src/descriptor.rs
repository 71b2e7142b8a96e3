//! The 48-byte on-wire tensor descriptor (`NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR`), its enums,
//! the ISA dtype table and the checks `utypes.hpp` makes on it.
#![allow(non_camel_case_types)]

use core::mem::{offset_of, size_of};

use crate::rule;
use crate::rule::{fatal, require, Rule};

/// `NEURON_ISA_TPB_CUSTOM_OP_ARG_LOCATION`
pub type Location = u8;
pub const LOCATION_INVALID: Location = 0;
pub const LOCATION_SBUF: Location = 1;
pub const LOCATION_HBM: Location = 2;

/// `NEURON_ISA_TPB_CUSTOM_OP_TENSOR_SHAPE_TYPE`
pub type ShapeType = u8;
pub const SHAPE_INLINE_8D: ShapeType = 0;
pub const SHAPE_OUT_OF_LINE: ShapeType = 1;
pub const SHAPE_INLINE_4D: ShapeType = 2;

/// `NEURON_ISA_TPB_DTYPE` (1 byte).
pub type Dtype = u8;
pub const DTYPE_INVALID: Dtype = 0;
pub const DTYPE_UINT64: Dtype = 1;
pub const DTYPE_INT8: Dtype = 2;
pub const DTYPE_UINT8: Dtype = 3;
pub const DTYPE_INT16: Dtype = 4;
pub const DTYPE_UINT16: Dtype = 5;
pub const DTYPE_BFLOAT16: Dtype = 6;
pub const DTYPE_FP16: Dtype = 7;
pub const DTYPE_INT32: Dtype = 8;
pub const DTYPE_UINT32: Dtype = 9;
pub const DTYPE_FP32: Dtype = 10;
pub const DTYPE_FP32R: Dtype = 11;
pub const DTYPE_INT64: Dtype = 12;
pub const DTYPE_FP8_EXP3: Dtype = 13;
pub const DTYPE_FP8_EXP4: Dtype = 14;
pub const DTYPE_FP8_EXP5: Dtype = 15;

/// Bytes per element of every ISA dtype (0 for INVALID).
pub const fn isa_dtype_size(d: Dtype) -> usize {
    match d {
        DTYPE_INT8 | DTYPE_UINT8 | DTYPE_FP8_EXP3 | DTYPE_FP8_EXP4 | DTYPE_FP8_EXP5 => 1,
        DTYPE_INT16 | DTYPE_UINT16 | DTYPE_BFLOAT16 | DTYPE_FP16 => 2,
        DTYPE_INT32 | DTYPE_UINT32 | DTYPE_FP32 | DTYPE_FP32R => 4,
        DTYPE_UINT64 | DTYPE_INT64 => 8,
        _ => 0,
    }
}

/// `c10::ScalarType` ordinals the device maps to.
pub type ScalarType = u8;
pub const SCALAR_BYTE: ScalarType = 0;
pub const SCALAR_CHAR: ScalarType = 1;
pub const SCALAR_SHORT: ScalarType = 2;
pub const SCALAR_INT: ScalarType = 3;
pub const SCALAR_LONG: ScalarType = 4;
pub const SCALAR_HALF: ScalarType = 5;
pub const SCALAR_FLOAT: ScalarType = 6;
pub const SCALAR_BFLOAT16: ScalarType = 15;

/// `isa_to_torch_dtype`: the 8 dtypes a kernel can see; anything else is fatal
/// (`utypes.hpp:37`).
pub fn isa_to_torch_dtype(d: Dtype) -> ScalarType {
    match d {
        DTYPE_INT8 => SCALAR_CHAR,
        DTYPE_UINT8 => SCALAR_BYTE,
        DTYPE_INT16 => SCALAR_SHORT,
        DTYPE_BFLOAT16 => SCALAR_BFLOAT16,
        DTYPE_FP16 => SCALAR_HALF,
        DTYPE_INT32 => SCALAR_INT,
        DTYPE_FP32 => SCALAR_FLOAT,
        DTYPE_INT64 => SCALAR_LONG,
        _ => fatal(rule!("utypes.hpp:37", "0 (unsupported dtype)")),
    }
}

/// Element size of a dtype a kernel can see (None for the others).
pub fn try_element_size(d: Dtype) -> Option<usize> {
    matches!(
        d,
        DTYPE_INT8
            | DTYPE_UINT8
            | DTYPE_INT16
            | DTYPE_BFLOAT16
            | DTYPE_FP16
            | DTYPE_INT32
            | DTYPE_FP32
            | DTYPE_INT64
    )
    .then(|| isa_dtype_size(d))
}

/// Element size through the supported-dtype tree (fatal for the others).
pub fn element_size(d: Dtype) -> usize {
    isa_to_torch_dtype(d);
    isa_dtype_size(d)
}

/// Storage of a tensor in SBUF: a per-partition address and a partition count.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TpbStorage {
    pub addr: u32,
    pub num_elem: u32,
    pub num_partitions: u8,
    pub reserved0: [u8; 3],
    pub num_elem_per_block: u32,
}

/// Storage of a tensor in HBM: a full SoC address.
#[repr(C, packed(4))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HbmStorage {
    pub addr: u64,
    pub num_elem: u32,
    pub reserved0: u32,
}

/// `..._TENSOR_STORAGE_UNION` (16 bytes at descriptor +24).
#[repr(C)]
#[derive(Clone, Copy)]
pub union Storage {
    pub tpb: TpbStorage,
    pub hbm: HbmStorage,
    pub raw: [u8; 16],
}

/// `..._TENSOR_SHAPE_UNION` (16 bytes at descriptor +8): 8 × u16 or 4 × u32 dimension
/// sizes, unused dimensions 0 (docs/decisions.md, "Shape union").
#[repr(C)]
#[derive(Clone, Copy)]
pub union Shape {
    pub inline_shape8d: [u16; 8],
    pub inline_shape4d: [u32; 4],
    pub out_of_line_shape_addr: u64,
}

/// `NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR`: 48 bytes, 8-aligned as on the device (its shape
/// union holds a `u64`; i386 would align it at 4, D97).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct ArgTensor {
    pub location: Location,
    pub framework_shape_type: ShapeType,
    pub dtype: Dtype,
    pub reserved0: [u8; 5],
    pub framework_shape: Shape,
    pub storage: Storage,
    pub reserved1: [u8; 8],
}

const _: () = assert!(size_of::<ArgTensor>() == 48);
const _: () = assert!(offset_of!(ArgTensor, location) == 0);
const _: () = assert!(offset_of!(ArgTensor, framework_shape_type) == 1);
const _: () = assert!(offset_of!(ArgTensor, dtype) == 2);
const _: () = assert!(offset_of!(ArgTensor, framework_shape) == 8);
const _: () = assert!(offset_of!(ArgTensor, storage) == 24);
const _: () = assert!(offset_of!(ArgTensor, reserved1) == 40);
const _: () = assert!(size_of::<TpbStorage>() == 16);
const _: () = assert!(offset_of!(TpbStorage, num_elem) == 4);
const _: () = assert!(offset_of!(TpbStorage, num_partitions) == 8);
const _: () = assert!(offset_of!(TpbStorage, num_elem_per_block) == 12);
const _: () = assert!(size_of::<HbmStorage>() == 16);
const _: () = assert!(offset_of!(HbmStorage, num_elem) == 8);
const _: () = assert!(size_of::<Shape>() == 16);
const _: () = assert!(size_of::<Storage>() == 16);

/// The largest rank a descriptor carries inline.
pub const MAX_RANK: usize = 8;

impl ArgTensor {
    /// An all-zero (INVALID) descriptor.
    pub const fn zeroed() -> Self {
        ArgTensor {
            location: LOCATION_INVALID,
            framework_shape_type: SHAPE_INLINE_8D,
            dtype: DTYPE_INVALID,
            reserved0: [0; 5],
            framework_shape: Shape {
                inline_shape8d: [0; 8],
            },
            storage: Storage { raw: [0; 16] },
            reserved1: [0; 8],
        }
    }

    /// The SoC address of the first byte: an HBM tensor's own, an SBUF tensor's offset from
    /// `sbuf_base`; None for another location.
    pub fn soc_addr(&self, sbuf_base: u64) -> Option<u64> {
        match self.location {
            // SAFETY: the HBM arm is plain data, valid for HBM tensors.
            LOCATION_HBM => Some(unsafe { self.storage.hbm.addr }),
            // SAFETY: as above for the TPB arm.
            LOCATION_SBUF => {
                Some(sbuf_base.wrapping_add(u64::from(unsafe { self.storage.tpb.addr })))
            }
            _ => None,
        }
    }

    /// An HBM tensor of `dtype` with `dims` (rank 1..=8, each < 65536).
    pub fn hbm(dtype: Dtype, addr: u64, dims: &[u32]) -> Self {
        let mut t = ArgTensor::zeroed();
        t.location = LOCATION_HBM;
        t.dtype = dtype;
        t.set_dims(dims);
        t.storage = Storage {
            hbm: HbmStorage {
                addr,
                num_elem: t.num_elem() as u32,
                reserved0: 0,
            },
        };
        t
    }

    /// An SBUF tensor: `num_partitions` partitions of `per_partition` elements at `addr`.
    pub fn sbuf(dtype: Dtype, addr: u32, dims: &[u32], num_partitions: u8) -> Self {
        let mut t = ArgTensor::zeroed();
        t.location = LOCATION_SBUF;
        t.dtype = dtype;
        t.set_dims(dims);
        let n = t.num_elem() as u32;
        t.storage = Storage {
            tpb: TpbStorage {
                addr,
                num_elem: n,
                num_partitions,
                reserved0: [0; 3],
                num_elem_per_block: n / u32::from(num_partitions.max(1)),
            },
        };
        t
    }

    fn set_dims(&mut self, dims: &[u32]) {
        if dims.len() <= 8 && dims.iter().all(|&d| d <= u32::from(u16::MAX)) {
            let mut s = [0u16; 8];
            for (o, &d) in s.iter_mut().zip(dims) {
                *o = d as u16;
            }
            self.framework_shape_type = SHAPE_INLINE_8D;
            self.framework_shape = Shape { inline_shape8d: s };
        } else {
            require(
                dims.len() <= 4,
                rule!("utypes.hpp:139", "rank <= 8 (dims <= 65535) or rank <= 4"),
            );
            let mut s = [0u32; 4];
            s[..dims.len()].copy_from_slice(dims);
            self.framework_shape_type = SHAPE_INLINE_4D;
            self.framework_shape = Shape { inline_shape4d: s };
        }
    }

    /// A descriptor from its 48 wire bytes (any bytes: every field is plain data).
    pub fn from_bytes(raw: &[u8; size_of::<ArgTensor>()]) -> ArgTensor {
        // SAFETY: ArgTensor is repr(C) plain data of exactly these 48 bytes (const assert)
        // whose fields and union arms accept every bit pattern; the read is unaligned-safe.
        unsafe { core::ptr::read_unaligned(raw.as_ptr().cast::<ArgTensor>()) }
    }

    /// The dimensions: leading non-zero entries of the inline shape. Out-of-line shapes
    /// and rank 0 are fatal (`utypes.hpp:94`, `:139`).
    pub fn dims(&self) -> ([u32; MAX_RANK], usize) {
        self.try_dims().unwrap_or_else(|r| fatal(r))
    }

    /// [`ArgTensor::dims`] without ending the kernel: the broken rule instead.
    pub fn try_dims(&self) -> Result<([u32; MAX_RANK], usize), Rule> {
        let mut out = [0u32; MAX_RANK];
        let rank = match self.framework_shape_type {
            SHAPE_INLINE_8D => {
                // SAFETY: every arm of the shape union is plain old data of the same size.
                let s = unsafe { self.framework_shape.inline_shape8d };
                let r = s.iter().take_while(|&&d| d != 0).count();
                for (o, &d) in out.iter_mut().zip(&s[..r]) {
                    *o = u32::from(d);
                }
                r
            }
            SHAPE_INLINE_4D => {
                // SAFETY: as above.
                let s = unsafe { self.framework_shape.inline_shape4d };
                let r = s.iter().take_while(|&&d| d != 0).count();
                out[..r].copy_from_slice(&s[..r]);
                r
            }
            SHAPE_OUT_OF_LINE => return Err(rule!(
                "utypes.hpp:94",
                "t_.framework_shape_type != NEURON_ISA_TPB_CUSTOM_OP_TENSOR_SHAPE_TYPE_OUT_OF_LINE_SHAPE"
            )),
            _ => return Err(rule!("utypes.hpp:94", "known framework_shape_type")),
        };
        if rank == 0 {
            return Err(rule!(
                "utypes.hpp:139",
                "num_dim != 0 && \"Input and output tensors cannot have 0 dimensions - must be of at least rank 1\""
            ));
        }
        Ok((out, rank))
    }

    /// Elements: the product of the dimensions.
    pub fn num_elem(&self) -> usize {
        self.try_num_elem().unwrap_or_else(|r| fatal(r))
    }

    /// [`ArgTensor::num_elem`], checked: a product that does not fit the address space
    /// breaks a rule instead of wrapping.
    pub fn try_num_elem(&self) -> Result<usize, Rule> {
        let (d, r) = self.try_dims()?;
        d[..r]
            .iter()
            .try_fold(1usize, |n, &x| n.checked_mul(x as usize))
            .ok_or(rule!(
                "utypes.hpp:139",
                "the tensor's size fits the address space"
            ))
    }

    /// Bytes of data (elements × element size; fatal for unsupported dtypes).
    pub fn num_bytes(&self) -> usize {
        self.try_num_bytes().unwrap_or_else(|r| fatal(r))
    }

    /// [`ArgTensor::num_bytes`], checked.
    pub fn try_num_bytes(&self) -> Result<usize, Rule> {
        let n = self.try_num_elem()?;
        let size =
            try_element_size(self.dtype).ok_or(rule!("utypes.hpp:37", "0 (unsupported dtype)"))?;
        n.checked_mul(size).ok_or(rule!(
            "utypes.hpp:139",
            "the tensor's size fits the address space"
        ))
    }
}

/// The fuzz target's property, shared with the seed-corpus test: every 48-byte chunk of
/// the input decodes as a descriptor whose checks end in a rule, never a panic or an
/// overflow, and whose accepted shapes survive being encoded again.
#[doc(hidden)]
pub fn fuzz_one(bytes: &[u8]) {
    for raw in bytes.chunks_exact(size_of::<ArgTensor>()) {
        let t = ArgTensor::from_bytes(raw.try_into().expect("48 bytes"));
        let Ok((dims, rank)) = t.try_dims() else {
            continue;
        };
        assert!((1..=MAX_RANK).contains(&rank));
        if t.framework_shape_type == SHAPE_INLINE_4D {
            assert!(rank <= 4);
        }
        let Ok(n) = t.try_num_elem() else {
            continue;
        };
        if let Ok(bytes) = t.try_num_bytes() {
            assert_eq!(Some(bytes), n.checked_mul(isa_dtype_size(t.dtype)));
        }
        let again = ArgTensor::hbm(t.dtype, 0, &dims[..rank]);
        assert_eq!(again.try_dims(), Ok((dims, rank)));
        assert_eq!(again.try_num_elem(), Ok(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    #[test]
    fn dtype_table() {
        let supported: [(Dtype, ScalarType, usize); 8] = [
            (2, 1, 1),
            (3, 0, 1),
            (4, 2, 2),
            (6, 15, 2),
            (7, 5, 2),
            (8, 3, 4),
            (10, 6, 4),
            (12, 4, 8),
        ];
        for (d, s, n) in supported {
            assert_eq!(isa_to_torch_dtype(d), s);
            assert_eq!(element_size(d), n);
        }
        let sizes: [usize; 16] = [0, 8, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 1, 1, 1];
        for (d, &n) in sizes.iter().enumerate() {
            assert_eq!(isa_dtype_size(d as u8), n);
        }
    }

    #[test]
    fn unsupported_dtypes_are_fatal() {
        for d in [0u8, 1, 5, 9, 11, 13, 14, 15, 16] {
            let r = std::panic::catch_unwind(|| isa_to_torch_dtype(d));
            let msg = *r.unwrap_err().downcast::<String>().unwrap();
            assert_eq!(msg, "customop: fatal: utypes.hpp:37 0 (unsupported dtype)");
        }
    }

    #[test]
    fn shapes() {
        let t = ArgTensor::hbm(DTYPE_FP32, 0x1000, &[2, 3, 4]);
        assert_eq!(t.num_elem(), 24);
        assert_eq!(t.num_bytes(), 96);
        assert_eq!(t.framework_shape_type, SHAPE_INLINE_8D);
        let big = ArgTensor::hbm(DTYPE_INT8, 0, &[70000, 2]);
        assert_eq!(big.framework_shape_type, SHAPE_INLINE_4D);
        assert_eq!(big.num_elem(), 140000);
        // SAFETY: reading the HBM arm written by `hbm`.
        assert_eq!(unsafe { big.storage.hbm.num_elem }, 140000);
        let s = ArgTensor::sbuf(DTYPE_FP16, 0x200, &[128, 64], 128);
        // SAFETY: reading the TPB arm written by `sbuf`.
        let tpb = unsafe { s.storage.tpb };
        assert_eq!(
            (tpb.num_elem, tpb.num_partitions, tpb.num_elem_per_block),
            (8192, 128, 64)
        );
        let bytes: [u8; 48] = unsafe { core::mem::transmute(t) };
        assert_eq!(&bytes[..3], &[LOCATION_HBM, SHAPE_INLINE_8D, DTYPE_FP32]);
        assert_eq!(&bytes[8..14], &[2, 0, 3, 0, 4, 0]);
        assert_eq!(&bytes[24..32], &0x1000u64.to_le_bytes());
        assert_eq!(&bytes[32..36], &24u32.to_le_bytes());
    }

    #[test]
    fn rank_zero_and_out_of_line_are_fatal() {
        let mut t = ArgTensor::zeroed();
        t.dtype = DTYPE_FP32;
        let e = std::panic::catch_unwind(|| t.num_elem()).unwrap_err();
        assert!(e
            .downcast::<String>()
            .unwrap()
            .contains("utypes.hpp:139 num_dim != 0"));
        t.framework_shape_type = SHAPE_OUT_OF_LINE;
        let e = std::panic::catch_unwind(|| t.num_elem()).unwrap_err();
        assert!(e.downcast::<String>().unwrap().contains("utypes.hpp:94"));
    }
}
