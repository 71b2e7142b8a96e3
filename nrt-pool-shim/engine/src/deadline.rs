//! When a wait for the cores gives up: at the launch's timeout, or earlier when the caller
//! interrupts it (Python's Ctrl-C). Backends wait in slices and ask [`Deadline::passed`]
//! between them; a launch that ends by interruption is reported as
//! [`crate::EmuError::Interrupted`] and its cores are restarted as after a timeout.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Asked between wait slices: `true` stops the launch. Called from the waiting thread.
pub type Interrupt = Arc<dyn Fn() -> bool + Send + Sync>;

/// The longest a wait sleeps between two looks at the interrupt.
pub const INTERRUPT_SLICE: Duration = Duration::from_millis(20);

/// A launch's deadline and its interrupt, if any.
#[derive(Clone)]
pub struct Deadline {
    at: Instant,
    /// How long it gave when made (for reports: "still running after 30s").
    span: Duration,
    interrupt: Option<Interrupt>,
    tripped: Arc<AtomicBool>,
    /// When the interrupt may be asked next, in microseconds after `made` (asking may
    /// take Python's GIL: not more often than every [`INTERRUPT_SLICE`]).
    made: Instant,
    next_ask_us: Arc<AtomicU64>,
}

impl std::fmt::Debug for Deadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deadline")
            .field("at", &self.at)
            .field("interruptible", &self.interrupt.is_some())
            .field("interrupted", &self.interrupted())
            .finish()
    }
}

impl Deadline {
    /// Gives up at `at`, with no interrupt.
    pub fn at(at: Instant) -> Deadline {
        Deadline::new(at, at.saturating_duration_since(Instant::now()))
    }

    fn new(at: Instant, span: Duration) -> Deadline {
        Deadline {
            at,
            span,
            interrupt: None,
            tripped: Arc::new(AtomicBool::new(false)),
            made: Instant::now(),
            next_ask_us: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Gives up `d` from now.
    pub fn after(d: Duration) -> Deadline {
        Deadline::new(Instant::now() + d, d)
    }

    /// How long the deadline gave when it was made.
    pub fn span(&self) -> Duration {
        self.span
    }

    /// Also gives up when `interrupt` says so.
    pub fn with_interrupt(mut self, interrupt: Option<Interrupt>) -> Deadline {
        self.interrupt = interrupt;
        self
    }

    /// The time given.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// Whether waiting should stop: the time has come, or the interrupt asked (once it
    /// has, it stays so).
    pub fn passed(&self) -> bool {
        if self.tripped.load(Ordering::Relaxed) {
            return true;
        }
        let now = Instant::now();
        if let Some(i) = &self.interrupt {
            let us = now.saturating_duration_since(self.made).as_micros() as u64;
            if us >= self.next_ask_us.load(Ordering::Relaxed) {
                self.next_ask_us
                    .store(us + INTERRUPT_SLICE.as_micros() as u64, Ordering::Relaxed);
                if i() {
                    self.tripped.store(true, Ordering::Relaxed);
                    return true;
                }
            }
        }
        now >= self.at
    }

    /// Whether the interrupt stopped the wait (not the time).
    pub fn interrupted(&self) -> bool {
        self.tripped.load(Ordering::Relaxed)
    }

    /// How long the next wait slice may sleep: the time left, at most `max`, and at most
    /// [`INTERRUPT_SLICE`] when there is an interrupt to look at.
    pub fn slice(&self, max: Duration) -> Duration {
        let left = self.at.saturating_duration_since(Instant::now()).min(max);
        if self.interrupt.is_some() {
            left.min(INTERRUPT_SLICE)
        } else {
            left
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn the_time_or_the_interrupt_ends_the_wait() {
        let d = Deadline::after(Duration::from_secs(60));
        assert!(!d.passed() && !d.interrupted());
        assert_eq!(d.slice(Duration::from_secs(1)), Duration::from_secs(1));
        let asks = Arc::new(AtomicUsize::new(0));
        let a = asks.clone();
        let d = d.with_interrupt(Some(Arc::new(move || {
            a.fetch_add(1, Ordering::SeqCst) >= 2
        })));
        assert!(d.slice(Duration::from_secs(1)) <= INTERRUPT_SLICE);
        assert!(!d.passed());
        assert!(!d.passed(), "asked again only after a slice");
        assert_eq!(asks.load(Ordering::SeqCst), 1);
        std::thread::sleep(INTERRUPT_SLICE);
        assert!(!d.passed());
        std::thread::sleep(INTERRUPT_SLICE);
        assert!(d.passed(), "the third look interrupts");
        assert!(d.interrupted());
        assert!(d.passed(), "and it stays interrupted without asking again");
        assert_eq!(asks.load(Ordering::SeqCst), 3);
        let past = Deadline::at(Instant::now() - Duration::from_millis(1));
        assert!(past.passed() && !past.interrupted());
        assert_eq!(past.slice(Duration::from_secs(1)), Duration::ZERO);
    }
}
