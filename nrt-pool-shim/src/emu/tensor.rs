//! Host-side tensors and the element types the descriptor carries (`NEURON_ISA_TPB_DTYPE`),
//! with their NumPy spellings.

use neuroncustomop::descriptor as d;

/// The element types a launch marshals. FP8 and FP32R have no NumPy type and are not offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    U64,
    I8,
    U8,
    I16,
    U16,
    BF16,
    F16,
    I32,
    U32,
    F32,
    I64,
}

impl DType {
    pub const ALL: [DType; 11] = [
        DType::U64,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::BF16,
        DType::F16,
        DType::I32,
        DType::U32,
        DType::F32,
        DType::I64,
    ];

    /// The descriptor's `dtype` byte.
    pub fn isa(self) -> u8 {
        match self {
            DType::U64 => d::DTYPE_UINT64,
            DType::I8 => d::DTYPE_INT8,
            DType::U8 => d::DTYPE_UINT8,
            DType::I16 => d::DTYPE_INT16,
            DType::U16 => d::DTYPE_UINT16,
            DType::BF16 => d::DTYPE_BFLOAT16,
            DType::F16 => d::DTYPE_FP16,
            DType::I32 => d::DTYPE_INT32,
            DType::U32 => d::DTYPE_UINT32,
            DType::F32 => d::DTYPE_FP32,
            DType::I64 => d::DTYPE_INT64,
        }
    }

    pub fn from_isa(v: u8) -> Option<DType> {
        DType::ALL.into_iter().find(|t| t.isa() == v)
    }

    pub fn size(self) -> usize {
        d::isa_dtype_size(self.isa())
    }

    /// The schema / command-line name.
    pub fn name(self) -> &'static str {
        match self {
            DType::U64 => "u64",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::F32 => "f32",
            DType::I64 => "i64",
        }
    }

    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The `.npy` `descr`. NumPy has no bfloat16: bf16 travels as raw `<u2` words.
    pub fn npy_descr(self) -> &'static str {
        match self {
            DType::U64 => "<u8",
            DType::I8 => "|i1",
            DType::U8 => "|u1",
            DType::I16 => "<i2",
            DType::U16 | DType::BF16 => "<u2",
            DType::F16 => "<f2",
            DType::I32 => "<i4",
            DType::U32 => "<u4",
            DType::F32 => "<f4",
            DType::I64 => "<i8",
        }
    }

    /// NumPy's name for the type (bf16 has none: its raw words are uint16).
    pub fn numpy_name(self) -> &'static str {
        match self {
            DType::U64 => "uint64",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I16 => "int16",
            DType::U16 | DType::BF16 => "uint16",
            DType::F16 => "float16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::F32 => "float32",
            DType::I64 => "int64",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::BF16 | DType::F16 | DType::F32)
    }

    /// A scalar from its command-line text, as little-endian bytes of this type.
    pub fn parse_scalar(self, text: &str) -> Option<Vec<u8>> {
        let t = text.trim();
        Some(match self {
            DType::U64 => t.parse::<u64>().ok()?.to_le_bytes().to_vec(),
            DType::I8 => t.parse::<i8>().ok()?.to_le_bytes().to_vec(),
            DType::U8 => t.parse::<u8>().ok()?.to_le_bytes().to_vec(),
            DType::I16 => t.parse::<i16>().ok()?.to_le_bytes().to_vec(),
            DType::U16 => t.parse::<u16>().ok()?.to_le_bytes().to_vec(),
            DType::I32 => t.parse::<i32>().ok()?.to_le_bytes().to_vec(),
            DType::U32 => t.parse::<u32>().ok()?.to_le_bytes().to_vec(),
            DType::I64 => t.parse::<i64>().ok()?.to_le_bytes().to_vec(),
            DType::F32 => t.parse::<f32>().ok()?.to_le_bytes().to_vec(),
            // Truncation to the top 16 bits: bfloat16's definition of the conversion.
            DType::BF16 => ((t.parse::<f32>().ok()?.to_bits() >> 16) as u16)
                .to_le_bytes()
                .to_vec(),
            DType::F16 => f32_to_f16(t.parse::<f32>().ok()?).to_le_bytes().to_vec(),
        })
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// IEEE binary16 from binary32, round to nearest even (no crate on the path needs it).
pub fn f32_to_f16(v: f32) -> u16 {
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32;
    let man = b & 0x7F_FFFF;
    if exp == 0xFF {
        return sign | 0x7C00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let rest = man & 0x1FFF;
    let mut r = ((e as u32) << 10) | (man >> 13);
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// Where a launch places a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    Hbm,
    Sbuf,
}

impl Location {
    pub fn from_name(s: &str) -> Option<Location> {
        match s {
            "hbm" => Some(Location::Hbm),
            "sbuf" => Some(Location::Sbuf),
            _ => None,
        }
    }
}

/// A tensor's type, shape and bytes on the host (C order, little-endian).
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TensorError {
    #[error("{dtype} tensor of shape {shape:?} needs {want} bytes, got {got}")]
    Size {
        dtype: DType,
        shape: Vec<u64>,
        want: u64,
        got: u64,
    },
    #[error(
        "rank {0} is not supported (1 to 8 dimensions, each below 65536, or up to 4 larger ones)"
    )]
    Rank(usize),
    #[error("shape {0:?} has no elements; a kernel's tensors have at least one (the descriptor cannot carry a zero dimension)")]
    Empty(Vec<u64>),
    #[error("shape {0:?} is too large")]
    TooLarge(Vec<u64>),
}

impl HostTensor {
    pub fn new(dtype: DType, shape: Vec<u64>, data: Vec<u8>) -> Result<HostTensor, TensorError> {
        let want = numel(&shape).saturating_mul(dtype.size() as u64);
        if want != data.len() as u64 {
            return Err(TensorError::Size {
                dtype,
                shape,
                want,
                got: data.len() as u64,
            });
        }
        check_rank(&shape)?;
        Ok(HostTensor { dtype, shape, data })
    }

    pub fn zeros(dtype: DType, shape: Vec<u64>) -> Result<HostTensor, TensorError> {
        check_rank(&shape)?;
        let n = numel(&shape) as usize * dtype.size();
        HostTensor::new(dtype, shape, vec![0; n])
    }

    pub fn from_f32(shape: Vec<u64>, v: &[f32]) -> Result<HostTensor, TensorError> {
        HostTensor::new(
            DType::F32,
            shape,
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        )
    }

    pub fn numel(&self) -> u64 {
        numel(&self.shape)
    }

    /// The elements as f32 (F32 tensors only; others give None).
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        (self.dtype == DType::F32).then(|| {
            self.data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
    }
}

/// Elements of a shape (saturating: shapes are checked by [`check_rank`] before use).
pub fn numel(shape: &[u64]) -> u64 {
    shape.iter().fold(1u64, |n, &d| n.saturating_mul(d))
}

/// Bytes of a tensor, if they fit a u64.
pub fn byte_len(shape: &[u64], dtype: DType) -> Option<u64> {
    shape
        .iter()
        .try_fold(dtype.size() as u64, |n, &d| n.checked_mul(d))
}

/// The descriptor carries rank 1..=8 with u16 dims, or rank <= 4 with u32 dims, and no
/// zero dimension (its rank is the count of leading non-zero dims).
pub fn check_rank(shape: &[u64]) -> Result<(), TensorError> {
    let small = shape.len() <= 8 && shape.iter().all(|&d| d <= u64::from(u16::MAX));
    let large = shape.len() <= 4 && shape.iter().all(|&d| d <= u64::from(u32::MAX));
    if shape.is_empty() || !(small || large) {
        return Err(TensorError::Rank(shape.len()));
    }
    if shape.contains(&0) {
        return Err(TensorError::Empty(shape.to_vec()));
    }
    if byte_len(shape, DType::U64).is_none_or(|n| n > 1 << 48) {
        return Err(TensorError::TooLarge(shape.to_vec()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isa_codes_round_trip_and_sizes_are_the_isa_sizes() {
        for t in DType::ALL {
            assert_eq!(DType::from_isa(t.isa()), Some(t));
            assert_eq!(DType::from_name(t.name()), Some(t));
        }
        let sizes = DType::ALL.map(DType::size);
        assert_eq!(sizes, [8, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8]);
        assert_eq!(DType::from_isa(d::DTYPE_FP8_EXP4), None);
    }

    #[test]
    fn f16_conversion_matches_known_values() {
        assert_eq!(f32_to_f16(1.0), 0x3C00);
        assert_eq!(f32_to_f16(-2.0), 0xC000);
        assert_eq!(f32_to_f16(65504.0), 0x7BFF);
        assert_eq!(f32_to_f16(1e6), 0x7C00);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001);
        assert_eq!(f32_to_f16(0.333_333_34), 0x3555);
    }

    #[test]
    fn sizes_and_ranks_are_checked() {
        assert!(matches!(
            HostTensor::new(DType::F32, vec![2, 3], vec![0; 20]),
            Err(TensorError::Size { want: 24, .. })
        ));
        assert_eq!(check_rank(&[]), Err(TensorError::Rank(0)));
        assert_eq!(check_rank(&[1; 9]), Err(TensorError::Rank(9)));
        assert!(check_rank(&[70000, 2]).is_ok());
        assert_eq!(check_rank(&[70000, 2, 1, 1, 1]), Err(TensorError::Rank(5)));
        assert_eq!(
            DType::I32.parse_scalar("-7"),
            Some((-7i32).to_le_bytes().to_vec())
        );
        assert_eq!(DType::U8.parse_scalar("300"), None);
        assert_eq!(DType::BF16.parse_scalar("1.0"), Some(vec![0x80, 0x3F]));
    }
}
