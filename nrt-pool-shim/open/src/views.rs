//! What a profiled launch can be looked at as (D113), for every front end alike: its trace
//! (Trace Event JSON, [`LaunchTrace`]) and its flame graph (SVG, [`FlameGraph`]) or folded
//! stacks, each written whole.

use std::path::{Path, PathBuf};

use nrt_pool_engine::check::{CheckReport, SourceLine};
use nrt_pool_engine::profile::Profile;
use nrt_pool_engine::DeviceFault;

use crate::flame::FlameGraph;
use crate::trace::LaunchTrace;
use crate::Pool;

/// The files a launch's views go to (none: no view).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchViews {
    /// The trace, in the Trace Event format.
    pub trace: Option<PathBuf>,
    /// A flame graph where the name ends in `.svg`, else folded stacks.
    pub profile: Option<PathBuf>,
}

/// A view that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{view} {}: {source}", .path.display())]
pub struct ViewError {
    /// "trace" or "profile".
    pub view: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl LaunchViews {
    /// Whether the launch must be profiled for these views.
    pub fn wanted(&self) -> bool {
        self.trace.is_some() || self.profile.is_some()
    }

    /// The views of a launch that ended: its profile (none for a checking launch, which is
    /// not profiled: its trace then holds the findings alone) and its check report.
    pub fn write(
        &self,
        pool: &Pool,
        profiled: Option<&Profile>,
        report: &CheckReport,
    ) -> Result<(), ViewError> {
        if let Some(file) = &self.trace {
            write_whole(file, "trace", trace_json(profiled, Some(report)).as_bytes())?;
        }
        let (Some(file), Some(p)) = (&self.profile, profiled) else {
            return Ok(());
        };
        let bytes = if file.extension().is_some_and(|x| x == "svg") {
            let graph = FlameGraph {
                profile: p,
                lines: match &p.lines {
                    Some(known) => known
                        .iter()
                        .map(|(f, at)| (f.clone(), SourceLine::from(at.clone())))
                        .collect(),
                    None => pool.function_lines(p.function_names()),
                },
            };
            graph.svg().map_err(|source| ViewError {
                view: "profile",
                path: file.clone(),
                source,
            })?
        } else {
            p.folded().into_bytes()
        };
        write_whole(file, "profile", &bytes)
    }

    /// The trace of a launch that faulted: the fault on its core's track.
    pub fn write_fault(&self, fault: &DeviceFault) -> Result<(), ViewError> {
        let Some(file) = &self.trace else {
            return Ok(());
        };
        let mut t = LaunchTrace::default();
        t.add_fault(fault);
        write_whole(file, "trace", t.to_json().as_bytes())
    }
}

/// A launch's trace: its profile's tracks and spans, and the findings of `report`.
pub fn trace_json(profiled: Option<&Profile>, report: Option<&CheckReport>) -> String {
    let mut t = profiled.map(LaunchTrace::of_profile).unwrap_or_default();
    if let Some(r) = report {
        t.add_findings(r);
    }
    t.to_json()
}

/// Writes `bytes` to `file` whole: a temporary file beside it, renamed over it.
fn write_whole(file: &Path, view: &'static str, bytes: &[u8]) -> Result<(), ViewError> {
    let tmp = file.with_extension("part");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            ViewError {
                view,
                path: file.to_path_buf(),
                source,
            }
        })
}
