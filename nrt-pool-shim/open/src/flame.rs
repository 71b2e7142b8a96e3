//! A profiled launch as an SVG flame graph (`nrt-pool run --profile=FILE.svg`), drawn by
//! `inferno`: all cores folded together on the left, each core on the right; each function
//! labelled with the source line it is defined at where the library's debug information
//! says. Widths are instructions on Xtensa cores; on host cores, time: the sampled call
//! stacks (D124), each sample the interval it stands for, or a core's wall time as one
//! frame when no sample was taken.

use std::collections::HashMap;

use nrt_pool_engine::check::SourceLine;
use nrt_pool_engine::profile::Profile;

/// A profile with its functions' source lines, ready to draw.
pub struct FlameGraph<'p> {
    pub profile: &'p Profile,
    /// Where each function is defined ([`nrt_pool_engine::PoolEngine::function_lines`]).
    pub lines: HashMap<String, SourceLine>,
}

impl FlameGraph<'_> {
    /// A frame's label: the function, and its `file:line` where known (';' is the folded
    /// format's separator, so it is written ':').
    fn label(&self, function: &str) -> String {
        let name = match self.lines.get(function) {
            Some(at) => {
                let file = std::path::Path::new(&at.file)
                    .file_name()
                    .map_or_else(|| at.file.clone(), |f| f.to_string_lossy().into_owned());
                format!("{function} ({file}:{})", at.line)
            }
            None => function.to_string(),
        };
        name.replace(';', ":")
    }

    /// The folded stacks drawn: `all cores;FUNCTION N` and `core C;FUNCTION N`.
    pub fn folded(&self) -> Vec<String> {
        let mut out = Vec::new();
        let kernel = format!("kernel {}", self.profile.kernel);
        for c in &self.profile.cores {
            if let Some(m) = c.measured.as_ref().filter(|m| !m.samples.is_empty()) {
                for (stack, ns) in m.folded() {
                    let labels: Vec<String> = stack.iter().map(|f| self.label(f)).collect();
                    let path = labels.join(";");
                    out.push(format!("all cores;{kernel};{path} {ns}"));
                    out.push(format!("core {};{kernel};{path} {ns}", c.core));
                }
                continue;
            }
            if c.functions.is_empty() {
                let wall = c.wall.map(|w| w.as_nanos() as u64);
                // Host cores' widths are time (their samples'), so a core without samples
                // is its wall time too.
                let n = if c.measured.is_some() {
                    wall
                } else {
                    c.instructions.or(wall)
                }
                .unwrap_or(0);
                out.push(format!("all cores;{kernel} {n}"));
                out.push(format!("core {};{kernel} {n}", c.core));
            }
            for (f, n) in &c.functions {
                let label = self.label(f);
                out.push(format!("all cores;{label} {n}"));
                out.push(format!("core {};{label} {n}", c.core));
            }
        }
        out.sort();
        out
    }

    /// The SVG document.
    pub fn svg(&self) -> std::io::Result<Vec<u8>> {
        let p = self.profile;
        let counted = p
            .cores
            .iter()
            .any(|c| !c.functions.is_empty() || (c.measured.is_none() && c.instructions.is_some()));
        let mut o = inferno::flamegraph::Options::default();
        o.title = format!(
            "kernel '{}' on {} {} core(s): all cores, then each",
            p.kernel,
            p.cores.len(),
            p.isa
        );
        o.count_name = if counted { "instructions" } else { "ns" }.into();
        o.deterministic = true;
        let folded = self.folded();
        let mut svg = Vec::new();
        inferno::flamegraph::from_lines(&mut o, folded.iter().map(String::as_str), &mut svg)?;
        Ok(svg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_pool_engine::profile::CoreProfile;

    #[test]
    fn functions_are_folded_all_cores_and_per_core_with_their_lines() {
        let core = |c, n| CoreProfile {
            core: c,
            instructions: Some(n + 10),
            functions: vec![("relu(float)".into(), n), ("memset".into(), 10)],
            ..CoreProfile::default()
        };
        let p = Profile {
            isa: "xtensa".into(),
            sbuf_tensors: 0,
            lines: None,
            kernel: "relu".into(),
            cores: vec![core(0, 100), core(1, 50)],
        };
        let lines = HashMap::from([(
            "relu(float)".to_string(),
            SourceLine {
                file: "/src/ops/relu.cpp".into(),
                line: 7,
            },
        )]);
        let g = FlameGraph { profile: &p, lines };
        let folded = g.folded();
        assert!(folded.contains(&"all cores;relu(float) (relu.cpp:7) 100".to_string()));
        assert!(folded.contains(&"core 1;relu(float) (relu.cpp:7) 50".to_string()));
        assert!(folded.contains(&"core 0;memset 10".to_string()));
        let svg = String::from_utf8(g.svg().unwrap()).unwrap();
        assert!(
            svg.starts_with("<?xml") && svg.contains("<svg"),
            "{}",
            &svg[..80]
        );
        assert!(svg.contains("relu(float) (relu.cpp:7)") && svg.contains("core 1"));
    }
}
