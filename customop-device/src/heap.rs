//! A first-fit heap with the semantics of the Cadence xmem heap the vendor's allocators sit
//! on: a free list sorted by address, a fixed pool of block descriptors (32 for both Neuron
//! heaps), per-candidate alignment slack kept in front of the user pointer, splitting when
//! more than 4 bytes remain, and coalescing with both neighbours on free.
//!
//! The heap manages addresses (`u64`), not memory: the HBM heap hands out SoC addresses that
//! are only reached through `neuron_translate`, the dataram heap local addresses. Nothing
//! here dereferences a pointer.

/// Descriptors both Neuron heaps are created with.
pub const DEFAULT_BLOCKS: usize = 32;
/// Alignment used when the caller passes 0.
pub const DEFAULT_ALIGN: u32 = 64;
/// The smallest remainder worth splitting off.
pub const MIN_SPLIT: u64 = 4;

/// xmem status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapError {
    /// -97: not a live allocation of this heap (foreign pointer, double free, NULL).
    PtrOutOfBounds,
    /// -98: size 0.
    InvalidArgs,
    /// -99: alignment not a power of two.
    IllegalAlign,
    /// -100: no free block fits.
    AllocFailed,
}

impl HeapError {
    pub fn code(self) -> i32 {
        match self {
            HeapError::PtrOutOfBounds => -97,
            HeapError::InvalidArgs => -98,
            HeapError::IllegalAlign => -99,
            HeapError::AllocFailed => -100,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Block {
    start: u64,
    size: u64,
    /// The user address (allocated blocks).
    user: u64,
}

/// A heap over `[base, base + size)` with `N` block descriptors.
#[derive(Clone, Debug)]
pub struct Heap<const N: usize = DEFAULT_BLOCKS> {
    base: u64,
    size: u64,
    /// Free blocks, sorted by address.
    free: [Block; N],
    nfree: usize,
    /// Allocated blocks, unsorted.
    used: [Block; N],
    nused: usize,
    /// Bytes lost to alignment slack in live blocks.
    unused_bytes: u64,
}

impl<const N: usize> Heap<N> {
    /// An empty heap (no pool); every allocation fails until [`Heap::init`].
    pub const fn empty() -> Self {
        Heap {
            base: 0,
            size: 0,
            free: [Block {
                start: 0,
                size: 0,
                user: 0,
            }; N],
            nfree: 0,
            used: [Block {
                start: 0,
                size: 0,
                user: 0,
            }; N],
            nused: 0,
            unused_bytes: 0,
        }
    }

    /// `xmem_heap_init`: the whole pool is one free block; earlier contents are forgotten.
    pub fn init(&mut self, base: u64, size: u64) {
        *self = Heap::empty();
        self.base = base;
        self.size = size;
        if size > 0 {
            self.free[0] = Block {
                start: base,
                size,
                user: 0,
            };
            self.nfree = 1;
        }
    }

    pub fn pool(&self) -> (u64, u64) {
        (self.base, self.size)
    }

    /// Descriptors in use (free and allocated blocks).
    fn descriptors(&self) -> usize {
        self.nfree + self.nused
    }

    /// First fit: the lowest free block that holds `size` after aligning its start.
    pub fn alloc(&mut self, size: u32, align: u32) -> Result<u64, HeapError> {
        let align = if align == 0 { DEFAULT_ALIGN } else { align };
        if !align.is_power_of_two() {
            return Err(HeapError::IllegalAlign);
        }
        if size == 0 {
            return Err(HeapError::InvalidArgs);
        }
        let (size, align) = (u64::from(size), u64::from(align));
        if self.nused == N {
            return Err(HeapError::AllocFailed);
        }
        let found = (0..self.nfree).find_map(|i| {
            let b = self.free[i];
            let slack = b.start.next_multiple_of(align) - b.start;
            let need = size + slack;
            (need <= b.size).then_some((i, slack, need))
        });
        let (i, slack, need) = found.ok_or(HeapError::AllocFailed)?;
        let b = self.free[i];
        let user = b.start + slack;
        let remainder = b.size - need;
        let taken = if remainder > MIN_SPLIT && self.descriptors() < N {
            // The remainder takes the block's place in the free list.
            self.free[i] = Block {
                start: b.start + need,
                size: remainder,
                user: 0,
            };
            need
        } else {
            self.remove_free(i);
            b.size
        };
        self.used[self.nused] = Block {
            start: b.start,
            size: taken,
            user,
        };
        self.nused += 1;
        self.unused_bytes += slack;
        Ok(user)
    }

    /// Frees the allocation whose user address is `user`, coalescing with its neighbours.
    pub fn free(&mut self, user: u64) -> Result<(), HeapError> {
        let i = (0..self.nused)
            .find(|&i| self.used[i].user == user && user != 0)
            .ok_or(HeapError::PtrOutOfBounds)?;
        let b = self.used[i];
        self.used[i] = self.used[self.nused - 1];
        self.nused -= 1;
        self.unused_bytes -= b.user - b.start;
        let at = (0..self.nfree)
            .find(|&k| self.free[k].start > b.start)
            .unwrap_or(self.nfree);
        let mut block = Block {
            start: b.start,
            size: b.size,
            user: 0,
        };
        let mut at = at;
        // Left neighbour.
        if at > 0 && self.free[at - 1].start + self.free[at - 1].size == block.start {
            block.start = self.free[at - 1].start;
            block.size += self.free[at - 1].size;
            self.remove_free(at - 1);
            at -= 1;
        }
        // Right neighbour.
        if at < self.nfree && block.start + block.size == self.free[at].start {
            block.size += self.free[at].size;
            self.remove_free(at);
        }
        self.insert_free(at, block);
        Ok(())
    }

    /// Bytes of the allocation at `user` (including its alignment slack), if live.
    pub fn alloc_size(&self, user: u64) -> Option<u64> {
        self.used[..self.nused]
            .iter()
            .find(|b| b.user == user)
            .map(|b| b.size - (b.user - b.start))
    }

    /// The largest allocation with alignment `align` that would succeed now.
    pub fn max_free_space(&self, align: u32) -> u64 {
        let align = u64::from(if align == 0 { DEFAULT_ALIGN } else { align });
        self.free[..self.nfree]
            .iter()
            .map(|b| {
                b.size
                    .saturating_sub(b.start.next_multiple_of(align) - b.start)
            })
            .max()
            .unwrap_or(0)
    }

    pub fn free_bytes(&self) -> u64 {
        self.free[..self.nfree].iter().map(|b| b.size).sum()
    }

    pub fn live_allocations(&self) -> usize {
        self.nused
    }

    fn remove_free(&mut self, i: usize) {
        self.free.copy_within(i + 1..self.nfree, i);
        self.nfree -= 1;
    }

    fn insert_free(&mut self, i: usize, b: Block) {
        self.free.copy_within(i..self.nfree, i + 1);
        self.free[i] = b;
        self.nfree += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn first_fit_alignment_split_and_coalesce() {
        let mut h: Heap = Heap::empty();
        h.init(0x1000, 0x1000);
        let a = h.alloc(10, 0).unwrap();
        assert_eq!(a, 0x1000, "64-byte default alignment, base already aligned");
        let b = h.alloc(10, 16).unwrap();
        assert_eq!(b, 0x1010, "first fit after the split");
        let c = h.alloc(100, 256).unwrap();
        assert_eq!(c, 0x1100, "slack in front");
        assert_eq!(h.alloc_size(c), Some(100));
        h.free(b).unwrap();
        h.free(a).unwrap();
        assert_eq!(
            h.alloc(0x1a, 0).unwrap(),
            0x1000,
            "coalesced 26-byte hole reused first"
        );
        assert_eq!(h.free(0x1234), Err(HeapError::PtrOutOfBounds));
        assert_eq!(h.free(0), Err(HeapError::PtrOutOfBounds));
        assert_eq!(h.alloc(0, 0), Err(HeapError::InvalidArgs));
        assert_eq!(h.alloc(4, 3), Err(HeapError::IllegalAlign));
        assert_eq!(h.alloc(0x2000, 0), Err(HeapError::AllocFailed));
    }

    #[test]
    fn everything_freed_is_one_block_again() {
        let mut h: Heap = Heap::empty();
        h.init(0x4000, 0x4000);
        let mut live: Vec<u64> = (0..20).map(|i| h.alloc(37 + i * 11, 0).unwrap()).collect();
        live.reverse();
        for (k, p) in live.iter().enumerate().filter(|(k, _)| k % 2 == 0) {
            let _ = k;
            h.free(*p).unwrap();
        }
        for p in live.iter().skip(1).step_by(2) {
            h.free(*p).unwrap();
        }
        assert_eq!(h.nfree, 1);
        assert_eq!(h.free_bytes(), 0x4000);
        assert_eq!(h.max_free_space(0), 0x4000);
    }

    #[test]
    fn descriptor_exhaustion_disables_splitting_then_fails() {
        let mut h: Heap<4> = Heap::empty();
        h.init(0, 0x1000);
        let ps: Vec<u64> = (0..3).map(|_| h.alloc(16, 16).unwrap()).collect();
        assert_eq!(ps, [0, 16, 32]);
        // 3 used + 1 free: no descriptor left to split, the whole rest is handed out.
        let last = h.alloc(16, 16).unwrap();
        assert_eq!(h.alloc_size(last), Some(0x1000 - 48));
        assert_eq!(h.alloc(1, 1), Err(HeapError::AllocFailed));
    }

    /// xorshift64*, enough to drive the property test without a dependency.
    fn rng(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    #[test]
    fn random_sequences_never_overlap_or_misalign() {
        for seed in 1..200u64 {
            let mut s = seed;
            let mut h: Heap = Heap::empty();
            let base = 0x8000_0000u64 + (seed % 7) * 4;
            h.init(base, 0x4000);
            let mut live: Vec<(u64, u64, u64)> = Vec::new();
            for _ in 0..300 {
                if live.is_empty() || !rng(&mut s).is_multiple_of(3) {
                    let size = (rng(&mut s) % 700 + 1) as u32;
                    let align = [0u32, 1, 4, 16, 64, 256][(rng(&mut s) % 6) as usize];
                    if let Ok(p) = h.alloc(size, align) {
                        let a = u64::from(if align == 0 { 64 } else { align });
                        assert_eq!(p % a, 0, "misaligned");
                        assert!(
                            p >= base && p + u64::from(size) <= base + 0x4000,
                            "outside the pool"
                        );
                        for &(q, n, _) in &live {
                            assert!(p + u64::from(size) <= q || q + n <= p, "overlap");
                        }
                        live.push((p, u64::from(size), a));
                    }
                } else {
                    let (p, ..) = live.swap_remove((rng(&mut s) % live.len() as u64) as usize);
                    h.free(p).unwrap();
                    assert_eq!(
                        h.free(p),
                        Err(HeapError::PtrOutOfBounds),
                        "double free refused"
                    );
                }
                let held: u64 = (0..h.nused).map(|i| h.used[i].size).sum();
                assert_eq!(held + h.free_bytes(), 0x4000, "bytes conserved");
            }
        }
    }
}
