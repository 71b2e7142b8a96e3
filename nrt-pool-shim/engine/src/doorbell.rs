//! Launch doorbells in the control block: the host hands a core its command and the core
//! reports completion through shared memory, each side spinning briefly and then sleeping
//! on a futex (a shared one: host and cores are separate processes on one mapping). On the
//! fast path, a launch of cores that are spinning makes no system call.
//!
//! Per core: the command bytes, `cmd_seq` (the host bumps it to hand over a command) and
//! `done_seq` (the core copies it there when the command is done), and `sleeping` (set while
//! the core waits in the kernel, so the host knows to wake it). For the host: `done_events`
//! (every completion or core exit bumps it) and `sleeping`. Sequence numbers live outside
//! the part of the block a launch clears, so they survive launches.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A launch command: the core count (0: a shape request), the name's length, the name.
pub const CMD_BYTES: usize = 256;

/// One core's doorbell.
#[repr(C, align(64))]
pub struct Doorbell {
    pub cmd_seq: AtomicU32,
    pub sleeping: AtomicU32,
    pub done_seq: AtomicU32,
    /// The CPU the core waits on (spinning there would keep the host from it).
    pub core_cpu: AtomicU32,
    _pad: [u32; 12],
    pub cmd: [u8; CMD_BYTES],
}

/// The host's doorbell: completions, and how long cores spin before sleeping.
#[repr(C, align(64))]
pub struct HostBell {
    pub done_events: AtomicU32,
    pub sleeping: AtomicU32,
    /// Nanoseconds a core spins for its next command before sleeping (0: sleep at once).
    pub spin_ns: AtomicU32,
    /// The CPU the host last rang from.
    pub host_cpu: AtomicU32,
    _pad: [u32; 12],
}

const _: () = assert!(std::mem::size_of::<Doorbell>() == 64 + CMD_BYTES);
const _: () = assert!(std::mem::size_of::<HostBell>() == 64);

/// Sleeps while `word` holds `expected`, at most `timeout` (a wake, a change or a signal
/// ends it early; callers re-check).
pub fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a live, aligned u32 in a shared mapping, with a valid timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0,
        );
    }
}

/// Wakes the processes sleeping on `word`. Async-signal-safe (a fault handler calls it).
pub fn wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live, aligned u32 in a shared mapping.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0,
        );
    }
}

/// How long to spin for `cores` busy cores (and the host) on this machine: briefly when
/// each has a CPU, not at all when they would take CPUs from each other.
pub fn spin_budget(cores: usize) -> Duration {
    if cores < cpus() {
        Duration::from_micros(50)
    } else {
        Duration::ZERO
    }
}

/// The CPUs this process may use, asked once (the standard library reads cgroup files to
/// answer, far too slow for every launch).
pub fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Core side: waits until `bell.cmd_seq` moves past `seen` (spinning `spin` first); the
/// new sequence number.
pub fn await_command(bell: &Doorbell, host: &HostBell, seen: u32, spin: Duration) -> u32 {
    // Sharing the host's CPU, spinning only delays the host: sleep at once, and the
    // host's wake hands the CPU over directly.
    let cpu = this_cpu();
    bell.core_cpu.store(cpu, Ordering::Relaxed);
    let spin = if cpu == host.host_cpu.load(Ordering::Relaxed) {
        Duration::ZERO
    } else {
        spin
    };
    let until = Instant::now() + spin;
    let mut n = 0u32;
    loop {
        let s = bell.cmd_seq.load(Ordering::Acquire);
        if s != seen {
            return s;
        }
        n = n.wrapping_add(1);
        if n & 63 != 0 || Instant::now() < until {
            pause(n);
            continue;
        }
        bell.sleeping.store(1, Ordering::SeqCst);
        if bell.cmd_seq.load(Ordering::SeqCst) == seen {
            wait(&bell.cmd_seq, seen, Duration::from_secs(1));
        }
        bell.sleeping.store(0, Ordering::SeqCst);
    }
}

/// The CPU this thread runs on (glibc answers from the kernel's rseq area or the vDSO,
/// without a system call); u32::MAX when unknown.
pub fn this_cpu() -> u32 {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).unwrap_or(u32::MAX)
}

/// One step of a spin: a pause instruction at first, then yielding the CPU (the other side
/// may be waiting for it on this CPU; with a CPU of its own the yield returns at once).
pub fn pause(n: u32) {
    if n < 256 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Core side: command `seq` is done (or the core is ending: `seq` None).
pub fn complete(bell: &Doorbell, host: &HostBell, seq: Option<u32>) {
    if let Some(s) = seq {
        bell.done_seq.store(s, Ordering::Release);
    }
    host.done_events.fetch_add(1, Ordering::SeqCst);
    if host.sleeping.load(Ordering::SeqCst) != 0 {
        wake(&host.done_events);
    }
}

/// Host side: hands `cmd` to a core; the sequence number its completion will carry.
///
/// # Safety
/// The core is not reading the command (it has completed its previous one).
pub unsafe fn ring(bell: &Doorbell, host: &HostBell, cmd: &[u8; CMD_BYTES]) -> u32 {
    host.host_cpu.store(this_cpu(), Ordering::Relaxed);
    // SAFETY: the caller's contract: nobody reads the command bytes until cmd_seq moves.
    unsafe { std::ptr::copy_nonoverlapping(cmd.as_ptr(), bell.cmd.as_ptr() as *mut u8, CMD_BYTES) };
    let seq = bell.cmd_seq.load(Ordering::Relaxed).wrapping_add(1);
    bell.cmd_seq.store(seq, Ordering::SeqCst);
    if bell.sleeping.load(Ordering::SeqCst) != 0 {
        wake(&bell.cmd_seq);
    }
    seq
}
