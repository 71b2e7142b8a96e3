//! A launch's profile (`profile=True`) as Python data.

use pyo3::prelude::*;

/// A launch's profile as Python data: {"isa", "kernel", "cores": [{"core", "wall_s",
/// "instructions", "functions": {name: instructions}}], "functions": [(name,
/// instructions, share)], "folded": the folded stacks}.
pub(crate) fn profile_dict<'py>(
    py: Python<'py>,
    p: &nrt_pool_engine::profile::Profile,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use pyo3::types::PyDict;
    let d = PyDict::new(py);
    d.set_item("isa", &p.isa)?;
    d.set_item("kernel", &p.kernel)?;
    let mut cores = Vec::new();
    for c in &p.cores {
        let cd = PyDict::new(py);
        cd.set_item("core", c.core)?;
        cd.set_item("wall_s", c.wall.map(|w| w.as_secs_f64()))?;
        cd.set_item("instructions", c.instructions)?;
        let f = PyDict::new(py);
        for (name, n) in &c.functions {
            f.set_item(name, n)?;
        }
        cd.set_item("functions", f)?;
        cores.push(cd);
    }
    d.set_item("cores", cores)?;
    d.set_item("functions", p.top())?;
    d.set_item("folded", p.folded())?;
    Ok(d)
}
