//! A checked call's report as Python sees it: the check list parsed, and the
//! output with its findings (dicts) and notes.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use nrt_pool_engine::check::{CheckReport, Checks};

/// The checks a `check` list names (none without one).
pub(crate) fn parse(check: Option<&str>) -> PyResult<Checks> {
    match check {
        Some(list) => Checks::parse(list).map_err(|m| PyValueError::new_err(format!("check: {m}"))),
        None => Ok(Checks::NONE),
    }
}

/// (output, findings, notes): each finding a dict of check, kernel, cores, tensor, what,
/// ranges, range_count, elements and message.
pub(crate) fn with_report(
    py: Python<'_>,
    output: Py<PyAny>,
    report: &CheckReport,
) -> PyResult<Py<PyAny>> {
    let findings = PyList::empty(py);
    for f in &report.findings {
        let d = PyDict::new(py);
        d.set_item("check", f.check.name())?;
        d.set_item("kernel", &f.kernel)?;
        d.set_item("cores", f.cores.clone())?;
        d.set_item("tensor", &f.tensor)?;
        d.set_item("what", &f.what)?;
        d.set_item("ranges", f.ranges.clone())?;
        d.set_item("range_count", f.range_count)?;
        d.set_item("elements", f.elements)?;
        d.set_item("message", f.to_string())?;
        findings.append(d)?;
    }
    let notes = PyList::empty(py);
    for n in &report.notes {
        let d = PyDict::new(py);
        d.set_item("check", n.check.map(|c| c.name()))?;
        d.set_item("kind", n.kind.name())?;
        d.set_item("text", &n.text)?;
        notes.append(d)?;
    }
    Ok((output, findings, notes)
        .into_pyobject(py)?
        .into_any()
        .unbind())
}
