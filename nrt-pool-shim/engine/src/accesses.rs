//! What each core read and wrote in a launch, byte by byte, where its backend sees every
//! load and store (Xtensa cores under QEMU: the access plugin, whose file `nrt-pool-qemu`
//! reads; D101), and the race check's reading of it: a byte one core reads and another
//! writes in the same launch.

use std::collections::BTreeMap;

/// Bytes of one page of the record.
pub const PAGE: u64 = 4096;
/// Bytes of one bitmap: a bit per byte of a page.
pub const BITMAP: usize = (PAGE / 8) as usize;

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

impl CoreAccesses {
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

    /// One page's record: the bytes read and written, the first PCs.
    fn record(soc: u64, read: &[u32], write: &[u32], pcs: (u32, u32)) -> CoreAccesses {
        let bits = |offsets: &[u32]| {
            let mut b = Box::new([0u8; BITMAP]);
            for &o in offsets {
                b[(o / 8) as usize] |= 1 << (o % 8);
            }
            b
        };
        let page = PageAccess {
            read: bits(read),
            write: bits(write),
            read_pc: pcs.0,
            write_pc: pcs.1,
        };
        CoreAccesses {
            pages: [(soc, page)].into(),
            lines: BTreeMap::new(),
        }
    }

    #[test]
    fn a_byte_read_by_one_core_and_written_by_another_is_a_race_and_its_own_writes_are_not() {
        // Core 0 writes floats 0..4 of the tensor and reads them back; core 1 reads float 2.
        let writes: Vec<u32> = (0..16).collect();
        let c0 = record(0x40_0000_0000, &writes, &writes, (0x100, 0x104));
        let c1 = record(0x40_0000_0000, &[8, 9, 10, 11], &[], (0x200, 0));
        let mut a0 = c0;
        a0.lines.insert(0x104, "k.cpp:7 in k".into());
        let mut a1 = c1;
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
