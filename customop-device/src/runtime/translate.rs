//! `neuron_translate`: the 5-record software TLB from SoC (HBM/SBUF) addresses to addresses
//! the core can dereference. Records 0-2 are 16 MiB windows reprogrammed round-robin on a
//! miss; 3 (SBUF) and 4 (hbm_scratch) are pinned 64 MiB windows that only ever hit.
//!
//! The table logic is the vendor's, byte for byte on 32-bit targets. What "programming a
//! window" means is the platform's ([`Windows`]): MEM_WINDOWn_LO/HI registers on the device,
//! a host mapping in the emulator.

use core::mem::size_of;

/// Records in the table, and how many of them are reprogrammable.
pub const RECORDS: usize = 5;
pub const DYNAMIC_RECORDS: u8 = 3;
pub const DYNAMIC_MASK: u64 = 0xFFFF_FFFF_FF00_0000;
pub const PINNED_MASK: u64 = 0xFFFF_FFFF_FC00_0000;
/// Record indices of the pinned windows.
pub const SBUF_RECORD: usize = 3;
pub const HBM_SCRATCH_RECORD: usize = 4;

/// `_map_record` (32 bytes): hit when `(addr & mask) == ptr`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapRecord {
    pub ptr: u64,
    /// Local base address of the window.
    pub window: usize,
    pub mask: u64,
    /// The window's MEM_WINDOWn_LO register (device); unused on the host.
    pub reg_location: u64,
}

/// `_translation_ctx_t` (168 bytes on 32-bit targets).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TranslationCtx {
    pub records: [MapRecord; RECORDS],
    pub next_alloc: u8,
}

// i386 (host cores in the device's data model, D97) aligns `u64` members at 4: the records
// are the runtime's own, never read by op code, so only their size is the device's there.
#[cfg(all(target_pointer_width = "32", not(target_arch = "x86")))]
const _: () = {
    assert!(size_of::<MapRecord>() == 32);
    assert!(core::mem::offset_of!(MapRecord, window) == 8);
    assert!(core::mem::offset_of!(MapRecord, mask) == 16);
    assert!(core::mem::offset_of!(MapRecord, reg_location) == 24);
    assert!(size_of::<TranslationCtx>() == 168);
    assert!(core::mem::offset_of!(TranslationCtx, next_alloc) == 160);
};
#[cfg(any(target_pointer_width = "64", target_arch = "x86"))]
const _: () = assert!(size_of::<MapRecord>() == 32);

/// How windows reach memory on this platform.
pub trait Windows {
    /// Points dynamic window `record` (0-2) at the 16 MiB SoC region starting at
    /// `soc_base`; returns the window's local base address.
    fn program(&mut self, record: usize, reg_location: u64, soc_base: u64) -> usize;
}

impl TranslationCtx {
    /// `_init_translate_ctx`: the three dynamic windows (tags unset) and the two pinned ones.
    pub fn new(dynamic: [(usize, u64); 3], sbuf: (u64, usize), hbm_scratch: (u64, usize)) -> Self {
        let mut ctx = TranslationCtx::default();
        for (r, (window, reg)) in ctx.records.iter_mut().zip(dynamic) {
            // A tag no address can match until the window is first programmed.
            *r = MapRecord {
                ptr: u64::MAX,
                window,
                mask: DYNAMIC_MASK,
                reg_location: reg,
            };
        }
        ctx.records[SBUF_RECORD] = MapRecord {
            ptr: sbuf.0 & PINNED_MASK,
            window: sbuf.1,
            mask: PINNED_MASK,
            reg_location: 0,
        };
        ctx.records[HBM_SCRATCH_RECORD] = MapRecord {
            ptr: hbm_scratch.0 & PINNED_MASK,
            window: hbm_scratch.1,
            mask: PINNED_MASK,
            reg_location: 0,
        };
        ctx
    }

    fn hit(&self, addr: u64) -> Option<&MapRecord> {
        self.records.iter().find(|r| (addr & r.mask) ^ r.ptr == 0)
    }

    /// `neuron_translate`: the local address of `addr`. A miss reprograms the next dynamic
    /// window round-robin; it never fails.
    pub fn translate(&mut self, addr: u64, hw: &mut dyn Windows) -> usize {
        if let Some(r) = self.hit(addr) {
            return r.window + (addr as u32 & !(r.mask as u32)) as usize;
        }
        let v = usize::from(self.next_alloc);
        let base = addr & DYNAMIC_MASK;
        let reg = self.records[v].reg_location;
        let window = hw.program(v, reg, base);
        let rec = &mut self.records[v];
        rec.ptr = base;
        rec.window = window;
        self.next_alloc = (self.next_alloc + 1) % DYNAMIC_RECORDS;
        window + (addr & 0x00FF_FFFF) as usize
    }

    /// [`TranslationCtx::translate`], with the last SoC byte the window shows from there.
    pub fn translate_span(&mut self, addr: u64, hw: &mut dyn Windows) -> (usize, u64) {
        let local = self.translate(addr, hw);
        let end = self.hit(addr).map_or(addr, |r| r.ptr | !r.mask);
        (local, end)
    }

    /// `neuron_translate_mapping_lookup`: the SoC span `[start, end]` of the window holding
    /// `addr`, without evicting; None (-1) on a miss.
    pub fn lookup(&self, addr: u64) -> Option<(u64, u64)> {
        self.hit(addr).map(|r| (r.ptr, r.ptr | !r.mask))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Records each programming; window k's local base is 0x1000_0000 * (k + 1).
    struct Log(Vec<(usize, u64, u64)>);

    impl Windows for Log {
        fn program(&mut self, record: usize, reg: u64, soc_base: u64) -> usize {
            self.0.push((record, reg, soc_base));
            0x1000_0000 * (record + 1)
        }
    }

    fn ctx() -> TranslationCtx {
        TranslationCtx::new(
            [
                (0x0700_0000, 0x0010_0218),
                (0x0900_0000, 0x0010_0228),
                (0x0A00_0000, 0x0010_0230),
            ],
            (0x0030_0000_0000_0000 + 0x0800_0000, 0x8000_0000),
            (0x0040_0000_0400_0000, 0x8400_0000),
        )
    }

    #[test]
    fn pinned_windows_hit_without_programming() {
        let mut c = ctx();
        let mut hw = Log(Vec::new());
        assert_eq!(c.translate(0x0030_0000_0800_1234, &mut hw), 0x8000_1234);
        assert_eq!(
            c.translate(0x0040_0000_07FF_FFFF, &mut hw),
            0x8400_0000 + 0x03FF_FFFF
        );
        assert!(hw.0.is_empty());
        assert_eq!(
            c.lookup(0x0040_0000_0400_0010),
            Some((0x0040_0000_0400_0000, 0x0040_0000_07FF_FFFF))
        );
    }

    #[test]
    fn misses_reprogram_dynamic_windows_round_robin() {
        let mut c = ctx();
        let mut hw = Log(Vec::new());
        let a = 0x0001_0000_1234_5678u64;
        assert_eq!(c.translate(a, &mut hw), 0x1000_0000 + 0x34_5678);
        assert_eq!(hw.0, [(0, 0x0010_0218, 0x0001_0000_1200_0000)]);
        assert_eq!(c.translate(a + 8, &mut hw), 0x1000_0000 + 0x34_5680, "hit");
        assert_eq!(
            c.lookup(a),
            Some((0x0001_0000_1200_0000, 0x0001_0000_12FF_FFFF))
        );
        c.translate(0x0001_0000_1300_0000, &mut hw);
        c.translate(0x0001_0000_1400_0000, &mut hw);
        assert_eq!(c.next_alloc, 0);
        // A fourth region evicts the first: pointers into it are stale now.
        c.translate(0x0001_0000_1500_0000, &mut hw);
        assert_eq!(hw.0.last(), Some(&(0, 0x0010_0218, 0x0001_0000_1500_0000)));
        assert_eq!(c.lookup(a), None);
        assert_eq!(c.next_alloc, 1);
    }
}
