//! Host-side tensors and the element types the descriptor carries (`NEURON_ISA_TPB_DTYPE`),
//! with their NumPy spellings.

pub use nrt_pool_schema::{f32_to_f16, DType};

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
        "rank {0} is not supported (the guide's shapes: 1 to 8 dimensions of at most 65535, or 1 to 4 of at most 4294967295; docs/decisions.md D74)"
    )]
    Rank(usize),
    #[error("shape {0:?} has no elements; a kernel's tensors have at least one (the descriptor cannot carry a zero dimension)")]
    Empty(Vec<u64>),
    #[error("shape {0:?} is too large (a tensor descriptor counts at most 4294967295 elements)")]
    TooLarge(Vec<u64>),
}

/// Whether `len` bytes are exactly a `dtype` tensor of `shape`.
pub fn validate_len(dtype: DType, shape: &[u64], len: usize) -> Result<(), TensorError> {
    // (A size past u64 is u64::MAX here: no buffer has that many bytes.)
    let want = byte_len(shape, dtype).unwrap_or(u64::MAX);
    if want != len as u64 {
        return Err(TensorError::Size {
            dtype,
            shape: shape.to_vec(),
            want,
            got: len as u64,
        });
    }
    Ok(())
}

impl HostTensor {
    pub fn new(dtype: DType, shape: Vec<u64>, data: Vec<u8>) -> Result<HostTensor, TensorError> {
        validate_len(dtype, &shape, data.len())?;
        validate_rank(&shape)?;
        Ok(HostTensor { dtype, shape, data })
    }

    pub fn zeros(dtype: DType, shape: Vec<u64>) -> Result<HostTensor, TensorError> {
        validate_rank(&shape)?;
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

/// Elements of a shape (saturating: shapes are checked by [`validate_rank`] before use).
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
pub fn validate_rank(shape: &[u64]) -> Result<(), TensorError> {
    let small = shape.len() <= 8 && shape.iter().all(|&d| d <= u64::from(u16::MAX));
    let large = shape.len() <= 4 && shape.iter().all(|&d| d <= u64::from(u32::MAX));
    if shape.is_empty() || !(small || large) {
        return Err(TensorError::Rank(shape.len()));
    }
    if shape.contains(&0) {
        return Err(TensorError::Empty(shape.to_vec()));
    }
    // The descriptor's num_elem is 32 bits.
    if byte_len(shape, DType::U8).is_none_or(|n| n > u64::from(u32::MAX)) {
        return Err(TensorError::TooLarge(shape.to_vec()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ranks_are_checked() {
        assert!(matches!(
            HostTensor::new(DType::F32, vec![2, 3], vec![0; 20]),
            Err(TensorError::Size { want: 24, .. })
        ));
        assert_eq!(validate_rank(&[]), Err(TensorError::Rank(0)));
        assert_eq!(validate_rank(&[1; 9]), Err(TensorError::Rank(9)));
        assert!(validate_rank(&[70000, 2]).is_ok());
        assert_eq!(
            validate_rank(&[70000, 2, 1, 1, 1]),
            Err(TensorError::Rank(5))
        );
        assert!(validate_rank(&[65536, 65535]).is_ok());
        assert_eq!(
            validate_rank(&[65536, 65536]),
            Err(TensorError::TooLarge(vec![65536, 65536])),
            "2^32 elements: more than the descriptor counts"
        );
        assert_eq!(
            DType::I32.parse_scalar("-7"),
            Some((-7i32).to_le_bytes().to_vec())
        );
        assert_eq!(DType::U8.parse_scalar("300"), None);
        assert_eq!(DType::BF16.parse_scalar("1.0"), Some(vec![0x80, 0x3F]));
    }
}
