//! Launch doorbells in the control block: the host hands a core its command and the core
//! reports completion through shared memory, each side spinning briefly and then sleeping
//! on a futex (a shared one: host and cores are separate processes on one mapping). On the
//! fast path, a launch of cores that are spinning makes no system call.
//!
//! Per core: the command bytes, `cmd_seq` (the host bumps it to hand over a command) and
//! `done_seq` (the core copies it there when the command is done), and `sleeping` (set while
//! the core waits in the kernel, so the host knows to wake it). For the host: `done_events`
//! (every completion or core exit bumps it), `sleeping`, `pending` (the command's cores not
//! yet done) and `launch_epoch`, the one word all sleeping cores wait on, each for its own
//! bit (FUTEX_WAIT_BITSET), so a launch wakes all its sleeping cores in one system call and
//! only the last core to finish wakes the host: an 8-core launch makes two wakes, not 16.
//! Sequence numbers live outside the part of the block a launch clears, so they survive
//! launches.

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
    /// Moved once per command after every core's bell is rung; sleeping cores wait on it,
    /// each for its own bit, so one wake starts all of a launch's cores.
    pub launch_epoch: AtomicU32,
    /// Cores of the current command not yet done: the one that completes last wakes the
    /// host, not every one.
    pub pending: AtomicU32,
    _pad: [u32; 10],
}

const _: () = assert!(std::mem::size_of::<Doorbell>() == 64 + CMD_BYTES);
const _: () = assert!(std::mem::size_of::<HostBell>() == 64);

/// Sleeps while `word` holds `expected`, at most `timeout` (a wake, a change or a signal
/// ends it early; callers re-check).
pub fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    wait_bits(word, expected, FUTEX_BITSET_MATCH_ANY, timeout);
}

/// The bitset that matches every waiter (a plain FUTEX_WAIT or FUTEX_WAKE).
const FUTEX_BITSET_MATCH_ANY: u32 = u32::MAX;

/// Sleeps while `word` holds `expected`, until a wake for one of `bits` (FUTEX_WAIT_BITSET),
/// at most `timeout`; callers re-check.
fn wait_bits(word: &AtomicU32, expected: u32, bits: u32, timeout: Duration) {
    // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline.
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let nanos = now.tv_nsec as u64 + u64::from(timeout.subsec_nanos());
    let ts = libc::timespec {
        tv_sec: now
            .tv_sec
            .saturating_add(timeout.as_secs().min(i32::MAX as u64) as libc::time_t)
            .saturating_add((nanos / 1_000_000_000) as libc::time_t),
        tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT_BITSET on a live, aligned u32 in a shared mapping, with a valid
    // absolute deadline and a nonzero bitset.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            bits,
        );
    }
}

/// Wakes the processes sleeping on `word` for any of `bits` (FUTEX_WAKE_BITSET).
/// Async-signal-safe (one system call).
fn wake_bits(word: &AtomicU32, bits: u32) {
    // SAFETY: FUTEX_WAKE_BITSET on a live, aligned u32 in a shared mapping.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE_BITSET,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            bits,
        );
    }
}

/// A core's bit in `launch_epoch` waits and wakes.
fn core_bit(core: usize) -> u32 {
    1 << (core % 32)
}

/// Wakes the processes sleeping on `word`. Async-signal-safe (a fault handler calls it).
pub fn wake(word: &AtomicU32) {
    wake_bits(word, FUTEX_BITSET_MATCH_ANY);
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
pub use nrt_pool_engine::cpus;

/// Core side: waits until `bell.cmd_seq` moves past `seen` (spinning `spin` first); the
/// new sequence number.
pub fn await_command(
    core: usize,
    bell: &Doorbell,
    host: &HostBell,
    seen: u32,
    spin: Duration,
) -> u32 {
    // On the host's CPU with another free (spin budget), move there once; still sharing,
    // yield from the start (below).
    let mut cpu = this_cpu();
    let host_cpu = host.host_cpu.load(Ordering::Relaxed);
    let mut shared = cpu == host_cpu;
    if shared && !spin.is_zero() && leave_cpu(host_cpu) {
        cpu = this_cpu();
        shared = cpu == host_cpu;
    }
    bell.core_cpu.store(cpu, Ordering::Relaxed);
    let until = Instant::now() + spin;
    // On the host's CPU, yield from the start: the host runs at once, and two runnable
    // processes on one CPU beside an idle one is what the load balancer parts.
    let mut n = if shared { YIELD_FROM } else { 0 };
    loop {
        let s = bell.cmd_seq.load(Ordering::Acquire);
        if s != seen {
            return s;
        }
        n = n.wrapping_add(1);
        // (No spin budget: straight to sleep. Otherwise the clock is read every 64 steps.)
        if !spin.is_zero() && (n & 63 != 0 || Instant::now() < until) {
            pause(n);
            continue;
        }
        // Flag first, then the epoch, then the last look: a host that moved cmd_seq after
        // that look sees the flag and moves the epoch after it, so the wait cannot miss it.
        bell.sleeping.store(1, Ordering::SeqCst);
        let epoch = host.launch_epoch.load(Ordering::SeqCst);
        if bell.cmd_seq.load(Ordering::SeqCst) == seen {
            wait_bits(
                &host.launch_epoch,
                epoch,
                core_bit(core),
                Duration::from_secs(1),
            );
        }
        bell.sleeping.store(0, Ordering::SeqCst);
    }
}

/// Moves this process off `host_cpu` (where it would only take turns with the host) when
/// another CPU is free to it. The first few moves are free (the host, woken from a long
/// wait such as the core's start, tends to land on the core's CPU once); after them at
/// most one a millisecond, so a core that keeps landing there on a busy machine is not
/// chased around. Only the move is forced: the allowed set is restored at once (a pinned
/// core would stall when its CPU got busy). Whether it moved.
fn leave_cpu(host_cpu: u32) -> bool {
    const FREE_MOVES: u32 = 4;
    static LAST: std::sync::Mutex<(u32, Option<Instant>)> = std::sync::Mutex::new((0, None));
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let (moves, at) = *last;
    // (A CPU number a cpu_set_t cannot hold: leave it to the scheduler.)
    if host_cpu as usize >= libc::CPU_SETSIZE as usize
        || moves >= FREE_MOVES && at.is_some_and(|t| t.elapsed() < Duration::from_millis(1))
    {
        return false;
    }
    *last = (moves.saturating_add(1), Some(Instant::now()));
    // SAFETY: cpu_set_t is plain bits; sched_{get,set}affinity on this process with its size.
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
            return false;
        }
        let mut elsewhere = allowed;
        libc::CPU_CLR(host_cpu as usize, &mut elsewhere);
        if libc::CPU_COUNT(&elsewhere) == 0 || libc::sched_setaffinity(0, size, &elsewhere) != 0 {
            return false;
        }
        libc::sched_setaffinity(0, size, &allowed);
    }
    true
}

/// The CPU this thread runs on (glibc answers from the kernel's rseq area or the vDSO,
/// without a system call); u32::MAX when unknown.
pub fn this_cpu() -> u32 {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).unwrap_or(u32::MAX)
}

/// Spin steps before [`pause`] starts yielding.
pub const YIELD_FROM: u32 = 256;

/// One step of a spin: a pause instruction at first, then yielding the CPU (the other side
/// may be waiting for it on this CPU; with a CPU of its own the yield returns at once).
pub fn pause(n: u32) {
    if n < YIELD_FROM {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Core side: command `seq` is done (or the core is ending: `seq` None).
pub fn complete(bell: &Doorbell, host: &HostBell, seq: Option<u32>) {
    // A completion wakes the host only when it is the command's last; an ending core
    // always does (the host then finds it gone).
    let last = match seq {
        Some(s) => {
            bell.done_seq.store(s, Ordering::Release);
            host.pending.fetch_sub(1, Ordering::SeqCst) == 1
        }
        None => true,
    };
    host.done_events.fetch_add(1, Ordering::SeqCst);
    if last && host.sleeping.load(Ordering::SeqCst) != 0 {
        wake(&host.done_events);
    }
}

/// Host side: hands `cmd` to each of `bells` (by core number) and wakes the sleeping ones with
/// one system call; the sequence number each core's completion will carry.
///
/// # Safety
/// No core is reading its command (each has completed its previous one).
pub unsafe fn ring(
    bells: &[(usize, &Doorbell)],
    host: &HostBell,
    cmd: &[u8; CMD_BYTES],
) -> Vec<u32> {
    host.host_cpu.store(this_cpu(), Ordering::Relaxed);
    host.pending.store(bells.len() as u32, Ordering::SeqCst);
    let seqs: Vec<u32> = bells
        .iter()
        .map(|(_, bell)| {
            // SAFETY: the caller's contract: nobody reads the command bytes until cmd_seq
            // moves.
            unsafe {
                std::ptr::copy_nonoverlapping(cmd.as_ptr(), bell.cmd.as_ptr() as *mut u8, CMD_BYTES)
            };
            let seq = bell.cmd_seq.load(Ordering::Relaxed).wrapping_add(1);
            bell.cmd_seq.store(seq, Ordering::SeqCst);
            seq
        })
        .collect();
    host.launch_epoch.fetch_add(1, Ordering::SeqCst);
    let sleeping = bells
        .iter()
        .filter(|(_, b)| b.sleeping.load(Ordering::SeqCst) != 0)
        .fold(0, |bits, (c, _)| bits | core_bit(*c));
    if sleeping != 0 {
        wake_bits(&host.launch_epoch, sleeping);
    }
    seqs
}
