//! Core processes are forked from one thread that lives as long as the process.
//!
//! A core process asks the kernel to kill it when its parent goes away
//! (`PR_SET_PDEATHSIG`), so that no core outlives a host that crashed. Linux ties that
//! signal to the *thread* that forked the process, not to the process: a core forked by a
//! short-lived thread (a Python worker thread, one of eight C threads sharing an engine)
//! was killed mid-launch when that thread ended, a launch on another thread then failing
//! with "killed by SIGKILL". Forking from one long-lived thread ties every
//! core to the process's lifetime instead.
//!
//! Serialising the forks also keeps two engines of one process apart: a host core is a
//! fork that never execs, so it keeps a copy of every descriptor open at the moment of its
//! fork. Forked while another engine's QEMU spawn waited for its exec-status pipe, it kept
//! that pipe's write end and the spawn waited forever. QEMU cores are spawned here too.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::OnceLock;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The spawner thread's stack: a host core, forked from this thread, runs kernels on it
/// (D79). The device's own limit (STACK_SIZE, ~8 KiB local) is checked on Xtensa cores
/// only: host code needs more.
pub const SPAWNER_STACK: usize = 8 << 20;

/// Runs `f` on the spawner thread and returns its result; the caller waits meanwhile.
/// If the spawner thread cannot be had, `f` runs on the calling thread.
pub fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let (done_tx, done_rx) = sync_channel::<R>(1);
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        let _ = done_tx.send(f());
    });
    // SAFETY: the job borrows from this frame for `'_`; it is extended to 'static only to
    // cross the channel. This function does not return before the job has run to its end
    // (the result arrives) or has been dropped unrun (the send failed and returned it, or
    // the spawner ended and dropped it, closing `done_rx`), so nothing it borrows is used
    // after this frame.
    let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
    let mut job = Some(job);
    if let Some(tx) = spawner() {
        if let Err(refused) = tx.send(job.take().expect("not sent yet")) {
            job = Some(refused.0);
        }
    }
    if let Some(job) = job {
        job();
    }
    done_rx
        .recv()
        .unwrap_or_else(|_| panic!("a job of the core spawner thread panicked"))
}

/// The spawner thread's job queue, started on first use.
fn spawner() -> Option<&'static SyncSender<Job>> {
    static SPAWNER: OnceLock<Option<SyncSender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = sync_channel::<Job>(0);
            std::thread::Builder::new()
                .name("nrt-pool-spawner".into())
                // Host cores are forked from this thread and run kernels on its stack.
                .stack_size(SPAWNER_STACK)
                .spawn(move || serve(rx))
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

fn serve(rx: Receiver<Job>) {
    for job in rx {
        // A panic in a job (none is expected: jobs fork and return) must not end the
        // thread that later cores depend on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn jobs_run_on_one_thread_that_outlives_their_callers() {
        let here = std::thread::current().id();
        let a = super::run(|| std::thread::current().id());
        let b = std::thread::spawn(|| super::run(|| std::thread::current().id()))
            .join()
            .unwrap();
        assert_ne!(a, here);
        assert_eq!(a, b, "one spawner thread for every caller");
        let local = [1, 2, 3];
        assert_eq!(super::run(|| local.iter().sum::<i32>()), 6, "borrows work");
    }
}
