//! What a core's accesses were: the tensor access counts after a profiled launch
//! ([`customop_abi::access`]; the runtime keeps them in its image, which lies in device
//! memory, so the engine reads them there by the runtime's symbol: D100), and
//! the bytes it read and wrote in a traced launch (the access plugin's record: D101).

use std::path::{Path, PathBuf};

use customop_abi::access::{
    AccessCounts, CopyLog, ACCESS_COUNTS_BYTES, ACCESS_COUNTS_SYMBOL, COPY_LOG_BYTES,
    COPY_LOG_SYMBOL,
};
use std::collections::BTreeMap;

use nrt_pool_engine::accesses::{CoreAccesses, PageAccess, BITMAP, PAGE};
use nrt_pool_engine::memory::DeviceMemory;
use nrt_pool_engine::symbolize::{ImageSet, StackAddr};
use object::{Object, ObjectSymbol};

use crate::layout;

/// Core `core`'s counts from its `image`, or None when the image's runtime keeps none (an
/// image linked before the counts existed) or the bytes are not in device memory.
pub fn counts(memory: &DeviceMemory, core: usize, image: &[u8]) -> Option<AccessCounts> {
    let bytes = runtime_bytes(
        memory,
        core,
        image,
        ACCESS_COUNTS_SYMBOL,
        ACCESS_COUNTS_BYTES,
    )?;
    Some(AccessCounts::from_le_bytes(bytes[..].try_into().ok()?))
}

/// Core `core`'s copy log from its `image` (D120), or None when its runtime keeps none.
pub fn copy_log(memory: &DeviceMemory, core: usize, image: &[u8]) -> Option<CopyLog> {
    CopyLog::from_le_bytes(&runtime_bytes(
        memory,
        core,
        image,
        COPY_LOG_SYMBOL,
        COPY_LOG_BYTES,
    )?)
}

/// Where the ELF file `image` (a core's image, the board) defines `name`.
pub fn symbol_address(image: &[u8], name: &str) -> Option<u64> {
    symbol_span(image, name).map(|(at, _)| at)
}

/// Where `image` defines `name`, and its size.
pub fn symbol_span(image: &[u8], name: &str) -> Option<(u64, u64)> {
    let file = object::File::parse(image).ok()?;
    let found = file
        .symbols()
        .find(|s| s.name_bytes().ok() == Some(name.as_bytes()))?;
    Some((found.address(), found.size()))
}

/// The `len` bytes of the runtime's variable `name` in core `core`'s image, as device
/// memory holds them after a launch.
fn runtime_bytes(
    memory: &DeviceMemory,
    core: usize,
    image: &[u8],
    name: &str,
    len: usize,
) -> Option<Vec<u8>> {
    let local = symbol_address(image, name)?;
    let offset = local.checked_sub(u64::from(layout::image_org(core)))?;
    if offset.checked_add(len as u64)? > layout::IMAGE_BYTES {
        return None;
    }
    Some(memory.read(layout::image_soc(core) + offset, len)?.to_vec())
}

/// The access plugin's `-plugin` argument for core `core`'s record in `dir` (D101): the
/// kernel's span between the board's markers.
pub fn trace_plugin(qemu: &Path, dir: &Path, core: usize, (begin, end): (u64, u64)) -> String {
    format!(
        "{},out={},begin={begin:#x},end={end:#x}",
        qemu.with_file_name(crate::tools::ACCESS_PLUGIN).display(),
        record_path(dir, core).display()
    )
}

fn record_path(dir: &Path, core: usize) -> PathBuf {
    dir.join(format!("core{core}.access"))
}

/// Arms (or disarms) core `core`'s plugin for its next kernel: only an armed kernel is
/// recorded, so the untraced launches of a checked call run on the same cores.
pub fn arm(dir: &Path, core: usize, on: bool) -> std::io::Result<()> {
    let flag = record_path(dir, core).with_extension("access.on");
    if on {
        std::fs::write(flag, b"")
    } else {
        match std::fs::remove_file(flag) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Core `core`'s record of its last kernel (taken from `dir`), its PCs named from `images`
/// (the core's image and the board): None when the core wrote none or it cannot be read.
pub fn trace(dir: &Path, core: usize, images: &[&[u8]]) -> Option<CoreAccesses> {
    let path = record_path(dir, core);
    let bytes = std::fs::read(&path).ok()?;
    let _gone = std::fs::remove_file(&path);
    let mut a = parse_record(&bytes).ok()?;
    let named = ImageSet::new(images);
    for pc in a.pcs() {
        let frames = named.frames(StackAddr {
            addr: u64::from(pc),
            exact: true,
        });
        // The op author's line where the access is theirs; the innermost frame otherwise
        // (a copy inside the runtime: tensor_to_tcm, tcm_to_tensor, a stream accessor).
        let line = match frames.iter().find(|f| f.is_op_code()) {
            Some(f) => Some(f.describe()),
            None => frames.first().map(|f| {
                format!(
                    "{} (a copy of the runtime's: tensor_to_tcm, tcm_to_tensor or a stream \
                     accessor)",
                    f.describe()
                )
            }),
        };
        if let Some(l) = line {
            a.lines.insert(pc, l);
        }
    }
    Some(a)
}
/// One page's record in the access plugin's file: SoC address (u64), the first PCs that
/// read and wrote it (u32 each), then the read and write bitmaps.
pub const RECORD_BYTES: usize = 16 + 2 * BITMAP;

/// Why an access record could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AccessRecordError {
    #[error("{0} bytes is not a whole number of {RECORD_BYTES}-byte page records")]
    Length(usize),
    #[error("the page at SoC address {0:#x} is not page-aligned")]
    Unaligned(u64),
}

/// The access plugin's file (`plugins/access.c`): one core's reads and writes by page.
pub fn parse_record(bytes: &[u8]) -> Result<CoreAccesses, AccessRecordError> {
    if !bytes.len().is_multiple_of(RECORD_BYTES) {
        return Err(AccessRecordError::Length(bytes.len()));
    }
    let mut pages = BTreeMap::new();
    for r in bytes.chunks_exact(RECORD_BYTES) {
        let word = |o: usize| u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
        let soc = u64::from(word(0)) | (u64::from(word(4)) << 32);
        if soc % PAGE != 0 {
            return Err(AccessRecordError::Unaligned(soc));
        }
        let bitmap = |o: usize| -> Box<[u8; BITMAP]> {
            let mut b = Box::new([0u8; BITMAP]);
            b.copy_from_slice(&r[o..o + BITMAP]);
            b
        };
        pages.insert(
            soc,
            PageAccess {
                read: bitmap(16),
                write: bitmap(16 + BITMAP),
                read_pc: word(8),
                write_pc: word(12),
            },
        );
    }
    Ok(CoreAccesses {
        pages,
        lines: BTreeMap::new(),
    })
}

#[cfg(test)]
mod record_tests {
    use super::*;

    fn record(soc: u64, read: &[u32], write: &[u32], pcs: (u32, u32)) -> Vec<u8> {
        let mut r = vec![0u8; RECORD_BYTES];
        r[0..8].copy_from_slice(&soc.to_le_bytes());
        r[8..12].copy_from_slice(&pcs.0.to_le_bytes());
        r[12..16].copy_from_slice(&pcs.1.to_le_bytes());
        for &o in read {
            r[16 + (o / 8) as usize] |= 1 << (o % 8);
        }
        for &o in write {
            r[16 + BITMAP + (o / 8) as usize] |= 1 << (o % 8);
        }
        r
    }

    #[test]
    fn a_record_is_read_back_by_soc_page() {
        let mut bytes = record(0x40_0000_1000, &[0, 9], &[4], (0x10, 0x20));
        bytes.extend(record(0x40_0000_3000, &[], &[], (0, 0)));
        let a = parse_record(&bytes).unwrap();
        let p = &a.pages[&0x40_0000_1000];
        assert_eq!((p.read[0], p.read[1], p.write[0]), (1, 2, 16));
        assert_eq!(a.pcs(), vec![0x10, 0x20]);
        assert_eq!(
            parse_record(&bytes[1..]),
            Err(AccessRecordError::Length(bytes.len() - 1))
        );
        assert_eq!(
            parse_record(&record(0x20, &[], &[], (0, 0))),
            Err(AccessRecordError::Unaligned(0x20))
        );
    }
}
