//! A launch's profile (`profile=True`) as Python data.

use pyo3::prelude::*;

/// A launch's profile as Python data: {"isa", "kernel", "cores": [{"core", "wall_s",
/// "instructions", "functions": {name: instructions}, "accesses", "copies": each logged
/// run of like copies in order as {"direction", "bytes" (each), "copies",
/// "elements_before", "instructions_before"} (None where not logged, D120),
/// "copies_unlogged", "hbm_stack_accesses": loads and stores to a stack in HBM, D121}],
/// "functions": [(name,
/// instructions, share)], "folded": the folded stacks, "estimate": the estimated time on
/// a trn1 Pool engine (Xtensa cores; None on host cores, D100), "report": the text
/// `nrt-pool run --profile` prints}.
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
        let accesses = match c.accesses {
            Some(a) => {
                let ad = PyDict::new(py);
                ad.set_item("element", a.element)?;
                ad.set_item("copies_in", a.copies_in)?;
                ad.set_item("copies_out", a.copies_out)?;
                ad.set_item("bytes_in", a.bytes_in)?;
                ad.set_item("bytes_out", a.bytes_out)?;
                Some(ad)
            }
            None => None,
        };
        cd.set_item("accesses", accesses)?;
        let copies = match &c.copies {
            Some(t) => {
                let mut list = Vec::new();
                for s in &t.steps {
                    let sd = PyDict::new(py);
                    sd.set_item("direction", if s.out { "out" } else { "in" })?;
                    sd.set_item("bytes", s.bytes)?;
                    sd.set_item("copies", s.copies)?;
                    sd.set_item("elements_before", s.elements_before)?;
                    let n: u64 = s.before.iter().map(|(_, n)| n).sum();
                    sd.set_item("instructions_before", n)?;
                    list.push(sd);
                }
                Some(list)
            }
            None => None,
        };
        cd.set_item("copies", copies)?;
        cd.set_item("copies_unlogged", c.copies.as_ref().map(|t| t.unlogged))?;
        cd.set_item("hbm_stack_accesses", c.hbm_stack_accesses)?;
        cores.push(cd);
    }
    d.set_item("cores", cores)?;
    d.set_item("functions", p.top())?;
    d.set_item("folded", p.folded())?;
    d.set_item(
        "estimate",
        p.estimate().map(|e| estimate_dict(py, &e)).transpose()?,
    )?;
    d.set_item("report", p.report(10))?;
    Ok(d)
}

/// An estimate as Python data: {"seconds", "low_seconds", "high_seconds" (the band),
/// "fitted_to", "regime" (why it lies outside the fitted regime, [] inside it), "model",
/// "copy_bound", "cores": [{"core", "seconds", "low_seconds", "high_seconds", "compute_s",
/// "element_s", "stack_s", "copies_s"}], "functions": [(name, seconds)] over all cores}.
fn estimate_dict<'py>(
    py: Python<'py>,
    e: &nrt_pool_engine::estimate::Estimate,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use pyo3::types::PyDict;
    let d = PyDict::new(py);
    d.set_item("seconds", e.seconds)?;
    d.set_item("low_seconds", e.low)?;
    d.set_item("high_seconds", e.high)?;
    d.set_item("fitted_to", nrt_pool_engine::estimate::FITTED_TO)?;
    d.set_item(
        "regime",
        e.regime.iter().map(|r| r.text()).collect::<Vec<_>>(),
    )?;
    d.set_item("model", "trn1 (D100, docs/device-time.md)")?;
    d.set_item("copy_bound", e.copy_bound)?;
    let mut cores = Vec::new();
    let mut all: Vec<(String, f64)> = Vec::new();
    for c in &e.cores {
        let cd = PyDict::new(py);
        cd.set_item("core", c.core)?;
        cd.set_item("seconds", c.seconds)?;
        cd.set_item("low_seconds", c.low)?;
        cd.set_item("high_seconds", c.high)?;
        cd.set_item("compute_s", c.compute)?;
        cd.set_item("element_s", c.element)?;
        cd.set_item("stack_s", c.stack)?;
        cd.set_item("copies_s", c.copies)?;
        cores.push(cd);
        for (f, s) in &c.functions {
            match all.iter_mut().find(|(g, _)| g == f) {
                Some(x) => x.1 += s,
                None => all.push((f.clone(), *s)),
            }
        }
    }
    all.sort_by(|x, y| y.1.total_cmp(&x.1));
    d.set_item("cores", cores)?;
    d.set_item("functions", all)?;
    Ok(d)
}
