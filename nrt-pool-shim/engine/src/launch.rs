//! A launch, prepared once from a call (its target, arguments converted and validated,
//! tensors copied in, its output and cores, its settings), and its runs on the cores: the
//! unchecked run, the inspecting runs checking mode adds, and the traced run of the race
//! check's reads. Each turns what the cores report into a completion or a fault.

use std::ffi::CString;
use std::ops::Range;
use std::time::{Duration, Instant};

use customop_abi::blob::ArgBlob;

use super::accesses::{CoreAccesses, WatchedTensor};
use super::backend::{CoreLines, Outcome, Team};
use super::call::{ArgValue, Call, Destination, Output};
use super::copy::{copy_parallel, host_copy};
use super::deadline::Deadline;
use super::derive::Derivation;
use super::error::EmuError;
use super::fault::FaultReport;
use super::marshal::{named, Fill};
use super::memory::{self, CORES};
use super::profile;
use super::settings::Settings;
use super::target::Target;
use super::tensor::{self, HostTensor, Location, TensorError};
use super::values::{DeviceTensor, LaunchArg, LaunchPhases, OutputSpec, Run};
use super::{PoolEngine, MAX_ARGS};

/// Byte ranges of a watched range a core touched ([`CoreReports::touched`]).
pub(crate) type Touched = Vec<Range<u64>>;

/// A call's first half, done once: the target it names, its arguments as a launch carries
/// them (converted, validated, tensors copied in), its output and cores, its settings.
/// The unchecked, checking and traced runs all take it.
pub(crate) struct Launch<'a> {
    pub target: &'a Target,
    pub args: Vec<LaunchArg>,
    pub spec: OutputSpec,
    pub cores: usize,
    pub settings: &'a Settings,
    /// The caller's bytes of each tensor the call copied into device memory: a checking
    /// launch restores those from here, with no copy of its own.
    pub sources: Vec<Option<&'a [u8]>>,
    /// When the call started (its phases count from here).
    pub start: Instant,
}

/// What a launch's cores reported of their accesses.
pub(crate) struct CoreReports {
    /// What each touched of the team's watched range.
    pub touched: Vec<Option<Touched>>,
    /// In a traced launch, every byte each read and wrote.
    pub accesses: Vec<Option<CoreAccesses>>,
}

impl<'a> Launch<'a> {
    /// The launch `call` makes: its arguments converted and validated against its target,
    /// its output found, its destination validated (once).
    pub(crate) fn prepare<'c: 'a>(
        e: &mut PoolEngine,
        call: &mut Call<'c>,
        settings: &'a Settings,
        start: Instant,
    ) -> Result<Launch<'a>, EmuError> {
        let target: &'a Target = call.target;
        e.loaded.resolved_here(target)?;
        let cores = call.cores.unwrap_or_else(|| e.loaded.default_cores());
        Launch::validate_counts(cores, call.args.len())?;
        let sources = call
            .args
            .iter()
            .map(|a| match a {
                ArgValue::Bytes {
                    data,
                    location: Location::Hbm,
                    ..
                } => Some(*data),
                _ => None,
            })
            .collect();
        let mut args = Vec::with_capacity(call.args.len());
        for (i, a) in std::mem::take(&mut call.args).into_iter().enumerate() {
            args.push(Launch::launch_arg(e, target, i, a)?);
        }
        let output = std::mem::replace(&mut call.output, Output::Derive);
        let spec = Derivation {
            target,
            args: &args,
        }
        .output(e, output)?;
        let launch = Launch {
            target,
            args,
            spec,
            cores,
            settings,
            sources,
            start,
        };
        launch.validate_destination(&call.to)?;
        Ok(launch)
    }

    /// The counts every launch is validated for: 1 to 8 cores, at most [`MAX_ARGS`]
    /// arguments.
    pub(crate) fn validate_counts(cores: usize, args: usize) -> Result<(), EmuError> {
        if !(1..=CORES).contains(&cores) {
            return Err(EmuError::Cores(cores));
        }
        if args > MAX_ARGS {
            return Err(EmuError::TooManyArgs { n: args });
        }
        Ok(())
    }

    /// Argument `i` as a launch carries it.
    fn launch_arg(
        e: &mut PoolEngine,
        target: &Target,
        i: usize,
        a: ArgValue<'_>,
    ) -> Result<LaunchArg, EmuError> {
        let a = match a.scalar() {
            Ok(s) => return Ok(s),
            Err(a) => a,
        };
        let label = target.arg_label(i);
        Ok(match a {
            ArgValue::Bytes {
                dtype,
                shape,
                data,
                location: Location::Hbm,
            } => LaunchArg::Device(
                e.tensors
                    .upload_bytes(dtype, shape, data)
                    .map_err(|e| named(&label, e))?,
            ),
            ArgValue::Bytes {
                dtype,
                shape,
                data,
                location,
            } => LaunchArg::Tensor(
                HostTensor::new(dtype, shape, data.to_vec())
                    .map_err(|e| named(&label, e.into()))?,
                location,
            ),
            ArgValue::Tensor(t, loc) => LaunchArg::Tensor(t, loc),
            ArgValue::Device(d) => LaunchArg::Device(d),
            ArgValue::Scalar(..) | ArgValue::Double(_) | ArgValue::Long(_) => {
                unreachable!("scalars converted above")
            }
        })
    }

    /// The output the call names (its destination) against the one it gives: a device
    /// tensor of its dtype and shape, a buffer of its bytes.
    fn validate_destination(&self, to: &Destination<'_>) -> Result<(), EmuError> {
        let spec = &self.spec;
        tensor::validate_rank(&spec.shape).map_err(|e| named("the output", e.into()))?;
        match to {
            Destination::Device(d) => {
                Derivation::validate_output(self.target, spec, d.dtype, &d.shape)
            }
            Destination::Buffer(dst) => {
                let want = tensor::byte_len(&spec.shape, spec.dtype);
                if want == Some(dst.len() as u64) {
                    return Ok(());
                }
                Err(EmuError::Argument {
                    what: "the output buffer".into(),
                    source: TensorError::Size {
                        dtype: spec.dtype,
                        shape: spec.shape.clone(),
                        want: want.unwrap_or(u64::MAX),
                        got: dst.len() as u64,
                    },
                })
            }
            Destination::Host => Ok(()),
        }
    }

    /// The one launch path under every entry point: places the prepared call's arguments and
    /// output, runs the kernel on `team` and delivers the output to `to` (a buffer exactly the
    /// output's length); its memory starts as `fill` says.
    pub(crate) fn run(
        &self,
        e: &mut PoolEngine,
        team: Team,
        to: Destination<'_>,
        fill: Fill,
    ) -> Result<(Option<HostTensor>, Run, LaunchPhases), EmuError> {
        let (spec, start) = (&self.spec, self.start);
        let device = match &to {
            Destination::Device(d) => Some(d),
            _ => None,
        };
        let blob = self.place(e, device, fill)?;
        let placed = Instant::now();
        let (mut run, _) = self.execute(e, &blob, team, start)?;
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
        &self,
        e: &mut PoolEngine,
        into: Option<&DeviceTensor>,
        fill: Fill,
    ) -> Result<ArgBlob, EmuError> {
        let labels = self.target.arg_labels(self.args.len());
        e.tensors
            .place_launch(&self.args, &labels, &self.spec, into, fill)
    }

    /// A launch on `team` whose output `inspect` reads where it lies: in `into`, or placed
    /// with the launch; its memory starts as `fill` says: a checked launch's later runs.
    pub(crate) fn inspect(
        &self,
        e: &mut PoolEngine,
        (team, into, fill): (Team, Option<&DeviceTensor>, Fill),
        inspect: impl FnOnce(&[u8], &[Option<Touched>]),
    ) -> Result<Run, EmuError> {
        let blob = self.place(e, into, fill)?;
        // Cores run alone or in a group report what they touch of the output, where their
        // backend can tell.
        let team = match (team.only, blob.output.soc_addr(memory::SBUF_BASE)) {
            (Some(_), Some(soc)) => team.watching(
                soc,
                (blob.output.num_elem() * self.spec.dtype.size()) as u64,
            ),
            _ => team,
        };
        let (run, seen) = self.execute(e, &blob, team, Instant::now())?;
        inspect(
            e.tensors.placed_bytes(&blob.output, self.spec.dtype)?,
            &seen.touched,
        );
        Ok(run)
    }

    /// A launch on `team` with every core recording the bytes it reads and writes (D101):
    /// each core's record in [`Team::cores`] order, and the launch's tensors.
    pub(crate) fn traced(
        &self,
        e: &mut PoolEngine,
        (team, into, fill): (Team, Option<&DeviceTensor>, Fill),
    ) -> Result<(Vec<Option<CoreAccesses>>, Vec<WatchedTensor>), EmuError> {
        let blob = self.place(e, into, fill)?;
        let team = team.with_trace();
        let (_, seen) = self.execute(e, &blob, team, Instant::now())?;
        let tensors = e.tensors.watched();
        Ok((seen.accesses, tensors))
    }

    /// Writes the blob for each core and runs the kernel on them: the run, and what the cores
    /// reported seeing of their accesses: what each touched of the team's watched range
    /// and, in a traced launch, every byte each read and wrote.
    fn execute(
        &self,
        e: &mut PoolEngine,
        blob: &ArgBlob,
        team: Team,
        start: Instant,
    ) -> Result<(Run, CoreReports), EmuError> {
        let (kernel, s) = (self.target.kernel.as_str(), self.settings);
        let lib = e.loaded.library().ok_or(EmuError::NoLibrary)?;
        let lib_file = lib.file();
        let run = team.cores();
        for &c in &run {
            e.tensors.write_blob(c, blob);
        }
        let guards = e.tensors.guards();
        let name = CString::new(kernel).map_err(|_| EmuError::StaleTarget {
            name: kernel.into(),
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
                session.kernel = e.loaded.compute_function(kernel);
                // Where the arguments are in place, where the backend knows better (D102).
                if let Some(at) = e.backend.entry_stop(req.core, &session.kernel) {
                    session.kernel = at;
                }
                // Absolute: `nrt-pool gdb` may run from another folder.
                session.library =
                    std::fs::canonicalize(&session.library).unwrap_or(session.library);
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
            let args = &blob.args[..(blob.num_args as usize).min(blob.args.len())];
            let sbuf = |t: &&customop_abi::descriptor::ArgTensor| {
                t.location == customop_abi::descriptor::LOCATION_SBUF
            };
            let sbuf_tensors = args.iter().chain([&blob.output]).filter(sbuf).count();
            let p = profile::Profile::of_launch(e.backend.name(), kernel, &launched, sbuf_tensors);
            e.last_profile = Some(p);
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
                    let fault = FaultReport::new(&e.tensors, &lib_file)
                        .of(c, record, kernel)
                        .with_output(stdio, &end.stderr);
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
            CoreReports {
                touched: launched.touched,
                accesses: launched.accesses,
            },
        ))
    }
}
