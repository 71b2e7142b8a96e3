//! What each core read and wrote in a launch, byte by byte, where its backend sees every
//! load and store (Xtensa cores under QEMU: the access plugin; issue #42, D101), and the
//! race check's reading of it: a byte one core reads and another writes in the same launch.

use std::collections::BTreeMap;

/// Bytes of one page of the record.
pub const PAGE: u64 = 4096;
const BITMAP: usize = (PAGE / 8) as usize;
/// One page's record in the plugin's file: SoC address (u64), two PCs (u32), two bitmaps.
pub const RECORD_BYTES: usize = 16 + 2 * BITMAP;

/// One page's reads and writes: bit `i` of byte `j` is byte `8 * j + i` of the page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageAccess {
    pub read: Box<[u8; BITMAP]>,
    pub write: Box<[u8; BITMAP]>,
    /// The first instruction that read, and that wrote, the page (0: none).
    pub read_pc: u32,
    pub write_pc: u32,
}

/// One core's reads and writes in a launch, by SoC page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreAccesses {
    pub pages: BTreeMap<u64, PageAccess>,
    /// Source lines of the PCs above, where the backend could name them ("file:line in f").
    pub lines: BTreeMap<u32, String>,
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AccessRecordError {
    #[error("{0} bytes is not a whole number of {RECORD_BYTES}-byte page records")]
    Length(usize),
    #[error("the page at SoC address {0:#x} is not page-aligned")]
    Unaligned(u64),
}

impl CoreAccesses {
    /// The plugin's file.
    pub fn parse(bytes: &[u8]) -> Result<CoreAccesses, AccessRecordError> {
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

    /// The PCs the record names (to be given source lines).
    pub fn pcs(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .pages
            .values()
            .flat_map(|p| [p.read_pc, p.write_pc])
            .filter(|&pc| pc != 0)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn line(&self, pc: u32) -> Option<&str> {
        self.lines.get(&pc).map(String::as_str)
    }
}

/// A tensor of the launch: its name in reports, where it lies and its element size.
#[derive(Clone, Debug)]
pub struct WatchedTensor {
    pub label: String,
    pub soc: u64,
    pub len: u64,
    pub elem: u64,
}

/// Bytes of `t` that core `reader` read and core `writer` wrote (reader != writer), as
/// element ranges, with where each side did it where known: one finding per pair of cores
/// and tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadWriteRace {
    pub tensor: String,
    pub reader: usize,
    pub writer: usize,
    /// Elements (flat), ascending.
    pub elements: Vec<u64>,
    pub read_at: Option<String>,
    pub write_at: Option<String>,
}

/// Every byte of the tensors that one core read and another wrote, by pair of cores.
/// `cores[c]` is core `c`'s record (None: not seen).
pub fn read_write_races(
    tensors: &[WatchedTensor],
    cores: &[Option<CoreAccesses>],
) -> Vec<ReadWriteRace> {
    let mut out = Vec::new();
    for t in tensors {
        if t.len == 0 {
            continue;
        }
        let elem = t.elem.max(1);
        // (reader, writer) -> (elements, read pc, write pc)
        type Pair = BTreeMap<(usize, usize), (Vec<u64>, u32, u32)>;
        let mut pairs: Pair = BTreeMap::new();
        let first = t.soc / PAGE * PAGE;
        let end = t.soc + t.len;
        let mut page = first;
        while page < end {
            let recs: Vec<Option<&PageAccess>> = cores
                .iter()
                .map(|c| c.as_ref().and_then(|c| c.pages.get(&page)))
                .collect();
            let writers: Vec<usize> = (0..recs.len())
                .filter(|&c| recs[c].is_some_and(|p| p.write.iter().any(|&b| b != 0)))
                .collect();
            if !writers.is_empty() {
                for (r, rec) in recs.iter().enumerate() {
                    let Some(rp) = rec else { continue };
                    for &w in writers.iter().filter(|&&w| w != r) {
                        let wp = recs[w].expect("a writer has a record");
                        for j in 0..BITMAP {
                            let both = rp.read[j] & wp.write[j];
                            if both == 0 {
                                continue;
                            }
                            for i in 0..8 {
                                if both & (1 << i) == 0 {
                                    continue;
                                }
                                let soc = page + (8 * j + i) as u64;
                                if soc < t.soc || soc >= end {
                                    continue;
                                }
                                let e = (soc - t.soc) / elem;
                                let entry = pairs
                                    .entry((r, w))
                                    .or_insert_with(|| (Vec::new(), rp.read_pc, wp.write_pc));
                                if entry.0.last() != Some(&e) {
                                    entry.0.push(e);
                                }
                            }
                        }
                    }
                }
            }
            page += PAGE;
        }
        for ((r, w), (elements, rpc, wpc)) in pairs {
            let at = |c: usize, pc: u32| {
                cores[c]
                    .as_ref()
                    .and_then(|a| a.line(pc))
                    .map(str::to_string)
            };
            out.push(ReadWriteRace {
                tensor: t.label.clone(),
                reader: r,
                writer: w,
                elements,
                read_at: at(r, rpc),
                write_at: at(w, wpc),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
        let a = CoreAccesses::parse(&bytes).unwrap();
        let p = &a.pages[&0x40_0000_1000];
        assert_eq!((p.read[0], p.read[1], p.write[0]), (1, 2, 16));
        assert_eq!(a.pcs(), vec![0x10, 0x20]);
        assert_eq!(
            CoreAccesses::parse(&bytes[1..]),
            Err(AccessRecordError::Length(bytes.len() - 1))
        );
        assert_eq!(
            CoreAccesses::parse(&record(0x20, &[], &[], (0, 0))),
            Err(AccessRecordError::Unaligned(0x20))
        );
    }

    #[test]
    fn a_byte_read_by_one_core_and_written_by_another_is_a_race_and_its_own_writes_are_not() {
        // Core 0 writes floats 0..4 of the tensor and reads them back; core 1 reads float 2.
        let writes: Vec<u32> = (0..16).collect();
        let c0 = record(0x40_0000_0000, &writes, &writes, (0x100, 0x104));
        let c1 = record(0x40_0000_0000, &[8, 9, 10, 11], &[], (0x200, 0));
        let mut a0 = CoreAccesses::parse(&c0).unwrap();
        a0.lines.insert(0x104, "k.cpp:7 in k".into());
        let mut a1 = CoreAccesses::parse(&c1).unwrap();
        a1.lines.insert(0x200, "k.cpp:9 in k".into());
        let t = [WatchedTensor {
            label: "the output".into(),
            soc: 0x40_0000_0000,
            len: 16,
            elem: 4,
        }];
        let races = read_write_races(&t, &[Some(a0.clone()), Some(a1)]);
        assert_eq!(
            races,
            vec![ReadWriteRace {
                tensor: "the output".into(),
                reader: 1,
                writer: 0,
                elements: vec![2],
                read_at: Some("k.cpp:9 in k".into()),
                write_at: Some("k.cpp:7 in k".into()),
            }]
        );
        // Alone, core 0 reading its own writes is no race; nor are bytes outside the tensor.
        assert!(read_write_races(&t, &[Some(a0), None]).is_empty());
    }
}
