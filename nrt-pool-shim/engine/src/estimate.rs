//! How long a profiled launch would take on a trn1 Pool engine (D100): an
//! estimate from what Xtensa cores count (instructions by function, and the runtime's
//! tensor access counts), priced by a small model whose constants and their public sources
//! are in `docs/device-time.md`. Two constants are fitted (and say so); the rest are
//! published figures. Host cores count x86 instructions of another build: they give no
//! estimate.

use crate::backend::{AccessCounts, CoreProfile};

/// The model's constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    /// The Pool cores' clock (trn1).
    pub clock_hz: f64,
    /// Device cycles per instruction counted on our Xtensa build (FITTED: the device's
    /// compiler issues several operations per cycle and vectorises; ours is scalar).
    pub cycles_per_instruction: f64,
    /// Cycles one element-wise accessor access costs (FITTED: a round trip to HBM through
    /// the translation windows).
    pub element_access_cycles: f64,
    /// Cycles to start a copy between a tensor and core memory (a DMA descriptor).
    pub copy_start_cycles: f64,
    /// Bytes a core's copy moves per cycle (its 512-bit port).
    pub copy_bytes_per_cycle: f64,
    /// Bytes per second the engine's copies share (half a Trainium device's DMA bandwidth:
    /// one NeuronCore's).
    pub engine_copy_bytes_per_s: f64,
}

/// The trn1 model (docs/device-time.md derives each value).
pub const TRN1: Model = Model {
    clock_hz: 1.4e9,
    cycles_per_instruction: 0.25,
    element_access_cycles: 311.0,
    copy_start_cycles: 60.0,
    copy_bytes_per_cycle: 64.0,
    engine_copy_bytes_per_s: 0.5e12,
};

/// What the model's error is, as stated beside every estimate.
pub const STATED_ERROR: &str =
    "+/-30% where tensor accesses dominate (the published kernels it was fitted to), up to 2x where instructions do";

/// Functions of the runtime's own access path: their instructions are this emulator's way
/// of serving an access, priced instead by the access counts.
const ACCESS_PATH: &[&str] = &[
    "<neuroncustomop::runtime::translate::",
    "neuron_translate(",
    "neuron_translate_ctx(",
    "neuron_memcpy(",
    "neuroncustomop::runtime::mem::aligned::copy",
    "neuroncustomop::runtime::state::transfer",
    "neuroncustomop::runtime::state::check_tcm_copy",
    "<neuroncustomop::runtime::global::Global<neuroncustomop::runtime::state::State>>::with::<bool, neuroncustomop::runtime::state::check_tcm_copy",
];

/// Whether `function` is part of the runtime's access path.
pub fn on_access_path(function: &str) -> bool {
    ACCESS_PATH.iter().any(|p| function.starts_with(p))
}

/// One core's estimate, in seconds, by what it spends them on.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreEstimate {
    pub core: usize,
    pub seconds: f64,
    /// Instructions outside the access path.
    pub compute: f64,
    /// Element-wise accessor accesses.
    pub element: f64,
    /// Copies between tensors and core memory (TCM accessors, stream accessors).
    pub copies: f64,
    pub accesses: AccessCounts,
    /// Seconds by function, most first; the accesses as two entries of their own.
    pub functions: Vec<(String, f64)>,
}

/// A launch's estimate: the slowest core, or the engine's shared copy bandwidth when that
/// is slower.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub seconds: f64,
    pub cores: Vec<CoreEstimate>,
    /// Whether the engine's copy bandwidth, not a core, bounds the launch.
    pub copy_bound: bool,
}

pub const ELEMENT_ENTRY: &str = "[element-wise accessor accesses]";
pub const COPY_ENTRY: &str = "[tensor copies: TCM and stream accessors]";

impl Model {
    /// The estimate of a profiled launch, or None where its cores counted no accesses
    /// (host cores, or an image whose runtime keeps no counts).
    pub fn estimate(&self, isa: &str, cores: &[CoreProfile]) -> Option<Estimate> {
        if isa != "xtensa" {
            return None;
        }
        let cores: Vec<CoreEstimate> = cores.iter().map(|c| self.core(c)).collect::<Option<_>>()?;
        let slowest = cores.iter().map(|c| c.seconds).fold(0.0, f64::max);
        let bytes: u64 = cores
            .iter()
            .map(|c| c.accesses.bytes_in + c.accesses.bytes_out)
            .sum();
        let shared = bytes as f64 / self.engine_copy_bytes_per_s;
        Some(Estimate {
            seconds: slowest.max(shared),
            copy_bound: shared > slowest,
            cores,
        })
    }

    fn core(&self, c: &CoreProfile) -> Option<CoreEstimate> {
        let a = c.accesses?;
        let per_instruction = self.cycles_per_instruction / self.clock_hz;
        let mut functions: Vec<(String, f64)> = c
            .functions
            .iter()
            .filter(|(f, _)| !on_access_path(f))
            .map(|(f, n)| (f.clone(), *n as f64 * per_instruction))
            .collect();
        let compute = functions.iter().map(|f| f.1).sum::<f64>();
        let element = f64::from(a.element) * self.element_access_cycles / self.clock_hz;
        let copies = (f64::from(a.copies_in) + f64::from(a.copies_out)) * self.copy_start_cycles
            / self.clock_hz
            + (a.bytes_in + a.bytes_out) as f64 / self.copy_bytes_per_cycle / self.clock_hz;
        for (name, s) in [(ELEMENT_ENTRY, element), (COPY_ENTRY, copies)] {
            if s > 0.0 {
                functions.push((name.to_string(), s));
            }
        }
        functions.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
        Some(CoreEstimate {
            core: c.core,
            seconds: compute + element + copies,
            compute,
            element,
            copies,
            accesses: a,
            functions,
        })
    }
}

/// `s` seconds for a person: ms or us.
pub fn human(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

impl Estimate {
    /// The lines `--profile` prints: the launch, each core's parts, the top `n` functions.
    pub fn report(&self, n: usize) -> String {
        let mut out = format!(
            "  estimated time on a trn1 Pool engine: ~{} (an estimate, not a measurement: \
             model D100, docs/device-time.md; {STATED_ERROR})\n",
            human(self.seconds)
        );
        if self.copy_bound {
            out.push_str("    bound by the engine's shared copy bandwidth, not by a core\n");
        }
        for c in &self.cores {
            let a = &c.accesses;
            out.push_str(&format!(
                "    core {}: ~{} = instructions {} + {} element-wise accesses {} + {} copies \
                 ({} bytes) {}\n",
                c.core,
                human(c.seconds),
                human(c.compute),
                a.element,
                human(c.element),
                u64::from(a.copies_in) + u64::from(a.copies_out),
                a.bytes_in + a.bytes_out,
                human(c.copies)
            ));
        }
        let mut all: Vec<(String, f64)> = Vec::new();
        for c in &self.cores {
            for (f, s) in &c.functions {
                match all.iter_mut().find(|(g, _)| g == f) {
                    Some(e) => e.1 += s,
                    None => all.push((f.clone(), *s)),
                }
            }
        }
        all.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
        out.push_str("    estimated core time by function (all cores):\n");
        for (f, s) in all.iter().take(n) {
            out.push_str(&format!("    {:>12}  {f}\n", human(*s)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn core(n: usize, functions: Vec<(&str, u64)>, a: AccessCounts) -> CoreProfile {
        CoreProfile {
            core: n,
            instructions: Some(functions.iter().map(|f| f.1).sum()),
            functions: functions
                .into_iter()
                .map(|(f, c)| (f.to_string(), c))
                .collect(),
            accesses: Some(a),
            ..CoreProfile::default()
        }
    }

    fn profile(cores: Vec<CoreProfile>) -> Profile {
        Profile {
            isa: "xtensa".into(),
            kernel: "k".into(),
            cores,
        }
    }

    #[test]
    fn each_part_is_priced_by_its_constant() {
        let m = TRN1;
        let a = AccessCounts {
            element: 1000,
            copies_in: 2,
            copies_out: 1,
            bytes_in: 8192,
            bytes_out: 4096,
            ..AccessCounts::default()
        };
        let p = profile(vec![core(
            0,
            vec![
                ("k(int)", 1_000_000),
                ("neuron_translate(void*, unsigned long long)", 5_000),
            ],
            a,
        )]);
        let e = m.estimate(&p.isa, &p.cores).unwrap();
        let c = &e.cores[0];
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y.abs().max(1.0);
        assert!(close(
            c.compute,
            1e6 * m.cycles_per_instruction / m.clock_hz
        ));
        assert!(close(
            c.element,
            1000.0 * m.element_access_cycles / m.clock_hz
        ));
        assert!(close(
            c.copies,
            (3.0 * m.copy_start_cycles + 12288.0 / m.copy_bytes_per_cycle) / m.clock_hz
        ));
        assert!(close(e.seconds, c.compute + c.element + c.copies));
        // The access path's own instructions are priced by the counts instead.
        assert!(!c
            .functions
            .iter()
            .any(|f| f.0.starts_with("neuron_translate")));
        assert!(c.functions.iter().any(|f| f.0 == ELEMENT_ENTRY));
        let r = e.report(5);
        assert!(r.contains("an estimate, not a measurement"), "{r}");
        assert!(r.contains(STATED_ERROR), "{r}");
    }

    #[test]
    fn the_launch_is_its_slowest_core_and_host_cores_give_none() {
        let a = AccessCounts::default();
        let p = profile(vec![
            core(0, vec![("k", 1000)], a),
            core(1, vec![("k", 5000)], a),
        ]);
        let e = p.estimate().unwrap();
        assert_eq!(e.seconds, e.cores[1].seconds);
        assert!(!e.copy_bound);
        let host = Profile {
            isa: "host".into(),
            ..p.clone()
        };
        assert_eq!(host.estimate(), None);
        let mut uncounted = p;
        uncounted.cores[0].accesses = None;
        assert_eq!(uncounted.estimate(), None);
    }

    #[test]
    fn eight_cores_copying_at_once_share_the_engine_bandwidth() {
        let a = AccessCounts {
            copies_in: 1,
            bytes_in: 64 << 20,
            ..AccessCounts::default()
        };
        let p = profile((0..8).map(|c| core(c, vec![("k", 10)], a)).collect());
        let e = p.estimate().unwrap();
        assert!(e.copy_bound);
        let want = 8.0 * (64u64 << 20) as f64 / TRN1.engine_copy_bytes_per_s;
        assert!((e.seconds - want).abs() < 1e-9);
    }
}
