//! The split-load prelinker's interface: region geometry, the "UCPL " header, and the entry
//! point `ll_create` calls.
//!
//! The prelinker itself (ELF validation, placement, `.dynamic` walk, segment copy,
//! Elf32_Rela relocation with the narrow and FLIX immediate encoders) is the loader issue's
//! work and is not in this build: `prelink` reports that loudly (ll_create returns
//! ERR_RELOCATION with a log line) rather than staging anything unrelocated.

use core::fmt;

/// The device regions a library is placed into (`cayman_memory_bounds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// IRAM link base: the relocation base for code.
    pub iram_base: u32,
    /// IRAM region size, also the size of the code scratch buffer.
    pub iram_size: usize,
    /// DRAM link base for data.
    pub dram_base: u32,
    /// DRAM region size, also the size of the data scratch buffer.
    pub dram_size: usize,
}

pub const CAYMAN_GEOMETRY: Geometry = Geometry {
    iram_base: 0x18000,
    iram_size: 0x8000,
    dram_base: 0xBE000,
    dram_size: 0x2000,
};

/// Bytes of the UCPL header at device offset 0.
pub const UCPL_HEADER_LEN: usize = 0x20;
/// "UCPL " and the code offset 0x20, as one little-endian u64.
pub const UCPL_MAGIC: u64 = 0x0000_0020_4C50_4355;

/// The prelinked image's header. Code follows at `code_seg_off` (0x20), data at
/// `data_seg_off` = 0x20 + align32(code).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ucpl {
    pub code_seg_off: u32,
    pub code_seg_len: u32,
    pub data_seg_off: u32,
    pub data_seg_len: u32,
    pub init: u32,
    pub fini: u32,
    pub start_sym: u32,
}

impl Ucpl {
    /// Header for segments of the given (memsz) lengths, with the vendor's rounding.
    pub fn for_segments(text_memsz: u32, data_memsz: u32) -> Self {
        let code_seg_len = (text_memsz + 3) & !3;
        Ucpl {
            code_seg_off: UCPL_HEADER_LEN as u32,
            code_seg_len,
            data_seg_off: (code_seg_len + 0x3f) & !0x1f,
            data_seg_len: (data_memsz + 3) & !3,
            ..Ucpl::default()
        }
    }

    pub fn to_bytes(&self) -> [u8; UCPL_HEADER_LEN] {
        let mut h = [0u8; UCPL_HEADER_LEN];
        h[0x00..0x04].copy_from_slice(&(UCPL_MAGIC as u32).to_le_bytes());
        h[0x04..0x08].copy_from_slice(&self.code_seg_off.to_le_bytes());
        h[0x08..0x0c].copy_from_slice(&self.code_seg_len.to_le_bytes());
        h[0x0c..0x10].copy_from_slice(&self.data_seg_off.to_le_bytes());
        h[0x10..0x14].copy_from_slice(&self.data_seg_len.to_le_bytes());
        h[0x14..0x18].copy_from_slice(&self.init.to_le_bytes());
        h[0x18..0x1c].copy_from_slice(&self.fini.to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&self.start_sym.to_le_bytes());
        h
    }
}

/// Why prelinking failed: an xt-libloader status, or a capability this build lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrelinkStatus {
    Xtlib(u32),
    Unsupported(&'static str),
}

impl fmt::Display for PrelinkStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrelinkStatus::Xtlib(code) => write!(f, "{code}"),
            PrelinkStatus::Unsupported(what) => write!(f, "unsupported ({what})"),
        }
    }
}

/// Prelinks `image` into `code`/`data` for `geometry`, logging details through `log`.
pub fn prelink(
    _image: &[u8],
    _geometry: &Geometry,
    _code: &mut [u8],
    _data: &mut [u8],
    _log: &mut dyn FnMut(fmt::Arguments<'_>),
) -> Result<Ucpl, PrelinkStatus> {
    Err(PrelinkStatus::Unsupported(
        "the split-load prelinker is not built yet; see docs/decisions.md",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_and_rounding() {
        let u = Ucpl {
            init: 0x18040,
            fini: 0x18080,
            start_sym: 0x180c0,
            ..Ucpl::for_segments(0x101, 0x11)
        };
        assert_eq!(u.code_seg_len, 0x104);
        assert_eq!(u.data_seg_off, 0x20 + 0x120);
        assert_eq!(u.data_seg_len, 0x14);
        let h = u.to_bytes();
        assert_eq!(&h[..8], b"UCPL \0\0\0");
        assert_eq!(u64::from_le_bytes(h[..8].try_into().unwrap()), UCPL_MAGIC);
        assert_eq!(u32::from_le_bytes(h[0x0c..0x10].try_into().unwrap()), 0x140);
        assert_eq!(
            u32::from_le_bytes(h[0x1c..0x20].try_into().unwrap()),
            0x180c0
        );
    }
}
