//! How long a profiled launch would take on a trn1 Pool engine (D100): an
//! estimate from what Xtensa cores count (instructions by function, and the runtime's
//! tensor access counts), priced by a small model whose constants and their public sources
//! are in `docs/device-time.md`. Two constants are fitted to AWS's published customop_mlp
//! ladder, which allows a range of them: every estimate is a band over that range (and
//! over two readings of a copy's cost), with the kernel flagged where it lies outside the
//! regime the fit rests on. Host cores count x86 instructions of another build: they give
//! no estimate.

use crate::backend::{AccessCounts, CopyTimeline, CoreProfile};

/// The two fitted constants: how an instruction counted here and an element-wise access
/// turn into the device's cycles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// Device cycles per instruction counted on our Xtensa build (the device's compiler
    /// issues several operations per cycle and vectorises; ours is scalar).
    pub cycles_per_instruction: f64,
    /// Cycles one element-wise accessor access costs (a round trip to HBM through the
    /// translation windows), solved from the element-wise figure given the first.
    pub element_access_cycles: f64,
}

/// How a copy between a tensor and core memory is priced: a start and a rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopyCost {
    pub start_s: f64,
    pub bytes_per_s: f64,
}

/// The model's constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    /// The Pool cores' clock (trn1).
    pub clock_hz: f64,
    /// The central fit (the ladder read as a device-bound, perfectly scaling 8-core run,
    /// copies at the DMA price).
    pub fit: Fit,
    /// The ends of the range the ladder allows (the 1-core TCM ReLU between 0.55 and 2.9
    /// ms): the least and the most weight an instruction can have.
    pub fits: [Fit; 2],
    /// A copy as the SBUF interface would move it (60 cycles to start, 64 bytes a cycle):
    /// the low end.
    pub copy_fast: CopyCost,
    /// A copy as AWS's DMA figures price it (27.2 GB/s per DMA engine, ~1.4 us for one
    /// 32 KiB transfer, so ~0.2 us to start): the high end, and the central price.
    pub copy_dma: CopyCost,
    /// Bytes per second the engine's copies share (half a Trainium device's DMA bandwidth:
    /// one NeuronCore's).
    pub engine_copy_bytes_per_s: f64,
}

/// The trn1 model (docs/device-time.md derives each value).
pub const TRN1: Model = Model {
    clock_hz: 1.4e9,
    fit: Fit {
        cycles_per_instruction: 0.141,
        element_access_cycles: 322.0,
    },
    fits: [
        Fit {
            cycles_per_instruction: 0.106,
            element_access_cycles: 326.0,
        },
        Fit {
            cycles_per_instruction: 1.16,
            element_access_cycles: 209.0,
        },
    ],
    copy_fast: CopyCost {
        start_s: 60.0 / 1.4e9,
        bytes_per_s: 64.0 * 1.4e9,
    },
    copy_dma: CopyCost {
        start_s: 0.2e-6,
        bytes_per_s: 27.2e9,
    },
    engine_copy_bytes_per_s: 0.5e12,
};

/// What every estimate rests on, said beside it.
pub const FITTED_TO: &str = "fitted to AWS's customop_mlp ReLU ladder on trn1: one core, \
     element-wise and TCM accessors, inference; an estimate, not a measurement";

/// Functions of the runtime's own access path: their instructions are this emulator's way
/// of serving an access, priced instead by the access counts.
pub use customop_abi::access::ACCESS_PATH;

/// Whether `function` is part of the runtime's access path.
pub fn on_access_path(function: &str) -> bool {
    ACCESS_PATH.iter().any(|p| function.starts_with(p))
}

/// Where a kernel lies outside the regime the fit rests on: its band is then wide, and
/// the report says why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// Most of the time is instructions, whose weight the ladder leaves least known.
    InstructionBound,
    /// Most of the time is copies, which the fit did not measure.
    CopyBound,
    /// Element-wise accessors on several cores at once: the fit is one core's, and their
    /// contention for HBM is not modelled.
    ElementWiseOnCores(usize),
    /// The kernel's stack was an HBM block of this STACK_SIZE (it did not fit the local
    /// stack): its locals' traffic goes to HBM, counted and priced as HBM round trips
    /// (D121), which no published figure calibrates.
    HbmStack(u32),
    /// This many of the launch's tensors (arguments or output) were in SBUF: their copies
    /// and accesses are priced as HBM's.
    SbufTensors(usize),
}

impl Regime {
    pub fn text(self) -> String {
        match self {
            Regime::InstructionBound => "instruction-bound: the ladder allows 0.11 to 1.2 device \
                 cycles per instruction counted here (a dependent chain takes at least 1)"
                .into(),
            Regime::CopyBound => "copy-bound: copies are priced between the 512-bit port's \
                 rate and AWS's DMA figures (27.2 GB/s, ~1.4 us per 32 KiB); none was fitted"
                .into(),
            Regime::ElementWiseOnCores(n) => format!(
                "element-wise accessors on {n} cores: fitted on one; their contention for HBM \
                 is not modelled"
            ),
            Regime::HbmStack(size) => format!(
                "stack in HBM (STACK_SIZE={size} does not fit a core's local stack): every \
                 access to the kernel's locals goes to HBM, which the guide calls slow; each \
                 is counted and priced as an HBM round trip, as an element-wise access is \
                 (209 to 326 cycles across the band), a price no figure calibrates for the \
                 stack"
            ),
            Regime::SbufTensors(n) => format!(
                "{n} tensor(s) in SBUF: their copies and accesses are priced as HBM's (AWS's \
                 DMA figures, the ladder's HBM accesses); SBUF's own costs are not modelled"
            ),
        }
    }
}

/// One core's estimate, in seconds, by what it spends them on (central prices), and its
/// band.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreEstimate {
    pub core: usize,
    pub seconds: f64,
    /// The least and the most the range of fits and copy prices give.
    pub low: f64,
    pub high: f64,
    /// Instructions outside the access path.
    pub compute: f64,
    /// Element-wise accessor accesses.
    pub element: f64,
    /// Loads and stores to the kernel's stack in HBM (D121), and their number.
    pub stack: f64,
    pub stack_accesses: u64,
    /// Copies between tensors and core memory (TCM accessors, stream accessors, a
    /// returned tensor's copy to the output).
    pub copies: f64,
    pub accesses: AccessCounts,
    /// Seconds by function, most first; the accesses as two entries of their own.
    pub functions: Vec<(String, f64)>,
    /// The core's time in the order it was spent, copy by copy, where its copies were
    /// logged (D120); empty otherwise. The steps add up to `seconds`.
    pub timeline: Vec<Step>,
}

/// A stretch of a core's estimated time (central prices), in the order the core spent it.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// What ran between two copies: seconds by function, most first, element-wise accesses
    /// as [`ELEMENT_ENTRY`].
    Compute(Vec<(String, f64)>),
    /// A run of like copies between a tensor and core memory (`copies` of `bytes` each;
    /// one, often).
    Copy {
        out: bool,
        bytes: u32,
        copies: u32,
        seconds: f64,
    },
    /// The copies made after the log filled, together (they happened among the compute
    /// before this step).
    Unlogged {
        copies: u32,
        bytes: u64,
        seconds: f64,
    },
}

impl Step {
    pub fn seconds(&self) -> f64 {
        match self {
            Step::Compute(functions) => functions.iter().map(|(_, s)| s).sum(),
            Step::Copy { seconds, .. } | Step::Unlogged { seconds, .. } => *seconds,
        }
    }
}

/// A launch's estimate: the slowest core, or the engine's shared copy bandwidth when that
/// is slower; its band; where it lies outside the fitted regime.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub seconds: f64,
    pub low: f64,
    pub high: f64,
    pub cores: Vec<CoreEstimate>,
    /// Whether the engine's copy bandwidth, not a core, bounds the launch.
    pub copy_bound: bool,
    pub regime: Vec<Regime>,
}

pub const ELEMENT_ENTRY: &str = "[element-wise accessor accesses]";
pub const HBM_STACK_ENTRY: &str = "[accesses to the stack in HBM]";
pub const COPY_ENTRY: &str = "[tensor copies: TCM and stream accessors]";

impl CopyCost {
    fn price(&self, a: &AccessCounts) -> f64 {
        self.copies(
            f64::from(a.copies_in) + f64::from(a.copies_out),
            a.bytes_in + a.bytes_out,
        )
    }

    fn copies(&self, copies: f64, bytes: u64) -> f64 {
        copies * self.start_s + bytes as f64 / self.bytes_per_s
    }
}

impl Fit {
    /// Instructions, element-wise accesses and `stack` accesses to a stack in HBM (each an
    /// HBM round trip, as an element-wise access is: D121).
    fn price(&self, instructions: f64, a: &AccessCounts, stack: u64, clock_hz: f64) -> f64 {
        (self.cycles_per_instruction * instructions
            + (f64::from(a.element) + stack as f64) * self.element_access_cycles)
            / clock_hz
    }
}

impl Model {
    /// The estimate of a profiled launch, or None where its cores counted no accesses
    /// (host cores, or an image whose runtime keeps no counts).
    pub fn estimate(&self, isa: &str, cores: &[CoreProfile]) -> Option<Estimate> {
        if isa != "xtensa" {
            return None;
        }
        let cores: Vec<CoreEstimate> = cores.iter().map(|c| self.core(c)).collect::<Option<_>>()?;
        let slowest = |f: fn(&CoreEstimate) -> f64| cores.iter().map(f).fold(0.0, f64::max);
        let bytes: u64 = cores
            .iter()
            .map(|c| c.accesses.bytes_in + c.accesses.bytes_out)
            .sum();
        let shared = bytes as f64 / self.engine_copy_bytes_per_s;
        let (central, low, high) = (
            slowest(|c| c.seconds),
            slowest(|c| c.low),
            slowest(|c| c.high),
        );
        let (compute, copies) = cores
            .iter()
            .fold((0.0, 0.0), |(i, c), e| (i + e.compute, c + e.copies));
        let total: f64 = cores.iter().map(|c| c.seconds).sum();
        let mut regime = Vec::new();
        if total > 0.0 && compute / total > 0.5 {
            regime.push(Regime::InstructionBound);
        }
        if shared > central || (total > 0.0 && copies / total > 0.5) {
            regime.push(Regime::CopyBound);
        }
        let element_cores = cores.iter().filter(|c| c.accesses.element > 0).count();
        if element_cores > 1 {
            regime.push(Regime::ElementWiseOnCores(element_cores));
        }
        if let Some(size) = cores
            .iter()
            .map(|c| c.accesses.hbm_stack)
            .max()
            .filter(|s| *s > 0)
        {
            regime.push(Regime::HbmStack(size));
        }
        Some(Estimate {
            seconds: central.max(shared),
            low: low.max(shared),
            high: high.max(shared),
            copy_bound: shared > central,
            cores,
            regime,
        })
    }

    fn core(&self, c: &CoreProfile) -> Option<CoreEstimate> {
        let a = c.accesses?;
        let per_instruction = self.fit.cycles_per_instruction / self.clock_hz;
        // The kernel's own functions: the access path is priced by the counts instead.
        let own: Vec<&(String, u64)> = c
            .functions
            .iter()
            .filter(|(f, _)| !on_access_path(f))
            .collect();
        let instructions: f64 = own.iter().map(|(_, n)| *n as f64).sum();
        let stack_accesses = c.hbm_stack_accesses.unwrap_or(0);
        let compute = instructions * per_instruction;
        let element = self.access_seconds(f64::from(a.element));
        let stack = self.access_seconds(stack_accesses as f64);
        let copies = self.copy_dma.price(&a);
        let mut functions = self.priced(&c.functions, a.element, stack_accesses);
        if copies > 0.0 {
            functions.push((COPY_ENTRY.to_string(), copies));
            functions.sort_by(most_first);
        }
        let priced: Vec<f64> = self
            .fits
            .iter()
            .chain([&self.fit])
            .map(|f| f.price(instructions, &a, stack_accesses, self.clock_hz))
            .collect();
        let low = priced.iter().copied().fold(f64::INFINITY, f64::min) + self.copy_fast.price(&a);
        let high = priced.iter().copied().fold(0.0, f64::max) + self.copy_dma.price(&a);
        Some(CoreEstimate {
            core: c.core,
            seconds: compute + element + stack + copies,
            low,
            high,
            compute,
            element,
            stack,
            stack_accesses,
            copies,
            accesses: a,
            functions,
            timeline: c
                .copies
                .as_ref()
                .map_or_else(Vec::new, |t| self.timeline(t, &a)),
        })
    }

    /// Seconds by function (the access path left out), most first, with `elements`
    /// element-wise accesses and `stack` accesses to a stack in HBM as entries of their own.
    fn priced(&self, functions: &[(String, u64)], elements: u32, stack: u64) -> Vec<(String, f64)> {
        let per_instruction = self.fit.cycles_per_instruction / self.clock_hz;
        let mut priced: Vec<(String, f64)> = functions
            .iter()
            .filter(|(f, _)| !on_access_path(f))
            .map(|(f, n)| (f.clone(), *n as f64 * per_instruction))
            .collect();
        if elements > 0 {
            let s = self.access_seconds(f64::from(elements));
            priced.push((ELEMENT_ENTRY.to_string(), s));
        }
        if stack > 0 {
            priced.push((
                HBM_STACK_ENTRY.to_string(),
                self.access_seconds(stack as f64),
            ));
        }
        priced.sort_by(most_first);
        priced
    }

    /// `n` HBM round trips: element-wise accesses, or accesses to a stack in HBM (D121).
    fn access_seconds(&self, n: f64) -> f64 {
        n * self.fit.element_access_cycles / self.clock_hz
    }

    /// A core's time step by step: what ran before each logged run of copies, the run,
    /// what ran after the last, and the copies the log had no room for (D120).
    fn timeline(&self, t: &CopyTimeline, a: &AccessCounts) -> Vec<Step> {
        let mut steps = Vec::with_capacity(2 * t.steps.len() + 2);
        let (mut elements, mut bytes) = (0u32, 0u64);
        for s in &t.steps {
            let now = s.elements_before.max(elements);
            steps.push(Step::Compute(self.priced(
                &s.before,
                now - elements,
                s.stack_accesses,
            )));
            elements = now;
            let run = u64::from(s.bytes) * u64::from(s.copies);
            bytes += run;
            steps.push(Step::Copy {
                out: s.out,
                bytes: s.bytes,
                copies: s.copies,
                seconds: self.copy_dma.copies(f64::from(s.copies), run),
            });
        }
        let rest = a.element.saturating_sub(elements);
        steps.push(Step::Compute(self.priced(
            &t.after,
            rest,
            t.after_stack_accesses,
        )));
        if t.unlogged > 0 {
            let bytes = (a.bytes_in + a.bytes_out).saturating_sub(bytes);
            steps.push(Step::Unlogged {
                copies: t.unlogged,
                bytes,
                seconds: self.copy_dma.copies(f64::from(t.unlogged), bytes),
            });
        }
        steps.retain(|s| !matches!(s, Step::Compute(f) if f.is_empty()));
        steps
    }
}

/// Seconds by name, most first (ties by name).
fn most_first(x: &(String, f64), y: &(String, f64)) -> std::cmp::Ordering {
    y.1.total_cmp(&x.1).then_with(|| x.0.cmp(&y.0))
}

/// `s` seconds for a person, to two significant figures (what the model can say): s, ms,
/// us or ns.
pub fn human(s: f64) -> String {
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "us")
    } else {
        (s * 1e9, "ns")
    };
    format!("{} {unit}", two_figures(v))
}

/// `v` (0 < v < 1000) to two significant figures, without trailing zeros.
fn two_figures(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return "0".into();
    }
    let digits = v.log10().floor() as i32;
    let decimals = (1 - digits).max(0) as usize;
    let scale = 10f64.powi(digits - 1);
    let rounded = (v / scale).round() * scale;
    let t = format!("{rounded:.decimals$}");
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

impl Estimate {
    /// The lines `--profile` prints: the launch's band and what it rests on, where it lies
    /// outside the fitted regime, each core's parts, the top `n` functions.
    pub fn report(&self, n: usize) -> String {
        let mut out = format!(
            "  estimated time on a trn1 Pool engine: ~{}, between {} and {} ({FITTED_TO}; \
             D100, docs/device-time.md)\n",
            human(self.seconds),
            human(self.low),
            human(self.high)
        );
        for r in &self.regime {
            out.push_str(&format!("    outside the fitted regime: {}\n", r.text()));
        }
        if self.copy_bound {
            out.push_str("    bound by the engine's shared copy bandwidth, not by a core\n");
        }
        for c in &self.cores {
            let a = &c.accesses;
            let stack = if c.stack_accesses > 0 {
                format!(
                    " + {} accesses to the stack in HBM {}",
                    c.stack_accesses,
                    human(c.stack)
                )
            } else {
                String::new()
            };
            out.push_str(&format!(
                "    core {}: ~{} ({}..{}) = instructions {} + {} element-wise accesses {}{stack} \
                 + {} copies ({} bytes) {}\n",
                c.core,
                human(c.seconds),
                human(c.low),
                human(c.high),
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
        all.sort_by(most_first);
        out.push_str("    estimated core time by function (all cores, central prices):\n");
        for (f, s) in all.iter().take(n) {
            out.push_str(&format!("    {:>10}  {f}\n", human(*s)));
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
            sbuf_tensors: 0,
            lines: None,
            kernel: "k".into(),
            cores,
        }
    }

    #[test]
    fn a_logged_core_is_a_timeline_that_adds_up_to_its_estimate() {
        use crate::profile::{CopyStep, CopyTimeline};
        let a = AccessCounts {
            element: 30,
            copies_in: 3,
            copies_out: 2,
            bytes_in: 8192 + 60,
            bytes_out: 4096 + 40,
            ..AccessCounts::default()
        };
        let named = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
            v.iter().map(|(f, n)| (f.to_string(), *n)).collect()
        };
        let mut c = core(0, vec![("k", 9000), ("neuron_memcpy(x)", 500)], a);
        c.copies = Some(CopyTimeline {
            steps: vec![
                CopyStep {
                    before: named(&[("k", 1000), ("neuron_memcpy(x)", 10)]),
                    out: false,
                    bytes: 4096,
                    copies: 2,
                    elements_before: 10,
                    stack_accesses: 0,
                },
                CopyStep {
                    before: named(&[]),
                    out: true,
                    bytes: 4096,
                    copies: 1,
                    elements_before: 10,
                    stack_accesses: 0,
                },
            ],
            after: named(&[("k", 8000), ("neuron_memcpy(x)", 490)]),
            // The log filled before two of the copies (one in, the last out: 100 bytes).
            // (The first step is a run of two like copies in.)
            unlogged: 2,
            after_stack_accesses: 0,
        });
        let e = TRN1.estimate("xtensa", &[c]).unwrap();
        let t = &e.cores[0].timeline;
        let kinds: Vec<&str> = t
            .iter()
            .map(|s| match s {
                Step::Compute(_) => "compute",
                Step::Copy { out: false, .. } => "in",
                Step::Copy { out: true, .. } => "out",
                Step::Unlogged { .. } => "unlogged",
            })
            .collect();
        // Back-to-back copies have no compute between them.
        assert_eq!(kinds, ["compute", "in", "out", "compute", "unlogged"]);
        let sum: f64 = t.iter().map(Step::seconds).sum();
        assert!((sum - e.cores[0].seconds).abs() < 1e-12 * e.cores[0].seconds.max(1.0));
        // The access path's instructions are priced by the counts, not in the steps.
        let Step::Compute(first) = &t[0] else {
            panic!()
        };
        // Most first: ten element-wise accesses outweigh a thousand instructions.
        assert_eq!(
            first.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
            [ELEMENT_ENTRY, "k"]
        );
        let elements = f64::from(10u32) * TRN1.fit.element_access_cycles / TRN1.clock_hz;
        assert_eq!(first[0].1, elements);
        let Step::Unlogged { copies, bytes, .. } = t[4] else {
            panic!()
        };
        assert_eq!((copies, bytes), (2, 100));
        // Without a log, no timeline.
        let plain = core(0, vec![("k", 9000)], a);
        assert!(TRN1.estimate("xtensa", &[plain]).unwrap().cores[0]
            .timeline
            .is_empty());
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
            1e6 * m.fit.cycles_per_instruction / m.clock_hz
        ));
        assert!(close(
            c.element,
            1000.0 * m.fit.element_access_cycles / m.clock_hz
        ));
        assert!(close(
            c.copies,
            3.0 * m.copy_dma.start_s + 12288.0 / m.copy_dma.bytes_per_s
        ));
        assert!(close(e.seconds, c.compute + c.element + c.copies));
        // The band: the cheapest fit with the port's copies, the dearest with DMA's.
        let fast = 3.0 * 60.0 / m.clock_hz + 12288.0 / (64.0 * m.clock_hz);
        let by = |f: &Fit| {
            (f.cycles_per_instruction * 1e6 + f.element_access_cycles * 1000.0) / m.clock_hz
        };
        let fits = [m.fit, m.fits[0], m.fits[1]];
        let least = fits.iter().map(by).fold(f64::INFINITY, f64::min);
        let most = fits.iter().map(by).fold(0.0, f64::max);
        assert!(
            close(c.low, least + fast) && close(c.high, most + c.copies),
            "{c:?}"
        );
        assert!(e.low < e.seconds && e.seconds < e.high);
        // The access path's own instructions are priced by the counts instead.
        assert!(!c
            .functions
            .iter()
            .any(|f| f.0.starts_with("neuron_translate")));
        assert!(c.functions.iter().any(|f| f.0 == ELEMENT_ENTRY));
        let r = e.report(5);
        assert!(r.contains("an estimate, not a measurement"), "{r}");
        assert!(r.contains(FITTED_TO), "{r}");
    }

    /// The fits are solved from the published ladder and the counts of our tutorial-shaped
    /// kernels (docs/device-time.md): re-solving them here keeps the constants and the
    /// document's arithmetic in step (a regression guard, not evidence: the fit points
    /// agree with the model by construction).
    #[test]
    fn the_fits_solve_the_ladder_they_are_fitted_to() {
        let m = TRN1;
        // The ladder: element-wise minus TCM, the 32x4096 layer's share; the 1-core TCM
        // ReLU read as device-bound and perfectly scaling, and its range.
        let elementwise = (1.0 / 8.098_649_744 - 1.0 / 220.738_001_316) * 131_072.0 / 196_608.0;
        let (tcm, tcm_range) = (0.629e-3, [0.55e-3, 2.9e-3]);
        let tcm_counts = AccessCounts {
            copies_in: 640,
            copies_out: 640,
            bytes_in: 512 << 10,
            bytes_out: 1 << 20,
            ..AccessCounts::default()
        };
        let ew_counts = AccessCounts {
            element: 327_596,
            copies_out: 1024,
            bytes_out: 512 << 10,
            ..AccessCounts::default()
        };
        let (tcm_instructions, ew_instructions) = (3.12e6, 36.5e6);
        let kappa = |t: f64| (t - m.copy_dma.price(&tcm_counts)) * m.clock_hz / tcm_instructions;
        let element = |k: f64| {
            (elementwise - k * ew_instructions / m.clock_hz - m.copy_dma.price(&ew_counts))
                * m.clock_hz
                / f64::from(ew_counts.element)
        };
        for (fit, t) in [
            (m.fit, tcm),
            (m.fits[0], tcm_range[0]),
            (m.fits[1], tcm_range[1]),
        ] {
            let k = kappa(t);
            assert!(
                (fit.cycles_per_instruction - k).abs() / k < 0.02,
                "{fit:?}: {k}"
            );
            let c = element(fit.cycles_per_instruction);
            assert!(
                (fit.element_access_cycles - c).abs() / c < 0.01,
                "{fit:?}: {c}"
            );
        }
        // The dearest fit prices a counted instruction at a cycle or more: a dependent
        // chain (one operation a cycle at best) lies inside every band.
        assert!(m.fits[1].cycles_per_instruction >= 1.0);
    }

    #[test]
    fn kernels_outside_the_fitted_regime_are_flagged() {
        let none = AccessCounts::default();
        let compute = profile(vec![core(0, vec![("k", 10_000_000)], none)]);
        let e = compute.estimate().unwrap();
        assert_eq!(e.regime, [Regime::InstructionBound]);
        assert!(e.high / e.low > 8.0, "{} .. {}", e.low, e.high);
        let copying = AccessCounts {
            copies_in: 64,
            bytes_in: 64 << 20,
            ..AccessCounts::default()
        };
        let e = profile(vec![core(0, vec![("k", 10)], copying)])
            .estimate()
            .unwrap();
        assert_eq!(e.regime, [Regime::CopyBound]);
        let element = AccessCounts {
            element: 100_000,
            ..AccessCounts::default()
        };
        let fitted = profile(vec![core(0, vec![("k", 1_000_000)], element)]);
        assert_eq!(fitted.estimate().unwrap().regime, []);
        let many = profile(
            (0..4)
                .map(|c| core(c, vec![("k", 1_000_000)], element))
                .collect(),
        );
        let e = many.estimate().unwrap();
        assert_eq!(e.regime, [Regime::ElementWiseOnCores(4)]);
        assert!(e
            .report(3)
            .contains("outside the fitted regime: element-wise accessors on 4 cores"));
        let on_hbm = AccessCounts {
            element: 100_000,
            hbm_stack: 32768,
            ..AccessCounts::default()
        };
        let mut hbm_core = core(0, vec![("k", 1_000_000)], on_hbm);
        let plain = TRN1
            .estimate("xtensa", std::slice::from_ref(&hbm_core))
            .unwrap();
        hbm_core.hbm_stack_accesses = Some(50_000);
        let e = profile(vec![hbm_core]).estimate().unwrap();
        assert_eq!(e.regime, [Regime::HbmStack(32768)]);
        // Each access to the stack in HBM is priced as an HBM round trip, in the band too.
        let each = |f: &Fit| 50_000.0 * f.element_access_cycles / TRN1.clock_hz;
        let c = &e.cores[0];
        assert!((c.seconds - plain.cores[0].seconds - each(&TRN1.fit)).abs() < 1e-12);
        assert!((c.stack - each(&TRN1.fit)).abs() < 1e-15);
        assert!(c.low >= plain.cores[0].low + each(&TRN1.fits[1]) * 0.999);
        assert!(c.high >= plain.cores[0].high + each(&TRN1.fits[0]) * 0.999);
        assert!(e.report(3).contains("+ 50000 accesses to the stack in HBM"));
        assert!(
            e.report(3).contains("stack in HBM (STACK_SIZE=32768"),
            "{}",
            e.report(3)
        );
    }

    #[test]
    fn times_print_to_two_significant_figures() {
        for (s, want) in [
            (79.31e-3, "79 ms"),
            (0.6291e-3, "630 us"),
            (1.25e-3, "1.3 ms"),
            (41.04e-6, "41 us"),
            (9.96e-6, "10 us"),
            (2.0, "2 s"),
            (150e-9, "150 ns"),
            (0.0, "0 ns"),
        ] {
            assert_eq!(human(s), want, "{s}");
        }
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
            sbuf_tensors: 0,
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
        // At the DMA price each core's own copy is slower than their share of the engine's
        // bandwidth; at the port's rate, the shared bandwidth bounds the low end.
        let shared = 8.0 * (64u64 << 20) as f64 / TRN1.engine_copy_bytes_per_s;
        assert!(!e.copy_bound && e.seconds > shared);
        assert!((e.low - shared).abs() < 1e-9, "{} {shared}", e.low);
        assert_eq!(e.regime, [Regime::CopyBound]);
    }
}
