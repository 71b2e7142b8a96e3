//! Checking mode's red zones: a heap block a checked launch hands out (malloc/new, tcm_malloc,
//! an HBM block) is followed by [`RED_ZONE`] bytes: [`WATCHED`] bytes of [`RED_BYTE`],
//! verified when the block is freed and when the kernel returns, so a plain store past a
//! block's end, which the device would let corrupt its neighbour silently, is reported
//! (D88); then the block's site, the address of the code that made it, so a block still
//! held at the kernel's end names its line (D104). Kept in the zone, not in a table, so it
//! costs a Pool image no bytes of its 64 KiB. Unchecked launches allocate exactly what they
//! ask for.

use crate::runtime::heap::HeapError;
use crate::runtime::{check_note, STATE};
use customop_abi::checklog::NoteKind;

/// Bytes after each block.
pub const RED_ZONE: u32 = 32;
/// Of them, the bytes a store past the end is looked for in; the last four hold the site.
pub const WATCHED: u32 = RED_ZONE - 4;
/// What they hold (a kernel storing exactly this byte past a block's end goes unseen).
pub const RED_BYTE: u8 = 0xFD;
/// Blocks watched at once (32 descriptors for each Neuron heap; the rest go unwatched).
const SLOTS: usize = 64;

/// Which heap a block came from (the note's `b`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum HeapKind {
    Libc = 0,
    Tcm = 1,
    Hbm = 2,
}

/// A watched block: its local address, and the bytes asked for (the zone follows them)
/// with the heap in the top two bits (no heap block reaches 1 GiB): 8 bytes on the device.
#[derive(Clone, Copy, Debug)]
struct Zone {
    local: usize,
    size_heap: u32,
}

impl Zone {
    fn size(self) -> u32 {
        self.size_heap & 0x3FFF_FFFF
    }
    fn heap(self) -> u32 {
        self.size_heap >> 30
    }
    /// Where the zone starts: right after the kernel's bytes (so possibly misaligned).
    fn start(self) -> usize {
        self.local + self.size() as usize
    }
    /// Where the zone keeps the block's site (its last four bytes).
    fn site_at(self) -> usize {
        self.start() + WATCHED as usize
    }
}

#[derive(Clone, Copy, Debug)]
pub struct RedZones {
    zones: [Zone; SLOTS],
    n: usize,
}

impl RedZones {
    pub const fn new() -> RedZones {
        RedZones {
            zones: [Zone {
                local: 0,
                size_heap: 0,
            }; SLOTS],
            n: 0,
        }
    }
}

impl Default for RedZones {
    fn default() -> Self {
        Self::new()
    }
}

/// Allocates `size` bytes with `alloc` (bytes -> address), with a red zone after them in a
/// checked launch (`local` turns the address into a local one) that keeps `site` (the
/// code that asked; 0: unknown). A heap too full for the zone gives the plain block:
/// checking never makes an allocation fail.
pub fn allocate(
    heap: HeapKind,
    size: u32,
    site: usize,
    mut alloc: impl FnMut(u32) -> Result<u64, HeapError>,
    local: impl Fn(u64) -> usize,
) -> Result<u64, HeapError> {
    let checked = STATE.with(|s| s.check_fill != 0);
    if let Some(big) = size
        .checked_add(RED_ZONE)
        .filter(|_| checked && size > 0 && size < 1 << 30)
    {
        if let Ok(a) = alloc(big) {
            arm(local(a), size, heap, site);
            return Ok(a);
        }
    }
    alloc(size)
}

fn arm(local: usize, size: u32, heap: HeapKind, site: usize) {
    let zone = Zone {
        local,
        size_heap: size | (heap as u32) << 30,
    };
    let watched = STATE.with(|s| {
        let r = &mut s.red_zones;
        if r.n == SLOTS {
            return false;
        }
        r.zones[r.n] = zone;
        r.n += 1;
        true
    });
    if watched {
        // SAFETY: the block is `size + RED_ZONE` bytes at `local` (just allocated), in
        // memory this core owns.
        unsafe {
            core::ptr::write_bytes(zone.start() as *mut u8, RED_BYTE, WATCHED as usize);
            // Byte stores: the zone may be misaligned.
            (zone.site_at() as *mut [u8; 4]).write((site as u32).to_le_bytes());
        };
    }
}

/// Each site with `heap` blocks still watched, and how many (at most `N` sites; blocks
/// made at an unknown site are left out).
pub fn held_sites<const N: usize>(heap: HeapKind) -> ([(u32, u32); N], usize) {
    let mut out = [(0u32, 0u32); N];
    let mut n = 0;
    STATE.with(|s| {
        let r = &s.red_zones;
        for z in r.zones[..r.n].iter().filter(|z| z.heap() == heap as u32) {
            // SAFETY: a watched zone's last four bytes, inside its block's allocation.
            let site = u32::from_le_bytes(unsafe { (z.site_at() as *const [u8; 4]).read() });
            if site == 0 {
                continue;
            }
            match out[..n].iter_mut().find(|e| e.0 == site) {
                Some(e) => e.1 += 1,
                None if n < N => {
                    out[n] = (site, 1);
                    n += 1;
                }
                None => {}
            }
        }
    });
    (out, n)
}

/// The block at `local` is being freed: its zone is verified and forgotten.
pub fn release(local: usize) {
    let zone = STATE.with(|s| {
        let r = &mut s.red_zones;
        let k = r.zones[..r.n].iter().position(|z| z.local == local)?;
        let z = r.zones[k];
        r.n -= 1;
        r.zones[k] = r.zones[r.n];
        Some(z)
    });
    if let Some(z) = zone {
        verify(z);
    }
}

/// The red-zone bytes of the watched blocks of `heap` (a leak report counts the kernel's
/// bytes, not the zones).
pub fn watched_bytes(heap: HeapKind) -> u64 {
    STATE.with(|s| {
        let r = &s.red_zones;
        r.zones[..r.n]
            .iter()
            .filter(|z| z.heap() == heap as u32)
            .count() as u64
            * u64::from(RED_ZONE)
    })
}

/// The kernel returned: every watched block still held is verified, and none is watched
/// further (the next checked launch starts afresh).
pub fn verify_all() {
    let (zones, n) = STATE.with(|s| {
        let r = &mut s.red_zones;
        let n = core::mem::take(&mut r.n);
        (r.zones, n)
    });
    for z in &zones[..n] {
        verify(*z);
    }
}

impl RedZones {
    /// A checked launch starts: nothing is watched.
    pub fn clear(&mut self) {
        self.n = 0;
    }
}

fn verify(z: Zone) {
    let start = z.start();
    let changed = (0..WATCHED as usize).find(|&i| {
        // SAFETY: the zone's bytes follow the block inside its allocation (armed above).
        unsafe { ((start + i) as *const u8).read_volatile() != RED_BYTE }
    });
    if let Some(i) = changed {
        check_note(
            NoteKind::HeapOverrun,
            i as u32,
            u64::from(z.size()),
            u64::from(z.heap()),
        );
    }
}
