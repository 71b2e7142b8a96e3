//! Reading one element of any supported dtype as a double (`c10::Scalar`'s widening).

use crate::descriptor::*;
use crate::rule;
use crate::rule::fatal;

pub use customop_abi::element::{bf16_to_f32, f16_to_f32};

/// One element of `dtype` at `p`, as f64.
///
/// # Safety
/// `p` is readable for one element of `dtype`.
pub unsafe fn to_f64(dtype: Dtype, p: *const u8) -> f64 {
    // SAFETY: per the function contract; unaligned reads.
    unsafe {
        match dtype {
            DTYPE_INT8 => f64::from(p.cast::<i8>().read()),
            DTYPE_UINT8 => f64::from(p.read()),
            DTYPE_INT16 => f64::from(p.cast::<i16>().read_unaligned()),
            DTYPE_BFLOAT16 => f64::from(bf16_to_f32(p.cast::<u16>().read_unaligned())),
            DTYPE_FP16 => f64::from(f16_to_f32(p.cast::<u16>().read_unaligned())),
            DTYPE_INT32 => f64::from(p.cast::<i32>().read_unaligned()),
            DTYPE_FP32 => f64::from(p.cast::<f32>().read_unaligned()),
            DTYPE_INT64 => p.cast::<i64>().read_unaligned() as f64,
            _ => fatal(rule!("utypes.hpp:37", "0 (unsupported dtype)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_and_bfloat() {
        for (h, f) in [
            (0x3c00u16, 1.0f32),
            (0xc000, -2.0),
            (0x7bff, 65504.0),
            (0x0001, 5.960_464_5e-8),
            (0, 0.0),
        ] {
            assert_eq!(f16_to_f32(h), f, "{h:#x}");
        }
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(bf16_to_f32(0xc0a0), -5.0);
        let v = 2.5f32;
        // SAFETY: a 4-byte float.
        assert_eq!(
            unsafe { to_f64(DTYPE_FP32, (&v as *const f32).cast()) },
            2.5
        );
        let i = -7i64;
        // SAFETY: an 8-byte integer.
        assert_eq!(
            unsafe { to_f64(DTYPE_INT64, (&i as *const i64).cast()) },
            -7.0
        );
    }
}
