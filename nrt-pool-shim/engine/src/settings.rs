//! What a call asks for besides its arguments: each call carries its own options, and each
//! option it leaves open takes the engine's default. Nothing is set on the engine around a
//! call: the settings travel with it to the runs that need them.

use std::time::Duration;

use super::check::list::Checks;
use super::debug::DebugRequest;
use super::{Deadline, Interrupt, DEFAULT_TIMEOUT};

/// What a call runs with: checks, profile, debugger, timeout, stdio, interrupt. The
/// engine's defaults are one ([`crate::PoolEngine::defaults`]), set once by a front end
/// (from its environment and flags), never around a call; each call's settings are its
/// options over them (`Settings::for_call`), and travel with it to the runs.
#[derive(Clone)]
pub struct Settings {
    /// The checks each call makes (none by default).
    pub checks: Checks,
    /// Launches measure their kernel (`--profile`): see [`crate::profile`] and
    /// [`crate::PoolEngine::take_profile`].
    pub profile: bool,
    /// A launch stops this core for a debugger (`--gdb`): see [`crate::debug`].
    pub debug: Option<DebugRequest>,
    /// How long a launch (or a load, or a shape function) may wait for its cores.
    pub timeout: Duration,
    /// Every core's printf reaches the caller, each line prefixed with its core (an
    /// emulator aid, `--all-cores-stdio`; hardware shows core 0's alone, the default).
    pub all_cores_stdio: bool,
    /// Asked while waiting for the cores; `true` stops the wait: the cores still running
    /// are stopped, as at a timeout, and the call returns
    /// [`crate::EmuError::Interrupted`]. The next launch starts fresh cores.
    pub interrupt: Option<Interrupt>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            checks: Checks::NONE,
            profile: false,
            debug: None,
            timeout: DEFAULT_TIMEOUT,
            all_cores_stdio: false,
            interrupt: None,
        }
    }
}

impl Settings {
    /// The settings of a call with options `o` over these.
    pub fn for_call(&self, o: &CallOptions) -> Settings {
        Settings {
            checks: o.checks.unwrap_or(self.checks),
            profile: o.profile.unwrap_or(self.profile),
            debug: o.debug.clone().unwrap_or_else(|| self.debug.clone()),
            timeout: o.timeout.unwrap_or(self.timeout),
            all_cores_stdio: o.all_cores_stdio.unwrap_or(self.all_cores_stdio),
            interrupt: o.interrupt.clone().or_else(|| self.interrupt.clone()),
        }
    }

    /// How long a wait for the cores may last, and what may interrupt it.
    pub(crate) fn deadline(&self) -> Deadline {
        Deadline::after(self.timeout).with_interrupt(self.interrupt.clone())
    }
}

/// A call's options; `None` takes the engine's default ([`Settings`]).
#[derive(Clone, Default)]
pub struct CallOptions {
    pub checks: Option<Checks>,
    /// Measure the kernel ([`crate::PoolEngine::take_profile`] after the call).
    pub profile: Option<bool>,
    /// `Some(None)`: no core stops for a debugger in this call.
    pub debug: Option<Option<DebugRequest>>,
    pub timeout: Option<Duration>,
    pub all_cores_stdio: Option<bool>,
    /// Asked while waiting for the cores; `true` stops the call.
    pub interrupt: Option<Interrupt>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("checks", &self.checks)
            .field("profile", &self.profile)
            .field("debug", &self.debug)
            .field("timeout", &self.timeout)
            .field("all_cores_stdio", &self.all_cores_stdio)
            .field("interrupt", &self.interrupt.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_options_win_and_what_it_leaves_open_is_the_engines() {
        let e = Settings {
            checks: Checks::DEFAULT,
            timeout: Duration::from_secs(7),
            ..Settings::default()
        };
        let s = e.for_call(&CallOptions::default());
        assert_eq!(
            (s.checks, s.timeout, s.profile),
            (Checks::DEFAULT, Duration::from_secs(7), false)
        );
        let s = e.for_call(&CallOptions {
            checks: Some(Checks::NONE),
            profile: Some(true),
            timeout: Some(Duration::from_secs(1)),
            ..CallOptions::default()
        });
        assert_eq!(
            (s.checks, s.timeout, s.profile),
            (Checks::NONE, Duration::from_secs(1), true)
        );
        // The engine's own settings are untouched by a call's.
        assert_eq!(
            (e.checks, e.timeout),
            (Checks::DEFAULT, Duration::from_secs(7))
        );
    }
}
