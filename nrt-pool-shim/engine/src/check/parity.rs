//! The parity check (issue #40, D93): the launch again on the other backend's cores (the
//! library's Pool image on Xtensa cores for a host build, its host build for a Pool image),
//! from the same inputs, and their output bytes, core 0's stdout and faults compared. Host
//! cores differ from the device where the C data model (`long`, `size_t` and pointers are
//! 32-bit there), the device's rules (its stack, alignment) or arithmetic corners differ
//! and the build could not make them agree; this check names what differs, so a green run
//! on host cores is a run the device build gives.
//!
//! The engine knows no backend but its own: whoever opens it (`nrt-pool-open`) gives it a
//! [`Twin`], an engine of the other backend opened on the other build when first needed.

use customop_abi::element::{bf16_to_f32, f16_to_f32};

use super::scan::{each_differing, Ranges};
use super::*;
use crate::call::Prepared;

/// The other backend's engine for the parity check.
pub enum Twin {
    /// The check cannot run: why (no other build beside the library, ...).
    Unavailable(String),
    /// Opens it when a launch first asks (QEMU cores start only then).
    Later(Box<dyn FnMut() -> Result<PoolEngine, String> + Send>),
    Open(Box<PoolEngine>),
}

impl Default for Twin {
    fn default() -> Twin {
        Twin::Unavailable(
            "the engine was opened without a library file (no other build to compare with)".into(),
        )
    }
}

impl fmt::Debug for Twin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Twin::Unavailable(why) => write!(f, "Twin::Unavailable({why:?})"),
            Twin::Later(_) => f.write_str("Twin::Later"),
            Twin::Open(e) => write!(f, "Twin::Open({})", e.isa()),
        }
    }
}

/// A device tensor's dtype, shape and bytes, copied out of device memory.
struct Copied {
    dtype: DType,
    shape: Vec<u64>,
    data: Vec<u8>,
}

/// A call's inputs kept for the twin: device tensors' bytes copied before the launch (it
/// may write them), everything else as the caller gave it.
pub(crate) struct ParityInputs<'a> {
    args: Vec<Option<ArgValue<'a>>>,
    copies: Vec<Option<Copied>>,
}

impl<'a> ParityInputs<'a> {
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

/// A call run on the twin: who ran where, and what it gave.
struct TwinRun {
    here: &'static str,
    there: &'static str,
    called: Result<Called, EmuError>,
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

/// Whether a parity check has another build to compare with (opened or not yet).
pub(crate) fn has_parity_twin(e: &PoolEngine) -> bool {
    !matches!(e.parity_twin, Twin::Unavailable(_))
}

/// The note of a parity check that cannot run.
pub(crate) fn parity_unavailable(e: &PoolEngine) -> String {
    match &e.parity_twin {
        Twin::Unavailable(why) => format!("parity: not checked: {why}"),
        _ => "parity: not checked".into(),
    }
}

/// The twin, opened if it was not yet; why not otherwise.
fn twin(e: &mut PoolEngine) -> Result<&mut PoolEngine, String> {
    if let Twin::Later(open) = &mut e.parity_twin {
        e.parity_twin = match open() {
            Ok(e) => Twin::Open(Box::new(e)),
            Err(why) => Twin::Unavailable(why),
        };
    }
    match &mut e.parity_twin {
        Twin::Open(e) => Ok(e),
        Twin::Unavailable(why) => Err(why.clone()),
        Twin::Later(_) => unreachable!("opened above"),
    }
}

/// The inputs a parity check gives the twin, taken before the launch.
pub(crate) fn parity_inputs<'a>(e: &PoolEngine, args: &[ArgValue<'a>]) -> ParityInputs<'a> {
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

/// The call on the twin (opened if it was not), from `inputs`, unchecked, with this
/// engine's timeout; why not, when there is no twin.
fn on_twin(
    e: &mut PoolEngine,
    target: &str,
    inputs: &ParityInputs<'_>,
    output: Output,
    cores: usize,
    s: &Settings,
) -> Result<TwinRun, String> {
    let here = cores_name(e.isa());
    let twin = twin(e)?;
    let called = twin.call(Call {
        target,
        args: inputs.values(),
        output,
        to: Destination::Host,
        cores: Some(cores),
        options: CallOptions {
            checks: Some(Checks::NONE),
            profile: Some(false),
            debug: Some(None),
            timeout: Some(s.timeout),
            all_cores_stdio: Some(false),
            interrupt: s.interrupt.clone(),
        },
    });
    Ok(TwinRun {
        here,
        there: cores_name(twin.isa()),
        called,
    })
}

/// For a launch that faulted here: runs the call on the twin and, when it completes
/// there, says so in the fault's message (the fault is this backend's, not the
/// device's, or the reverse).
pub(crate) fn parity_of_fault(
    e: &mut PoolEngine,
    target: &str,
    inputs: &ParityInputs<'_>,
    cores: usize,
    s: &Settings,
    fault: &mut DeviceFault,
) {
    let Ok(TwinRun {
        here,
        there,
        called,
    }) = on_twin(e, target, inputs, Output::Find, cores, s)
    else {
        return;
    };
    let said = match called {
        Ok(_) => format!(
            "check parity: the launch completes on {there}; {here} fault where it does not \
             (class: {})",
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

/// What this backend's launch gave, for the parity check: the call's target as the caller
/// named it, the output's bytes and core 0's stdout.
pub(crate) struct ThisRun<'a> {
    pub target: &'a str,
    pub output: &'a [u8],
    pub stdout: &'a [u8],
}

/// Runs the call on the twin and adds what differs from this launch (`this`) to `report`.
pub(crate) fn check_parity(
    e: &mut PoolEngine,
    p: &Prepared<'_>,
    inputs: &ParityInputs<'_>,
    this: ThisRun<'_>,
    report: &mut CheckReport,
) {
    let (kernel, spec) = (p.kernel.as_str(), &p.spec);
    let (output, stdout) = (this.output, this.stdout);
    let known = Output::Known(spec.clone());
    let run = on_twin(e, this.target, inputs, known, p.cores, p.settings);
    let TwinRun {
        here,
        there,
        called,
    } = match run {
        Ok(r) => r,
        Err(why) => {
            report.notes.push(format!("parity: not checked: {why}"));
            return;
        }
    };
    let called = match called {
        Ok(c) => c,
        Err(EmuError::Fault(f)) => {
            report.findings.push(Finding::about(
                Check::Parity,
                kernel,
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
            report
                .notes
                .push(format!("parity: not checked: on {there}: {e}"));
            return;
        }
    };
    let theirs = called.output.map(|t| t.data).unwrap_or_default();
    let size = spec.dtype.size();
    if theirs.len() != output.len() {
        report.notes.push(format!(
            "parity: not checked: {there} gave {} output bytes, {here} {}",
            theirs.len(),
            output.len()
        ));
        return;
    }
    let mut first = None;
    let mut ranges = Ranges::default();
    each_differing(output, &theirs, size, |i| {
        first.get_or_insert(i);
        ranges.push(i as u64);
    });
    if let Some(i) = first {
        let at = i * size..(i + 1) * size;
        let what = format!(
            "differs from {there}: element [{i}] is {} on {here}, {} on {there} (class: {UNTOLD})",
            element_text(spec.dtype, &output[at.clone()]),
            element_text(spec.dtype, &theirs[at]),
        );
        report
            .findings
            .extend(ranges.finding(Check::Parity, kernel, Vec::new(), what));
    }
    let theirs_out = &called.run.stdout;
    if theirs_out.as_slice() != stdout {
        let line = |b: &[u8], n: usize| {
            String::from_utf8_lossy(b.split(|&c| c == b'\n').nth(n).unwrap_or_default())
                .into_owned()
        };
        let n = stdout
            .split(|&c| c == b'\n')
            .zip(theirs_out.split(|&c| c == b'\n'))
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        report.findings.push(Finding::about(
            Check::Parity,
            kernel,
            vec![0],
            "stdout",
            format!(
                "core 0 printed differently: line {} is {:?} on {here}, {:?} on {there} \
                 (printf of `long`, `size_t` or `%p` values is the usual cause)",
                n + 1,
                line(stdout, n),
                line(theirs_out, n)
            ),
        ));
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
}
