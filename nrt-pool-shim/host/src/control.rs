//! The Pool control block: a page of shared device memory where each core reports
//! completion or a fault, and the stdio ring the host drains after a launch (256-byte
//! entries, as `pool_stdio_*` drains them on hardware). Cores run in child processes; all
//! fields are written with atomic or volatile stores and read by the host after the cores
//! have exited.

use std::sync::atomic::Ordering;

use super::doorbell::{Doorbell, HostBell};
use nrt_pool_engine::memory::{CORES, STATUS_BYTES};

pub use customop_abi::control::*;

/// Bytes of the schema area (up to the doorbells).
pub const SCHEMA_BYTES: usize = DOORBELL_OFFSET - SCHEMA_OFFSET;
/// The launch doorbells, before the timelines: the host's, then one per core.
pub const DOORBELL_OFFSET: usize = TIMELINE_OFFSET - DOORBELL_BYTES;
pub const DOORBELL_BYTES: usize = 64 + CORES * std::mem::size_of::<Doorbell>();
const _: () = assert!(SCHEMA_OFFSET < DOORBELL_OFFSET);
const _: () = assert!(DOORBELL_OFFSET & 63 == 0);
const _: () = assert!(TIMELINE_OFFSET + CORES * TIMELINE_BYTES == STATUS_BYTES as usize);

/// A view of the control block at a host address inside the device mapping.
#[derive(Clone, Copy)]
pub struct ControlBlock {
    base: *mut u8,
}

// SAFETY: the block lives in a shared mapping for the engine's lifetime; fields are atomics
// or written by one core process at a time.
unsafe impl Send for ControlBlock {}

impl ControlBlock {
    /// # Safety
    /// `base` is the start of a writable, `STATUS_BYTES`-long, page-aligned region that
    /// outlives the view.
    pub unsafe fn new(base: *mut u8) -> ControlBlock {
        ControlBlock { base }
    }

    pub fn header(&self) -> &Header {
        // SAFETY: the region starts with a Header (page-aligned, in bounds: constructor).
        unsafe { &*(self.base as *const Header) }
    }

    pub fn core(&self, i: usize) -> &CoreRecord {
        assert!(i < CORES);
        // SAFETY: records lie inside the region (const assert) and are 8-byte aligned; the
        // message bytes are only written by the one process running core `i`.
        unsafe { &*(self.base.add(RECORDS_OFFSET + i * 512) as *const CoreRecord) }
    }

    /// A core's launch doorbell.
    pub fn doorbell(&self, i: usize) -> &Doorbell {
        assert!(i < CORES);
        // SAFETY: the doorbells lie inside the region (DOORBELL_OFFSET + DOORBELL_BYTES is
        // its end), 64-byte aligned (the region is page-aligned); fields are atomics, and
        // the command bytes are written by the host only while the core does not read them.
        unsafe {
            &*(self
                .base
                .add(DOORBELL_OFFSET + 64 + i * std::mem::size_of::<Doorbell>())
                as *const Doorbell)
        }
    }

    /// The host's doorbell.
    pub fn host_bell(&self) -> &HostBell {
        // SAFETY: as for `doorbell`; all atomics.
        unsafe { &*(self.base.add(DOORBELL_OFFSET) as *const HostBell) }
    }

    /// Clears the header and every record before a launch (not the doorbells), and ends
    /// any watch (its state words: a bitmap is read only once its core's state says so).
    pub fn reset(&self) {
        // SAFETY: the header, records, guard list and call stacks lie below WATCH_OFFSET
        // (constructor; const asserts in the ABI).
        unsafe { std::ptr::write_bytes(self.base, 0, WATCH_OFFSET) };
        self.watch_header()
            .state
            .store(WATCH_NONE, Ordering::Release);
        for c in 0..CORES {
            self.watch_record(c)
                .state
                .store(WATCH_NONE, Ordering::Release);
        }
    }

    /// Core side: records a fault and its message.
    pub fn set_fault(&self, core: usize, kind: FaultKind, signal: u32, addr: u64, msg: &[u8]) {
        let r = self.core(core);
        let n = msg.len().min(r.msg.len());
        // SAFETY: only this core's process writes its record's message (module doc).
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), r.msg.as_ptr() as *mut u8, n);
        }
        r.msg_len.store(n as u32, Ordering::Release);
        r.kind.store(kind as u32, Ordering::Release);
        r.signal.store(signal, Ordering::Release);
        r.addr.store(addr, Ordering::Release);
        r.state.store(CORE_FAULT, Ordering::Release);
    }

    /// Core side: the call stack at a fault (at most MAX_FRAMES addresses kept).
    pub fn set_frames(&self, core: usize, addrs: &[u64]) {
        assert!(core < CORES);
        let n = addrs.len().min(MAX_FRAMES);
        // SAFETY: core `core`'s area lies inside the region (const assert in the ABI); only
        // that core's process writes it. Plain unaligned-safe stores, async-signal-safe.
        unsafe {
            let p = self
                .base
                .add(FRAMES_OFFSET + core * FRAMES_BYTES)
                .cast::<u64>();
            for (i, &a) in addrs[..n].iter().enumerate() {
                p.add(1 + i).write_volatile(a);
            }
            p.write_volatile(n as u64);
        }
    }

    /// Host side: the call stack a core recorded at its fault (empty: none).
    pub fn frames(&self, core: usize) -> Vec<u64> {
        assert!(core < CORES);
        // SAFETY: as in set_frames; read after the core's process ended.
        unsafe {
            let p = self
                .base
                .add(FRAMES_OFFSET + core * FRAMES_BYTES)
                .cast::<u64>();
            let n = (p.read_volatile() as usize).min(MAX_FRAMES);
            (0..n).map(|i| p.add(1 + i).read_volatile()).collect()
        }
    }

    /// Core side: what the core is doing now.
    pub fn set_phase(&self, core: usize, phase: u32) {
        self.core(core).phase.store(phase, Ordering::Release);
    }

    /// Host side: the guard pages of the next launch (at most MAX_GUARDS).
    pub fn set_guards(&self, pages: &[u64]) {
        let n = pages.len().min(MAX_GUARDS);
        for (i, &p) in pages[..n].iter().enumerate() {
            // SAFETY: entry `i` < MAX_GUARDS lies inside the guard list (const assert);
            // written by the host while no core runs.
            unsafe {
                self.base
                    .add(GUARDS_OFFSET + i * 8)
                    .cast::<u64>()
                    .write_unaligned(p)
            };
        }
        self.header().guard_count.store(n as u32, Ordering::Release);
    }

    /// Core side: the guard pages of this launch.
    pub fn guards(&self) -> Vec<u64> {
        let n = (self.header().guard_count.load(Ordering::Acquire) as usize).min(MAX_GUARDS);
        (0..n)
            // SAFETY: as in set_guards; entries below the count were written.
            .map(|i| unsafe {
                self.base
                    .add(GUARDS_OFFSET + i * 8)
                    .cast::<u64>()
                    .read_unaligned()
            })
            .collect()
    }

    fn watch_header(&self) -> &WatchHeader {
        // SAFETY: the header lies inside the region at WATCH_OFFSET (const asserts in the
        // ABI), 8-byte aligned; its fields are atomics.
        unsafe { &*(self.base.add(WATCH_OFFSET) as *const WatchHeader) }
    }

    fn watch_record(&self, core: usize) -> &WatchRecord {
        assert!(core < CORES);
        // SAFETY: core `core`'s record lies inside the region after the header (const
        // asserts), 8-byte aligned; its bits are written only by that core's process.
        unsafe {
            &*(self
                .base
                .add(WATCH_OFFSET + WATCH_HEADER_BYTES + core * WATCH_RECORD_BYTES)
                as *const WatchRecord)
        }
    }

    /// Host side: asks the next launch's cores to report which parts of `len` bytes at SoC
    /// `soc` they touch (after [`Self::reset`], which ends any earlier watch).
    pub fn set_watch(&self, soc: u64, len: u64) {
        let chunk = len
            .div_ceil(WATCH_CHUNKS as u64)
            .max(1)
            .next_multiple_of(nrt_pool_engine::memory::PAGE);
        let h = self.watch_header();
        h.soc.store(soc, Ordering::Relaxed);
        h.len.store(len, Ordering::Relaxed);
        h.chunk.store(chunk, Ordering::Relaxed);
        h.state.store(WATCH_ASKED, Ordering::Release);
    }

    /// Core side: the watch asked for this launch: (SoC start, length, chunk bytes).
    pub fn watch(&self) -> Option<(u64, u64, u64)> {
        let h = self.watch_header();
        if h.state.load(Ordering::Acquire) != WATCH_ASKED {
            return None;
        }
        let (soc, len, chunk) = (
            h.soc.load(Ordering::Relaxed),
            h.len.load(Ordering::Relaxed),
            h.chunk.load(Ordering::Relaxed),
        );
        (chunk > 0 && len.div_ceil(chunk) <= WATCH_CHUNKS as u64).then_some((soc, len, chunk))
    }

    /// Core side: the chunks of the watched range core `core` touched (bit `i`: chunk `i`).
    pub fn set_touched(&self, core: usize, bits: &[u8]) {
        let r = self.watch_record(core);
        let n = bits.len().min(r.bits.len());
        // SAFETY: at most the bitmap's length; only this core's process writes its record
        // (as set_fault writes its message).
        unsafe { std::ptr::copy_nonoverlapping(bits.as_ptr(), r.bits.as_ptr() as *mut u8, n) };
        r.state.store(WATCH_REPORTED, Ordering::Release);
    }

    /// Host side: the byte ranges (from the watched range's start, merged, in order) core
    /// `core` reported touching; None when it reported nothing (no watch asked, the core did
    /// not complete, or it could not tell).
    pub fn touched(&self, core: usize) -> Option<Vec<std::ops::Range<u64>>> {
        let r = self.watch_record(core);
        if r.state.load(Ordering::Acquire) != WATCH_REPORTED {
            return None;
        }
        let h = self.watch_header();
        let (len, chunk) = (
            h.len.load(Ordering::Relaxed),
            h.chunk.load(Ordering::Relaxed),
        );
        let chunks = usize::try_from(len.div_ceil(chunk.max(1))).ok()?;
        if chunk == 0 || chunks > WATCH_CHUNKS {
            return None;
        }
        let mut ranges: Vec<std::ops::Range<u64>> = Vec::new();
        for i in (0..chunks).filter(|i| r.bits[i / 8] & (1 << (i % 8)) != 0) {
            let (from, to) = (i as u64 * chunk, ((i as u64 + 1) * chunk).min(len));
            match ranges.last_mut() {
                Some(r) if r.end == from => r.end = to,
                _ => ranges.push(from..to),
            }
        }
        Some(ranges)
    }

    /// Probe side: the library's schema text. False if it does not fit.
    pub fn set_schema(&self, text: &[u8]) -> bool {
        if text.len() > SCHEMA_BYTES {
            return false;
        }
        // SAFETY: inside the schema area (checked); one probe process writes it.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), self.base.add(SCHEMA_OFFSET), text.len())
        };
        self.header()
            .schema_len
            .store(text.len() as u32, Ordering::Release);
        true
    }

    /// Host side: the schema text the probe found (None: the library carries none).
    pub fn schema(&self) -> Option<Vec<u8>> {
        let n = self.header().schema_len.load(Ordering::Acquire) as usize;
        // SAFETY: the first `n` bytes of the schema area were written by set_schema.
        (n > 0).then(|| unsafe {
            std::slice::from_raw_parts(self.base.add(SCHEMA_OFFSET), n.min(SCHEMA_BYTES)).to_vec()
        })
    }

    /// Core side: a message for a completed request (state stays the caller's).
    pub fn set_message(&self, core: usize, msg: &[u8]) {
        let r = self.core(core);
        let n = msg.len().min(r.msg.len());
        // SAFETY: only this core's process writes its record's message (module doc).
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), r.msg.as_ptr() as *mut u8, n) };
        r.msg_len.store(n as u32, Ordering::Release);
    }

    pub fn message(&self, core: usize) -> String {
        let r = self.core(core);
        let n = (r.msg_len.load(Ordering::Acquire) as usize).min(r.msg.len());
        String::from_utf8_lossy(&r.msg[..n]).into_owned()
    }

    /// Core side: appends `bytes` to the stdio ring in entry-sized pieces. Several cores
    /// may append at once (all cores' stdio): each piece reserves its entry first.
    pub fn stdio_append(&self, fd: u8, core: u8, bytes: &[u8]) {
        let h = self.header();
        for piece in bytes.chunks(RING_PAYLOAD) {
            let i = h.stdio_count.fetch_add(1, Ordering::AcqRel) as usize;
            if i >= RING_ENTRIES {
                h.stdio_dropped
                    .fetch_add(piece.len() as u32, Ordering::Relaxed);
                continue;
            }
            // SAFETY: entry `i` lies inside the ring and was reserved by this core alone.
            unsafe {
                let e = self.base.add(RING_OFFSET + i * RING_ENTRY);
                e.cast::<u16>().write_unaligned(piece.len() as u16);
                *e.add(2) = fd;
                *e.add(3) = core;
                std::ptr::copy_nonoverlapping(piece.as_ptr(), e.add(4), piece.len());
            }
        }
    }

    /// Host side: the ring's entries in order, as (fd, core, bytes), and the dropped byte
    /// count. Read after the cores that wrote them have ended.
    pub fn stdio_drain(&self) -> (Vec<(u8, u8, Vec<u8>)>, u32) {
        let h = self.header();
        let n = (h.stdio_count.load(Ordering::Acquire) as usize).min(RING_ENTRIES);
        let out = (0..n)
            .map(|i| {
                // SAFETY: entries below the count were reserved and written whole by cores
                // that have ended.
                unsafe {
                    let e = self.base.add(RING_OFFSET + i * RING_ENTRY);
                    let len = (e.cast::<u16>().read_unaligned() as usize).min(RING_PAYLOAD);
                    (
                        *e.add(2),
                        *e.add(3),
                        std::slice::from_raw_parts(e.add(4), len).to_vec(),
                    )
                }
            })
            .collect();
        (out, h.stdio_dropped.load(Ordering::Acquire))
    }

    /// Host side: whether every core's stdio enters the ring this launch.
    pub fn set_stdio_all_cores(&self, all: bool) {
        self.header()
            .stdio_all_cores
            .store(u32::from(all), Ordering::Release);
    }

    /// Host side: whether the cores measure this launch's kernel.
    pub fn set_profile(&self, on: bool) {
        self.header()
            .profile
            .store(u32::from(on), Ordering::Release);
    }

    /// Core side: whether to measure the kernel.
    pub fn profiling(&self) -> bool {
        self.header().profile.load(Ordering::Acquire) != 0
    }

    /// Core `core`'s timeline area.
    fn timeline_area(&self, core: usize) -> *mut u8 {
        assert!(core < CORES);
        // SAFETY: the areas lie inside the region (const assert above).
        unsafe { self.base.add(TIMELINE_OFFSET + core * TIMELINE_BYTES) }
    }

    /// Core side: a profiled kernel's measured timeline (D124); at most the area's
    /// capacity of each is kept.
    pub fn set_timeline(
        &self,
        core: usize,
        head: &TimelineHeader,
        copies: &[CopyStamp],
        samples: &[Sample],
    ) {
        let copies = &copies[..copies.len().min(TIMELINE_COPIES)];
        let samples = &samples[..samples.len().min(TIMELINE_SAMPLES)];
        let mut head = *head;
        head.runs = copies.len() as u32;
        head.samples = samples.len() as u32;
        let at = self.timeline_area(core);
        // SAFETY: the header, copies and samples fit the core's area (the lengths are
        // capped; const asserts in the ABI); only this core's process writes it; the
        // types are plain data of the same layout in every data model.
        unsafe {
            let copies_at = at.add(TIMELINE_HEADER_BYTES).cast::<CopyStamp>();
            let samples_at = at
                .add(TIMELINE_HEADER_BYTES + TIMELINE_COPIES * COPY_STAMP_BYTES)
                .cast::<Sample>();
            std::ptr::copy_nonoverlapping(copies.as_ptr(), copies_at, copies.len());
            std::ptr::copy_nonoverlapping(samples.as_ptr(), samples_at, samples.len());
            at.cast::<TimelineHeader>().write_unaligned(head);
        }
    }

    /// Host side: what a core's last profiled kernel wrote of its timeline.
    pub fn timeline(&self, core: usize) -> (TimelineHeader, Vec<CopyStamp>, Vec<Sample>) {
        let at = self.timeline_area(core);
        // SAFETY: as in set_timeline, read after the core completed; counts are capped to
        // the area's capacity, so a damaged header reads no further than the area.
        unsafe {
            let head = at.cast::<TimelineHeader>().read_unaligned();
            let runs = (head.runs as usize).min(TIMELINE_COPIES);
            let n = (head.samples as usize).min(TIMELINE_SAMPLES);
            let copies_at = at.add(TIMELINE_HEADER_BYTES).cast::<CopyStamp>();
            let samples_at = at
                .add(TIMELINE_HEADER_BYTES + TIMELINE_COPIES * COPY_STAMP_BYTES)
                .cast::<Sample>();
            let copies = (0..runs)
                .map(|i| copies_at.add(i).read_unaligned())
                .collect();
            let samples = (0..n).map(|i| samples_at.add(i).read_unaligned()).collect();
            (head, copies, samples)
        }
    }

    /// Core side: whether this core's stdio enters the ring (core 0's always does).
    pub fn stdio_from(&self, core: usize) -> bool {
        core == 0 || self.header().stdio_all_cores.load(Ordering::Acquire) != 0
    }

    /// Probe side: appends a registered kernel name.
    pub fn push_name(&self, name: &[u8]) -> bool {
        let h = self.header();
        let used = h.names_len.load(Ordering::Relaxed) as usize;
        if used + name.len() + 1 > NAMES_BYTES {
            return false;
        }
        // SAFETY: inside the names area (checked); one probe process writes it.
        unsafe {
            let p = self.base.add(NAMES_OFFSET + used);
            std::ptr::copy_nonoverlapping(name.as_ptr(), p, name.len());
            *p.add(name.len()) = 0;
        }
        h.names_len
            .store((used + name.len() + 1) as u32, Ordering::Release);
        h.names_count.fetch_add(1, Ordering::Release);
        true
    }

    /// The registered names, each as its bytes (never repaired: the engine refuses names
    /// that are not UTF-8 instead of altering them).
    pub fn names(&self) -> Vec<Vec<u8>> {
        let used = (self.header().names_len.load(Ordering::Acquire) as usize).min(NAMES_BYTES);
        // SAFETY: the first `used` bytes of the names area were written by push_name.
        let bytes = unsafe { std::slice::from_raw_parts(self.base.add(NAMES_OFFSET), used) };
        bytes
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A control block in ordinary memory (page-aligned, as device memory is).
    fn block() -> (Vec<u64>, ControlBlock) {
        let mut mem = vec![0u64; STATUS_BYTES as usize / 8 + 512];
        let at = (mem.as_mut_ptr() as usize).next_multiple_of(4096) as *mut u8;
        // SAFETY: STATUS_BYTES of the vector from a page boundary, kept alive by the caller.
        (mem, unsafe { ControlBlock::new(at) })
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // lists of byte ranges, one range long
    fn a_watch_reports_the_chunks_touched_as_merged_byte_ranges() {
        let (_mem, ctl) = block();
        assert_eq!(
            (ctl.watch(), ctl.touched(3)),
            (None, None),
            "no watch asked"
        );
        // 100 MiB + 5 bytes: chunks of 16 KiB (the range split into at most 8192 pages).
        let len = (100 << 20) + 5;
        ctl.set_watch(0x4000_0000, len);
        let (soc, got_len, chunk) = ctl.watch().expect("asked");
        assert_eq!((soc, got_len, chunk), (0x4000_0000, len, 16 << 10));
        assert_eq!(ctl.touched(3), None, "asked, not reported");
        let chunks = len.div_ceil(chunk) as usize;
        let mut bits = vec![0u8; chunks.div_ceil(8)];
        for i in [0, 1, 2, 9, chunks - 1] {
            bits[i / 8] |= 1 << (i % 8);
        }
        ctl.set_touched(3, &bits);
        ctl.set_touched(5, &[0b10]);
        assert_eq!(ctl.touched(4), None, "each core reports its own");
        assert_eq!(ctl.touched(5), Some(vec![chunk..2 * chunk]));
        let c = chunk;
        assert_eq!(
            ctl.touched(3).expect("reported"),
            [0..3 * c, 9 * c..10 * c, (chunks as u64 - 1) * c..len],
            "adjacent chunks merge; the last one ends with the range"
        );
        // A launch's reset ends it.
        ctl.reset();
        assert_eq!((ctl.watch(), ctl.touched(3)), (None, None));
        // Small ranges are watched page by page.
        ctl.set_watch(0x4000_0000, 10);
        assert_eq!(ctl.watch().map(|w| w.2), Some(4096));
    }
}
