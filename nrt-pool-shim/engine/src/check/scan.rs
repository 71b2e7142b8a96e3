//! How a checked launch compares outputs: blocks of poison passed over whole, the
//! elements a run wrote and whether they hold the launch's values, and element ranges.

use std::ops::Range;

use super::list::Check;
use super::report::{ElementRanges, Finding};

/// Output bytes are scanned in blocks of this many bytes (element sizes divide it).
pub(super) const BLOCK: usize = 64;

/// A run's output against the launch's: which elements the run wrote (not all `fill`),
/// and whether each holds what the launch gave it.
pub(super) struct Written<'a> {
    pub bytes: &'a [u8],
    pub launch: &'a [u8],
    pub size: usize,
    pub fill: u8,
    /// The byte ranges the run touched, where its backend could tell (the rest holds
    /// `fill`): [`candidate_blocks`].
    pub touched: Option<&'a [Range<u64>]>,
}

impl Written<'_> {
    /// Sets `bit` in `writers` for each element written, and puts those that differ from
    /// the launch's in `differ`; the blocks that held any (to poison again). Blocks of
    /// `fill` are passed over whole, and so is the element comparison of a block equal to
    /// the launch's.
    pub(super) fn scan(
        &self,
        writers: &mut [u8],
        bit: u8,
        differ: &mut ElementRanges,
    ) -> Vec<usize> {
        match self.size {
            1 => self.scan_sized::<1>(writers, bit, differ),
            2 => self.scan_sized::<2>(writers, bit, differ),
            4 => self.scan_sized::<4>(writers, bit, differ),
            _ => self.scan_sized::<8>(writers, bit, differ),
        }
    }

    fn scan_sized<const N: usize>(
        &self,
        writers: &mut [u8],
        bit: u8,
        differ: &mut ElementRanges,
    ) -> Vec<usize> {
        let fill = [self.fill; N];
        let blocks = candidate_blocks(self.bytes.len(), self.touched);
        let (dirty, unlike) = self.mark_parallel::<N>(&blocks, writers, bit);
        // The elements unlike the launch's are listed in order after the marking (rare: a
        // kernel whose output depends on memory it never wrote).
        for b in unlike {
            let at = b * BLOCK;
            let end = (at + BLOCK).min(self.bytes.len());
            let elements = self.bytes[at..end]
                .chunks_exact(N)
                .zip(self.launch[at..end].chunks_exact(N));
            for (i, (el, was)) in elements.enumerate() {
                if el != fill && el != was {
                    differ.push((at / N + i) as u64);
                }
            }
        }
        dirty
    }

    /// [`Self::mark`] over the block ranges `blocks` (in order), split between threads
    /// (each part marks its own elements; the pass is memory-bound): the dirty blocks and
    /// those unlike the launch's, in order.
    fn mark_parallel<const N: usize>(
        &self,
        blocks: &[Range<usize>],
        writers: &mut [u8],
        bit: u8,
    ) -> (Vec<usize>, Vec<usize>) {
        let threads = threads();
        let total: usize = blocks.iter().map(ExactSizeIterator::len).sum();
        if threads == 1 || total < (1 << 20) / BLOCK {
            return self.mark::<N>(blocks, writers, 0, bit);
        }
        let len = self.bytes.len();
        let parts = split(blocks, total.div_ceil(threads));
        std::thread::scope(|scope| {
            let mut rest: &mut [u8] = writers;
            let mut base = 0;
            let mut handles = Vec::new();
            for part in &parts {
                let (Some(first), Some(last)) = (part.first(), part.last()) else {
                    continue;
                };
                let from = first.start * BLOCK / N;
                let to = (last.end * BLOCK).min(len) / N;
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(from - base);
                let (mine, tail) = tail.split_at_mut(to - from);
                (rest, base) = (tail, to);
                handles.push(scope.spawn(move || self.mark::<N>(part, mine, from, bit)));
            }
            let (mut dirty, mut unlike) = (Vec::new(), Vec::new());
            for h in handles {
                let (d, u) = h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
                dirty.extend(d);
                unlike.extend(u);
            }
            (dirty, unlike)
        })
    }

    /// Sets `bit` in the marks of the written elements (not all `fill`) of the block
    /// ranges `blocks`, `marks` starting at element `first`: the dirty blocks (not all
    /// `fill`: passed over after one look) and those unlike the launch's.
    fn mark<const N: usize>(
        &self,
        blocks: &[Range<usize>],
        marks: &mut [u8],
        first: usize,
        bit: u8,
    ) -> (Vec<usize>, Vec<usize>) {
        let fill = [self.fill; N];
        let (mut dirty, mut unlike) = (Vec::new(), Vec::new());
        for b in blocks.iter().flat_map(Clone::clone) {
            let at = b * BLOCK;
            let end = (at + BLOCK).min(self.bytes.len());
            let block = &self.bytes[at..end];
            if block.iter().fold(0u8, |d, &x| d | (x ^ self.fill)) == 0 {
                continue;
            }
            dirty.push(b);
            let marks = &mut marks[at / N - first..end / N - first];
            for (m, el) in marks.iter_mut().zip(block.chunks_exact(N)) {
                let el: [u8; N] = el.try_into().expect("chunks of N bytes");
                // Branch-free: the bit where the element is not the fill.
                *m |= bit & 0u8.wrapping_sub(u8::from(el != fill));
            }
            if block != &self.launch[at..end] {
                unlike.push(b);
            }
        }
        (dirty, unlike)
    }
}

/// The `BLOCK`-byte blocks of a `len`-byte output a scan looks at, as ordered, disjoint
/// ranges: those holding the byte ranges `touched` (in order), or all when None (a
/// core's run alone reports what it touched, D89; the rest still holds the fill).
fn candidate_blocks(len: usize, touched: Option<&[Range<u64>]>) -> Vec<Range<usize>> {
    let blocks = len.div_ceil(BLOCK);
    let Some(touched) = touched else {
        return std::iter::once(0..blocks).collect();
    };
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in touched {
        let from = usize::try_from(r.start).map_or(blocks, |s| s / BLOCK);
        let to = usize::try_from(r.end).map_or(blocks, |e| e.div_ceil(BLOCK));
        // A block two ranges share is looked at once.
        let from = from.max(out.last().map_or(0, |l| l.end));
        let to = to.min(blocks);
        match out.last_mut() {
            _ if from >= to => {}
            Some(l) if l.end == from => l.end = to,
            _ => out.push(from..to),
        }
    }
    out
}

/// Ordered block ranges cut into consecutive parts of about `per` blocks each.
fn split(ranges: &[Range<usize>], per: usize) -> Vec<Vec<Range<usize>>> {
    let per = per.max(1);
    let mut parts: Vec<Vec<Range<usize>>> = vec![Vec::new()];
    let mut room = per;
    for r in ranges {
        let mut r = r.clone();
        while !r.is_empty() {
            if room == 0 {
                parts.push(Vec::new());
                room = per;
            }
            let take = r.len().min(room);
            parts
                .last_mut()
                .expect("one part at least")
                .push(r.start..r.start + take);
            r.start += take;
            room -= take;
        }
    }
    parts
}

/// The `BLOCK`-long blocks of writer marks (one per element) holding a mark for which
/// `pred` holds, in order, found between threads.
pub(super) fn marked_blocks(writers: &[u8], pred: impl Fn(u8) -> bool + Sync) -> Vec<usize> {
    blocks_where(writers.len(), |r| {
        // No early exit: the loop vectorises.
        writers[r].iter().fold(false, |d, &w| d | pred(w))
    })
}

/// The `BLOCK`-byte blocks where `a` and `b` (of one length) differ, in order.
pub(super) fn differing_blocks(a: &[u8], b: &[u8]) -> Vec<usize> {
    debug_assert_eq!(a.len(), b.len());
    blocks_where(a.len().min(b.len()), |r| a[r.clone()] != b[r])
}

/// Threads a memory-bound pass is split between.
fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
}

/// The blocks of a `len`-byte range for which `pred(block's byte range)` holds, in order:
/// the range split between threads (these scans are memory-bound).
fn blocks_where(len: usize, pred: impl Fn(Range<usize>) -> bool + Sync) -> Vec<usize> {
    let blocks = len.div_ceil(BLOCK);
    let part = |from: usize, to: usize| -> Vec<usize> {
        (from..to)
            .filter(|&b| pred(b * BLOCK..((b + 1) * BLOCK).min(len)))
            .collect()
    };
    let threads = threads();
    if threads == 1 || len < (1 << 20) {
        return part(0, blocks);
    }
    let per = blocks.div_ceil(threads);
    let part = &part;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..blocks)
            .step_by(per)
            .map(|from| {
                let to = (from + per).min(blocks);
                (from, to, scope.spawn(move || part(from, to)))
            })
            .collect();
        // A part whose thread failed is scanned again here (nothing is passed over).
        handles
            .into_iter()
            .flat_map(|(from, to, h)| h.join().unwrap_or_else(|_| part(from, to)))
            .collect()
    })
}

/// Calls `f(e)` for each `size`-byte element that differs between `a` and `b` (equal
/// 64-byte blocks are passed over whole, found between threads).
pub fn each_differing(a: &[u8], b: &[u8], size: usize, mut f: impl FnMut(usize)) {
    for i in differing_blocks(a, b) {
        let r = i * BLOCK..((i + 1) * BLOCK).min(a.len()).min(b.len());
        let first = i * BLOCK / size;
        let (x, y) = (&a[r.clone()], &b[r]);
        for (j, (p, q)) in x.chunks_exact(size).zip(y.chunks_exact(size)).enumerate() {
            if p != q {
                f(first + j);
            }
        }
    }
}

/// Reads elements of one size as integers (the sizes dtypes have: 1, 2, 4, 8 bytes).
#[derive(Clone, Copy)]
pub(super) struct Element {
    size: usize,
    fill: u64,
}

impl Element {
    pub(super) fn new(size: usize, fill: u8) -> Element {
        Element {
            size,
            fill: Element::load(&[fill; 8], 0, size),
        }
    }

    fn load(bytes: &[u8], e: usize, size: usize) -> u64 {
        let at = e * size;
        match size {
            1 => u64::from(bytes[at]),
            2 => u64::from(u16::from_ne_bytes([bytes[at], bytes[at + 1]])),
            4 => u64::from(u32::from_ne_bytes(
                bytes[at..at + 4].try_into().expect("4 bytes"),
            )),
            _ => u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes")),
        }
    }

    pub(super) fn changed(self, bytes: &[u8], e: usize) -> bool {
        Element::load(bytes, e, self.size) != self.fill
    }
}

/// The output's elements written by more than one core, one finding per set of cores.
pub(super) fn races(kernel: &str, writers: &[u8]) -> Vec<Finding> {
    let mut by_set: Vec<(u8, ElementRanges)> = Vec::new();
    // Masks with two bits or more (x & (x - 1) keeps all but the lowest bit).
    let shared = marked_blocks(writers, |w| w & w.wrapping_sub(1) != 0)
        .into_iter()
        .flat_map(|k| {
            let block = writers[k * BLOCK..].iter().take(BLOCK);
            block.enumerate().map(move |(i, &w)| (k * BLOCK + i, w))
        });
    for (e, w) in shared {
        if w.count_ones() < 2 {
            continue;
        }
        match by_set.iter_mut().find(|(s, _)| *s == w) {
            Some((_, r)) => r.push(e as u64),
            None => {
                let mut r = ElementRanges::default();
                r.push(e as u64);
                by_set.push((w, r));
            }
        }
    }
    by_set
        .into_iter()
        .filter_map(|(set, r)| {
            let cores: Vec<usize> = (0..8).filter(|c| set & (1 << c) != 0).collect();
            r.finding(
                Check::Race,
                kernel,
                cores,
                "written by more than one core".into(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_elements_are_found_block_by_block_and_in_the_tail() {
        // 21 f32 elements: a block of 16, then a tail of 5.
        let mut run = vec![0xA5u8; 4 * 21];
        let mut launch = vec![0u8; 4 * 21];
        run[4 * 3 + 2] = 0; // element 3: written, as in the launch
        launch[4 * 3..4 * 4].copy_from_slice(&run[4 * 3..4 * 4]);
        run[4 * 20] = 1; // element 20, in the tail: written, not as in the launch
        let w = Written {
            bytes: &run,
            launch: &launch,
            size: 4,
            fill: 0xA5,
            touched: None,
        };
        let mut writers = vec![0u8; 21];
        writers[3] = 0b100;
        let mut differ = ElementRanges::default();
        let dirty = w.scan(&mut writers, 0b10, &mut differ);
        assert_eq!(dirty, [0, 1]);
        assert_eq!((writers[3], writers[20], writers[0]), (0b110, 0b10, 0));
        assert_eq!((differ.elements, differ.open), (1, Some((20, 21))));
        // Bytes of the element size 1, and a block equal to the launch's.
        let run = [0xA5, 7, 0xA5];
        let w = Written {
            bytes: &run,
            launch: &run,
            size: 1,
            fill: 0xA5,
            touched: None,
        };
        let mut writers = [0u8; 3];
        let mut differ = ElementRanges::default();
        assert_eq!(w.scan(&mut writers, 1, &mut differ), [0]);
        assert_eq!((writers, differ.elements), ([0, 1, 0], 0));
        // Every thread's part of a large output.
        let mut big = vec![0xA5u8; 3 << 20];
        big[(2 << 20) + 65] = 0;
        let scan = |touched: Option<&[Range<u64>]>| {
            let w = Written {
                bytes: &big,
                launch: &big,
                size: 1,
                fill: 0xA5,
                touched,
            };
            w.scan(&mut vec![0; big.len()], 1, &mut ElementRanges::default())
        };
        assert_eq!(scan(None), [((2 << 20) + 65) / BLOCK]);
    }

    #[test]
    fn a_touched_report_limits_the_scan_to_its_blocks() {
        // f32 elements; writes (bytes not the fill) at these offsets.
        let mut run = vec![0xA5u8; 4 << 20];
        let writes = [100, (1 << 20) + 7, (3 << 20) + 64, (4 << 20) - 1];
        for at in writes {
            run[at] = 0;
        }
        let mut launch = run.clone();
        launch[(4 << 20) - 1] = 1; // the last element is unlike the launch's
        let scan = |touched: Option<&[Range<u64>]>| {
            let w = Written {
                bytes: &run,
                launch: &launch,
                size: 4,
                fill: 0xA5,
                touched,
            };
            let mut writers = vec![0u8; run.len() / 4];
            let mut differ = ElementRanges::default();
            let dirty = w.scan(&mut writers, 0b100, &mut differ);
            let marked: Vec<usize> = (0..writers.len()).filter(|&e| writers[e] != 0).collect();
            (dirty, marked, differ.elements)
        };
        let all = scan(None);
        assert_eq!(all.0, writes.map(|w| w / BLOCK));
        assert_eq!(all.1, writes.map(|w| w / 4));
        assert_eq!(all.2, 1);
        // Ranges ending or starting inside a block take the whole block; two ranges
        // sharing a block look at it once; a range past the end is clipped; the write at
        // 3 MiB + 64 lies in no range.
        let only = [
            0..65,
            65..130,
            (1 << 20)..(1 << 20) + 8,
            (4 << 20) - 1..(5 << 20),
        ];
        let some = scan(Some(&only));
        assert_eq!(
            some.0,
            [100 / BLOCK, (1 << 20) / BLOCK, (4 << 20) / BLOCK - 1]
        );
        assert_eq!(some.1, [100 / 4, ((1 << 20) + 7) / 4, (4 << 20) / 4 - 1]);
        assert_eq!(some.2, 1);
        // Large touched ranges are split between threads, as the whole scan is.
        let only = [0..(2 << 20) + 3, (2 << 20) + 3..(4 << 20)];
        assert_eq!(scan(Some(&only)), all);
        // Nothing touched: nothing to look at.
        assert_eq!(scan(Some(&[])), (vec![], vec![], 0));
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // lists of block ranges, one range long
    fn block_ranges_merge_and_split_into_parts_in_order() {
        assert_eq!(
            candidate_blocks(640, None),
            std::iter::once(0..10).collect::<Vec<_>>()
        );
        let touched = [0..64, 64..65, 200..300, 300..330, 700..900];
        assert_eq!(candidate_blocks(640, Some(&touched)), [0..2, 3..6]);
        let parts = split(&[0..5, 7..8, 10..13], 3);
        assert_eq!(
            parts,
            [vec![0..3], vec![3..5, 7..8], vec![10..13]],
            "each part takes 3 blocks, in order"
        );
        assert_eq!(split(&[], 4), [Vec::<Range<usize>>::new()]);
    }

    #[test]
    fn findings_show_the_first_ranges_then_count() {
        let mut r = ElementRanges::default();
        for e in [1, 2, 3, 7, 9, 10, 12, 20, 21] {
            r.push(e);
        }
        let f = r
            .finding(Check::Init, "k", vec![], "never written".into())
            .unwrap();
        assert_eq!((f.range_count, f.elements), (5, 9));
        assert_eq!(
            f.to_string(),
            "check init: kernel 'k', the output: never written: elements [1, 4) [7] [9, 11) [12] \
             and 1 more range(s) (9 elements)"
        );
        let writers = [0b1, 0b11, 0b11, 0b110, 0];
        let found = races("k", &writers);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].cores, [0, 1]);
        assert_eq!(found[0].ranges, [(1, 3)]);
        assert_eq!(found[1].cores, [1, 2]);
        assert!(ElementRanges::default()
            .finding(Check::Race, "k", vec![], String::new())
            .is_none());
    }

    #[test]
    fn differing_elements_are_found_across_threads_and_block_edges() {
        // 3 MiB + 5 bytes: the threaded path, and a last partial block.
        let len = (3 << 20) + 5;
        let a = vec![7u8; len];
        let mut b = a.clone();
        let odd = (2 << 20) + 3;
        let at = [0usize, BLOCK - 1, BLOCK, 1 << 20, odd, len - 1];
        for &i in &at {
            b[i] ^= 0x40;
        }
        let mut found = Vec::new();
        each_differing(&a, &b, 1, |e| found.push(e));
        assert_eq!(found, at);
        let mut found4 = Vec::new();
        each_differing(&a, &b, 4, |e| found4.push(e));
        // The partial last element (bytes len-5..len-1 are one whole element, len-1 is in
        // a 1-byte tail no whole element covers).
        assert_eq!(
            found4,
            [0, (BLOCK - 1) / 4, BLOCK / 4, (1 << 20) / 4, odd / 4]
        );
        assert!(differing_blocks(&a, &a).is_empty());
        assert_eq!(
            differing_blocks(&a, &b).len(),
            5,
            "bytes 0 and BLOCK - 1 share a block"
        );
    }
}
