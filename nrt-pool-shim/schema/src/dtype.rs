//! The element types a launch marshals (`NEURON_ISA_TPB_DTYPE`), with their schema, NumPy
//! and scalar spellings.

use customop_abi::descriptor as d;

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
}
