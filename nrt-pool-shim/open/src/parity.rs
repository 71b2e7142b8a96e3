//! The parity check (D93): the launch again on the other backend's cores (the library's
//! Pool image on Xtensa cores for a host build, its host build for a Pool image), from the
//! same inputs, and their output bytes, core 0's stdout and faults compared. Host cores
//! differ from the device where the C data model, the device's rules (its stack,
//! alignment) or arithmetic corners differ and the build could not make them agree; this
//! check names what differs, so a green run on host cores is a run the device build gives.
//!
//! It lives above the engine: the engine runs one backend and knows no other;
//! the opened [`Pool`](crate::Pool) holds the pair and compares them here.

use std::path::PathBuf;

use customop_abi::control::FaultKind;
use customop_abi::element::{bf16_to_f32, f16_to_f32};
use nrt_pool_engine::check::{
    each_differing, Check, CheckNote, CheckReport, Checks, ElementRanges, Finding,
};
use nrt_pool_engine::tensor::{DType, Location};
use nrt_pool_engine::{
    ArgValue, Arguments, Call, CallOptions, Called, Destination, DeviceFault, EmuError, Output,
    OutputSpec, PoolEngine, Settings, Target,
};

use crate::{Isa, OpenOptions};

/// The other backend's engine for the parity check.
pub(crate) enum Twin {
    /// The check cannot run: why (no other build beside the library, ...).
    Unavailable(String),
    /// Opened when a launch first asks (QEMU cores start only then): the other build, and
    /// how to open it (the first engine's options for its ISA, without the environment's
    /// defaults).
    Later {
        library: PathBuf,
        options: Box<OpenOptions>,
    },
    Open(Box<crate::Pool>),
}

impl Twin {
    /// The twin for the other build `other` (for `isa`), or why there is none.
    pub(crate) fn at(other: PathBuf, isa: Isa, o: &OpenOptions) -> Twin {
        Twin::Later {
            library: other,
            options: Box::new(OpenOptions {
                environment: Default::default(),
                isa: Some(isa),
                ..o.clone()
            }),
        }
    }

    /// Whether a parity check has another build to compare with (opened or not yet).
    pub(crate) fn available(&self) -> bool {
        !matches!(self, Twin::Unavailable(_))
    }

    /// The note of a parity check that cannot run.
    pub(crate) fn unavailable_note(&self) -> CheckNote {
        match self {
            Twin::Unavailable(why) => CheckNote::not_checked(Check::Parity, why),
            _ => CheckNote::not_checked(Check::Parity, "no other build"),
        }
    }

    /// The twin's engine, opened if it was not yet; why not otherwise.
    fn engine(&mut self) -> Result<&mut PoolEngine, String> {
        if let Twin::Later { library, options } = self {
            *self = match crate::Pool::open_alone(library, options) {
                Ok(p) => Twin::Open(Box::new(p)),
                Err(e) => Twin::Unavailable(format!("{}: {e}", library.display())),
            };
        }
        match self {
            Twin::Open(p) => Ok(p.engine_mut()),
            Twin::Unavailable(why) => Err(why.clone()),
            Twin::Later { .. } => unreachable!("opened above"),
        }
    }
}

impl std::fmt::Debug for Twin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Twin::Unavailable(why) => write!(f, "Twin::Unavailable({why:?})"),
            Twin::Later { library, .. } => write!(f, "Twin::Later({})", library.display()),
            Twin::Open(p) => write!(f, "Twin::Open({})", p.isa().name()),
        }
    }
}

/// A device tensor's dtype, shape and bytes, copied out of device memory.
struct Copied {
    dtype: DType,
    shape: Vec<u64>,
    data: Vec<u8>,
}

/// A call's inputs kept for the twin, taken before the launch (it may write its device
/// tensors): device tensors' bytes copied, everything else as the caller gave it.
pub(crate) struct ParityInputs<'a> {
    args: Vec<Option<ArgValue<'a>>>,
    copies: Vec<Option<Copied>>,
}

impl<'a> ParityInputs<'a> {
    pub(crate) fn of(e: &PoolEngine, args: &[ArgValue<'a>]) -> ParityInputs<'a> {
        let copies = args
            .iter()
            .map(|a| match a {
                ArgValue::Device(d) => Some(Copied {
                    dtype: d.dtype,
                    shape: d.shape.clone(),
                    data: e.tensors.device_bytes(d).unwrap_or_default().to_vec(),
                }),
                _ => None,
            })
            .collect();
        let args = args
            .iter()
            .map(|a| match a {
                ArgValue::Device(_) => None,
                other => Some(other.clone()),
            })
            .collect();
        ParityInputs { args, copies }
    }

    /// The arguments as the twin takes them (its own device memory: bytes, copied in).
    fn values(&self) -> Vec<ArgValue<'_>> {
        self.args
            .iter()
            .zip(&self.copies)
            .map(|(a, c)| match (a, c) {
                (Some(a), _) => a.view(),
                (None, Some(c)) => ArgValue::Bytes {
                    dtype: c.dtype,
                    shape: c.shape.clone(),
                    data: &c.data,
                    location: Location::Hbm,
                },
                (None, None) => unreachable!("a device tensor is copied"),
            })
            .collect()
    }
}

/// What this backend's launch gave, for the comparison: the output's bytes and core 0's
/// stdout.
pub(crate) struct ThisRun<'a> {
    pub output: &'a [u8],
    pub stdout: &'a [u8],
}

/// One parity comparison: the call's target, inputs, cores and settings, and the twin it
/// runs on.
pub(crate) struct Comparison<'t, 'a> {
    pub twin: &'t mut Twin,
    /// Who ran here ("host", "xtensa").
    pub here: Isa,
    pub target: &'t Target,
    pub inputs: ParityInputs<'a>,
    pub cores: usize,
    pub settings: Settings,
}

/// A call run on the twin: who ran there, and what it gave.
struct TwinRun {
    there: &'static str,
    called: Result<Called, EmuError>,
}

impl Comparison<'_, '_> {
    /// The call on the twin (opened if it was not), from the inputs, unchecked, with this
    /// call's timeout and interrupt; why not, when there is no twin.
    fn on_twin(&mut self, output: Output) -> Result<TwinRun, String> {
        let (name, inputs) = (self.target.name.as_str(), &self.inputs);
        let settings = &self.settings;
        let twin = self.twin.engine()?;
        let called = twin.target(name).and_then(|target| {
            twin.call(Call {
                target: &target,
                args: inputs.values(),
                output,
                to: Destination::Host,
                cores: Some(self.cores),
                options: CallOptions {
                    checks: Some(Checks::NONE),
                    profile: Some(false),
                    debug: Some(None),
                    timeout: Some(settings.timeout),
                    all_cores_stdio: Some(false),
                    interrupt: settings.interrupt.clone(),
                },
            })
        });
        Ok(TwinRun {
            there: cores_name(twin.isa()),
            called,
        })
    }

    fn here(&self) -> &'static str {
        cores_name(self.here.name())
    }

    /// For a launch that faulted here: runs the call on the twin and, when it completes
    /// there, says so in the fault's message (the fault is this backend's, not the
    /// device's, or the reverse).
    pub(crate) fn of_fault(mut self, fault: &mut DeviceFault) {
        let Ok(TwinRun { there, called }) = self.on_twin(Output::Derive) else {
            return;
        };
        let here = self.here();
        let said = match called {
            Ok(_) => format!(
                "check parity: the launch completes on {there}; {here} fault where it does \
                 not (class: {})",
                fault_class(fault)
            ),
            Err(EmuError::Fault(f)) if f.kind == fault.kind => {
                format!("check parity: {there} fault too ({})", f.kind.describe())
            }
            Err(EmuError::Fault(f)) => format!(
                "check parity: {there} fault otherwise: {}",
                f.kind.describe()
            ),
            Err(_) => return,
        };
        if fault.message.is_empty() {
            fault.message = said;
        } else {
            fault.message = format!("{} [{said}]", fault.message);
        }
    }

    /// Runs the call on the twin and adds what differs from this launch (`this`, whose
    /// output is `spec`) to `report`.
    pub(crate) fn of_run(mut self, spec: &OutputSpec, this: ThisRun<'_>, report: &mut CheckReport) {
        let kernel = self.target.kernel.clone();
        let run = self.on_twin(Output::Derived(spec.clone(), Arguments::Validate));
        let here = self.here();
        let TwinRun { there, called } = match run {
            Ok(r) => r,
            Err(why) => {
                report
                    .notes
                    .push(CheckNote::not_checked(Check::Parity, why));
                return;
            }
        };
        let called = match called {
            Ok(c) => c,
            Err(EmuError::Fault(f)) => {
                report.findings.push(Finding::about(
                    Check::Parity,
                    &kernel,
                    vec![f.core],
                    "the launch",
                    format!(
                        "completes on {here} but faults on {there} (class: {}): {f}",
                        fault_class(&f)
                    ),
                ));
                return;
            }
            Err(e) => {
                report.notes.push(CheckNote::not_checked(
                    Check::Parity,
                    format!("on {there}: {e}"),
                ));
                return;
            }
        };
        let theirs = called.output.map(|t| t.data).unwrap_or_default();
        if theirs.len() != this.output.len() {
            report.notes.push(CheckNote::not_checked(
                Check::Parity,
                format!(
                    "{there} gave {} output bytes, {here} {}",
                    theirs.len(),
                    this.output.len()
                ),
            ));
            return;
        }
        report.findings.extend(output_differences(
            &kernel,
            spec.dtype,
            (this.output, &theirs),
            (here, there),
        ));
        report.findings.extend(stdout_difference(
            &kernel,
            (this.stdout, &called.run.stdout),
            (here, there),
        ));
    }
}

/// The finding for output elements that differ between here and there, if any.
fn output_differences(
    kernel: &str,
    dtype: DType,
    (ours, theirs): (&[u8], &[u8]),
    (here, there): (&str, &str),
) -> Option<Finding> {
    let size = dtype.size();
    let mut first = None;
    let mut ranges = ElementRanges::default();
    each_differing(ours, theirs, size, |i| {
        first.get_or_insert(i);
        ranges.push(i as u64);
    });
    let i = first?;
    let at = i * size..(i + 1) * size;
    let what = format!(
        "differs from {there}: element [{i}] is {} on {here}, {} on {there} (class: {UNTOLD})",
        element_text(dtype, &ours[at.clone()]),
        element_text(dtype, &theirs[at]),
    );
    ranges.finding(Check::Parity, kernel, Vec::new(), what)
}

/// The finding for core 0's stdout differing between here and there, if it does.
fn stdout_difference(
    kernel: &str,
    (ours, theirs): (&[u8], &[u8]),
    (here, there): (&str, &str),
) -> Option<Finding> {
    if ours == theirs {
        return None;
    }
    let line = |b: &[u8], n: usize| {
        String::from_utf8_lossy(b.split(|&c| c == b'\n').nth(n).unwrap_or_default()).into_owned()
    };
    let n = ours
        .split(|&c| c == b'\n')
        .zip(theirs.split(|&c| c == b'\n'))
        .position(|(a, b)| a != b)
        .unwrap_or(0);
    Some(Finding::about(
        Check::Parity,
        kernel,
        vec![0],
        "stdout",
        format!(
            "core 0 printed differently: line {} is {:?} on {here}, {:?} on {there} \
             (printf of `long`, `size_t` or `%p` values is the usual cause)",
            n + 1,
            line(ours, n),
            line(theirs, n)
        ),
    ))
}

/// An element's value as the report shows it.
fn element_text(dtype: DType, b: &[u8]) -> String {
    let mut w = [0u8; 8];
    w[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    let u = u64::from_le_bytes(w);
    match dtype {
        DType::F32 => format!("{:?}", f32::from_bits(u as u32)),
        DType::BF16 => format!("{:?}", bf16_to_f32(u as u16)),
        DType::F16 => format!("{:?} (f16 bits {:#06x})", f16_to_f32(u as u16), u as u16),
        DType::I8 => (u as u8 as i8).to_string(),
        DType::I16 => (u as u16 as i16).to_string(),
        DType::I32 => (u as u32 as i32).to_string(),
        DType::I64 => (u as i64).to_string(),
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => u.to_string(),
    }
}

/// The class of a difference where the other side's fault tells it.
fn fault_class(f: &DeviceFault) -> &'static str {
    let m = f.message.to_ascii_lowercase();
    if f.kind == FaultKind::StackOverflow {
        "stack"
    } else if m.contains("unaligned") || m.contains("alignment") {
        "alignment"
    } else if m.contains("divi") || m.contains("overflow") || f.kind == FaultKind::Trap {
        "arithmetic"
    } else {
        "a fault"
    }
}

/// What an output difference may come from, when nothing tells the class.
const UNTOLD: &str = "data model, arithmetic or C++ library: `long`, `size_t`, \
    `ptrdiff_t` and pointers are 32-bit on the device, float-to-integer conversions of \
    NaN and out-of-range values, shifts by the width, INT_MIN / -1 and the C++ library's \
    orders differ (docs/decisions.md D93)";

/// Who ran where, for the report.
fn cores_name(isa: &str) -> &'static str {
    if isa == "xtensa" {
        "Xtensa cores (the device build)"
    } else {
        "host cores"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_read_as_their_dtype() {
        assert_eq!(element_text(DType::F32, &1.5f32.to_le_bytes()), "1.5");
        assert_eq!(element_text(DType::I32, &(-7i32).to_le_bytes()), "-7");
        assert_eq!(element_text(DType::U8, &[255]), "255");
        assert_eq!(element_text(DType::I8, &[255]), "-1");
        assert_eq!(element_text(DType::BF16, &0x3fc0u16.to_le_bytes()), "1.5");
        assert_eq!(
            element_text(DType::F16, &0x3e00u16.to_le_bytes()),
            "1.5 (f16 bits 0x3e00)"
        );
        assert_eq!(
            element_text(DType::F16, &0xc000u16.to_le_bytes()),
            "-2.0 (f16 bits 0xc000)"
        );
    }

    #[test]
    fn outputs_and_stdout_differences_are_named_with_both_sides() {
        let ours = [1.0f32, 2.0, 3.0].map(f32::to_le_bytes).concat();
        let theirs = [1.0f32, 2.5, 3.0].map(f32::to_le_bytes).concat();
        let f = output_differences("k", DType::F32, (&ours, &theirs), ("host cores", "x"))
            .expect("one element differs");
        assert_eq!((f.elements, f.ranges.clone()), (1, vec![(1, 2)]));
        assert!(
            f.what
                .contains("element [1] is 2.0 on host cores, 2.5 on x"),
            "{}",
            f.what
        );
        assert!(output_differences("k", DType::F32, (&ours, &ours), ("a", "b")).is_none());
        let s = stdout_difference("k", (b"a\nb\n", b"a\nc\n"), ("h", "x")).unwrap();
        assert!(
            s.what.contains("line 2 is \"b\" on h, \"c\" on x"),
            "{}",
            s.what
        );
        assert!(stdout_difference("k", (b"same", b"same"), ("h", "x")).is_none());
    }
}
