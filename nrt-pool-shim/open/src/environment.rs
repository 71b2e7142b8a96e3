//! The environment's defaults for an engine's calls, read in one place: every front end
//! takes the same variables the same way (a call's own options still win).

use std::path::PathBuf;

use nrt_pool_engine::check::Checks;
use nrt_pool_engine::debug::{self, DebugRequest};
use nrt_pool_engine::PoolEngine;
pub use nrt_pool_schema::DataModel;

use crate::{Isa, OpenError};

/// The checks every call makes unless it says otherwise: a list as `--check=LIST` takes it.
pub const CHECK_VAR: &str = "GPSIMD_OPEN_CHECK";
/// Every core's printf reaches the caller (`1`, `true`, `yes`).
pub const ALL_CORES_STDIO_VAR: &str = "GPSIMD_OPEN_ALL_CORES_STDIO";
/// Stops a core of every launch for a debugger: a core number 0-7 (the FFI's way to ask;
/// the CLI and Python read it where no flag or argument says).
pub const GDB_VAR: &str = "GPSIMD_OPEN_GDB";
/// Names the other build a registered Pool image is compared with by `--check=parity`
/// (the launch FFI registers bytes, which have no file beside them).
pub const PARITY_BUILD_VAR: &str = "GPSIMD_OPEN_PARITY_BUILD";
/// The backend a library runs on where the caller says none: `host` or `xtensa`.
pub const ISA_VAR: &str = "GPSIMD_OPEN_ISA";
/// The C data model a new host build runs in: `device` or `host` (D97).
pub const DATA_MODEL_VAR: &str = "GPSIMD_OPEN_DATA_MODEL";

/// What the environment asks of every call.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    /// `$GPSIMD_OPEN_CHECK` (none when unset).
    pub checks: Checks,
    /// `$GPSIMD_OPEN_ALL_CORES_STDIO`: every core's printf reaches the caller.
    pub all_cores_stdio: bool,
    /// `$GPSIMD_OPEN_GDB`: a core each launch stops for a debugger.
    pub debug: Option<DebugRequest>,
    /// `$GPSIMD_OPEN_PARITY_BUILD`: the other build of a registered image.
    pub parity_build: Option<PathBuf>,
    /// `$GPSIMD_OPEN_CHECK=warn` or `warn:LIST`: findings are warnings, not errors (where a
    /// front end can tell the two: Python).
    pub warn: bool,
    /// `$GPSIMD_OPEN_ISA`: the backend asked for (None: the file's own).
    pub isa: Option<Isa>,
    /// `$GPSIMD_OPEN_DATA_MODEL`: a new host build's data model (None: not said).
    pub data_model: Option<DataModel>,
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
        let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let (checks, warn) = match asked.checks {
            Some(c) => (c, false),
            None => checks_and_warn(var(CHECK_VAR).as_deref())?,
        };
        Ok(Environment {
            checks,
            warn,
            isa: var(ISA_VAR).map(|v| isa_from(&v)).transpose()?,
            data_model: var(DATA_MODEL_VAR)
                .map(|v| data_model_from(&v))
                .transpose()?,
            all_cores_stdio: asked.all_cores_stdio
                || yes(std::env::var(ALL_CORES_STDIO_VAR).ok().as_deref()),
            debug: match asked.debug {
                Some(d) => Some(d),
                None => debug_from(std::env::var(GDB_VAR).ok().as_deref(), who)?,
            },
            parity_build: std::env::var_os(PARITY_BUILD_VAR)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        })
    }

    /// Makes these the engine's defaults.
    pub fn apply(&self, e: &mut PoolEngine) {
        e.defaults.checks = self.checks;
        e.defaults.all_cores_stdio = self.all_cores_stdio;
        e.defaults.debug = self.debug.clone();
    }
}

/// Whether a yes-or-no variable says yes (`1`, `true`, `yes`; unset: no).
fn yes(value: Option<&str>) -> bool {
    value.is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// What a value of [`GDB_VAR`] asks: unset or empty nothing; a core number 0-7 to stop
/// it, printing how to attach prefixed `who: `.
pub fn debug_from(
    value: Option<&str>,
    who: &'static str,
) -> Result<Option<DebugRequest>, OpenError> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => match v.parse::<usize>() {
            Ok(c) if c < 8 => Ok(Some(debug::printing_request(c, who))),
            _ => Err(OpenError::Environment(format!(
                "${GDB_VAR}={v}: a core number from 0 to 7"
            ))),
        },
    }
}

/// The checks a value of [`CHECK_VAR`] asks for, and whether as warnings (`warn`, or
/// `warn:LIST`; unset: none).
pub fn checks_and_warn(value: Option<&str>) -> Result<(Checks, bool), OpenError> {
    match value.map(str::trim) {
        Some("warn") => Ok((Checks::DEFAULT, true)),
        Some(v) if v.starts_with("warn:") => Ok((checks_from(Some(&v[5..]))?, true)),
        other => Ok((checks_from(other)?, false)),
    }
}

/// The backend a value of [`ISA_VAR`] names.
pub fn isa_from(value: &str) -> Result<Isa, OpenError> {
    match value {
        "host" => Ok(Isa::Host),
        "xtensa" => Ok(Isa::Xtensa),
        _ => Err(OpenError::Environment(format!(
            "{ISA_VAR}='{value}': 'host' or 'xtensa'"
        ))),
    }
}

/// The data model a value of [`DATA_MODEL_VAR`] names.
pub fn data_model_from(value: &str) -> Result<DataModel, OpenError> {
    DataModel::from_name(value).ok_or_else(|| {
        OpenError::Environment(format!("{DATA_MODEL_VAR}='{value}': 'device' or 'host'"))
    })
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

    #[test]
    fn the_other_variables_read_as_documented() {
        assert!(yes(Some("1")) && yes(Some(" YES ")) && yes(Some("true")));
        assert!(!yes(None) && !yes(Some("0")) && !yes(Some("no")));
        assert!(debug_from(None, "t").unwrap().is_none());
        assert!(debug_from(Some(" "), "t").unwrap().is_none());
        assert_eq!(debug_from(Some("7"), "t").unwrap().unwrap().core, 7);
        let e = debug_from(Some("8"), "t").unwrap_err().to_string();
        assert!(e.starts_with("$GPSIMD_OPEN_GDB=8: "), "{e}");
    }

    #[test]
    fn warn_isa_and_data_model_read_with_their_names_in_errors() {
        assert_eq!(
            checks_and_warn(Some("warn")).unwrap(),
            (Checks::DEFAULT, true)
        );
        let (c, w) = checks_and_warn(Some("warn:race")).unwrap();
        assert!(w && c.has(nrt_pool_engine::check::Check::Race) && c.names().len() == 1);
        assert_eq!(checks_and_warn(Some("all")).unwrap(), (Checks::ALL, false));
        assert_eq!(isa_from("xtensa").unwrap(), Isa::Xtensa);
        let e = isa_from("XTENSA").unwrap_err().to_string();
        assert_eq!(e, "GPSIMD_OPEN_ISA='XTENSA': 'host' or 'xtensa'");
        assert_eq!(data_model_from("host").unwrap(), DataModel::Host);
        assert!(data_model_from("x")
            .unwrap_err()
            .to_string()
            .contains("'device' or 'host'"));
    }
}
