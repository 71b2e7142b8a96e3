//! Float-to-integer conversions as a Pool core computes them (D117), for host builds in the
//! device's data model: their GCC plugin (`op-build/gcc-plugin/device_rules.cc`) turns each
//! conversion into a call here. C leaves NaN and out-of-range values undefined; x86 gives
//! its "integer indefinite", a core saturates: NaN is 0, a value below the range the
//! minimum (0 for unsigned types), one above it the maximum. That is exactly Rust's `as`.
//! (Types narrower than 32 bits take the low bits of the 32-bit result: the plugin narrows
//! after the call, as the core's code does.)

macro_rules! conversions {
    ($($name:ident: $from:ty => $to:ty;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name(x: $from) -> $to {
            x as $to
        }
    )*};
}

conversions! {
    __customop_fix_f32_i32: f32 => i32;
    __customop_fix_f32_u32: f32 => u32;
    __customop_fix_f32_i64: f32 => i64;
    __customop_fix_f32_u64: f32 => u64;
    __customop_fix_f64_i32: f64 => i32;
    __customop_fix_f64_u32: f64 => u32;
    __customop_fix_f64_i64: f64 => i64;
    __customop_fix_f64_u64: f64 => u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values Xtensa cores gave (tests/python/test_conversions.py measures them again
    /// against host cores).
    #[test]
    fn nan_is_zero_and_out_of_range_values_saturate() {
        assert_eq!(__customop_fix_f32_i32(f32::NAN), 0);
        assert_eq!(__customop_fix_f64_u64(f64::NAN), 0);
        assert_eq!(__customop_fix_f32_i32(1e10), i32::MAX);
        assert_eq!(__customop_fix_f64_i32(-1e10), i32::MIN);
        assert_eq!(__customop_fix_f32_u32(-1.5), 0);
        assert_eq!(__customop_fix_f64_u32(3e9), 3_000_000_000);
        assert_eq!(__customop_fix_f64_i64(f64::INFINITY), i64::MAX);
        assert_eq!(__customop_fix_f32_u64(1.8e19), 0xf9cc_d900_0000_0000);
        assert_eq!(__customop_fix_f64_u64(1e20), u64::MAX);
        assert_eq!(__customop_fix_f64_i32(-200.2), -200);
    }
}
