//! A profiled kernel's measured timeline on a host core (D124): a timer on the core's
//! thread samples its call stack every [`SAMPLE_INTERVAL_NS`] (the interrupted instruction
//! and its callers' return addresses, as offsets into the op library), and the runtime
//! reports each copy's start and end (`neuron_host_copy`), kept in runs of like copies by
//! the device's copy log's rule (D120). When the kernel returns, both go to the core's
//! timeline area in the control block, where the host names the frames.
//!
//! Everything here runs on the core's one thread: the sample handler interrupts the
//! kernel, the copy service is called by it, and the buffers are only read with the
//! timer stopped.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use customop_abi::access::{CopyLog, Logged};
use customop_abi::control::{
    CopyStamp, Sample, TimelineHeader, COPY_DONE, FRAME_OUTSIDE, SAMPLE_FRAMES, TIMELINE_COPIES,
    TIMELINE_SAMPLES,
};

use super::{control, core, MODULE_BASE, REPORTING};

/// How often a profiled kernel's stack is sampled at first (ns): often enough to see the
/// functions of a kernel that runs for a millisecond, seldom enough that taking a sample
/// (a few µs of unwinding) costs the kernel a few percent.
pub const SAMPLE_INTERVAL_NS: u32 = 50_000;

/// The signal the sampling timer sends.
const SAMPLE_SIGNAL: i32 = libc::SIGPROF;

/// The sample handler's part: touched by the handler while [`ON`], by `start`/`finish`
/// otherwise.
struct Samples {
    taken: Vec<Sample>,
    interval_ns: u32,
    thinned: u32,
    timer: Option<libc::timer_t>,
}

/// The copy service's part: touched by the service while [`ON`], by `start`/`finish`
/// otherwise (the handler never touches it).
struct Copies {
    log: CopyLog,
    stamps: Vec<(u64, u64)>,
    /// Whether the last copy begun is in the log (its end is stamped).
    last_logged: bool,
}

/// A value one thread of the core's process uses (module doc).
struct Cell<T>(UnsafeCell<Option<Box<T>>>);
// SAFETY: one thread per core process uses each cell, and never two borrows at once: the
// handler and the service each use their own cell only while `ON`, and `start`/`finish`
// take theirs only while `ON` is false (module doc).
unsafe impl<T> Sync for Cell<T> {}

impl<T> Cell<T> {
    /// The value, made by `make` on first use (before `ON` is first set: never in the
    /// handler).
    ///
    /// # Safety
    /// No other borrow of this cell is live (the rules above).
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self, make: impl FnOnce() -> T) -> &mut T {
        // SAFETY: the caller's contract.
        let slot = unsafe { &mut *self.0.get() };
        slot.get_or_insert_with(|| Box::new(make()))
    }
}

static SAMPLES: Cell<Samples> = Cell(UnsafeCell::new(None));
static COPIES: Cell<Copies> = Cell(UnsafeCell::new(None));

/// Whether a kernel is being measured now: the sample handler and the copy service do
/// nothing otherwise.
static ON: AtomicBool = AtomicBool::new(false);
/// CLOCK_MONOTONIC at the kernel's start (ns).
static START_NS: AtomicU64 = AtomicU64::new(0);

/// # Safety
/// As [`Cell::get`].
unsafe fn samples() -> &'static mut Samples {
    // SAFETY: the caller's contract.
    unsafe {
        SAMPLES.get(|| Samples {
            taken: Vec::with_capacity(TIMELINE_SAMPLES),
            interval_ns: SAMPLE_INTERVAL_NS,
            thinned: 0,
            timer: None,
        })
    }
}

/// # Safety
/// As [`Cell::get`].
unsafe fn copies() -> &'static mut Copies {
    // SAFETY: the caller's contract.
    unsafe {
        COPIES.get(|| Copies {
            log: CopyLog::EMPTY,
            stamps: vec![(0, 0); TIMELINE_COPIES],
            last_logged: false,
        })
    }
}

/// CLOCK_MONOTONIC in ns (async-signal-safe).
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

fn since_start() -> u64 {
    now_ns().saturating_sub(START_NS.load(Ordering::Relaxed))
}

/// Arms the timer (interval `ns`; 0 disarms it) on this thread; false where the host
/// refuses one.
fn arm(b: &Samples, ns: u32) -> bool {
    let Some(t) = b.timer else {
        return false;
    };
    let period = libc::timespec {
        tv_sec: 0,
        tv_nsec: ns as _,
    };
    let spec = libc::itimerspec {
        it_interval: period,
        it_value: period,
    };
    // SAFETY: our own timer; a plain itimerspec.
    unsafe { libc::timer_settime(t, 0, &spec, std::ptr::null_mut()) == 0 }
}

/// Makes the timer and installs the sample handler, once per process.
fn prepare(b: &mut Samples) {
    if b.timer.is_some() {
        return;
    }
    // SAFETY: sigaction with a handler that does async-signal-safe work only; a
    // SIGEV_THREAD_ID timer aimed at this thread.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction =
            on_sample as extern "C" fn(i32, *mut libc::siginfo_t, *mut c_void) as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(SAMPLE_SIGNAL, &sa, std::ptr::null_mut());
        let mut ev: libc::sigevent = std::mem::zeroed();
        ev.sigev_notify = libc::SIGEV_THREAD_ID;
        ev.sigev_signo = SAMPLE_SIGNAL;
        ev.sigev_notify_thread_id = libc::syscall(libc::SYS_gettid) as i32;
        let mut t: libc::timer_t = std::mem::zeroed();
        if libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut t) == 0 {
            b.timer = Some(t);
        }
    }
}

/// A profiled kernel begins: clears the buffers and starts sampling.
pub(super) fn start() {
    // SAFETY: `ON` is false (the last kernel's `finish` cleared it): the handler and the
    // service leave the cells alone, and these borrows end before it is set.
    let (s, c) = unsafe { (samples(), copies()) };
    prepare(s);
    s.taken.clear();
    s.interval_ns = SAMPLE_INTERVAL_NS;
    s.thinned = 0;
    c.log.copies = 0;
    c.log.used = 0;
    c.last_logged = false;
    START_NS.store(now_ns(), Ordering::Relaxed);
    // Armed first: a sample due before `ON` is set finds it false and takes nothing.
    arm(s, SAMPLE_INTERVAL_NS);
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    ON.store(true, Ordering::Relaxed);
}

/// The kernel returned: stops sampling and writes the timeline to the core's area.
pub(super) fn finish(wall_ns: u64) {
    // First: a sample still due finds `ON` false and takes nothing.
    ON.store(false, Ordering::Relaxed);
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    // SAFETY: `ON` is false: the handler and the service leave the cells alone.
    let (s, c) = unsafe { (samples(), copies()) };
    // An interval of 0 disarms the timer.
    arm(s, 0);
    let stamped: Vec<CopyStamp> = c
        .log
        .logged()
        .iter()
        .zip(&c.stamps)
        .map(|(e, &(start_ns, end_ns))| CopyStamp {
            start_ns,
            end_ns: end_ns.max(start_ns),
            bytes: e.bytes,
            flags: e.flags,
            elements_before: e.elements_before,
            copies: e.copies,
        })
        .collect();
    let head = TimelineHeader {
        interval_ns: s.interval_ns,
        copies: c.log.copies,
        wall_ns,
        thinned: s.thinned,
        ..TimelineHeader::default()
    };
    control().set_timeline(core(), &head, &stamped, &s.taken);
}

/// `neuron_host_copy(bytes, flags, elements_before)`: the runtime is about to make a copy
/// (`flags`: [`customop_abi::access::COPY_OUT`] or 0), or has made it (`| COPY_DONE`).
pub(super) unsafe extern "C" fn svc_copy(bytes: u32, flags: u32, elements_before: u32) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: `ON`: only this service uses the copies' cell now (the handler never does).
    let b = unsafe { copies() };
    let at = since_start();
    if flags & COPY_DONE != 0 {
        if b.last_logged {
            if let Some(s) = (b.log.used as usize)
                .checked_sub(1)
                .and_then(|i| b.stamps.get_mut(i))
            {
                s.1 = at;
            }
        }
        return;
    }
    b.last_logged = match b.log.extend(bytes, flags, elements_before) {
        Logged::Run => true,
        Logged::New => {
            let i = b.log.used as usize;
            b.log.start(bytes, flags, elements_before);
            if let Some(s) = b.stamps.get_mut(i) {
                *s = (at, at);
            }
            true
        }
        Logged::Full => false,
    };
}

/// The sample handler: the interrupted instruction and its callers, as the unwinder finds
/// them through the signal frame (loaded at the core's start, so nothing is loaded here).
extern "C" fn on_sample(_sig: i32, _info: *mut libc::siginfo_t, uctx: *mut c_void) {
    // A fault being reported ends the kernel and this process: its unwinding is not
    // interrupted by another.
    if !ON.load(Ordering::Relaxed) || REPORTING.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: errno is this thread's; the handler gives it back as it found it.
    let errno = unsafe { *libc::__errno_location() };
    let at = since_start();
    let pc = super::signals::fault_context(uctx).0;
    let mut raw = [std::ptr::null_mut::<c_void>(); SAMPLE_FRAMES + 8];
    // Only op code is unwound: the compiler's unwind tables there are exact at every
    // instruction, while a system library's hand-written code (i386 glibc's memcpy) has
    // points where the unwinder reads a wild address. A sample elsewhere keeps its
    // instruction alone.
    let n = if super::kernel_stack::in_library(pc) {
        // SAFETY: writes at most raw.len() entries; the unwinder was loaded at the core's
        // start (install_fault_handlers).
        unsafe { libc::backtrace(raw.as_mut_ptr(), raw.len() as i32) }.clamp(0, raw.len() as i32)
    } else {
        0
    };
    let found = &raw[..n as usize];
    // The handler's own frames come before the interrupted instruction.
    let from = found.iter().position(|&a| a as u64 == pc);
    let base = MODULE_BASE.load(Ordering::Relaxed);
    let offset = |a: u64| {
        a.checked_sub(base)
            .and_then(|o| u32::try_from(o).ok())
            .filter(|&o| base != 0 && o != FRAME_OUTSIDE)
            .unwrap_or(FRAME_OUTSIDE)
    };
    let mut s = Sample::EMPTY;
    s.at_ns = at;
    let mut push = |a: u64| {
        if (s.depth as usize) < SAMPLE_FRAMES {
            s.frames[s.depth as usize] = offset(a);
            s.depth += 1;
        }
    };
    match from {
        Some(i) => found[i..].iter().for_each(|&a| push(a as u64)),
        None => push(pc),
    }
    // SAFETY: `ON`: only this handler uses the samples' cell now (it does not interrupt
    // itself: the signal is blocked while it runs).
    let b = unsafe { samples() };
    if b.taken.len() == TIMELINE_SAMPLES {
        thin(b);
    }
    // Within capacity: never allocates.
    b.taken.push(s);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// The samples are all taken: keeps every other one and samples half as often.
fn thin(b: &mut Samples) {
    let kept = b.taken.len() / 2;
    for i in 0..kept {
        b.taken[i] = b.taken[2 * i + 1];
    }
    b.taken.truncate(kept);
    b.interval_ns = b.interval_ns.saturating_mul(2).min(500_000_000);
    b.thinned += 1;
    arm(b, b.interval_ns);
}
