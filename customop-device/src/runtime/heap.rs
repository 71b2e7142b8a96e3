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

/// Slots of the index from user addresses to allocations (open addressing, linear probing;
/// at most half full for `N <= 128`).
const INDEX_SLOTS: usize = 256;

/// A heap over `[base, base + size)` with `N` block descriptors (`N <= 128`).
///
/// The free blocks are an address-sorted array of (start, size) that first fit scans; the
/// allocations sit in descriptor slots that never move; a free finds its allocation
/// through a small hash index of user addresses and its place in the free list by counting
/// the free blocks below it.
#[derive(Clone, Debug)]
pub struct Heap<const N: usize = DEFAULT_BLOCKS> {
    base: u64,
    size: u64,
    /// Free blocks (start, size), sorted by address, as 32-bit offsets from `base` (a heap
    /// spans at most 4 GiB; half the bytes of addresses, and a Pool core's image counts
    /// every one: D79). Pairs rather than two arrays: a block added or removed shifts one
    /// array (one move), and first fit reads both anyway.
    free: [(u32, u32); N],
    nfree: usize,
    /// Allocated blocks, in descriptor slots: user address and block start (offsets from
    /// `base`), block size. A free
    /// empties its slot and nothing moves (so no index entry needs repointing); an
    /// allocation takes the slot freed last (`spare`, a stack of empty slots).
    used_user: [u32; N],
    used_start: [u32; N],
    used_size: [u32; N],
    /// Empty slots, the next one to take last (`spare[..N - nused]`).
    spare: [u8; N],
    nused: usize,
    /// User address -> allocation: 1 + its index in the `used_*` arrays, 0 for empty.
    index: [u8; INDEX_SLOTS],
    /// Bytes lost to alignment slack in live blocks.
    unused_bytes: u64,
}

impl<const N: usize> Heap<N> {
    /// The index keeps at least half its slots empty (and its entries, 1..=128, fit a byte).
    const FITS_INDEX: () = assert!(N <= INDEX_SLOTS / 2);

    /// Every slot empty, slot 0 on top.
    const ALL_SPARE: [u8; N] = {
        let mut s = [0u8; N];
        let mut k = 0;
        while k < N {
            s[k] = (N - 1 - k) as u8;
            k += 1;
        }
        s
    };

    /// An empty heap (no pool); every allocation fails until [`Heap::init`].
    pub const fn empty() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::FITS_INDEX;
        Heap {
            base: 0,
            size: 0,
            free: [(0, 0); N],
            nfree: 0,
            used_user: [0; N],
            used_start: [0; N],
            used_size: [0; N],
            spare: Self::ALL_SPARE,
            nused: 0,
            index: [0; INDEX_SLOTS],
            unused_bytes: 0,
        }
    }

    /// `xmem_heap_init`: the whole pool is one free block; earlier contents are forgotten.
    pub fn init(&mut self, base: u64, size: u64) {
        // Field by field, not `*self = Heap::empty()`: that builds a whole heap (kilobytes)
        // on the stack first, and a Pool core's local stack is 8 KiB (D79). The block
        // arrays need no clearing: only the counts and the index say what is live.
        self.nfree = 0;
        self.nused = 0;
        self.spare = Self::ALL_SPARE;
        self.index.fill(0);
        self.unused_bytes = 0;
        let size = size.min(u64::from(u32::MAX));
        self.base = base;
        self.size = size;
        if size > 0 {
            self.free[0] = (0, size as u32);
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
        let (size, mask) = (u64::from(size), u64::from(align) - 1);
        if self.nused == N {
            return Err(HeapError::AllocFailed);
        }
        // Whether block j holds the request once its start is aligned (the slack is the
        // distance to the next multiple of align, a power of two).
        let base = self.base;
        let fits = |&(off, bsize): &(u32, u32)| {
            let (start, bsize) = (base + u64::from(off), u64::from(bsize));
            bsize >= size && size + (start.wrapping_neg() & mask) <= bsize
        };
        // The first WIDE blocks at once: a mask of those big enough, computed without a
        // branch (where first fit stops varies from call to call, so a scan's exit is a
        // branch the CPU mispredicts), then the lowest of them whose aligned start fits.
        const WIDE: usize = 16;
        let n = self.nfree;
        let mut found = None;
        if N >= WIDE {
            let mut big = self.free[..WIDE]
                .iter()
                .enumerate()
                .fold(0u32, |m, (j, &(_, bsize))| {
                    m | (u32::from(u64::from(bsize) >= size) << j)
                });
            big &= (1u32 << n.min(WIDE)) - 1;
            while big != 0 {
                let j = big.trailing_zeros() as usize;
                if fits(&self.free[j]) {
                    found = Some(j);
                    break;
                }
                big &= big - 1;
            }
        }
        let i = match found {
            Some(i) => i,
            None => {
                let from = if N >= WIDE { n.min(WIDE) } else { 0 };
                self.free[from..n]
                    .iter()
                    .position(fits)
                    .ok_or(HeapError::AllocFailed)?
                    + from
            }
        };
        let (off, bsize) = self.free[i];
        let (start, bsize) = (base + u64::from(off), u64::from(bsize));
        let slack = start.wrapping_neg() & mask;
        let need = size + slack;
        let user = start + slack;
        let remainder = bsize - need;
        let taken = if remainder > MIN_SPLIT && self.descriptors() < N {
            // The remainder takes the block's place in the free list.
            self.free[i] = ((start + need - base) as u32, remainder as u32);
            need
        } else {
            self.remove_free(i);
            bsize
        };
        let k = usize::from(self.spare[N - 1 - self.nused]);
        self.used_user[k] = (user - base) as u32;
        self.used_start[k] = off;
        self.used_size[k] = taken as u32;
        self.nused += 1;
        self.index_put(user, k);
        self.unused_bytes += slack;
        Ok(user)
    }

    /// Frees the allocation whose user address is `user`, coalescing with its neighbours.
    pub fn free(&mut self, user: u64) -> Result<(), HeapError> {
        if user == 0 {
            return Err(HeapError::PtrOutOfBounds);
        }
        let slot = self.index_find(user).ok_or(HeapError::PtrOutOfBounds)?;
        let i = usize::from(self.index[slot]) - 1;
        self.index_remove(slot);
        let (start, size) = (self.used_start[i], self.used_size[i]);
        self.nused -= 1;
        self.spare[N - 1 - self.nused] = i as u8;
        self.unused_bytes -= user - (self.base + u64::from(start));
        // The first free block above this one (free blocks never overlap live ones).
        // The list is sorted, so that is how many free blocks start at or below `start`: a
        // count, which compiles to straight-line compares where a binary search waits on
        // each load.
        let at = self.free[..self.nfree]
            .iter()
            .filter(|&&(s, _)| s <= start)
            .count();
        let left = at > 0 && self.free[at - 1].0 + self.free[at - 1].1 == start;
        let right = at < self.nfree && start + size == self.free[at].0;
        // Coalescing updates a neighbour in place; the list shifts only when a block is
        // added (no neighbour) or two merge into one (both).
        match (left, right) {
            (true, true) => {
                self.free[at - 1].1 += size + self.free[at].1;
                self.remove_free(at);
            }
            (true, false) => self.free[at - 1].1 += size,
            (false, true) => {
                self.free[at] = (start, self.free[at].1 + size);
            }
            (false, false) => self.insert_free(at, start, size),
        }
        Ok(())
    }

    /// Bytes of the allocation at `user` (including its alignment slack), if live.
    pub fn alloc_size(&self, user: u64) -> Option<u64> {
        let i = usize::from(self.index[self.index_find(user)?]) - 1;
        let start = self.base + u64::from(self.used_start[i]);
        Some(u64::from(self.used_size[i]) - (user - start))
    }

    /// The index slot `user` hashes to (Fibonacci hashing of the address).
    fn home(user: u64) -> usize {
        (user.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
    }

    /// The slot holding live allocation `user`, if any.
    fn index_find(&self, user: u64) -> Option<usize> {
        let mut s = Self::home(user);
        loop {
            let e = self.index[s];
            if e == 0 {
                return None;
            }
            if self.base + u64::from(self.used_user[usize::from(e) - 1]) == user {
                return Some(s);
            }
            s = (s + 1) % INDEX_SLOTS;
        }
    }

    fn index_put(&mut self, user: u64, i: usize) {
        let mut s = Self::home(user);
        while self.index[s] != 0 {
            s = (s + 1) % INDEX_SLOTS;
        }
        self.index[s] = (i + 1) as u8;
    }

    /// Empties slot `hole`, moving later entries of its probe run back so every entry stays
    /// reachable from its home slot (deletion without tombstones).
    fn index_remove(&mut self, mut hole: usize) {
        self.index[hole] = 0;
        let mut s = (hole + 1) % INDEX_SLOTS;
        while self.index[s] != 0 {
            let e = self.index[s];
            let home = Self::home(self.base + u64::from(self.used_user[usize::from(e) - 1]));
            // The entry may fill the hole unless its home lies cyclically in (hole, s].
            let stays = if hole <= s {
                hole < home && home <= s
            } else {
                hole < home || home <= s
            };
            if !stays {
                self.index[hole] = e;
                self.index[s] = 0;
                hole = s;
            }
            s = (s + 1) % INDEX_SLOTS;
        }
    }

    /// The largest allocation with alignment `align` that would succeed now.
    pub fn max_free_space(&self, align: u32) -> u64 {
        let align = u64::from(if align == 0 { DEFAULT_ALIGN } else { align });
        self.free[..self.nfree]
            .iter()
            .map(|&(off, size)| {
                let start = self.base + u64::from(off);
                u64::from(size).saturating_sub(start.next_multiple_of(align) - start)
            })
            .max()
            .unwrap_or(0)
    }

    pub fn free_bytes(&self) -> u64 {
        self.free[..self.nfree]
            .iter()
            .map(|&(_, size)| u64::from(size))
            .sum()
    }

    pub fn live_allocations(&self) -> usize {
        self.nused
    }

    /// Whether `addr` lies in a free block of the pool (memory no live allocation holds).
    pub fn is_free(&self, addr: u64) -> bool {
        self.free[..self.nfree].iter().any(|&(off, size)| {
            let start = self.base + u64::from(off);
            addr >= start && addr - start < u64::from(size)
        })
    }

    fn remove_free(&mut self, i: usize) {
        self.free.copy_within(i + 1..self.nfree, i);
        self.nfree -= 1;
    }

    fn insert_free(&mut self, i: usize, start: u32, size: u32) {
        self.free.copy_within(i..self.nfree, i + 1);
        self.free[i] = (start, size);
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
    fn the_user_index_finds_every_live_allocation_of_a_full_heap() {
        // 128 descriptors (at most 60 live, so blocks still split), 64-byte-aligned users (the index's worst case: many keys that
        // differ only above bit 6), allocations and frees in random order.
        let mut h: Heap<128> = Heap::empty();
        h.init(0x4000_0000, 1 << 20);
        let mut live: Vec<(u64, u64)> = Vec::new();
        let mut s = 9u64;
        for _ in 0..20_000 {
            if live.len() < 60 && (live.is_empty() || !rng(&mut s).is_multiple_of(3)) {
                let size = (rng(&mut s) % 300 + 1) as u32;
                if let Ok(p) = h.alloc(size, 64) {
                    live.push((p, u64::from(size)));
                }
            } else {
                let (p, _) = live.swap_remove((rng(&mut s) % live.len() as u64) as usize);
                h.free(p).unwrap();
                assert_eq!(h.alloc_size(p), None, "freed {p:#x} is gone");
            }
            for &(p, n) in &live {
                // At least what was asked (a remainder too small to split stays with it).
                let got = h.alloc_size(p);
                assert!(
                    got.is_some_and(|g| g >= n && g <= n + MIN_SPLIT + 63),
                    "live {p:#x}: {got:?}"
                );
            }
            assert_eq!(h.live_allocations(), live.len());
        }
        assert_eq!(h.free(0x4000_0001), Err(HeapError::PtrOutOfBounds));
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
                let spare = &h.spare[..DEFAULT_BLOCKS - h.nused];
                let held: u64 = (0..DEFAULT_BLOCKS)
                    .filter(|&i| !spare.contains(&(i as u8)))
                    .map(|i| u64::from(h.used_size[i]))
                    .sum();
                assert_eq!(held + h.free_bytes(), 0x4000, "bytes conserved");
            }
        }
    }
}
