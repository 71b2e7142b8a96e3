//! The environment's defaults for an engine's calls, read in one place: every front end
//! takes the same variables the same way (a call's own options still win).

use nrt_pool_engine::check::Checks;
use nrt_pool_engine::debug::{self, DebugRequest};
use nrt_pool_engine::PoolEngine;

use crate::OpenError;

/// The checks every call makes unless it says otherwise: a list as `--check=LIST` takes it.
pub const CHECK_VAR: &str = "GPSIMD_OPEN_CHECK";

/// What the environment asks of every call.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    /// `$GPSIMD_OPEN_CHECK` (none when unset).
    pub checks: Checks,
    /// `$GPSIMD_OPEN_ALL_CORES_STDIO`: every core's printf reaches the caller.
    pub all_cores_stdio: bool,
    /// `$GPSIMD_OPEN_GDB`: a core each launch stops for a debugger.
    pub debug: Option<DebugRequest>,
}

/// What a front end's own flags already say (a variable they answer is not read).
#[derive(Clone, Debug, Default)]
pub struct Asked {
    pub checks: Option<Checks>,
    /// Every core's stdio asked for (the variable can only add it).
    pub all_cores_stdio: bool,
    pub debug: Option<DebugRequest>,
}

impl Environment {
    /// Reads the variables; `who` names the front end in the debug note.
    pub fn read(who: &'static str) -> Result<Environment, OpenError> {
        Environment::read_after(who, Asked::default())
    }

    /// The front end's flags, and the variables for what they leave open.
    pub fn read_after(who: &'static str, asked: Asked) -> Result<Environment, OpenError> {
        Ok(Environment {
            checks: match asked.checks {
                Some(c) => c,
                None => checks_from(std::env::var(CHECK_VAR).ok().as_deref())?,
            },
            all_cores_stdio: asked.all_cores_stdio || nrt_pool_engine::all_cores_stdio_from_env(),
            debug: match asked.debug {
                Some(d) => Some(d),
                None => debug::request_from_env(who).map_err(OpenError::Environment)?,
            },
        })
    }

    /// Makes these the engine's defaults.
    pub fn apply(&self, e: &mut PoolEngine) {
        e.defaults.checks = self.checks;
        e.defaults.all_cores_stdio = self.all_cores_stdio;
        e.defaults.debug = self.debug.clone();
    }
}

/// The checks a value of [`CHECK_VAR`] asks for (unset: none).
pub fn checks_from(value: Option<&str>) -> Result<Checks, OpenError> {
    match value {
        None => Ok(Checks::NONE),
        Some(list) => {
            Checks::parse(list).map_err(|m| OpenError::Environment(format!("${CHECK_VAR}: {m}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_variable_takes_a_list_and_names_itself_when_wrong() {
        assert_eq!(checks_from(None).unwrap(), Checks::NONE);
        assert_eq!(checks_from(Some("all")).unwrap(), Checks::ALL);
        let e = checks_from(Some("nonsense")).unwrap_err().to_string();
        assert!(e.starts_with("$GPSIMD_OPEN_CHECK: "), "{e}");
    }
}
