//! The Pool image of an Xtensa op library, `libNAME.pool` (docs/decisions.md D57): the
//! IRAM/DRAM pair `nrt_set_pool_eng_ucode` takes, in one file.
//!
//! - IRAM: `"NPIRAM01"`, then each core's op image, an ELF32 Xtensa executable linked for
//!   that core (org 0x84000000 + i * 0x200000; symbols kept, so faults can be named), each
//!   starting 16-byte aligned.
//! - DRAM: `"NPDRAM01"`, u32 core count, then per core `{u32 core, u32 org, u32 offset,
//!   u32 size}`: where its image lies in IRAM.
//! - The file: `"NPOOLIMG"`, u32 version (1), u32 IRAM offset, u32 IRAM size, u32 DRAM
//!   offset, u32 DRAM size, then the two parts. All little-endian.
//!
//! Parsing goes through bounds-checked reads; every malformed input is an error naming what
//! is wrong.

pub const FILE_MAGIC: &[u8; 8] = b"NPOOLIMG";
pub const IRAM_MAGIC: &[u8; 8] = b"NPIRAM01";
pub const DRAM_MAGIC: &[u8; 8] = b"NPDRAM01";
pub const VERSION: u32 = 1;
/// Where core 0's image is linked, and each next core's distance.
pub const ORG: u32 = 0x8400_0000;
pub const CORE_STRIDE: u32 = 0x20_0000;
pub const MAX_CORES: u32 = 8;

/// One core's image in a Pool image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreImage<'a> {
    pub core: u32,
    pub org: u32,
    pub elf: &'a [u8],
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PoolImageError {
    #[error("not a Pool image (no NPOOLIMG header)")]
    NotPoolImage,
    #[error("Pool image version {0} (this reads version 1)")]
    Version(u32),
    #[error("the Pool image is truncated: {0}")]
    Truncated(&'static str),
    #[error("the IRAM part does not start with NPIRAM01")]
    Iram,
    #[error("the DRAM part does not start with NPDRAM01")]
    Dram,
    #[error("the Pool image names {0} cores (1 to 8)")]
    Cores(u32),
    #[error("core {core}'s entry: {why}")]
    Entry { core: u32, why: String },
}

fn word(b: &[u8], at: usize, what: &'static str) -> Result<u32, PoolImageError> {
    at.checked_add(4)
        .and_then(|end| b.get(at..end))
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or(PoolImageError::Truncated(what))
}

fn part<'a>(
    b: &'a [u8],
    off: u32,
    len: u32,
    what: &'static str,
) -> Result<&'a [u8], PoolImageError> {
    let start = off as usize;
    start
        .checked_add(len as usize)
        .and_then(|end| b.get(start..end))
        .ok_or(PoolImageError::Truncated(what))
}

/// Writes the IRAM and DRAM parts for `cores` (core i's ELF image, linked for core i).
pub fn write_pair(cores: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
    let mut iram = IRAM_MAGIC.to_vec();
    let mut dram = DRAM_MAGIC.to_vec();
    dram.extend_from_slice(&(cores.len() as u32).to_le_bytes());
    for (i, elf) in cores.iter().enumerate() {
        iram.resize(iram.len().next_multiple_of(16), 0);
        let i = i as u32;
        for w in [
            i,
            ORG + i * CORE_STRIDE,
            iram.len() as u32,
            elf.len() as u32,
        ] {
            dram.extend_from_slice(&w.to_le_bytes());
        }
        iram.extend_from_slice(elf);
    }
    (iram, dram)
}

/// The whole `.pool` file.
pub fn write_file(cores: &[Vec<u8>]) -> Vec<u8> {
    let (iram, dram) = write_pair(cores);
    write_file_from_pair(&iram, &dram)
}

/// A `.pool` file from its IRAM and DRAM parts (a registered pair).
pub fn write_file_from_pair(iram: &[u8], dram: &[u8]) -> Vec<u8> {
    let mut f = FILE_MAGIC.to_vec();
    let iram_off = 28u32;
    let dram_off = iram_off + iram.len() as u32;
    for w in [
        VERSION,
        iram_off,
        iram.len() as u32,
        dram_off,
        dram.len() as u32,
    ] {
        f.extend_from_slice(&w.to_le_bytes());
    }
    f.extend_from_slice(iram);
    f.extend_from_slice(dram);
    f
}

/// The cores of a registered IRAM/DRAM pair.
pub fn parse_pair<'a>(iram: &'a [u8], dram: &[u8]) -> Result<Vec<CoreImage<'a>>, PoolImageError> {
    if iram.get(..8) != Some(&IRAM_MAGIC[..]) {
        return Err(PoolImageError::Iram);
    }
    if dram.get(..8) != Some(&DRAM_MAGIC[..]) {
        return Err(PoolImageError::Dram);
    }
    let n = word(dram, 8, "DRAM core count")?;
    if !(1..=MAX_CORES).contains(&n) {
        return Err(PoolImageError::Cores(n));
    }
    (0..n as usize)
        .map(|i| {
            let at = 12 + i * 16;
            let core = word(dram, at, "DRAM core entry")?;
            let org = word(dram, at + 4, "DRAM core entry")?;
            let off = word(dram, at + 8, "DRAM core entry")?;
            let size = word(dram, at + 12, "DRAM core entry")?;
            let entry = |why: String| PoolImageError::Entry { core, why };
            if core != i as u32 {
                return Err(entry(format!("listed at position {i}")));
            }
            if org != ORG + core * CORE_STRIDE {
                return Err(entry(format!(
                    "org {org:#x}, not {:#x}",
                    ORG + core * CORE_STRIDE
                )));
            }
            if off < 8 {
                return Err(entry("its image overlaps the IRAM header".into()));
            }
            let elf = part(iram, off, size, "a core image past the end of IRAM")?;
            if elf.get(..4) != Some(&b"\x7fELF"[..]) {
                return Err(entry("its image is not an ELF file".into()));
            }
            Ok(CoreImage { core, org, elf })
        })
        .collect()
}

/// The cores of a `.pool` file, and its IRAM and DRAM parts.
pub fn parse_file(b: &[u8]) -> Result<(&[u8], &[u8]), PoolImageError> {
    if b.get(..8) != Some(&FILE_MAGIC[..]) {
        return Err(PoolImageError::NotPoolImage);
    }
    let v = word(b, 8, "header")?;
    if v != VERSION {
        return Err(PoolImageError::Version(v));
    }
    let iram = part(
        b,
        word(b, 12, "header")?,
        word(b, 16, "header")?,
        "IRAM part",
    )?;
    let dram = part(
        b,
        word(b, 20, "header")?,
        word(b, 24, "header")?,
        "DRAM part",
    )?;
    parse_pair(iram, dram)?;
    Ok((iram, dram))
}

/// Whether `b` looks like a Pool image file (its magic).
pub fn is_pool_file(b: &[u8]) -> bool {
    b.get(..8) == Some(&FILE_MAGIC[..])
}

/// Whether the file at `path` starts as a Pool image does (its first 8 bytes).
pub fn is_pool_path(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && is_pool_file(&magic)
}

/// The `pool_image` fuzz target's property: any bytes give a parse or an error, never a
/// panic; a file that parses writes back, from its cores, to one that parses to the same.
pub fn fuzz_one(bytes: &[u8]) {
    if let Ok((iram, dram)) = parse_file(bytes) {
        let cores = parse_pair(iram, dram).expect("parse_file checked the pair");
        let elfs: Vec<Vec<u8>> = cores.iter().map(|c| c.elf.to_vec()).collect();
        let again = write_file(&elfs);
        let (i2, d2) = parse_file(&again).expect("a written file parses");
        let back = parse_pair(i2, d2).expect("and its pair");
        assert_eq!(back.len(), cores.len());
        for (a, b) in back.iter().zip(&cores) {
            assert_eq!((a.core, a.org, a.elf), (b.core, b.org, b.elf));
        }
    }
    // Either half alone, as a registered pair arrives.
    let mid = bytes.len() / 2;
    let _ = parse_pair(&bytes[..mid], &bytes[mid..]);
}

/// A small well-formed image (fake ELF payloads) for seeds and tests.
pub fn sample_file(cores: u32) -> Vec<u8> {
    let elfs: Vec<Vec<u8>> = (0..cores)
        .map(|i| {
            let mut e = b"\x7fELF".to_vec();
            e.resize(20 + i as usize * 3, i as u8);
            e
        })
        .collect();
    write_file(&elfs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(tag: u8) -> Vec<u8> {
        let mut e = b"\x7fELF".to_vec();
        e.resize(e.len() + 13 + tag as usize, tag);
        e
    }

    #[test]
    fn files_round_trip() {
        let cores: Vec<Vec<u8>> = (0..8).map(elf).collect();
        let f = write_file(&cores);
        assert!(is_pool_file(&f));
        let (iram, dram) = parse_file(&f).unwrap();
        let parsed = parse_pair(iram, dram).unwrap();
        assert_eq!(parsed.len(), 8);
        for (i, c) in parsed.iter().enumerate() {
            assert_eq!(c.core, i as u32);
            assert_eq!(c.org, 0x8400_0000 + i as u32 * 0x20_0000);
            assert_eq!(c.elf, &cores[i][..]);
        }
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error() {
        let f = write_file(&[elf(1), elf(2)]);
        for n in 0..f.len() {
            assert!(parse_file(&f[..n]).is_err(), "truncated to {n}");
        }
        let mut v = f.clone();
        v[8] = 2;
        assert_eq!(parse_file(&v), Err(PoolImageError::Version(2)));
        assert_eq!(
            parse_file(b"\x7fELF....."),
            Err(PoolImageError::NotPoolImage)
        );
        let (iram, dram) = write_pair(&[elf(1)]);
        let mut d = dram.clone();
        d[8] = 9;
        assert_eq!(parse_pair(&iram, &d), Err(PoolImageError::Cores(9)));
        let mut d = dram.clone();
        d[19] = 0; // org
        assert!(matches!(
            parse_pair(&iram, &d),
            Err(PoolImageError::Entry { core: 0, .. })
        ));
        let mut d = dram;
        d[24..28].copy_from_slice(&u32::MAX.to_le_bytes()); // size
        assert!(matches!(
            parse_pair(&iram, &d),
            Err(PoolImageError::Truncated(_))
        ));
        assert_eq!(parse_pair(b"", b""), Err(PoolImageError::Iram));
    }
}
