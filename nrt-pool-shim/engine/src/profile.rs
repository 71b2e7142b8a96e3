//! A launch's profile (`nrt-pool run --profile`): per core, the kernel's wall
//! time and instruction count where the backend measures them, and instructions by function
//! where it can count them (Xtensa cores: a QEMU TCG plugin counts each translated block's
//! executions; host cores: perf counts the thread's instructions, without functions).

pub use crate::backend::{
    AccessCounts, CopyStep, CopyTimeline, CoreProfile, DefinitionLines, MeasuredCopy,
    MeasuredTimeline, OUTSIDE_FRAME,
};

/// A profiled launch: its backend and each core's part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    pub isa: String,
    pub kernel: String,
    pub cores: Vec<CoreProfile>,
    /// How many of the launch's tensors (arguments and output) were in SBUF.
    pub sbuf_tensors: usize,
    /// Where its functions are defined, when the backend looked them all up as it named
    /// them (host cores: the op library is read once a launch, D124); None: a view that
    /// wants them looks them up ([`crate::PoolEngine::function_lines`]).
    pub lines: Option<DefinitionLines>,
}

impl Profile {
    /// The profile of a launch of `kernel` on backend `isa` that ended as `launched`, with
    /// `sbuf_tensors` of its tensors in SBUF.
    pub fn of_launch(
        isa: &str,
        kernel: &str,
        launched: &crate::backend::Launched,
        sbuf_tensors: usize,
    ) -> Profile {
        Profile {
            isa: isa.to_string(),
            kernel: kernel.to_string(),
            cores: launched.profiles.clone(),
            sbuf_tensors,
            lines: launched.lines.clone(),
        }
    }

    /// Instructions by function over all cores, most first, with each one's share of the
    /// total.
    pub fn top(&self) -> Vec<(String, u64, f64)> {
        let mut sum: Vec<(String, u64)> = Vec::new();
        for c in &self.cores {
            for (f, n) in &c.functions {
                match sum.iter_mut().find(|(g, _)| g == f) {
                    Some(e) => e.1 += n,
                    None => sum.push((f.clone(), *n)),
                }
            }
        }
        sum.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let total: u64 = sum.iter().map(|(_, n)| n).sum();
        sum.into_iter()
            .map(|(f, n)| {
                let share = if total == 0 {
                    0.0
                } else {
                    n as f64 / total as f64
                };
                (f, n, share)
            })
            .collect()
    }

    /// Folded stacks for flame-graph tools (`flamegraph.pl`, speedscope, inferno): one line
    /// per core and function, `core N;FUNCTION COUNT` (instructions); a host core's sampled
    /// stacks, `core N;OUTER;...;INNER NS` (D124); a core with neither gives `core N COUNT`
    /// (its instruction count, or its wall time in ns).
    pub fn folded(&self) -> String {
        let mut out = String::new();
        for c in &self.cores {
            if let Some(m) = c.measured.as_ref().filter(|m| !m.samples.is_empty()) {
                for (stack, ns) in m.folded() {
                    let path: Vec<String> = stack.iter().map(|f| f.replace(';', ":")).collect();
                    out.push_str(&format!("core {};{} {ns}\n", c.core, path.join(";")));
                }
                continue;
            }
            if c.functions.is_empty() {
                let n = c
                    .instructions
                    .or_else(|| c.wall.map(|w| w.as_nanos() as u64))
                    .unwrap_or(0);
                out.push_str(&format!("core {} {n}\n", c.core));
            }
            for (f, n) in &c.functions {
                // Folded stacks separate frames with ';' and end with the count.
                let f = f.replace(';', ":");
                out.push_str(&format!("core {};{f} {n}\n", c.core));
            }
        }
        out
    }

    /// The report `nrt-pool run --profile` prints: the top `n` functions with their
    /// shares, then each core's line.
    pub fn report(&self, n: usize) -> String {
        let mut out = format!(
            "profile of kernel '{}' on {} {} core(s):\n",
            self.kernel,
            self.cores.len(),
            self.isa
        );
        let top = self.top();
        if !top.is_empty() {
            let total: u64 = top.iter().map(|t| t.1).sum();
            out.push_str(&format!("  {total} instructions, by function:\n"));
            for (f, count, share) in top.iter().take(n) {
                out.push_str(&format!("  {:>6.2}%  {count:>12}  {f}\n", share * 100.0));
            }
            if top.len() > n {
                out.push_str(&format!("  ({} more functions)\n", top.len() - n));
            }
        }
        out.push_str(&self.sampled_report(n));
        for c in &self.cores {
            out.push_str(&format!("  core {}:", c.core));
            if let Some(w) = c.wall {
                out.push_str(&format!(" {:.3} ms", w.as_secs_f64() * 1e3));
            }
            match c.instructions {
                Some(i) => out.push_str(&format!(" {i} instructions")),
                None if c.functions.is_empty() => out
                    .push_str(" (instructions not counted: this machine refuses perf_event_open)"),
                None => {}
            }
            out.push('\n');
        }
        match self.estimate() {
            Some(e) => out.push_str(&e.report(n)),
            None if self.isa == "host" => out.push_str(
                "  (host cores: this machine's wall time and x86 instructions, not an estimate \
                 of the device's time; a profile on Xtensa cores estimates it)\n",
            ),
            None => out.push_str(
                "  (no device-time estimate: the image's runtime keeps no access counts; \
                 rebuild it)\n",
            ),
        }
        out
    }

    /// Every function the profile names: counted ones and sampled stacks' frames, each
    /// once.
    pub fn function_names(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        let counted = self
            .cores
            .iter()
            .flat_map(|c| c.functions.iter().map(|f| f.0.as_str()));
        let sampled = self
            .cores
            .iter()
            .filter_map(|c| c.measured.as_ref())
            .flat_map(MeasuredTimeline::functions);
        counted.chain(sampled).filter(|n| seen.insert(*n)).collect()
    }

    /// Host cores: the sampled time by innermost function over all cores, the top `n` (D124).
    fn sampled_report(&self, n: usize) -> String {
        let mut sum: Vec<(String, u64)> = Vec::new();
        let mut samples = 0usize;
        let mut interval = 0u64;
        for m in self.cores.iter().filter_map(|c| c.measured.as_ref()) {
            samples += m.samples.len();
            interval = interval.max(m.interval_ns);
            for (f, ns) in m.by_function() {
                match sum.iter_mut().find(|(g, _)| *g == f) {
                    Some(e) => e.1 += ns,
                    None => sum.push((f, ns)),
                }
            }
        }
        if samples == 0 {
            return String::new();
        }
        sum.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let total: u64 = sum.iter().map(|e| e.1).sum::<u64>().max(1);
        let mut out = format!(
            "  {samples} call stacks sampled every {} us (this machine's time), by function:\n",
            interval / 1000
        );
        for (f, ns) in sum.iter().take(n) {
            let share = *ns as f64 / total as f64 * 100.0;
            out.push_str(&format!(
                "  {share:>6.2}%  {:>9.3} ms  {f}\n",
                *ns as f64 / 1e6
            ));
        }
        if sum.len() > n {
            out.push_str(&format!("  ({} more functions)\n", sum.len() - n));
        }
        out
    }

    /// The estimate of this launch's time on a trn1 Pool engine (Xtensa cores, D100).
    pub fn estimate(&self) -> Option<crate::estimate::Estimate> {
        let mut e = crate::estimate::TRN1.estimate(&self.isa, &self.cores)?;
        if self.sbuf_tensors > 0 {
            e.regime
                .push(crate::estimate::Regime::SbufTensors(self.sbuf_tensors));
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn profile() -> Profile {
        Profile {
            isa: "xtensa".into(),
            sbuf_tensors: 0,
            lines: None,
            kernel: "relu".into(),
            cores: vec![
                CoreProfile {
                    core: 0,
                    wall: None,
                    instructions: Some(300),
                    functions: vec![
                        ("relu(at::Tensor const&)".into(), 200),
                        ("memcpy".into(), 100),
                    ],
                    accesses: None,
                    copies: None,
                    hbm_stack_accesses: None,
                    measured: None,
                },
                CoreProfile {
                    core: 1,
                    wall: None,
                    instructions: Some(100),
                    functions: vec![("memcpy".into(), 100)],
                    accesses: None,
                    copies: None,
                    hbm_stack_accesses: None,
                    measured: None,
                },
            ],
        }
    }

    #[test]
    fn functions_add_up_over_cores_with_their_shares() {
        let top = profile().top();
        assert_eq!(
            top,
            vec![
                ("memcpy".into(), 200, 0.5),
                ("relu(at::Tensor const&)".into(), 200, 0.5)
            ]
        );
        let r = profile().report(1);
        assert!(r.contains("400 instructions, by function:"), "{r}");
        assert!(r.contains("   50.00%           200  memcpy\n"), "{r}");
        assert!(r.contains("(1 more functions)"), "{r}");
        assert!(r.contains("  core 1: 100 instructions\n"), "{r}");
    }

    #[test]
    fn folded_stacks_have_one_line_per_core_and_function() {
        assert_eq!(
            profile().folded(),
            "core 0;relu(at::Tensor const&) 200\ncore 0;memcpy 100\ncore 1;memcpy 100\n"
        );
        let host = Profile {
            isa: "host".into(),
            sbuf_tensors: 0,
            lines: None,
            kernel: "k".into(),
            cores: vec![CoreProfile {
                core: 2,
                wall: Some(Duration::from_micros(5)),
                instructions: None,
                functions: vec![],
                accesses: None,
                copies: None,
                hbm_stack_accesses: None,
                measured: None,
            }],
        };
        assert_eq!(host.folded(), "core 2 5000\n");
        assert!(host
            .report(10)
            .contains("core 2: 0.005 ms (instructions not counted"));
    }
}
