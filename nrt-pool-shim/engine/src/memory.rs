//! The emulated device's memory, addressed by SoC addresses: HBM, SBUF (128 partitions) and
//! the eight cores' data scratch areas (each holding its 16 KiB dataram/TCM pool). All of it
//! is one shared mapping of an anonymous memory file, so a launch that runs in a forked
//! child writes results the parent sees. Regions end in inaccessible guard pages.

use std::fs::File;

use memmap2::{MmapMut, MmapOptions};

pub use crate::backing::Backing;

/// SoC base of HBM, of SBUF, and of the cores' data scratch areas.
pub const HBM_BASE: u64 = 0x0040_0000_0000;
pub const SBUF_BASE: u64 = 0x0050_0000_0000;
/// SBUF: 128 partitions of 192 KiB, contiguous here.
pub const SBUF_PARTITIONS: u64 = 128;
pub const SBUF_PARTITION_BYTES: u64 = 192 << 10;
pub const SBUF_SIZE: u64 = SBUF_PARTITIONS * SBUF_PARTITION_BYTES;
/// Each core's data scratch area (the runtime needs 0x9200 bytes; 64 KiB like the NX window).
pub const SCRATCH_BYTES: u64 = 64 << 10;
/// Each core's slice of HBM used as its hbm_scratch (the HBM heap: tensors a kernel makes,
/// HBM stacks): 6 MiB, the most eight slices can have beside the eight 2 MiB op images in
/// the pinned 64 MiB hbm_scratch window (D74; the record gives no size).
pub const HBM_SCRATCH_BYTES: u64 = 6 << 20;
/// The shared status block: per-core completion and faults, the stdio ring, and host
/// cores' measured timelines (untouched pages of it cost nothing).
pub const STATUS_BYTES: u64 =
    (customop_abi::control::TIMELINE_OFFSET + CORES * customop_abi::control::TIMELINE_BYTES) as u64;
pub use customop_abi::CORES;
pub const PAGE: u64 = 4096;
/// A translation window spans 16 MiB (dynamic) or 64 MiB (pinned): mapped regions are
/// padded so every window the runtime maps lies inside the mapping.
const WINDOW: u64 = 64 << 20;

/// One region of the SoC address space and where it lives in the mapping.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub soc: u64,
    pub size: u64,
    pub offset: u64,
}

/// The device memory.
pub struct DeviceMemory {
    map: MmapMut,
    /// The memory file behind `map`, which other processes (QEMU cores) map too.
    file: File,
    /// What backs `file`: huge pages or the system's shared-memory pages (D66).
    pub backing: Backing,
    pub hbm: Region,
    pub sbuf: Region,
    /// Per core: the data scratch area's region.
    pub scratch: [Region; CORES],
    pub status: Region,
    /// Next free HBM byte for tensors (bump allocation; core scratch slices come first).
    hbm_next: u64,
    /// Lowest byte of the resident tensors, allocated downward from HBM's end.
    hbm_top: u64,
    /// Released resident ranges above `hbm_top` (start, end), sorted and joined.
    resident_free: Vec<(u64, u64)>,
    /// Where each live resident tensor's range (from its SoC address, with its guard page
    /// and padding) ends.
    resident_spans: std::collections::HashMap<u64, u64>,
    /// Bytes at HBM's start no tensor is placed in (the cores' scratch slices, and what an
    /// ISA backend keeps there).
    reserved: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("cannot create device memory: {0}")]
    Create(#[from] std::io::Error),
    #[error("HBM is full: {want} bytes requested, {left} left")]
    HbmFull { want: u64, left: u64 },
    #[error("SBUF holds {size} bytes per launch; {want} requested")]
    SbufFull { want: u64, size: u64 },
}

/// Maps the whole pages of `range` (1 MiB or more; smaller ones are not worth a system
/// call) into this process with `advice` (MADV_POPULATE_READ or _WRITE). Best effort: a
/// kernel that refuses leaves the pages to fault in as they are touched.
fn populate(range: &[u8], advice: i32) {
    const BIG: usize = 1 << 20;
    if range.len() < BIG {
        return;
    }
    // Whole pages only: the pages around a tensor may be guard pages.
    let start = (range.as_ptr() as usize).next_multiple_of(PAGE as usize);
    let end = (range.as_ptr() as usize + range.len()) & !(PAGE as usize - 1);
    // SAFETY: a page-aligned range inside one of our own shared mappings; the advice only
    // maps (and for writes allocates) pages, it changes no contents.
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) };
}

fn round_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// Where a tensor was placed: its SoC address and, if guarded, the page after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub soc: u64,
    pub guard: Option<u64>,
}

/// Where each region lies in the memory file, from HBM's size alone.
#[derive(Clone, Copy)]
struct Layout {
    hbm: Region,
    sbuf: Region,
    scratch: [Region; CORES],
    status: Region,
    /// The file's length.
    total: u64,
}

impl Layout {
    /// [HBM | guard | pad to window][SBUF | guard | pad][scratch x8 each + guard][status]
    fn new(hbm_size: u64) -> Layout {
        let hbm = Region {
            soc: HBM_BASE,
            size: hbm_size,
            offset: 0,
        };
        let sbuf_off = round_up(hbm_size + PAGE, WINDOW);
        let sbuf = Region {
            soc: SBUF_BASE,
            size: SBUF_SIZE,
            offset: sbuf_off,
        };
        let mut off = round_up(sbuf_off + SBUF_SIZE + PAGE, WINDOW);
        let mut scratch = [Region {
            soc: 0,
            size: 0,
            offset: 0,
        }; CORES];
        for (i, r) in scratch.iter_mut().enumerate() {
            *r = Region {
                soc: 0x0060_0000_0000 + (i as u64) * (1 << 20),
                size: SCRATCH_BYTES,
                offset: off,
            };
            off += SCRATCH_BYTES + PAGE;
        }
        let status = Region {
            soc: 0x0070_0000_0000,
            size: STATUS_BYTES,
            offset: off,
        };
        let total = off + STATUS_BYTES + PAGE;
        Layout {
            hbm,
            sbuf,
            scratch,
            status,
            total,
        }
    }
}

impl DeviceMemory {
    /// HBM of `hbm_bytes` (plus the cores' scratch slices), SBUF, scratch and status areas.
    pub fn new(hbm_bytes: u64) -> Result<DeviceMemory, MemoryError> {
        DeviceMemory::with_reserve(hbm_bytes, CORES as u64 * HBM_SCRATCH_BYTES)
    }

    /// [`DeviceMemory::new`] keeping the first `reserved` bytes of HBM free of tensors (at
    /// least the cores' scratch slices); `hbm_bytes` for tensors come after them.
    pub fn with_reserve(hbm_bytes: u64, reserved: u64) -> Result<DeviceMemory, MemoryError> {
        let reserved = round_up(reserved.max(CORES as u64 * HBM_SCRATCH_BYTES), PAGE);
        let layout = Layout::new(round_up(hbm_bytes + reserved, PAGE));
        let (file, backing) = crate::backing::device_file(layout.total)?;
        file.set_len(layout.total)?;
        DeviceMemory::map(file, backing, layout, reserved)
    }

    /// The device memory another process made, from its memory file, HBM size and reserved
    /// bytes (a 32-bit core process the engine started, which maps the same bytes: D97).
    /// Only the regions are known here, not the host's placement of tensors.
    pub fn attach(file: File, hbm_size: u64, reserved: u64) -> Result<DeviceMemory, MemoryError> {
        let layout = Layout::new(hbm_size);
        if file.metadata()?.len() < layout.total {
            return Err(MemoryError::Create(std::io::Error::other(
                "the device memory file is shorter than its layout",
            )));
        }
        if reserved > hbm_size {
            return Err(MemoryError::Create(std::io::Error::other(
                "more HBM reserved than there is",
            )));
        }
        DeviceMemory::map(file, Backing::Memfd, layout, reserved)
    }

    fn map(
        file: File,
        backing: Backing,
        l: Layout,
        reserved: u64,
    ) -> Result<DeviceMemory, MemoryError> {
        let len = usize::try_from(l.total).map_err(|_| {
            MemoryError::Create(std::io::Error::other(
                "the device memory does not fit this process's address space",
            ))
        })?;
        // SAFETY: the engine's own memory file, which nobody truncates while it lives.
        let map = unsafe { MmapOptions::new().len(len).map_mut(&file)? };
        let mem = DeviceMemory {
            map,
            file,
            backing,
            hbm: l.hbm,
            sbuf: l.sbuf,
            scratch: l.scratch,
            status: l.status,
            hbm_next: l.hbm.soc + reserved,
            hbm_top: l.hbm.soc + l.hbm.size,
            resident_free: Vec::new(),
            resident_spans: std::collections::HashMap::new(),
            reserved,
        };
        mem.guard_all()?;
        Ok(mem)
    }

    /// HBM's size with the reserved bytes, and the reserved bytes (what
    /// [`DeviceMemory::attach`] takes).
    pub fn hbm_size(&self) -> (u64, u64) {
        (self.hbm.size, self.reserved)
    }

    /// Makes every byte outside the regions inaccessible (guard pages and window padding).
    fn guard_all(&self) -> std::io::Result<()> {
        let mut regions: Vec<Region> = vec![self.hbm, self.sbuf, self.status];
        regions.extend(self.scratch);
        regions.sort_by_key(|r| r.offset);
        let mut at = 0u64;
        let base = self.map.as_ptr() as u64;
        for r in regions.iter().chain(std::iter::once(&Region {
            soc: 0,
            size: 0,
            offset: self.map.len() as u64,
        })) {
            if r.offset > at {
                // SAFETY: page-aligned range inside our own mapping.
                let rc = unsafe {
                    libc::mprotect(
                        (base + at) as *mut libc::c_void,
                        (r.offset - at) as usize,
                        libc::PROT_NONE,
                    )
                };
                if rc != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            at = round_up(r.offset + r.size, PAGE);
        }
        Ok(())
    }

    /// Where this process maps the memory file.
    pub fn base(&self) -> u64 {
        self.map.as_ptr() as u64
    }

    /// The memory file, for a process that maps the same device memory (an ISA backend's
    /// cores); [`DeviceMemory::regions`] says where each SoC range lies in it.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The file's length in bytes (the regions, their guard pages and window padding).
    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }

    /// HBM, SBUF, the control block and the cores' data scratch areas.
    pub fn regions(&self) -> impl Iterator<Item = Region> + '_ {
        [self.hbm, self.sbuf, self.status]
            .into_iter()
            .chain(self.scratch)
    }

    /// The host address of `len` bytes at `soc`, for a translation window: the window may
    /// run past its region's end into the region's padding, which is guard memory (touching
    /// it faults, as an unbacked address does on hardware).
    pub fn host(&self, soc: u64, len: u64) -> Option<*mut u8> {
        let r = self
            .regions()
            .find(|r| soc >= r.soc && soc < r.soc + round_up(r.size, WINDOW))?;
        let off = r.offset + (soc - r.soc);
        (off.checked_add(len)? <= self.map.len() as u64)
            // SAFETY: inside the mapping (checked).
            .then(|| unsafe { self.map.as_ptr().add(off as usize) as *mut u8 })
    }

    /// Where `len` bytes from SoC `soc` lie in the memory file, a window's padding past its
    /// region included (as [`DeviceMemory::host`] allows): for mapping a translation window
    /// on its own.
    pub fn window_offset(&self, soc: u64, len: u64) -> Option<u64> {
        let r = self
            .regions()
            .find(|r| soc >= r.soc && soc < r.soc + round_up(r.size, WINDOW))?;
        let off = r.offset + (soc - r.soc);
        (off.checked_add(len)? <= self.map.len() as u64).then_some(off)
    }

    /// The SoC address of a host address inside the mapping (a region or its guard
    /// padding), for fault reports.
    pub fn soc_of(&self, host: u64) -> Option<u64> {
        let base = self.map.as_ptr() as u64;
        let off = host.checked_sub(base)?;
        if off >= self.map.len() as u64 {
            return None;
        }
        self.regions()
            .filter(|r| r.offset <= off)
            .max_by_key(|r| r.offset)
            .map(|r| r.soc + (off - r.offset))
    }

    fn region_offset(&self, soc: u64, len: usize) -> Option<usize> {
        let r = self
            .regions()
            .find(|r| soc >= r.soc && soc + len as u64 <= r.soc + r.size)?;
        Some((r.offset + soc - r.soc) as usize)
    }

    /// Where `len` bytes at `soc` lie in the memory file (for file-to-file copies that
    /// bypass the mapping). None outside the regions.
    pub fn file_offset(&self, soc: u64, len: usize) -> Option<u64> {
        self.region_offset(soc, len).map(|o| o as u64)
    }

    /// A region's bytes, for the host side (results out). None outside the regions. A large
    /// range is mapped into this process in one call first (MADV_POPULATE_READ): the cores
    /// wrote those pages, and faulting them in one by one while copying them out cost a
    /// 64 MiB output ~20 ms here.
    pub fn read(&self, soc: u64, len: usize) -> Option<&[u8]> {
        /// Linux's MADV_POPULATE_READ (5.14); older kernels refuse it and the pages fault in.
        const MADV_POPULATE_READ: i32 = 22;
        let off = self.region_offset(soc, len)?;
        let b = &self.map[off..off + len];
        populate(b, MADV_POPULATE_READ);
        Some(b)
    }

    /// A region's bytes, writable (arguments in). None outside the regions.
    pub fn bytes(&mut self, soc: u64, len: usize) -> Option<&mut [u8]> {
        let off = self.region_offset(soc, len)?;
        Some(&mut self.map[off..off + len])
    }

    /// [`DeviceMemory::bytes`] with the pages behind them allocated up front, in one call
    /// into the kernel (MADV_POPULATE_WRITE) instead of a fault per page as they are
    /// first written: a large tensor's first placement costs a copy, not 16k faults.
    pub fn bytes_populated(&mut self, soc: u64, len: usize) -> Option<&mut [u8]> {
        /// Linux's MADV_POPULATE_WRITE (5.14); older kernels refuse it and the pages
        /// fault in as before.
        const MADV_POPULATE_WRITE: i32 = 23;
        let b = self.bytes(soc, len)?;
        populate(b, MADV_POPULATE_WRITE);
        Some(b)
    }

    /// Zeroes `len` bytes at `soc`, skipping pages the memory file has never held (they read
    /// as zeros already: a fresh 64 MiB tensor costs no writes and no page faults). None
    /// outside the regions.
    pub fn zero(&mut self, soc: u64, len: usize) -> Option<()> {
        let b = self.bytes(soc, len)?;
        let start = b.as_ptr() as usize;
        let first = start & !(PAGE as usize - 1);
        let pages = (start + len)
            .next_multiple_of(PAGE as usize)
            .saturating_sub(first)
            / PAGE as usize;
        let mut resident = vec![0u8; pages];
        // SAFETY: a page-aligned range of our own mapping and a vector of one byte per page.
        let rc = unsafe {
            libc::mincore(
                first as *mut libc::c_void,
                pages * PAGE as usize,
                resident.as_mut_ptr(),
            )
        };
        if rc != 0 {
            b.fill(0);
            return Some(());
        }
        for (i, r) in resident.iter().enumerate() {
            if r & 1 == 0 {
                continue;
            }
            // The part of page i inside the range.
            let lo = (first + i * PAGE as usize).max(start) - start;
            let hi = (first + (i + 1) * PAGE as usize).min(start + len) - start;
            b[lo..hi].fill(0);
        }
        Some(())
    }

    /// Places `len` bytes in HBM: their SoC address, and the guard page after them when
    /// `guarded` (the tensor ends where that page starts, so its first byte past the end
    /// faults once a core protects the page; its start is then aligned to its element
    /// size, since the length is a whole number of elements). Unguarded tensors start
    /// 64-byte aligned with a 64-byte gap after each.
    pub fn alloc_hbm(&mut self, len: u64, guarded: bool) -> Result<Placed, MemoryError> {
        let full = |at: u64| MemoryError::HbmFull {
            want: len,
            left: self.hbm_top.saturating_sub(at),
        };
        if guarded {
            let pages = round_up(len.max(1), PAGE);
            let at = round_up(self.hbm_next, PAGE) + (pages - len);
            let guard = at.checked_add(len).ok_or(full(at))?;
            if guard + PAGE > self.hbm_top {
                return Err(full(self.hbm_next));
            }
            self.hbm_next = guard + PAGE;
            return Ok(Placed {
                soc: at,
                guard: Some(guard),
            });
        }
        let at = round_up(self.hbm_next, 64);
        let end = self.hbm_top;
        if at.checked_add(len).is_none_or(|e| e > end) {
            return Err(full(at));
        }
        self.hbm_next = at + len + 64;
        Ok(Placed {
            soc: at,
            guard: None,
        })
    }

    /// Places a resident tensor (kept across launches) at the top of HBM, guarded as
    /// [`DeviceMemory::alloc_hbm`] does: in the first released range it fits, else below
    /// the resident tensors (which grow down from HBM's end toward the launches' tensors).
    pub fn alloc_resident(&mut self, len: u64, guarded: bool) -> Result<Placed, MemoryError> {
        // Where a tensor of `len` goes in a free range ending at `end`: the top of it, so
        // that a guarded tensor's guard page is the range's last whole page.
        let place = |start: u64, end: u64| -> Option<(u64, Option<u64>)> {
            let (at, guard) = if guarded {
                let guard = (end & !(PAGE - 1)).checked_sub(PAGE)?;
                (guard.checked_sub(len)?, Some(guard))
            } else {
                (end.checked_sub(len.checked_add(64)?)? & !63, None)
            };
            (at >= start).then_some((at, guard))
        };
        for i in 0..self.resident_free.len() {
            let (start, end) = self.resident_free[i];
            if let Some((at, guard)) = place(start, end) {
                if at > start {
                    self.resident_free[i].1 = at;
                } else {
                    self.resident_free.remove(i);
                }
                self.resident_spans.insert(at, end);
                return Ok(Placed { soc: at, guard });
            }
        }
        let top = self.hbm_top;
        let (at, guard) = place(self.hbm_next, top).ok_or(MemoryError::HbmFull {
            want: len,
            left: top.saturating_sub(self.hbm_next),
        })?;
        self.hbm_top = at;
        self.resident_spans.insert(at, top);
        Ok(Placed { soc: at, guard })
    }

    /// Releases the resident tensor at `soc` (with its guard page and padding): its range
    /// can hold later resident tensors, and once nothing below it is held, the launches'
    /// tensors too. False if no resident tensor starts at `soc` (freed already, or never
    /// placed).
    pub fn free_resident(&mut self, soc: u64) -> bool {
        let Some(end) = self.resident_spans.remove(&soc) else {
            return false;
        };
        let start = soc;
        // Into the sorted list, joined with the ranges it touches.
        let i = self.resident_free.partition_point(|&(s, _)| s < start);
        let (mut s, mut e) = (start, end);
        let mut first = i;
        if i > 0 && self.resident_free[i - 1].1 == start {
            first = i - 1;
            s = self.resident_free[i - 1].0;
        }
        let mut last = i;
        if i < self.resident_free.len() && self.resident_free[i].0 == end {
            e = self.resident_free[i].1;
            last = i + 1;
        }
        self.resident_free.splice(first..last, [(s, e)]);
        // A free range at the bottom of the resident tensors goes back below them.
        if self
            .resident_free
            .first()
            .is_some_and(|&(s, _)| s == self.hbm_top)
        {
            self.hbm_top = self.resident_free.remove(0).1;
        }
        true
    }

    /// Releases every resident tensor.
    pub fn reset_resident(&mut self) {
        self.hbm_top = self.hbm.soc + self.hbm.size;
        self.resident_free.clear();
        self.resident_spans.clear();
    }

    /// Releases every launch's tensors (the cores' scratch slices and resident tensors stay).
    pub fn reset_hbm(&mut self) {
        self.hbm_next = self.hbm.soc + self.reserved;
    }

    /// Core `i`'s hbm_scratch slice: the eight slices end the reserved bytes at HBM's
    /// start (what comes before them is an ISA backend's: the Xtensa op images).
    pub fn hbm_scratch(&self, core: usize) -> (u64, u64) {
        (
            self.hbm.soc + self.reserved - (CORES - core) as u64 * HBM_SCRATCH_BYTES,
            HBM_SCRATCH_BYTES,
        )
    }

    /// Core `i`'s data scratch area (host pointer, size).
    pub fn scratch_host(&self, core: usize) -> (*mut u8, usize) {
        let r = self.scratch[core];
        // SAFETY: inside the mapping.
        (
            unsafe { self.map.as_ptr().add(r.offset as usize) as *mut u8 },
            r.size as usize,
        )
    }

    pub fn status_host(&self) -> *mut u8 {
        // SAFETY: inside the mapping.
        unsafe { self.map.as_ptr().add(self.status.offset as usize) as *mut u8 }
    }

    /// Bytes SBUF offers a launch.
    pub fn validate_sbuf(&self, want: u64) -> Result<(), MemoryError> {
        if want > SBUF_SIZE {
            return Err(MemoryError::SbufFull {
                want,
                size: SBUF_SIZE,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_clears_written_pages_and_leaves_fresh_ones_untouched() {
        let mut m = DeviceMemory::new(1 << 20).unwrap();
        let at = m.alloc_hbm(5 * PAGE + 100, false).unwrap().soc;
        let len = 5 * PAGE as usize + 100;
        // Dirty the middle of the range, across a page boundary, and its last byte.
        let b = m.bytes(at, len).unwrap();
        b[PAGE as usize - 3..PAGE as usize + 3].fill(0xAB);
        b[len - 1] = 0xCD;
        // A byte just before the range, on a page the range shares, must survive.
        let before = at - 1;
        m.bytes(before, 1).unwrap()[0] = 0x11;
        m.zero(at, len).unwrap();
        assert!(m.read(at, len).unwrap().iter().all(|&x| x == 0));
        assert_eq!(m.read(before, 1).unwrap()[0], 0x11);
        assert_eq!(m.zero(0, 1), None, "outside the regions");
    }
}
