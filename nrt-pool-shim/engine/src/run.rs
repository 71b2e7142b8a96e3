//! Running a launch on the cores and turning what they report into a completion or a fault.

use super::*;

impl PoolEngine {
    /// Runs a launch to completion or to its first fault; the output comes back to the host.
    pub fn launch(&mut self, l: &Launch) -> Result<Completion, EmuError> {
        let start = Instant::now();
        let kernel = self.kernel_name(&l.kernel)?;
        self.check_launch(&kernel, &l.args, l.cores, l.output.dtype, &l.output.shape)?;
        let (out, run, phases) = self.run_checked(
            &kernel,
            &l.args,
            &l.output,
            l.cores,
            Destination::Host,
            start,
        )?;
        Ok(Completion {
            output: out.expect("a host destination gives a host tensor"),
            stdout: run.stdout,
            stderr: run.stderr,
            stdio_dropped: run.stdio_dropped,
            results: run.results,
            elapsed: run.elapsed,
            phases,
        })
    }

    /// A launch whose output is a device tensor (nothing is copied back).
    pub fn launch_into(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        out: &DeviceTensor,
        cores: usize,
    ) -> Result<Run, EmuError> {
        let start = Instant::now();
        let kernel = &self.kernel_name(kernel)?;
        self.check_launch(kernel, args, cores, out.dtype, &out.shape)?;
        let spec = OutputSpec {
            dtype: out.dtype,
            shape: out.shape.clone(),
            location: Location::Hbm,
        };
        let to = Destination::Device(out.clone());
        let (_, run, _) = self.run_checked(kernel, args, &spec, cores, to, start)?;
        Ok(run)
    }

    /// The one launch path under every entry point: places the (checked) arguments and the
    /// output, runs the kernel on `cores` cores and delivers the output to `to` (a buffer
    /// exactly the output's length).
    pub(crate) fn run_checked(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        spec: &OutputSpec,
        cores: usize,
        to: Destination<'_>,
        start: Instant,
    ) -> Result<(Option<HostTensor>, Run, LaunchPhases), EmuError> {
        self.memory.reset_hbm();
        self.placed.clear();
        let mut sbuf_next = 0u64;
        let mut blob = self.marshal(kernel, args, &mut sbuf_next)?;
        blob.output = match &to {
            Destination::Device(d) => {
                self.place_device("the output", d);
                device_descriptor(d)
            }
            Destination::Host | Destination::Buffer(_) => self
                .place(
                    "the output",
                    spec.dtype,
                    &spec.shape,
                    None,
                    spec.location,
                    &mut sbuf_next,
                )
                .map_err(|e| named("the output", e))?,
        };
        let placed = Instant::now();
        let mut run = self.execute(kernel, &blob, cores, start)?;
        let ran = Instant::now();
        let output = match to {
            Destination::Device(_) => None,
            Destination::Host => {
                let bytes = host_copy(self.placed_bytes(&blob.output, spec.dtype)?);
                Some(HostTensor::new(spec.dtype, spec.shape.clone(), bytes)?)
            }
            Destination::Buffer(dst) => {
                copy_parallel(dst, self.placed_bytes(&blob.output, spec.dtype)?);
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

    /// Writes the blob for each core and runs the kernel on them.
    pub(crate) fn execute(
        &mut self,
        kernel: &str,
        blob: &ArgBlob,
        cores: usize,
        start: Instant,
    ) -> Result<Run, EmuError> {
        let lib = self.library.as_ref().ok_or(EmuError::NoLibrary)?;
        let lib_file = lib.file();
        for c in 0..cores {
            self.write_blob(c, blob);
        }
        let ctl = self.control();
        ctl.reset();
        let guards: Vec<u64> = if self.guard_tensors {
            self.placed.iter().filter_map(|t| t.guard).collect()
        } else {
            Vec::new()
        };
        ctl.set_guards(&guards);
        let name = CString::new(kernel).map_err(|_| EmuError::UnknownKernel {
            kernel: kernel.into(),
            known: self.kernels.clone(),
        })?;
        let deadline = self.deadline();
        let exits = self
            .backend
            .launch(&self.memory, lib, &name, cores, &deadline)
            .map_err(EmuError::Spawn)?;
        if deadline.interrupted() {
            // The cores still running were stopped, as after a timeout; their output is
            // dropped with them.
            let _ = self.take_output(&ctl);
            return Err(EmuError::Interrupted {
                what: format!("kernel '{kernel}'"),
            });
        }
        let (stdout, mut stderr, dropped) = self.take_output(&ctl);
        let mut results = Vec::with_capacity(cores);
        for (c, CoreExit { exit, stderr: fd2 }) in exits.iter().enumerate() {
            let rec = ctl.core(c);
            if rec.state.load(Ordering::Acquire) == CORE_DONE && *exit == Exit::Code(0) {
                results.push(rec.result.load(Ordering::Acquire) as i32);
                continue;
            }
            let mut fault = self.fault_of(c, *exit, kernel, &lib_file);
            fault.stdout = stdout;
            // What the faulting core wrote to fd 2 (a failed assert's message), once.
            stderr.extend_from_slice(fd2);
            fault.stderr = stderr;
            return Err(EmuError::Fault(Box::new(fault)));
        }
        // Core 0's fd 2 reaches the host, as its printf does; the other cores' does not.
        if let Some(first) = exits.first() {
            stderr.extend_from_slice(&first.stderr);
        }
        Ok(Run {
            stdout,
            stderr,
            stdio_dropped: dropped,
            results,
            elapsed: start.elapsed(),
        })
    }

    pub(crate) fn fault_of(
        &self,
        c: usize,
        exit: Exit,
        kernel: &str,
        library: &Path,
    ) -> DeviceFault {
        let ctl = self.control();
        let rec = ctl.core(c);
        let mut fault = DeviceFault {
            kernel: kernel.into(),
            core: c,
            kind: FaultKind::Exited,
            phase: PHASE_KERNEL,
            soc_addr: None,
            host_addr: None,
            location: None,
            access: None,
            tensor: None,
            message: String::new(),
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
        if rec.state.load(Ordering::Acquire) == CORE_FAULT {
            fault.kind =
                FaultKind::from_u32(rec.kind.load(Ordering::Acquire)).unwrap_or(FaultKind::Exited);
            fault.phase = rec.phase.load(Ordering::Acquire);
            let a = rec.addr.load(Ordering::Acquire);
            fault.host_addr = (a != 0).then_some(a);
            fault.soc_addr = fault.host_addr.and_then(|h| self.memory.soc_of(h));
            fault.message = ctl.message(c);
            if fault.kind == FaultKind::Entry {
                let s = rec.result.load(Ordering::Acquire);
                fault.message = format!("entry_func returned {s} ({})", status_name(s));
            }
            fault.access = match rec.access.load(Ordering::Acquire) {
                ACCESS_READ => Some("read"),
                ACCESS_WRITE => Some("write"),
                _ => None,
            };
            let pc = rec.pc.load(Ordering::Acquire);
            let base = rec.module_base.load(Ordering::Acquire);
            if pc != 0 {
                fault.location = Some(match symbolize::locate(library, base, pc) {
                    Some(sym) => format!("{sym} (host {pc:#x})"),
                    None => format!("host {pc:#x}"),
                });
            }
            if let Some(soc) = fault.soc_addr {
                fault.tensor = self.tensor_at(soc);
            }
        } else {
            fault.message = match exit {
                Exit::TimedOut => {
                    fault.kind = FaultKind::Timeout;
                    format!("still running after {:?}; stopped", self.timeout)
                }
                Exit::Signal(s) => format!("killed by {}", core::signal_name(s)),
                Exit::Code(code) => {
                    format!("the core's process exited with code {code} before the kernel returned")
                }
            };
            // A core that ended during its start keeps the phase it reported.
            let phase = rec.phase.load(Ordering::Acquire);
            if phase == PHASE_LOAD || phase == control::PHASE_START {
                fault.phase = phase;
            }
        }
        fault
    }

    /// The tensor whose guard page holds `soc`: "the output (16 bytes) at offset 16".
    pub(crate) fn tensor_at(&self, soc: u64) -> Option<String> {
        self.placed.iter().find_map(|t| {
            let g = t.guard?;
            (soc >= g && soc < g + PAGE)
                .then(|| format!("{} ({} bytes) at offset {}", t.label, t.len, soc - t.soc))
        })
    }
}

/// Appends the stdio ring's entries to `out` (fd 1) and `err` (fd 2) while the two hold at
/// most `cap` bytes; the bytes the ring dropped or that did not fit.
pub(crate) fn drain_stdio(
    ctl: &ControlBlock,
    out: &mut Vec<u8>,
    err: &mut Vec<u8>,
    cap: usize,
) -> u32 {
    let (entries, mut dropped) = ctl.stdio_drain();
    for (fd, b) in entries {
        if out.len() + err.len() + b.len() > cap {
            dropped = dropped.saturating_add(b.len() as u32);
            continue;
        }
        if fd == 2 { &mut *err } else { &mut *out }.extend_from_slice(&b);
    }
    dropped
}
