//! Progress for long work (a build of many sources, repeated launches): drawn on stderr only
//! when stderr is a terminal and only once the work has taken a second, so short commands,
//! pipes, logs and tests see nothing of it.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before its progress appears.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

pub struct Progress(ProgressBar);

impl Progress {
    /// `total` steps of `what` (e.g. "compiled", "launches"); `None` when the count is unknown.
    pub fn start(what: &'static str, total: Option<u64>) -> Progress {
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
        let style = match total {
            Some(_) => "{spinner} {prefix} {pos}/{len} [{elapsed}] {wide_msg}",
            None => "{spinner} {prefix} {pos} [{elapsed}] {wide_msg}",
        };
        bar.set_style(ProgressStyle::with_template(style).expect("a valid template"));
        bar.set_prefix(what);
        if std::io::stderr().is_terminal() {
            let late = bar.clone();
            // A detached timer: after SHOW_AFTER, unfinished work starts drawing.
            std::thread::spawn(move || {
                std::thread::sleep(SHOW_AFTER);
                if !late.is_finished() {
                    late.set_draw_target(ProgressDrawTarget::stderr());
                    late.enable_steady_tick(Duration::from_millis(120));
                }
            });
        }
        Progress(bar)
    }

    /// One step done, described by `msg`.
    pub fn step(&self, msg: impl Into<std::borrow::Cow<'static, str>>) {
        self.0.set_message(msg);
        self.0.inc(1);
    }

    /// A step function other threads can call (e.g. the build's compile threads).
    pub fn stepper(&self) -> impl Fn(String) + Send + Sync + 'static {
        let bar = self.0.clone();
        move |msg| {
            bar.set_message(msg);
            bar.inc(1);
        }
    }
}

impl Drop for Progress {
    /// The bar disappears when the work ends (success or error), leaving the output clean.
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
