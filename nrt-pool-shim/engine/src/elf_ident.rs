//! The ELF identification the parts that sort op libraries read (a host library, an i386
//! one in the device's data model, something else): class, byte order, file type and
//! machine, from a file's first 20 bytes through a checked view. The one place they are
//! read; the `object` crate parses whatever else is needed.

use std::io::Read as _;
use std::path::Path;

/// An ELF file's identification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfIdent {
    /// 32 or 64.
    pub bits: u8,
    pub little_endian: bool,
    /// `e_type` ([`ElfIdent::ET_DYN`] for a shared object).
    pub file_type: u16,
    /// `e_machine` ([`ElfIdent::EM_386`], ...).
    pub machine: u16,
}

/// The bytes the identification spans.
const LEN: usize = 20;

impl ElfIdent {
    pub const ET_DYN: u16 = 3;
    pub const EM_386: u16 = 3;
    pub const EM_X86_64: u16 = 62;
    pub const EM_AARCH64: u16 = 183;

    /// The identification at the start of `b`; None when it is not an ELF file.
    pub fn parse(b: &[u8]) -> Option<ElfIdent> {
        let h: &[u8; LEN] = b.get(..LEN)?.try_into().ok()?;
        if h[..4] != *b"\x7fELF" {
            return None;
        }
        let bits = match h[4] {
            1 => 32,
            2 => 64,
            _ => return None,
        };
        let little_endian = match h[5] {
            1 => true,
            2 => false,
            _ => return None,
        };
        let half = |at: usize| {
            let b = [h[at], h[at + 1]];
            if little_endian {
                u16::from_le_bytes(b)
            } else {
                u16::from_be_bytes(b)
            }
        };
        Some(ElfIdent {
            bits,
            little_endian,
            file_type: half(16),
            machine: half(18),
        })
    }

    /// The identification of the file at `path`; None when it cannot be read or is not ELF.
    pub fn of_file(path: &Path) -> Option<ElfIdent> {
        let mut head = [0u8; LEN];
        std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
        Self::parse(&head)
    }

    /// A little-endian 32-bit x86 file (a library built in the device's data model, D97).
    pub fn is_i386(&self) -> bool {
        self.bits == 32 && self.little_endian && self.machine == Self::EM_386
    }

    /// A shared object host cores can run: one for this host, or (on x86-64) an i386 one.
    pub fn is_host_library(&self) -> bool {
        let machine_ok = if cfg!(target_arch = "aarch64") {
            (self.bits, self.machine) == (64, Self::EM_AARCH64)
        } else {
            (self.bits, self.machine) == (64, Self::EM_X86_64) || self.is_i386()
        };
        self.file_type == Self::ET_DYN && self.little_endian && machine_ok
    }
}

/// Whether the ELF file at `path` is a 32-bit x86 shared object (a library built in the
/// device's data model, D97); false for anything unreadable or else.
pub fn is_i386_library(path: &std::ffi::CStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    ElfIdent::of_file(path).is_some_and(|i| i.is_i386())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(class: u8, data: u8, file_type: u16, machine: u16) -> Vec<u8> {
        let mut h = b"\x7fELF".to_vec();
        h.extend([class, data, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let (t, m) = if data == 2 {
            (file_type.to_be_bytes(), machine.to_be_bytes())
        } else {
            (file_type.to_le_bytes(), machine.to_le_bytes())
        };
        h.extend(t);
        h.extend(m);
        h
    }

    #[test]
    fn identifications_are_read_in_their_byte_order() {
        let i386 = ElfIdent::parse(&header(1, 1, 3, 3)).unwrap();
        assert!(i386.is_i386() && i386.is_host_library() == cfg!(not(target_arch = "aarch64")));
        let xtensa = ElfIdent::parse(&header(1, 1, 2, 94)).unwrap();
        assert!(!xtensa.is_i386() && !xtensa.is_host_library());
        let big = ElfIdent::parse(&header(2, 2, 3, 62)).unwrap();
        assert_eq!((big.bits, big.little_endian, big.machine), (64, false, 62));
        assert!(!big.is_host_library());
        assert_eq!(ElfIdent::parse(b"\x7fELF"), None);
        assert_eq!(ElfIdent::parse(&header(3, 1, 3, 3)), None);
        assert_eq!(ElfIdent::parse(b"not an elf file at all"), None);
    }
}
