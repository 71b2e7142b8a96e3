//! Running a launch on the cores and turning what they report into a completion or a fault.

use std::ops::Range;

use super::*;
use crate::accesses::{CoreAccesses, WatchedTensor};
use crate::call::Prepared;

/// Byte ranges of a watched range a core touched ([`Launched::touched`]).
pub(crate) type Touched = Vec<Range<u64>>;

/// The one launch path under every entry point: places the prepared call's arguments and
/// output, runs the kernel on `team` and delivers the output to `to` (a buffer exactly the
/// output's length); its memory starts as `fill` says.
pub(crate) fn run_checked(
    e: &mut PoolEngine,
    p: &Prepared<'_>,
    team: Team,
    to: Destination<'_>,
    fill: Fill,
) -> Result<(Option<HostTensor>, Run, LaunchPhases), EmuError> {
    let (spec, start) = (&p.spec, p.start);
    let device = match &to {
        Destination::Device(d) => Some(d),
        _ => None,
    };
    let blob = place(e, p, device, fill)?;
    let placed = Instant::now();
    let (mut run, _) = execute_touching(e, &p.kernel, &blob, team, start, p.settings)?;
    let ran = Instant::now();
    let output = match to {
        Destination::Device(_) => None,
        Destination::Host => {
            let bytes = host_copy(e.tensors.placed_bytes(&blob.output, spec.dtype)?);
            Some(HostTensor::new(spec.dtype, spec.shape.clone(), bytes)?)
        }
        Destination::Buffer(dst) => {
            copy_parallel(dst, e.tensors.placed_bytes(&blob.output, spec.dtype)?);
            None
        }
    };
    let end = Instant::now();
    run.elapsed = end - start;
    let phases = LaunchPhases {
        place: placed - start,
        run: ran - placed,
        read: end - ran,
    };
    Ok((output, run, phases))
}

/// The prepared call's arguments and output placed (the output in `into`, or placed with
/// the launch): the argument blob.
fn place(
    e: &mut PoolEngine,
    p: &Prepared<'_>,
    into: Option<&DeviceTensor>,
    fill: Fill,
) -> Result<ArgBlob, EmuError> {
    let labels = e.loaded.arg_labels(&p.kernel, p.args.len());
    e.tensors
        .place_launch(&p.args, &labels, &p.spec, into, fill)
}

/// A launch on `team` whose output `inspect` reads where it lies: in `into`, or placed
/// with the launch; its memory starts as `fill` says: a checked launch's later runs.
pub(crate) fn run_inspect(
    e: &mut PoolEngine,
    p: &Prepared<'_>,
    (team, into, fill): (Team, Option<&DeviceTensor>, Fill),
    inspect: impl FnOnce(&[u8], &[Option<Touched>]),
) -> Result<Run, EmuError> {
    let blob = place(e, p, into, fill)?;
    // Cores run alone or in a group report what they touch of the output, where their
    // backend can tell.
    let team = match (team.only, blob.output.soc_addr(memory::SBUF_BASE)) {
        (Some(_), Some(soc)) => {
            team.watching(soc, (blob.output.num_elem() * p.spec.dtype.size()) as u64)
        }
        _ => team,
    };
    let (run, seen) = execute_touching(e, &p.kernel, &blob, team, Instant::now(), p.settings)?;
    inspect(
        e.tensors.placed_bytes(&blob.output, p.spec.dtype)?,
        &seen.touched,
    );
    Ok(run)
}

/// A launch on `team` with every core recording the bytes it reads and writes (D101):
/// each core's record in [`Team::cores`] order, and the launch's tensors.
pub(crate) fn run_traced(
    e: &mut PoolEngine,
    p: &Prepared<'_>,
    (team, into, fill): (Team, Option<&DeviceTensor>, Fill),
) -> Result<(Vec<Option<CoreAccesses>>, Vec<WatchedTensor>), EmuError> {
    let blob = place(e, p, into, fill)?;
    let team = team.with_trace();
    let (_, seen) = execute_touching(e, &p.kernel, &blob, team, Instant::now(), p.settings)?;
    let tensors = e.tensors.watched();
    Ok((seen.accesses, tensors))
}

/// Writes the blob for each core and runs the kernel on them: the run, and what the cores
/// reported seeing of their accesses: what each touched of the team's watched range
/// ([`Launched::touched`]) and, in a traced launch, every byte each read and wrote
/// ([`Launched::accesses`]).
fn execute_touching(
    e: &mut PoolEngine,
    kernel: &str,
    blob: &ArgBlob,
    team: Team,
    start: Instant,
    s: &Settings,
) -> Result<(Run, Seen), EmuError> {
    let lib = e.loaded.library().ok_or(EmuError::NoLibrary)?;
    let lib_file = lib.file();
    let run = team.cores();
    for &c in &run {
        e.tensors.write_blob(c, blob);
    }
    let guards = e.tensors.guards();
    let name = CString::new(kernel).map_err(|_| EmuError::UnknownKernel {
        kernel: kernel.into(),
        known: e.loaded.kernels().to_vec(),
    })?;
    let mut deadline = s.deadline();
    // A launch with a core stopped for a debugger waits as long as someone debugs.
    let session = match &s.debug {
        Some(req) if team.only.is_none() => {
            if req.core >= team.count {
                return Err(EmuError::Debug {
                    core: req.core,
                    why: format!("a launch of {} core(s) does not run it", team.count),
                });
            }
            let why = |e: &dyn std::fmt::Display| EmuError::Debug {
                core: req.core,
                why: e.to_string(),
            };
            let mut session = e
                .backend
                .debug_core(&e.tensors.memory, lib, req.core, team.count, &deadline)
                .map_err(|e| why(&e))?;
            // The breakpoint goes on the op's compute function (an op's name may differ).
            session.kernel = e
                .loaded
                .neuron_library()
                .and_then(|l| l.ops.iter().find(|o| o.name == kernel))
                .map_or_else(|| kernel.to_string(), |o| o.kernel.clone());
            // Where the arguments are in place, where the backend knows better (D102).
            if let Some(at) = e.backend.entry_stop(req.core, &session.kernel) {
                session.kernel = at;
            }
            // Absolute: `nrt-pool gdb` may run from another folder.
            session.library = std::fs::canonicalize(&session.library).unwrap_or(session.library);
            session.write().map_err(|e| why(&e))?;
            (req.notify)(&session);
            deadline = Deadline::after(Duration::from_secs(7 * 24 * 3600))
                .with_interrupt(s.interrupt.clone());
            Some(session)
        }
        _ => None,
    };
    let launched = e
        .backend
        .launch(&e.tensors.memory, lib, &name, team, &guards, &deadline);
    if let Some(s) = session {
        e.backend.end_debug();
        s.remove();
    }
    let launched = launched.map_err(EmuError::Spawn)?;
    if team.profile {
        e.last_profile = Some(profile::Profile {
            isa: e.backend.name().to_string(),
            kernel: kernel.to_string(),
            cores: launched.profiles.clone(),
        });
    }
    let mut stdio = e.take_output(launched.stdio);
    if deadline.interrupted() {
        // The cores still running were stopped, as after a timeout; their output is
        // dropped with them.
        return Err(EmuError::Interrupted {
            what: format!("kernel '{kernel}'"),
        });
    }
    let mut results = Vec::with_capacity(run.len());
    for (&c, end) in run.iter().zip(&launched.cores) {
        match &end.outcome {
            Outcome::Done(r) => results.push(*r as i32),
            Outcome::Fault(record) => {
                let fault = fault_with_output(e, c, record, kernel, &lib_file, stdio, &end.stderr);
                return Err(EmuError::Fault(Box::new(fault)));
            }
        }
    }
    // Core 0's fd 2 reaches the host, as its printf does; the other cores' does not
    // (unless every core's output was asked for: each line then names its core).
    if team.all_stdio {
        let mut lines = CoreLines::default();
        for (&c, end) in run.iter().zip(&launched.cores) {
            lines.push(c, 2, &end.stderr, &mut stdio);
        }
        lines.finish(&mut stdio);
    } else if let Some(first) = launched.cores.first() {
        stdio.err.extend_from_slice(&first.stderr);
    }
    Ok((
        Run {
            stdout: stdio.out,
            stderr: stdio.err,
            stdio_dropped: stdio.dropped,
            results,
            elapsed: start.elapsed(),
        },
        Seen {
            touched: launched.touched,
            accesses: launched.accesses,
        },
    ))
}

/// [`device_fault`] with what came out before it: `stdio` (the launch's, ahead
/// of the fault) and the faulting core's own fd 2 after it (a failed assert's
/// message), once.
pub(crate) fn fault_with_output(
    e: &PoolEngine,
    c: usize,
    record: &FaultRecord,
    kernel: &str,
    library: &Path,
    stdio: Stdio,
    core_stderr: &[u8],
) -> DeviceFault {
    let mut fault = device_fault(e, c, record, kernel, library);
    let Stdio { out, mut err, .. } = stdio;
    err.extend_from_slice(core_stderr);
    (fault.stdout, fault.stderr) = (out, err);
    fault
}

/// The report of core `c`'s fault in `kernel` (a kernel, or the start code or a shape
/// function named so): the backend's record with the SoC address, the tensor it falls
/// after and the function named from `library`.
pub(crate) fn device_fault(
    e: &PoolEngine,
    c: usize,
    record: &FaultRecord,
    kernel: &str,
    library: &Path,
) -> DeviceFault {
    let soc_addr = record.host_addr.and_then(|h| e.tensors.memory.soc_of(h));
    let message = if record.kind == FaultKind::Entry {
        let s = record.status;
        format!("entry_func returned {s} ({})", status_name(s))
    } else {
        record.message.clone()
    };
    // The library's file, read and parsed once for the instruction's name and the stack.
    let wanted = record.pc.is_some() || matches!(record.stack, Stack::Host { .. });
    let bytes = wanted.then(|| std::fs::read(library).ok()).flatten();
    let named = bytes.as_deref().and_then(symbolize::Symbolizer::new);
    let file_name = library
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    DeviceFault {
        kernel: kernel.into(),
        core: c,
        kind: record.kind,
        phase: record.phase,
        soc_addr,
        host_addr: record.host_addr,
        location: record.pc.map(|p| {
            match named.as_ref().and_then(|s| s.locate(p.module_base, p.pc)) {
                Some(sym) => format!("{sym} in {file_name} (host {:#x})", p.pc),
                None => format!("host {:#x}", p.pc),
            }
        }),
        access: record.access.map(backend::Access::as_str),
        tensor: soc_addr.and_then(|soc| e.tensors.tensor_at(soc)),
        message,
        stack: match &record.stack {
            Stack::Unknown => Vec::new(),
            Stack::Named(frames) => frames.clone(),
            Stack::Host {
                addrs,
                module_base,
                first_exact,
            } => named.as_ref().map_or_else(Vec::new, |s| {
                s.library_stack(*module_base, addrs, *first_exact)
            }),
        },
        stdout: Vec::new(),
        stderr: Vec::new(),
    }
}

/// What a launch's cores reported of their accesses ([`PoolEngine::execute_touching`]).
pub(crate) struct Seen {
    pub touched: Vec<Option<Touched>>,
    pub accesses: Vec<Option<CoreAccesses>>,
}
