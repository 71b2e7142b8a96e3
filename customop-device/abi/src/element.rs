//! Element encodings the device runtime and the host both read: IEEE half and bfloat16.

/// IEEE half to f32 (exact, NaN payloads kept).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = (h >> 10) & 0x1f;
    let frac = u32::from(h & 0x3ff);
    let bits = match exp {
        0 if frac == 0 => sign,
        0 => {
            // Subnormal: normalise.
            let shift = frac.leading_zeros() - 21;
            sign | ((113 - shift) << 23) | ((frac << shift) & 0x3ff) << 13
        }
        0x1f => sign | 0x7f80_0000 | (frac << 13),
        e => sign | (u32::from(e) + 112) << 23 | (frac << 13),
    };
    f32::from_bits(bits)
}

/// bfloat16 to f32.
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}
