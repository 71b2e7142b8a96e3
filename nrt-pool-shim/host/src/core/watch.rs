//! A checked launch's watch, core side (D89): which chunks of a SoC range (the output of a
//! core run alone) this process touched while its kernel ran. Before the kernel, the
//! range's pages are dropped from this process's page table (`MADV_DONTNEED`: the bytes
//! stay in the shared device file); after it, the pages present again (`/proc/self/pagemap`)
//! are the ones the kernel read or wrote, through the core's view of device memory or a
//! dynamic window. The host then compares only those with the poison the range started as.
//! Anything this cannot see (no pagemap, a failed `madvise`) sends no report, and the host
//! compares the whole range.

use std::sync::Mutex;

use super::{core, memory, windows};
use crate::control::ControlBlock;
use nrt_pool_engine::memory::PAGE;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, Ordering};

/// The watch of the running kernel, if its launch asked for one.
struct Watch {
    soc: u64,
    len: u64,
    chunk: u64,
    bits: Vec<u8>,
    /// Something was missed: no report.
    blind: bool,
}

static WATCH: Mutex<Option<Watch>> = Mutex::new(None);
/// `/proc/self/pagemap`, opened on the first watch (-1: not yet, -2: cannot).
static PAGEMAP: AtomicI32 = AtomicI32::new(-1);

fn pagemap() -> Option<i32> {
    let fd = PAGEMAP.load(Ordering::Relaxed);
    if fd >= 0 {
        return Some(fd);
    }
    if fd == -2 {
        return None;
    }
    // SAFETY: a NUL-terminated path; the descriptor is kept for the process's life.
    let fd = unsafe {
        libc::open(
            c"/proc/self/pagemap".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    PAGEMAP.store(if fd >= 0 { fd } else { -2 }, Ordering::Relaxed);
    (fd >= 0).then_some(fd)
}

/// The page-aligned local range covering `len` bytes at `local`.
fn pages(local: usize, len: usize) -> (usize, usize) {
    let page = PAGE as usize;
    let from = local & !(page - 1);
    (from, (local + len).next_multiple_of(page))
}

impl Watch {
    /// The part of the watched range a mapping showing SoC `soc` at `local` (for `len`
    /// bytes) covers: (local address, SoC address, bytes), if any.
    fn overlap(&self, local: usize, soc: u64, len: u64) -> Option<(usize, u64, usize)> {
        let from = soc.max(self.soc);
        let to = (soc + len).min(self.soc + self.len);
        (from < to).then(|| {
            (
                (local as u64 + (from - soc)) as usize,
                from,
                (to - from) as usize,
            )
        })
    }

    /// Drops the pages of `len` bytes at `local` from this process's page table.
    fn drop_pages(&mut self, local: usize, len: usize) {
        let (from, to) = pages(local, len);
        // SAFETY: whole pages of this process's shared mappings of the device file (the
        // core's view or a window): dropping them keeps their bytes in the file, and the
        // next access maps them again (guard pages keep their protection).
        if unsafe { libc::madvise(from as *mut c_void, to - from, libc::MADV_DONTNEED) } != 0 {
            self.blind = true;
        }
    }

    /// Marks the chunks of the pages present among `len` bytes at `local`, which show SoC
    /// `soc` onwards.
    fn note_present(&mut self, local: usize, soc: u64, len: usize) {
        let Some(fd) = pagemap() else {
            self.blind = true;
            return;
        };
        let page = PAGE as usize;
        let (first, end) = pages(local, len);
        let mut entries = [0u64; 512];
        let mut at = first;
        while at < end {
            let n = ((end - at) / page).min(entries.len());
            // SAFETY: reads n u64 entries into `entries` (n <= its length).
            let got = unsafe {
                libc::pread64(
                    fd,
                    entries.as_mut_ptr().cast(),
                    n * 8,
                    ((at / page) * 8) as libc::off64_t,
                )
            };
            if got != (n * 8) as isize {
                self.blind = true;
                return;
            }
            for (i, &e) in entries[..n].iter().enumerate() {
                // Present (bit 63) or swapped (bit 62): touched since the drop.
                if e >> 62 == 0 {
                    continue;
                }
                let p = at + i * page;
                let lo = p.max(local);
                let hi = (p + page).min(local + len);
                if lo < hi {
                    self.mark(soc + (lo - local) as u64, (hi - lo) as u64);
                }
            }
            at += n * page;
        }
    }

    /// Marks the chunks holding `len` bytes at SoC `soc` (inside the watched range).
    fn mark(&mut self, soc: u64, len: u64) {
        let first = (soc - self.soc) / self.chunk;
        let last = (soc - self.soc + len - 1) / self.chunk;
        for i in first..=last {
            if let Some(b) = self.bits.get_mut((i / 8) as usize) {
                *b |= 1 << (i % 8);
            }
        }
    }
}

/// Before a kernel runs: starts the watch its launch asked for (else none).
pub(super) fn begin(ctl: &ControlBlock) {
    // Unchecked launches take no lock here (the last watch ended with its kernel).
    let Some((soc, len, chunk)) = ctl.watch() else {
        return;
    };
    let mut w = Watch {
        soc,
        len,
        chunk,
        bits: vec![0; usize::try_from(len.div_ceil(chunk).div_ceil(8)).unwrap_or(0)],
        blind: pagemap().is_none(),
    };
    match memory().host(soc, len) {
        Some(p) => w.drop_pages(p as usize, len as usize),
        None => w.blind = true,
    }
    for (local, wsoc, wlen) in windows() {
        if let Some((l, _, n)) = w.overlap(local, wsoc, wlen) {
            w.drop_pages(l, n);
        }
    }
    *WATCH.lock().unwrap_or_else(|p| p.into_inner()) = Some(w);
}

/// Window `local` (showing `len` bytes from SoC `soc`) is about to be replaced: notes what
/// the running kernel touched through it.
pub(super) fn window_replaced(local: usize, soc: u64, len: u64) {
    let mut slot = WATCH.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(w) = slot.as_mut() {
        if let Some((l, s, n)) = w.overlap(local, soc, len) {
            w.note_present(l, s, n);
        }
    }
}

/// After the kernel returned: reports what it touched (nothing if the watch missed
/// something).
pub(super) fn finish(ctl: &ControlBlock) {
    if ctl.watch().is_none() {
        return;
    }
    let Some(mut w) = WATCH.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return;
    };
    if let Some(p) = memory().host(w.soc, w.len) {
        w.note_present(p as usize, w.soc, w.len as usize);
    }
    for (local, wsoc, wlen) in windows() {
        if let Some((l, s, n)) = w.overlap(local, wsoc, wlen) {
            w.note_present(l, s, n);
        }
    }
    if !w.blind {
        ctl.set_touched(core(), &w.bits);
    }
}
