//! The Pool control block's layout: a page of shared device memory where each core reports
//! completion or a fault, the stdio ring the host drains after a launch (256-byte entries,
//! as `pool_stdio_*` drains them on hardware), the registration names and schema the
//! load-time probe finds, the guard list and a checked run's watch. The engine's
//! `ControlBlock` reads and writes it; the fields are atomics (the block is shared between
//! the host and core processes), so the records exist where the target has 64-bit atomics
//! (the host).

#[cfg(target_has_atomic = "64")]
use core::sync::atomic::{AtomicU32, AtomicU64};

use crate::CORES;

/// Core states.
pub const CORE_IDLE: u32 = 0;
pub const CORE_RUNNING: u32 = 1;
pub const CORE_DONE: u32 = 2;
pub const CORE_FAULT: u32 = 3;

/// What ended a core that did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FaultKind {
    /// SIGSEGV/SIGBUS: a bad or guard-page address.
    Memory = 1,
    /// abort(), a failed assert (SIGABRT).
    Abort = 2,
    /// A runtime rule broke or a Rust panic: the device runtime's fault hook.
    Fatal = 3,
    /// SIGFPE, SIGILL, SIGTRAP.
    Trap = 4,
    /// Still running at the launch's deadline.
    Timeout = 5,
    /// The core's process ended without reporting (exit(), killed from outside).
    Exited = 6,
    /// entry_func refused the library (its STATUS in `result`).
    Entry = 7,
    /// The kernel is not registered on this core.
    NoKernel = 8,
    /// The op library cannot be loaded (dlopen failed, or a required symbol is missing).
    Load = 9,
    /// The kernel's stack outgrew what it had (its guard was touched; D79).
    StackOverflow = 10,
}

/// What a core was doing when it stopped (`CoreRecord::phase`).
pub const PHASE_KERNEL: u32 = 0;
/// dlopen: the library's static constructors.
pub const PHASE_LOAD: u32 = 1;
/// entry_func and register_funcs.
pub const PHASE_START: u32 = 2;

impl FaultKind {
    pub fn from_u32(v: u32) -> Option<FaultKind> {
        use FaultKind::*;
        [
            Memory,
            Abort,
            Fatal,
            Trap,
            Timeout,
            Exited,
            Entry,
            NoKernel,
            Load,
            StackOverflow,
        ]
        .into_iter()
        .find(|k| *k as u32 == v)
    }

    pub fn describe(self) -> &'static str {
        match self {
            FaultKind::Memory => "memory fault",
            FaultKind::Abort => "abort",
            FaultKind::Fatal => "fatal error",
            FaultKind::Trap => "trap",
            FaultKind::Timeout => "timeout",
            FaultKind::Exited => "exited",
            FaultKind::Entry => "entry_func failed",
            FaultKind::NoKernel => "kernel not registered",
            FaultKind::Load => "cannot load the op library",
            FaultKind::StackOverflow => "stack overflow",
        }
    }
}

/// One core's report (512 bytes).
#[cfg(target_has_atomic = "64")]
#[repr(C)]
pub struct CoreRecord {
    pub state: AtomicU32,
    pub kind: AtomicU32,
    /// The launcher's return value, or entry_func's STATUS.
    pub result: AtomicU32,
    pub signal: AtomicU32,
    /// Faulting host address (0: unknown): the data address of a memory fault, the
    /// instruction of a trap.
    pub addr: AtomicU64,
    pub msg_len: AtomicU32,
    /// `PHASE_*`: loading, start code or a kernel.
    pub phase: AtomicU32,
    /// The faulting instruction's host address (0: unknown).
    pub pc: AtomicU64,
    /// Load base of the op library in the core (0: unknown), to symbolize `pc`.
    pub module_base: AtomicU64,
    /// `ACCESS_*` of a memory fault.
    pub access: AtomicU32,
    pub _pad: u32,
    /// The kernel's wall time on this core, in nanoseconds (a profiled launch).
    pub wall_ns: AtomicU64,
    /// Instructions the kernel's thread retired (user space), where the host lets a process
    /// count them (perf_event_open); 0 otherwise.
    pub instructions: AtomicU64,
    pub msg: [u8; MESSAGE_BYTES],
}

/// A memory fault's access, where the processor says (x86-64 page-fault error code).
pub const ACCESS_UNKNOWN: u32 = 0;
pub const ACCESS_READ: u32 = 1;
pub const ACCESS_WRITE: u32 = 2;

/// The block's header.
#[cfg(target_has_atomic = "64")]
#[repr(C)]
pub struct Header {
    /// Entries written to the stdio ring this launch.
    pub stdio_count: AtomicU32,
    /// Bytes that did not fit in the ring (reported, never silently lost).
    pub stdio_dropped: AtomicU32,
    /// Registration names from the load-time probe: count and bytes used.
    pub names_count: AtomicU32,
    pub names_len: AtomicU32,
    /// The op library's schema text from the probe (bytes used; 0: none).
    pub schema_len: AtomicU32,
    /// Guard pages the cores protect for this launch (SoC addresses at GUARDS_OFFSET).
    pub guard_count: AtomicU32,
    /// Nonzero: every core's stdio enters the ring this launch (`--all-cores-stdio`, an
    /// emulator aid); otherwise core 0's alone, as on hardware.
    pub stdio_all_cores: AtomicU32,
    /// Nonzero: the cores measure this launch's kernel (`--profile`: their records' wall
    /// time and instruction count).
    pub profile: AtomicU32,
}

pub const RECORDS_OFFSET: usize = 0x100;
pub const RING_OFFSET: usize = 0x4000;
pub const RING_ENTRY: usize = 256;
/// Payload bytes per ring entry (a 4-byte entry header: length u16, fd u8, core u8).
pub const RING_PAYLOAD: usize = RING_ENTRY - 4;
pub const NAMES_OFFSET: usize = 0x30000;
pub const NAMES_BYTES: usize = SCHEMA_OFFSET - NAMES_OFFSET;
pub const SCHEMA_OFFSET: usize = 0x40000;
/// Entries the stdio ring holds.
pub const RING_ENTRIES: usize = (NAMES_OFFSET - RING_OFFSET) / RING_ENTRY;
/// The guard list: SoC addresses of pages, after the records.
pub const GUARDS_OFFSET: usize = RECORDS_OFFSET + CORES * RECORD_BYTES;
/// Most guard pages one launch protects (one after each tensor: 10 arguments and the output).
pub const MAX_GUARDS: usize = 16;
/// Bytes of one core's record.
pub const RECORD_BYTES: usize = 512;
/// Bytes of a record's message.
pub const MESSAGE_BYTES: usize = 440;

#[cfg(target_has_atomic = "64")]
const _: () = {
    assert!(core::mem::size_of::<CoreRecord>() == RECORD_BYTES);
    assert!(core::mem::offset_of!(CoreRecord, msg) == RECORD_BYTES - MESSAGE_BYTES);
    assert!(core::mem::size_of::<Header>() <= RECORDS_OFFSET);
};
const _: () = assert!(GUARDS_OFFSET + MAX_GUARDS * 8 <= FRAMES_OFFSET);
/// Each core's call stack at a fault (host cores): a u64 count, then that many addresses,
/// innermost first (the faulting instruction, then return addresses).
pub const FRAMES_OFFSET: usize = 0x1200;
/// Bytes of one core's call stack.
pub const FRAMES_BYTES: usize = 256;
/// Addresses one core's call stack holds.
pub const MAX_FRAMES: usize = FRAMES_BYTES / 8 - 1;
const _: () = assert!(FRAMES_OFFSET + CORES * FRAMES_BYTES <= RING_OFFSET);

/// A checked launch's watch (host cores, D89): the host names a SoC range before cores run
/// alone or in a group; each reports which chunks of it its process touched (read or
/// wrote), so the host compares only those with the poison the range started as. A
/// [`WatchHeader`], then one [`WatchRecord`] per core.
pub const WATCH_OFFSET: usize = FRAMES_OFFSET + CORES * FRAMES_BYTES;
pub const WATCH_HEADER_BYTES: usize = 32;
pub const WATCH_BITMAP_BYTES: usize = 1024;
pub const WATCH_RECORD_BYTES: usize = 8 + WATCH_BITMAP_BYTES;
/// Most chunks a watch reports (a range is split into at most this many).
pub const WATCH_CHUNKS: usize = WATCH_BITMAP_BYTES * 8;
pub const WATCH_NONE: u32 = 0;
pub const WATCH_ASKED: u32 = 1;
pub const WATCH_REPORTED: u32 = 2;
const _: () = assert!(WATCH_OFFSET.is_multiple_of(8) && WATCH_RECORD_BYTES.is_multiple_of(8));
const _: () =
    assert!(WATCH_OFFSET + WATCH_HEADER_BYTES + CORES * WATCH_RECORD_BYTES <= RING_OFFSET);

/// What the host asks of a watch.
#[cfg(target_has_atomic = "64")]
#[repr(C)]
pub struct WatchHeader {
    /// The watched range: SoC start and bytes.
    pub soc: AtomicU64,
    pub len: AtomicU64,
    /// Bytes each bit of a report stands for.
    pub chunk: AtomicU64,
    /// [`WATCH_NONE`] or [`WATCH_ASKED`] (written last).
    pub state: AtomicU32,
    pub _pad: u32,
}

/// What one core reports of a watch.
#[cfg(target_has_atomic = "64")]
#[repr(C)]
pub struct WatchRecord {
    /// [`WATCH_REPORTED`] once `bits` hold the report.
    pub state: AtomicU32,
    pub _pad: u32,
    /// Chunk `i` touched: byte `i / 8`, bit `i % 8`.
    pub bits: [u8; WATCH_BITMAP_BYTES],
}

#[cfg(target_has_atomic = "64")]
const _: () = {
    assert!(core::mem::size_of::<WatchHeader>() == WATCH_HEADER_BYTES);
    assert!(core::mem::size_of::<WatchRecord>() == WATCH_RECORD_BYTES);
    assert!(core::mem::offset_of!(WatchRecord, bits) == 8);
};

/// Host cores' measured timeline of a profiled launch (D124), one area per core after the
/// status block's first 512 KiB: a [`TimelineHeader`], [`TIMELINE_COPIES`] [`CopyStamp`]s,
/// then [`TIMELINE_SAMPLES`] [`Sample`]s. A core writes its area when its kernel returns;
/// the host reads it after the launch.
pub const TIMELINE_OFFSET: usize = 0x80000;
/// Bytes of one core's timeline area.
pub const TIMELINE_BYTES: usize = 384 << 10;
pub const TIMELINE_HEADER_BYTES: usize = 32;
/// Copy runs one core's area holds (as the device's copy log, D120).
pub const TIMELINE_COPIES: usize = crate::access::COPY_LOG_ENTRIES;
pub const COPY_STAMP_BYTES: usize = 32;
/// Return addresses one sample keeps, innermost first.
pub const SAMPLE_FRAMES: usize = 16;
pub const SAMPLE_BYTES: usize = 16 + SAMPLE_FRAMES * 4;
/// Samples one core's area holds; when they are all taken the core keeps every other one
/// and samples half as often.
pub const TIMELINE_SAMPLES: usize =
    (TIMELINE_BYTES - TIMELINE_HEADER_BYTES - TIMELINE_COPIES * COPY_STAMP_BYTES) / SAMPLE_BYTES;
/// A frame outside the op library (a system library's, the core runner's): not named.
pub const FRAME_OUTSIDE: u32 = u32::MAX;
/// [`CopyStamp::flags`] as the runtime reports a copy's end to `neuron_host_copy`.
pub const COPY_DONE: u32 = 2;

/// The head of a core's timeline area.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimelineHeader {
    /// Time between samples at the kernel's end (ns).
    pub interval_ns: u32,
    /// Samples stored.
    pub samples: u32,
    /// Copies the kernel made (logged or not).
    pub copies: u32,
    /// Copy runs stored.
    pub runs: u32,
    /// The kernel's wall time (ns, saturated).
    pub wall_ns: u64,
    /// Times the samples were thinned (each halves how often the core samples).
    pub thinned: u32,
    pub _reserved: u32,
}

/// One run of like copies (the device's copy log's rule, D120) with when it began and when
/// its last copy ended, in ns since the kernel began.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStamp {
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes: u32,
    /// [`crate::access::COPY_OUT`] or 0.
    pub flags: u32,
    pub elements_before: u32,
    pub copies: u32,
}

/// One sampled call stack: when, and its return addresses as offsets into the op library
/// (the interrupted instruction first; [`FRAME_OUTSIDE`] for one outside it).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// ns since the kernel began.
    pub at_ns: u64,
    /// Frames in use.
    pub depth: u32,
    pub _pad: u32,
    pub frames: [u32; SAMPLE_FRAMES],
}

impl Sample {
    pub const EMPTY: Sample = Sample {
        at_ns: 0,
        depth: 0,
        _pad: 0,
        frames: [0; SAMPLE_FRAMES],
    };

    /// The frames in use.
    pub fn frames(&self) -> &[u32] {
        &self.frames[..(self.depth as usize).min(SAMPLE_FRAMES)]
    }
}

const _: () = {
    assert!(core::mem::size_of::<TimelineHeader>() == TIMELINE_HEADER_BYTES);
    assert!(core::mem::size_of::<CopyStamp>() == COPY_STAMP_BYTES);
    assert!(core::mem::size_of::<Sample>() == SAMPLE_BYTES);
    assert!(core::mem::offset_of!(Sample, frames) == 16);
    assert!(TIMELINE_SAMPLES >= 4096);
    assert!(
        TIMELINE_HEADER_BYTES
            + TIMELINE_COPIES * COPY_STAMP_BYTES
            + TIMELINE_SAMPLES * SAMPLE_BYTES
            <= TIMELINE_BYTES
    );
};
