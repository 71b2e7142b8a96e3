//! The device state behind the callback tables.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use super::control_block as cb;
use super::CLAIM_UNCLAIMED;

/// Where simulated HBM allocations start in the SoC address space.
const HBM_BASE: u64 = 0x40_0000_0000;
/// Largest single allocation the simulated device accepts (its HBM size).
const HBM_LIMIT: u64 = 16 << 30;

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum SimError {
    #[error("device address range 0x{addr:x}+0x{len:x} is not mapped")]
    Unmapped { addr: u64, len: usize },
    #[error("device address range 0x{addr:x}+0x{len:x} overlaps a mapped region")]
    Overlap { addr: u64, len: u64 },
    #[error("memhandle {0:#x} is not live on this device")]
    BadHandle(usize),
    #[error("allocation of {size} bytes aligned to {align} does not fit")]
    NoMemory { size: usize, align: usize },
    #[error("the log ring is not configured in the control block at 0x{0:x}")]
    NoLogRing(u64),
    #[error("scheduled failure")]
    Injected(i32),
}

impl SimError {
    /// The code a libnrt-like callback returns for this error.
    pub fn rc(&self) -> i32 {
        match self {
            SimError::NoMemory { .. } => super::RC_ALLOCATION,
            SimError::Injected(rc) => *rc,
            _ => super::RC_IO,
        }
    }
}

/// A callback the device can be told to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultOp {
    Read,
    Write,
    Malloc,
    MemhandleRead,
    MemhandleWrite,
}

/// One access through the callback tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Read {
        addr: u64,
        len: usize,
    },
    Write {
        addr: u64,
        bytes: Vec<u8>,
    },
    Malloc {
        size: usize,
        align: usize,
        handle: usize,
    },
    Free {
        handle: usize,
    },
    MemhandleRead {
        handle: usize,
        off: u64,
        len: usize,
    },
    MemhandleWrite {
        handle: usize,
        off: u64,
        bytes: Vec<u8>,
    },
}

pub type Access = Op;

/// A line the provider logged through the rw table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostLogLine {
    pub sev: u32,
    /// The line's bytes exactly as the provider passed them.
    pub bytes: Vec<u8>,
}

impl HostLogLine {
    /// The line for display and matching (invalid UTF-8 shown as U+FFFD; `bytes` is exact).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }
}

#[derive(Default)]
struct State {
    /// Mapped regions by base address; regions never overlap.
    regions: BTreeMap<u64, Vec<u8>>,
    /// Live memhandles: id -> (SoC base, requested alignment).
    handles: HashMap<usize, u64>,
    next_handle: usize,
    next_hbm: u64,
    trace: Vec<Op>,
    /// Scheduled failures: op -> (calls to let through first, rc).
    faults: HashMap<FaultOp, (usize, i32)>,
    host_log: Vec<HostLogLine>,
    log_threshold: u32,
    echo_logs: bool,
}

/// A simulated device: the provider context's userdata points at it while the context
/// lives (in Rust, `Arc::as_ptr` of an `Arc<SimDevice>` kept alive by the caller).
pub struct SimDevice {
    state: Mutex<State>,
}

impl SimDevice {
    pub fn new() -> Arc<Self> {
        Arc::new(SimDevice {
            state: Mutex::new(State {
                next_handle: 1,
                next_hbm: HBM_BASE,
                log_threshold: 4,
                ..State::default()
            }),
        })
    }

    /// Maps `len` zeroed bytes at `base`.
    pub fn map_region(&self, base: u64, len: u64) -> Result<(), SimError> {
        let mut s = self.state.lock();
        map(&mut s, base, len)
    }

    /// Maps a core's control block at `dram_base` with the firmware's unclaimed word, as a
    /// freshly booted Pool image leaves it.
    pub fn map_control_block(&self, dram_base: u64) -> Result<(), SimError> {
        let mut s = self.state.lock();
        map(&mut s, dram_base, cb::MAPPED)?;
        store(
            &mut s,
            dram_base + cb::CLAIM_WORD,
            &CLAIM_UNCLAIMED.to_le_bytes(),
        )
    }

    /// Reads device memory directly (not traced).
    pub fn peek(&self, addr: u64, dst: &mut [u8]) -> Result<(), SimError> {
        load(&self.state.lock(), addr, dst)
    }

    /// Writes device memory directly (not traced), as the firmware would.
    pub fn poke(&self, addr: u64, src: &[u8]) -> Result<(), SimError> {
        store(&mut self.state.lock(), addr, src)
    }

    pub fn peek_u32(&self, addr: u64) -> Result<u32, SimError> {
        let mut b = [0; 4];
        self.peek(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn peek_u64(&self, addr: u64) -> Result<u64, SimError> {
        let mut b = [0; 8];
        self.peek(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// The firmware appends a log record `[sev][text][NUL]` at the ring head, if the ring is
    /// configured and `sev` passes the control block's level. Returns whether it was kept.
    /// Like the provider, the ring does not wrap: a record that does not fit is dropped.
    pub fn firmware_log(&self, dram_base: u64, sev: u8, text: &str) -> Result<bool, SimError> {
        self.firmware_log_bytes(dram_base, sev, text.as_bytes())
    }

    /// [`SimDevice::firmware_log`] with any bytes (the firmware's text is not UTF-8-checked).
    pub fn firmware_log_bytes(
        &self,
        dram_base: u64,
        sev: u8,
        text: &[u8],
    ) -> Result<bool, SimError> {
        let mut s = self.state.lock();
        let u32_at = |s: &State, off: u64| -> Result<u32, SimError> {
            let mut b = [0; 4];
            load(s, dram_base + off, &mut b)?;
            Ok(u32::from_le_bytes(b))
        };
        let mut ring = [0; 8];
        load(&s, dram_base + cb::LOG_RING_ADDR, &mut ring)?;
        let ring = u64::from_le_bytes(ring);
        let size = u32_at(&s, cb::LOG_RING_SIZE)?;
        let head = u32_at(&s, cb::LOG_HEAD)?;
        let level = u32_at(&s, cb::MAX_LOG_LEVEL)?;
        if ring == 0 || size == 0 {
            return Err(SimError::NoLogRing(dram_base));
        }
        if sev == 0 || u32::from(sev) > level {
            return Ok(false);
        }
        let mut record = vec![sev];
        record.extend_from_slice(text);
        record.push(0);
        let end = u64::from(head) + record.len() as u64;
        if end > u64::from(size) {
            return Ok(false);
        }
        store(&mut s, ring + u64::from(head), &record)?;
        store(
            &mut s,
            dram_base + cb::LOG_HEAD,
            &(end as u32).to_le_bytes(),
        )?;
        Ok(true)
    }

    /// The next `after`+1-th call of `op` fails with `rc` (the first `after` succeed).
    pub fn fail(&self, op: FaultOp, after: usize, rc: i32) {
        self.state.lock().faults.insert(op, (after, rc));
    }

    /// Every access made through the callback tables, in order.
    pub fn trace(&self) -> Vec<Op> {
        self.state.lock().trace.clone()
    }

    /// The writes in the trace, in order: (address, bytes).
    pub fn writes(&self) -> Vec<(u64, Vec<u8>)> {
        self.state
            .lock()
            .trace
            .iter()
            .filter_map(|op| match op {
                Op::Write { addr, bytes } => Some((*addr, bytes.clone())),
                _ => None,
            })
            .collect()
    }

    pub fn clear_trace(&self) {
        self.state.lock().trace.clear();
    }

    /// Lines the provider logged (only those whose level was enabled).
    pub fn host_logs(&self) -> Vec<HostLogLine> {
        self.state.lock().host_log.clone()
    }

    pub fn clear_host_logs(&self) {
        self.state.lock().host_log.clear();
    }

    /// Levels 1..=threshold are reported enabled to the provider (0 disables all).
    pub fn set_log_threshold(&self, threshold: u32) {
        self.state.lock().log_threshold = threshold;
    }

    /// Also print each provider log line to stderr.
    pub fn set_echo_logs(&self, on: bool) {
        self.state.lock().echo_logs = on;
    }

    pub fn live_memhandles(&self) -> usize {
        self.state.lock().handles.len()
    }

    /// The SoC base of a live memhandle.
    pub fn memhandle_addr(&self, handle: usize) -> Option<u64> {
        self.state.lock().handles.get(&handle).copied()
    }

    // ---- the callback side (used by `tables`) ----

    fn injected(s: &mut State, op: FaultOp) -> Result<(), SimError> {
        match s.faults.get_mut(&op) {
            Some((0, rc)) => {
                let rc = *rc;
                s.faults.remove(&op);
                Err(SimError::Injected(rc))
            }
            Some((after, _)) => {
                *after -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    pub(crate) fn cb_read(&self, addr: u64, dst: &mut [u8]) -> Result<(), SimError> {
        let mut s = self.state.lock();
        s.trace.push(Op::Read {
            addr,
            len: dst.len(),
        });
        Self::injected(&mut s, FaultOp::Read)?;
        load(&s, addr, dst)
    }

    pub(crate) fn cb_write(&self, addr: u64, src: &[u8]) -> Result<(), SimError> {
        let mut s = self.state.lock();
        s.trace.push(Op::Write {
            addr,
            bytes: src.to_vec(),
        });
        Self::injected(&mut s, FaultOp::Write)?;
        store(&mut s, addr, src)
    }

    pub(crate) fn cb_log(&self, sev: u32, bytes: Vec<u8>) {
        let mut s = self.state.lock();
        if s.echo_logs {
            eprintln!("[nrtucode sev {sev}] {}", String::from_utf8_lossy(&bytes));
        }
        s.host_log.push(HostLogLine { sev, bytes });
    }

    pub(crate) fn cb_level_enabled(&self, level: u32) -> bool {
        level <= self.state.lock().log_threshold
    }

    /// Size 0 gives no handle and success, as libnrt's allocator does.
    pub(crate) fn cb_malloc(&self, size: usize, align: usize) -> Result<usize, SimError> {
        let mut s = self.state.lock();
        Self::injected(&mut s, FaultOp::Malloc)?;
        if size == 0 {
            s.trace.push(Op::Malloc {
                size,
                align,
                handle: 0,
            });
            return Ok(0);
        }
        let align = align.max(1);
        if !align.is_power_of_two() || size as u64 > HBM_LIMIT {
            return Err(SimError::NoMemory { size, align });
        }
        let base = s.next_hbm.next_multiple_of(align as u64);
        map(&mut s, base, size as u64)?;
        // Leave an unmapped gap after each allocation so overruns fault.
        s.next_hbm = base + (size as u64).next_multiple_of(0x1000) + 0x1000;
        let handle = s.next_handle;
        s.next_handle += 1;
        s.handles.insert(handle, base);
        s.trace.push(Op::Malloc {
            size,
            align,
            handle,
        });
        Ok(handle)
    }

    pub(crate) fn cb_free(&self, handle: usize) {
        let mut s = self.state.lock();
        s.trace.push(Op::Free { handle });
        if let Some(base) = s.handles.remove(&handle) {
            s.regions.remove(&base);
        }
    }

    fn handle_base(s: &State, handle: usize) -> Result<u64, SimError> {
        s.handles
            .get(&handle)
            .copied()
            .ok_or(SimError::BadHandle(handle))
    }

    pub(crate) fn cb_mh_read(
        &self,
        handle: usize,
        off: u64,
        dst: &mut [u8],
    ) -> Result<(), SimError> {
        let mut s = self.state.lock();
        s.trace.push(Op::MemhandleRead {
            handle,
            off,
            len: dst.len(),
        });
        Self::injected(&mut s, FaultOp::MemhandleRead)?;
        let base = Self::handle_base(&s, handle)?;
        load_in_region(&s, base, off, dst)
    }

    pub(crate) fn cb_mh_write(&self, handle: usize, off: u64, src: &[u8]) -> Result<(), SimError> {
        let mut s = self.state.lock();
        s.trace.push(Op::MemhandleWrite {
            handle,
            off,
            bytes: src.to_vec(),
        });
        Self::injected(&mut s, FaultOp::MemhandleWrite)?;
        let base = Self::handle_base(&s, handle)?;
        let region = s
            .regions
            .get_mut(&base)
            .ok_or(SimError::BadHandle(handle))?;
        let range = span(off, src.len(), region.len()).ok_or(SimError::Unmapped {
            addr: base.wrapping_add(off),
            len: src.len(),
        })?;
        region[range].copy_from_slice(src);
        Ok(())
    }

    pub(crate) fn cb_soc_addr(&self, handle: usize) -> u64 {
        self.memhandle_addr(handle).unwrap_or(0)
    }
}

/// `off..off+len` if it lies within a region of `region_len` bytes.
fn span(off: u64, len: usize, region_len: usize) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(len)?;
    (end <= region_len).then_some(start..end)
}

fn map(s: &mut State, base: u64, len: u64) -> Result<(), SimError> {
    let end = base
        .checked_add(len)
        .ok_or(SimError::Overlap { addr: base, len })?;
    let clash = s
        .regions
        .range(..end)
        .next_back()
        .is_some_and(|(&b, r)| b + r.len() as u64 > base);
    if clash || len == 0 {
        return Err(SimError::Overlap { addr: base, len });
    }
    s.regions.insert(base, vec![0; len as usize]);
    Ok(())
}

/// The region containing `addr..addr+len`, as (base, offset range).
fn locate(s: &State, addr: u64, len: usize) -> Result<(u64, std::ops::Range<usize>), SimError> {
    let unmapped = SimError::Unmapped { addr, len };
    let (&base, region) = s
        .regions
        .range(..=addr)
        .next_back()
        .ok_or(unmapped.clone())?;
    let range = span(addr - base, len, region.len()).ok_or(unmapped)?;
    Ok((base, range))
}

fn load(s: &State, addr: u64, dst: &mut [u8]) -> Result<(), SimError> {
    let (base, range) = locate(s, addr, dst.len())?;
    dst.copy_from_slice(&s.regions[&base][range]);
    Ok(())
}

fn load_in_region(s: &State, base: u64, off: u64, dst: &mut [u8]) -> Result<(), SimError> {
    let region = &s.regions[&base];
    let range = span(off, dst.len(), region.len()).ok_or(SimError::Unmapped {
        addr: base.wrapping_add(off),
        len: dst.len(),
    })?;
    dst.copy_from_slice(&region[range]);
    Ok(())
}

fn store(s: &mut State, addr: u64, src: &[u8]) -> Result<(), SimError> {
    let (base, range) = locate(s, addr, src.len())?;
    s.regions.get_mut(&base).expect("located")[range].copy_from_slice(src);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_bound_accesses() {
        let d = SimDevice::new();
        d.map_control_block(0x1000).unwrap();
        assert_eq!(d.peek_u32(0x1000).unwrap(), CLAIM_UNCLAIMED);
        assert!(d.peek(0x10fe, &mut [0; 4]).is_err(), "straddles the end");
        assert!(d.peek(0xffc, &mut [0; 4]).is_err(), "before the region");
        assert!(d.map_region(0x10f0, 0x10).is_err(), "overlap refused");
    }

    #[test]
    fn allocations_are_aligned_and_guarded() {
        let d = SimDevice::new();
        let a = d.cb_malloc(100, 0x100_0000).unwrap();
        let b = d.cb_malloc(100, 0x20).unwrap();
        let (ba, bb) = (d.memhandle_addr(a).unwrap(), d.memhandle_addr(b).unwrap());
        assert_eq!(ba % 0x100_0000, 0);
        assert_eq!(bb % 0x20, 0);
        assert!(d.cb_mh_write(a, 96, &[1; 4]).is_ok());
        assert!(
            d.cb_mh_write(a, 97, &[1; 4]).is_err(),
            "past the allocation"
        );
        assert!(
            d.peek(ba + 100, &mut [0; 1]).is_err(),
            "gap after allocation"
        );
        d.cb_free(a);
        assert!(d.cb_mh_read(a, 0, &mut [0; 1]).is_err(), "freed handle");
        assert_eq!(d.live_memhandles(), 1);
        assert_eq!(
            d.cb_malloc(0, 8).unwrap(),
            0,
            "size 0 is no handle, success"
        );
    }

    #[test]
    fn scheduled_failure_fires_once() {
        let d = SimDevice::new();
        d.map_region(0, 16).unwrap();
        d.fail(FaultOp::Write, 1, 42);
        assert!(d.cb_write(0, &[1]).is_ok());
        assert_eq!(d.cb_write(0, &[1]).unwrap_err().rc(), 42);
        assert!(d.cb_write(0, &[1]).is_ok());
    }

    #[test]
    fn firmware_log_appends_at_head_and_respects_level() {
        let d = SimDevice::new();
        d.map_control_block(0x1000).unwrap();
        let ring = d.cb_malloc(64, 0x20).unwrap();
        let addr = d.memhandle_addr(ring).unwrap();
        d.poke(0x1000 + cb::LOG_RING_ADDR, &addr.to_le_bytes())
            .unwrap();
        d.poke(0x1000 + cb::LOG_RING_SIZE, &64u32.to_le_bytes())
            .unwrap();
        d.poke(0x1000 + cb::MAX_LOG_LEVEL, &2u32.to_le_bytes())
            .unwrap();
        assert!(d.firmware_log(0x1000, 1, "hi\n").unwrap());
        assert!(!d.firmware_log(0x1000, 3, "dropped\n").unwrap());
        assert_eq!(d.peek_u32(0x1000 + cb::LOG_HEAD).unwrap(), 5);
        let mut b = [0; 5];
        d.peek(addr, &mut b).unwrap();
        assert_eq!(&b, b"\x01hi\n\0");
    }
}
