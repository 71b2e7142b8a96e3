//! The host's side of the emulated cores: core processes forked on first use and kept,
//! launch commands and completions over a socket pair, deadlines, and reaping a core that
//! faulted or hung (a fresh one starts at the next launch).

use std::ffi::CStr;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::control::ControlBlock;
use super::core::runner::{self, Role};
use super::core::{
    probe_child, serve, Program, CMD_BYTES, FAULT_EXIT, MAX_KERNEL_NAME, SHAPE_REQUEST,
};
use super::doorbell;
use nrt_pool_engine::deadline::Deadline;
use nrt_pool_engine::spawner;

/// A value that crosses to the spawner thread while its owner waits for the job to end
/// (the program's references are only read, by the forked child).
struct AssertSend<T>(T);
// SAFETY: the owner is blocked in `spawner::run` until the job has ended, so the value is
// never used from two threads at once; in the child it is a private copy.
unsafe impl<T> Send for AssertSend<T> {}

/// Empties the host's C stdio buffers before a fork: a core process flushes its streams
/// after each kernel, and must not write a copy of what the host had buffered.
fn flush_host_stdio() {
    // SAFETY: fflush(NULL) flushes every open output stream.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// A core's captured fd 2: a memory file the core writes and the host reads.
struct Capture {
    file: File,
    read: u64,
}

impl Capture {
    fn new(core: usize) -> std::io::Result<Capture> {
        let name = std::ffi::CString::new(format!("pool-core-{core}-stderr")).expect("no NUL");
        let file = nrt_pool_engine::backing::memfd(&name)?;
        Ok(Capture { file, read: 0 })
    }

    /// What the core wrote since the last call (lossless; at most 64 KiB is kept).
    fn take(&mut self) -> Vec<u8> {
        const KEEP: u64 = 64 << 10;
        let mut out = Vec::new();
        let end = self.file.metadata().map_or(self.read, |m| m.len());
        if end > self.read {
            let from = self.read.max(end.saturating_sub(KEEP));
            if self.file.seek(SeekFrom::Start(from)).is_ok() {
                let _ = (&self.file).take(end - from).read_to_end(&mut out);
            }
            self.read = end;
        }
        out
    }
}

/// The load-time probe: one core process loads the library and runs the start code, and
/// reports the names it registered (control block) and how many launchers
/// `register_funcs` gave (`result`); with what it wrote to fd 2.
pub fn probe(p: &Program<'_>, deadline: &Deadline) -> std::io::Result<(Exit, Vec<u8>)> {
    let mut capture = Capture::new(0)?;
    flush_host_stdio();
    let fd = capture.file.as_raw_fd();
    let shared = AssertSend(p);
    // Forked on the spawner thread, so that PDEATHSIG ties the core to the process, not to
    // the calling thread (spawner.rs).
    let (pid, errno) = spawner::run(move || {
        let p = shared;
        // SAFETY: fork; the child only loads the library, runs its start code and ends in
        // _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: die with the host.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
            if let Some(runner) = p.0.runner {
                let why = runner::exec(runner, Role::Probe, p.0, fd, &[]);
                exec_failed(runner, &why, fd);
            }
            probe_child(p.0, fd);
        }
        (pid, std::io::Error::last_os_error())
    });
    if pid < 0 {
        return Err(errno);
    }
    loop {
        if let Some(e) = try_reap(pid) {
            return Ok((e, capture.take()));
        }
        if deadline.passed() {
            kill_and_reap(pid);
            return Ok((Exit::TimedOut, capture.take()));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Ends a forked core whose exec of the 32-bit core runner failed, saying why on its
/// stderr capture (the host reports the core's end with it).
fn exec_failed(runner: &CStr, why: &std::io::Error, stderr: i32) -> ! {
    let line = format!(
        "cannot start the 32-bit core runner {}: {why} (make core-runner builds it; D97)\n",
        String::from_utf8_lossy(runner.to_bytes())
    );
    // SAFETY: a write of a local buffer, then the forked child's exit.
    unsafe {
        libc::write(stderr, line.as_ptr().cast(), line.len());
        libc::_exit(FAULT_EXIT)
    }
}

/// How long a core stopped at the deadline may take to record where it was.
const STOP_GRACE: Duration = Duration::from_millis(300);

/// How long a core whose socket closed may take to finish exiting before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A core's persistent process: the library stays loaded between launches, as on hardware
/// (its globals persist; the runtime resets its heaps per launch).
struct Worker {
    pid: i32,
    /// The host's end of a SOCK_SEQPACKET pair: commands out, one-byte completions in.
    sock: i32,
    /// The core's fd 2.
    stderr: Capture,
}

/// How one core's part of a launch ended, and what it wrote to fd 2 meanwhile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreExit {
    pub exit: Exit,
    pub stderr: Vec<u8>,
}

/// The control block of `p`'s device memory.
fn control(p: &Program<'_>) -> ControlBlock {
    // SAFETY: the status region is the control block (DeviceMemory's layout).
    unsafe { ControlBlock::new(p.memory.status_host()) }
}

/// The engine's cores: processes forked on first use and kept until they fault, time out or
/// the library changes.
#[derive(Default)]
pub struct CorePool {
    workers: Vec<Option<Worker>>,
    /// The core whose process lets any process of the user trace it (a debug launch);
    /// the others keep the system's ptrace rules.
    debuggable: Option<usize>,
}

impl CorePool {
    fn spawn(&mut self, core: usize, p: &Program<'_>) -> std::io::Result<Worker> {
        let parent_pid = std::process::id() as i32;
        let stderr = Capture::new(core)?;
        flush_host_stdio();
        // The doorbell's sequence number now: the child waits for the next one.
        let seen = control(p).doorbell(core).cmd_seq.load(Ordering::SeqCst);
        let others: Vec<i32> = self.workers.iter().flatten().map(|w| w.sock).collect();
        let traceable = self.debuggable == Some(core);
        let (shared, err_fd) = (AssertSend(p), stderr.file.as_raw_fd());
        // The socket pair is made and the child's end closed here on the spawner thread
        // too, so no fork of another engine's core copies that end in between (a copy would
        // hide this core's hang-up when it dies). PDEATHSIG follows the forking thread.
        let made = spawner::run(move || -> std::io::Result<(i32, i32)> {
            let p = shared;
            let mut fds = [0i32; 2];
            // SAFETY: socketpair into a two-element array.
            if unsafe {
                libc::socketpair(
                    libc::AF_UNIX,
                    libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                    0,
                    fds.as_mut_ptr(),
                )
            } != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: fork; the child runs `serve`, which never returns, and touches no
            // lock another host thread could hold (fresh statics, the shared mapping, libc).
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: plain calls in the child: die with the host; drop the host's ends.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent_pid {
                        libc::_exit(FAULT_EXIT);
                    }
                    libc::close(fds[0]);
                    for s in &others {
                        libc::close(*s);
                    }
                    // gdbserver is this process's sibling, not its ancestor: Yama's ptrace
                    // scope 1 lets it attach only when the process says so.
                    if traceable {
                        libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY);
                    }
                }
                // The socket's other end stays open in the child only so that the host
                // sees the child's end (hang-up) when it dies.
                let _keep = fds[1];
                if let Some(runner) = p.0.runner {
                    let why =
                        runner::exec(runner, Role::Serve { core, seen }, p.0, err_fd, &[fds[1]]);
                    exec_failed(runner, &why, err_fd);
                }
                serve(core, p.0, seen, err_fd);
            }
            let forked = std::io::Error::last_os_error();
            // SAFETY: the child's end is no longer ours (and on failure neither end is).
            unsafe {
                libc::close(fds[1]);
                if pid < 0 {
                    libc::close(fds[0]);
                }
            }
            if pid < 0 {
                return Err(forked);
            }
            Ok((pid, fds[0]))
        });
        let (pid, sock) = made?;
        Ok(Worker { pid, sock, stderr })
    }

    /// Runs `kernel` on the cores `run` of a launch of `count` cores (all of them, or one
    /// alone for a check), spawning the ones not running; each one's exit, in `run`'s
    /// order: `Code(0)` when it completed (its record says how), otherwise how its process
    /// ended.
    pub fn launch(
        &mut self,
        p: &Program<'_>,
        kernel: &CStr,
        run: &[usize],
        count: usize,
        deadline: &Deadline,
    ) -> std::io::Result<Vec<CoreExit>> {
        self.command(p, kernel, run, count as u32, deadline)
    }

    /// Asks core 0 to run op `op`'s shape function on the argument blob in its scratch
    /// area (a shape request); how the core ended, as for a launch.
    pub fn shape(
        &mut self,
        p: &Program<'_>,
        op: &CStr,
        deadline: &Deadline,
    ) -> std::io::Result<CoreExit> {
        let mut exits = self.command(p, op, &[0], SHAPE_REQUEST as u32, deadline)?;
        Ok(exits.remove(0))
    }

    /// Sends one command (core-count field `field`) to the cores `run` and waits for each;
    /// their exits in `run`'s order.
    fn command(
        &mut self,
        p: &Program<'_>,
        kernel: &CStr,
        run: &[usize],
        field: u32,
        deadline: &Deadline,
    ) -> std::io::Result<Vec<CoreExit>> {
        let cores = run.len();
        let top = run.iter().max().map_or(0, |&c| c + 1);
        if self.workers.len() < top {
            self.workers.resize_with(top, || None);
        }
        let cmd = command_bytes(kernel, field);
        let ctl = control(p);
        let host = ctl.host_bell();
        let spin = doorbell::spin_budget(cores);
        host.spin_ns
            .store(spin.as_nanos() as u32, Ordering::Relaxed);
        let mut exits: Vec<Option<CoreExit>> = vec![None; cores];
        for &c in run {
            if self.workers[c].is_none() {
                self.workers[c] = Some(self.spawn(c, p)?);
            }
        }
        let bells: Vec<(usize, &doorbell::Doorbell)> =
            run.iter().map(|&c| (c, ctl.doorbell(c))).collect();
        // SAFETY: every core completed its previous command (or is fresh): none reads the
        // command bytes until its sequence number moves.
        let want = unsafe { doorbell::ring(&bells, host, &cmd) };
        // A core on this CPU cannot run while the host spins: yield from the start then.
        let here = doorbell::this_cpu();
        let shared = bells
            .iter()
            .any(|(_, b)| b.core_cpu.load(Ordering::Relaxed) == here);
        let spin_until = Instant::now() + spin;
        let mut spins = if shared { doorbell::YIELD_FROM } else { 0 };
        loop {
            for (i, &c) in run.iter().enumerate() {
                if exits[i].is_none() && ctl.doorbell(c).done_seq.load(Ordering::Acquire) == want[i]
                {
                    let stderr = self.workers[c]
                        .as_mut()
                        .map_or_else(Vec::new, |w| w.stderr.take());
                    exits[i] = Some(CoreExit {
                        exit: Exit::Code(0),
                        stderr,
                    });
                }
            }
            // Positions in `run` still waited for.
            let pending: Vec<usize> = (0..cores).filter(|&i| exits[i].is_none()).collect();
            if pending.is_empty() {
                break;
            }
            let now = Instant::now();
            if now < spin_until {
                spins = spins.wrapping_add(1);
                doorbell::pause(spins);
                continue;
            }
            if deadline.passed() {
                self.stop_at_deadline(run, &pending, &mut exits);
                break;
            }
            // Sleep until a core completes or exits (it bumps done_events), then look
            // again; a core that died without a word shows as a hang-up on its socket.
            let ev = host.done_events.load(Ordering::SeqCst);
            host.sleeping.store(1, Ordering::SeqCst);
            let finished = pending
                .iter()
                .any(|&i| ctl.doorbell(run[i]).done_seq.load(Ordering::SeqCst) == want[i]);
            if !finished {
                let slice = deadline.slice(Duration::from_millis(5));
                doorbell::wait(&host.done_events, ev, slice);
            }
            host.sleeping.store(0, Ordering::SeqCst);
            for i in pending {
                let c = run[i];
                if ctl.doorbell(c).done_seq.load(Ordering::Acquire) != want[i] && self.hung_up(c) {
                    exits[i] = Some(self.retire(c, EXIT_GRACE));
                }
            }
        }
        Ok(exits
            .into_iter()
            .map(|e| {
                e.unwrap_or(CoreExit {
                    exit: Exit::TimedOut,
                    stderr: Vec::new(),
                })
            })
            .collect())
    }

    /// At the deadline: each core still running (positions `pending` of `run`) records
    /// where it is and ends (a moment given; then it is killed), so the report names the
    /// line it was stuck at.
    fn stop_at_deadline(
        &mut self,
        run: &[usize],
        pending: &[usize],
        exits: &mut [Option<CoreExit>],
    ) {
        for &i in pending {
            if let Some(w) = self.workers[run[i]].as_ref() {
                // SAFETY: a signal to our own child process.
                unsafe { libc::kill(w.pid, super::core::STOP_AT_DEADLINE) };
            }
        }
        for &i in pending {
            let stderr = self.retire(run[i], STOP_GRACE).stderr;
            exits[i] = Some(CoreExit {
                exit: Exit::TimedOut,
                stderr,
            });
        }
    }

    /// Whether core `c`'s process hung up its socket (it died, or is ending).
    fn hung_up(&self, c: usize) -> bool {
        let Some(w) = self.workers.get(c).and_then(Option::as_ref) else {
            return false;
        };
        let mut pfd = libc::pollfd {
            fd: w.sock,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        let r = unsafe { libc::poll(&mut pfd, 1, 0) };
        r > 0 && pfd.revents & (libc::POLLHUP | libc::POLLIN | libc::POLLERR) != 0
    }

    /// Stops core `c`'s process, giving one that is ending `grace` to finish, and returns
    /// how it ended.
    fn retire(&mut self, c: usize, grace: Duration) -> CoreExit {
        let Some(mut w) = self.workers.get_mut(c).and_then(Option::take) else {
            return CoreExit {
                exit: Exit::TimedOut,
                stderr: Vec::new(),
            };
        };
        // SAFETY: our own socket.
        unsafe { libc::close(w.sock) };
        // A process that already ended is reaped as it ended; one still running is killed.
        let until = Instant::now() + grace;
        let exit = loop {
            if let Some(e) = try_reap(w.pid) {
                break e;
            }
            if Instant::now() >= until {
                kill_and_reap(w.pid);
                break Exit::TimedOut;
            }
            std::thread::sleep(Duration::from_micros(100));
        };
        CoreExit {
            exit,
            stderr: w.stderr.take(),
        }
    }

    /// Core `core`'s process, started afresh so that a debugger may attach to it: its pid.
    pub fn debuggable(&mut self, core: usize, p: &Program<'_>) -> std::io::Result<i32> {
        if self.workers.len() <= core {
            self.workers.resize_with(core + 1, || None);
        }
        if self.debuggable != Some(core) || self.workers[core].is_none() {
            self.retire(core, Duration::ZERO);
            self.debuggable = Some(core);
            self.workers[core] = Some(self.spawn(core, p)?);
        }
        Ok(self.workers[core].as_ref().expect("spawned above").pid)
    }

    /// Ends core `core`'s process (after a debug launch: the next launch starts a fresh one
    /// that no debugger has touched).
    pub fn stop_core(&mut self, core: usize) {
        self.retire(core, Duration::ZERO);
        if self.debuggable == Some(core) {
            self.debuggable = None;
        }
    }

    /// Stops every core (a new library, or the engine's end).
    pub fn shutdown(&mut self) {
        for w in self.workers.drain(..).flatten() {
            // SAFETY: our own socket and child.
            unsafe { libc::close(w.sock) };
            kill_and_reap(w.pid);
        }
    }
}

impl Drop for CorePool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn try_reap(pid: i32) -> Option<Exit> {
    let mut status = 0;
    // SAFETY: our own child.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if r != pid {
        return None;
    }
    Some(if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    })
}

fn kill_and_reap(pid: i32) {
    let mut status = 0;
    // SAFETY: our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
}

/// How a core process ended, from the host's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
}

/// A command's bytes: the core-count field, then the kernel's name (checked by the engine
/// to fit).
fn command_bytes(kernel: &CStr, field: u32) -> [u8; CMD_BYTES] {
    let name = kernel.to_bytes();
    assert!(
        name.len() <= MAX_KERNEL_NAME,
        "kernel names are checked by the engine"
    );
    let mut cmd = [0u8; CMD_BYTES];
    cmd[..4].copy_from_slice(&field.to_le_bytes());
    cmd[4..8].copy_from_slice(&(name.len() as u32).to_le_bytes());
    cmd[8..8 + name.len()].copy_from_slice(name);
    cmd
}
