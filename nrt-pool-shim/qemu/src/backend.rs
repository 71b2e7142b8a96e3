//! The engine's Xtensa backend: a library's Pool image (`libNAME.pool`) on QEMU cores, one
//! `qemu-system-xtensa` process per core, kept from launch to launch until it faults or the
//! library changes.
//!
//! Device memory stays the engine's. Stock QEMU cannot map it into a core (D56), so a launch
//! copies what the kernel may touch, the argument blob and every tensor it names, into each
//! core's pinned windows, and afterwards copies back the bytes each core changed (cores
//! write disjoint parts, as on hardware, so their changes merge). Shape functions run in the
//! library's host build beside the image (`libNAME.so`), as PyTorch runs them on the host.

use std::ffi::CStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use neuroncustomop::descriptor::{isa_dtype_size, ArgTensor};
use neuroncustomop::runtime::{scratch, ArgBlob, MAX_ARGS};
use nrt_pool_engine::backend::{HostBackend, IsaBackend};
use nrt_pool_engine::control::{ControlBlock, FaultKind, ACCESS_WRITE, CORE_DONE, PHASE_START};
use nrt_pool_engine::core::FAULT_EXIT;
use nrt_pool_engine::library::OpLibrary;
use nrt_pool_engine::memory::DeviceMemory;
use nrt_pool_engine::pool::{CoreExit, Exit};

use crate::core::{pool_cores, QemuError, XtensaCore};
use crate::fault::{CoreFault, FaultCause};
use crate::layout;

/// The pattern written after each guarded tensor on an Xtensa core, and its length.
const CANARY: u8 = 0xA5;
const CANARY_BYTES: usize = 64;

/// The Xtensa backend.
pub struct XtensaBackend {
    board: PathBuf,
    /// The loaded library's file and its cores' images.
    images: Option<(PathBuf, Vec<Vec<u8>>)>,
    cores: Vec<Option<XtensaCore>>,
    /// Shape functions, in the host build beside the image.
    host: HostBackend,
}

impl XtensaBackend {
    /// A backend whose cores run under `board` (pool-board.elf).
    pub fn new(board: PathBuf) -> XtensaBackend {
        XtensaBackend {
            board,
            images: None,
            cores: (0..layout::CORES).map(|_| None).collect(),
            host: HostBackend::default(),
        }
    }

    fn images(&mut self, library: &OpLibrary) -> Result<&[Vec<u8>], QemuError> {
        let file = library.file();
        if self.images.as_ref().map(|(p, _)| p) != Some(&file) {
            self.stop_cores();
            let cores = pool_cores(&file).map_err(|e| match e {
                QemuError::Image { why, .. } => QemuError::Image {
                    path: library.path.clone(),
                    why,
                },
                e => e,
            })?;
            if cores.len() != layout::CORES {
                return Err(QemuError::Image {
                    path: library.path.clone(),
                    why: format!("{} core images; the engine runs 8", cores.len()),
                });
            }
            self.images = Some((file, cores));
        }
        Ok(&self.images.as_ref().expect("set above").1)
    }

    fn stop_cores(&mut self) {
        for c in self.cores.iter_mut() {
            if let Some(core) = c.take() {
                core.quit();
            }
        }
    }

    /// Core `c`, started if it is not running.
    fn core(
        &mut self,
        library: &OpLibrary,
        c: usize,
        cores: usize,
        deadline: Instant,
    ) -> Result<&mut XtensaCore, QemuError> {
        if self.cores[c].is_none() {
            let board = self.board.clone();
            let elf = self.images(library)?[c].clone();
            let core = XtensaCore::start(&board, &elf, &library.path, c, cores as u32, deadline)?;
            if core.entry_status() != 0 {
                return Err(QemuError::Protocol {
                    core: c,
                    why: format!("entry_func returned {}", core.entry_status()),
                });
            }
            self.cores[c] = Some(core);
        }
        Ok(self.cores[c].as_mut().expect("started above"))
    }
}

fn control(memory: &DeviceMemory) -> ControlBlock {
    // SAFETY: the status region is the control block (DeviceMemory's layout).
    unsafe { ControlBlock::new(memory.status_host()) }
}

/// Records `e` as core `c`'s fault in the control block; the exit the engine sees.
fn report(memory: &DeviceMemory, c: usize, e: &QemuError) -> Exit {
    let ctl = control(memory);
    let (kind, addr, exit) = match e {
        QemuError::Fault(f) => match f {
            CoreFault::Exception {
                cause,
                address,
                window,
                ..
            } => {
                let kind = if *window || cause.has_address() {
                    FaultKind::Memory
                } else {
                    FaultKind::Trap
                };
                // The host address of the SoC byte the core touched, so the engine can name
                // the tensor it belongs to.
                let host = (cause.has_address() && *cause != FaultCause::Break)
                    .then(|| soc_of_local(*address))
                    .flatten()
                    .and_then(|soc| memory.host(soc, 1))
                    .map_or(0, |p| p as u64);
                (kind, host, Exit::Code(FAULT_EXIT))
            }
            CoreFault::Fatal { .. } => (FaultKind::Fatal, 0, Exit::Code(FAULT_EXIT)),
            CoreFault::Timeout { .. } => (FaultKind::Timeout, 0, Exit::TimedOut),
            CoreFault::Exited { status, .. } => {
                (FaultKind::Exited, 0, Exit::Code(status.unwrap_or(-1)))
            }
        },
        QemuError::NoKernel { .. } => (FaultKind::NoKernel, 0, Exit::Code(FAULT_EXIT)),
        QemuError::Image { .. } => (FaultKind::Load, 0, Exit::Code(FAULT_EXIT)),
        _ => (FaultKind::Exited, 0, Exit::Code(FAULT_EXIT)),
    };
    let msg = match e {
        QemuError::Fault(CoreFault::Fatal { message, .. }) => message.clone(),
        // The report without a leading "core N: " (the engine names the core).
        e => {
            let s = e.to_string();
            let s = match s.strip_prefix("core ") {
                Some(rest) => rest.split_once(": ").map_or(s.as_str(), |(_, r)| r),
                None => s.as_str(),
            };
            s.as_bytes().to_vec()
        }
    };
    ctl.set_fault(c, kind, 0, addr, &msg);
    exit
}

/// The SoC address a core-local address shows, through the pinned windows.
fn soc_of_local(local: u32) -> Option<u64> {
    let l = u64::from(local);
    let (sbuf, hbm) = (
        u64::from(layout::SBUF_WINDOW),
        u64::from(layout::HBM_WINDOW),
    );
    if (hbm..hbm + layout::WINDOW_SPAN).contains(&l) {
        Some(layout::HBM_SOC + (l - hbm))
    } else if (sbuf..sbuf + layout::WINDOW_SPAN).contains(&l) {
        Some(layout::SBUF_SOC + (l - sbuf))
    } else {
        None
    }
}

/// A tensor the kernel may read or write: its SoC address and length.
fn regions(blob: &ArgBlob) -> Vec<(u64, usize)> {
    let n = (blob.num_args as usize).min(MAX_ARGS);
    blob.args[..n]
        .iter()
        .chain(std::iter::once(&blob.output))
        .filter_map(|t: &ArgTensor| {
            let len = t.num_elem().checked_mul(isa_dtype_size(t.dtype))?;
            let soc = t.soc_addr(blob.sbuf_base)?;
            // Scalars are 1-element tensors the runtime reads 8 bytes of.
            Some((soc, if t.num_elem() == 1 { len.max(8) } else { len }))
        })
        .collect()
}

impl IsaBackend for XtensaBackend {
    fn name(&self) -> &'static str {
        "xtensa"
    }

    /// The op images and the cores' hbm_scratch take HBM's first 32 MiB, and the cores
    /// reach HBM through their 64 MiB pinned window (D56).
    fn hbm_layout(&self) -> (u64, Option<u64>) {
        (
            layout::TENSORS_SOC - layout::HBM_SOC,
            Some(layout::TENSORS_END - layout::HBM_SOC),
        )
    }

    fn probe(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        deadline: Instant,
    ) -> io::Result<CoreExit> {
        self.stop_cores();
        self.images = None;
        let ctl = control(memory);
        let rec = ctl.core(0);
        ctl.set_phase(0, PHASE_START);
        let started = self
            .images(library)
            .map(|i| i[0].clone())
            .and_then(|elf| XtensaCore::start(&self.board, &elf, &library.path, 0, 8, deadline));
        let core = match started {
            Ok(core) => core,
            Err(e @ QemuError::Spawn(_)) => return Err(io::Error::other(e.to_string())),
            Err(e) => {
                let exit = report(memory, 0, &e);
                return Ok(CoreExit {
                    exit,
                    stderr: Vec::new(),
                });
            }
        };
        if core.entry_status() != 0 {
            rec.result.store(core.entry_status(), Ordering::Release);
            ctl.set_fault(0, FaultKind::Entry, 0, 0, b"entry_func");
            core.quit();
            return Ok(CoreExit {
                exit: Exit::Code(FAULT_EXIT),
                stderr: Vec::new(),
            });
        }
        for k in core.kernels() {
            ctl.push_name(&k.name);
        }
        if !core.metadata().is_empty() {
            ctl.set_schema(core.metadata());
        }
        rec.result
            .store(core.kernels().len() as u32, Ordering::Release);
        rec.state.store(CORE_DONE, Ordering::Release);
        core.quit();
        Ok(CoreExit {
            exit: Exit::Code(0),
            stderr: Vec::new(),
        })
    }

    fn launch(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        kernel: &CStr,
        cores: usize,
        deadline: Instant,
    ) -> io::Result<Vec<CoreExit>> {
        let ctl = control(memory);
        let mut exits: Vec<CoreExit> = (0..cores)
            .map(|_| CoreExit {
                exit: Exit::Code(0),
                stderr: Vec::new(),
            })
            .collect();
        // What each core was given, to find what it changed.
        let mut staged: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); cores];
        let mut running = vec![false; cores];
        // The guard pages the engine placed after the tensors (when it guards them): the
        // cores cannot protect them, so the first bytes of each hold a known pattern and a
        // kernel that wrote past a tensor's end is found when it returns.
        let canaries: Vec<(u64, u32)> = ctl
            .guards()
            .into_iter()
            .filter_map(|g| {
                let local = layout::local_of(g)?;
                (layout::local_of(g + CANARY_BYTES as u64 - 1)
                    == Some(local + CANARY_BYTES as u32 - 1))
                .then_some((g, local))
            })
            .collect();
        for c in 0..cores {
            let (p, _) = memory.scratch_host(c);
            // SAFETY: the engine wrote an ArgBlob at ARG_BLOB of this core's scratch area.
            let blob = unsafe { p.add(scratch::ARG_BLOB).cast::<ArgBlob>().read_unaligned() };
            let blob_bytes =
                // SAFETY: as above; the blob's bytes, read where the engine wrote them.
                unsafe { std::slice::from_raw_parts(p.add(scratch::ARG_BLOB), size_of::<ArgBlob>()) }
                    .to_vec();
            let begun = (|| -> Result<(), QemuError> {
                let mut loads = Vec::new();
                for (soc, len) in regions(&blob) {
                    let local = layout::local_of(soc)
                        .filter(|l| layout::local_of(soc + len as u64 - 1) == Some(l + len as u32 - 1))
                        .ok_or_else(|| QemuError::Protocol {
                            core: c,
                            why: format!(
                                "a tensor at SoC {soc:#x} (+{len:#x}) lies outside the Xtensa core's HBM and SBUF windows"
                            ),
                        })?;
                    let bytes = memory.read(soc, len).ok_or_else(|| QemuError::Protocol {
                        core: c,
                        why: format!("no device memory at SoC {soc:#x} (+{len:#x})"),
                    })?;
                    loads.push((soc, local, bytes.to_vec()));
                }
                let core = self.core(library, c, cores, deadline)?;
                let k = core.kernel(kernel.to_bytes()).ok_or(QemuError::NoKernel {
                    core: c,
                    kernel: usize::MAX,
                    count: core.kernels().len(),
                })?;
                for (_, local, bytes) in &loads {
                    core.load(*local, bytes)?;
                }
                core.load(layout::DATA_SCRATCH + scratch::ARG_BLOB as u32, &blob_bytes)?;
                for &(_, local) in &canaries {
                    core.load(local, &[CANARY; CANARY_BYTES])?;
                }
                core.begin(k, cores as u32)?;
                staged[c] = loads.into_iter().map(|(s, _, b)| (s, b)).collect();
                Ok(())
            })();
            match begun {
                Ok(()) => running[c] = true,
                Err(QemuError::NoKernel { .. }) => {
                    ctl.set_fault(c, FaultKind::NoKernel, 0, 0, kernel.to_bytes());
                    exits[c].exit = Exit::Code(FAULT_EXIT);
                }
                Err(e) => {
                    exits[c].exit = report(memory, c, &e);
                    self.cores[c] = None;
                }
            }
        }
        for c in 0..cores {
            if !running[c] {
                continue;
            }
            let core = self.cores[c].as_mut().expect("begun above");
            let done = core.finish(deadline).and_then(|done| {
                let mut changes = Vec::new();
                for (soc, before) in &staged[c] {
                    let local = layout::local_of(*soc).expect("checked when staged");
                    let after = core.dump(local, before.len() as u32, deadline)?;
                    changes.push((*soc, before, after));
                }
                let mut past = None;
                for &(g, local) in &canaries {
                    let seen = core.dump(local, CANARY_BYTES as u32, deadline)?;
                    if let Some(k) = seen.iter().position(|&b| b != CANARY) {
                        past = past.or(Some(g + k as u64));
                    }
                }
                Ok((done, changes, past))
            });
            match done {
                Ok((_, _, Some(soc))) => {
                    // As a guard page would have stopped it on a host core: a write fault at
                    // the first byte changed past the tensor (the engine names the tensor).
                    let host = memory.host(soc, 1).map_or(0, |p| p as u64);
                    ctl.set_fault(
                        c,
                        FaultKind::Memory,
                        0,
                        host,
                        b"wrote past the end of a tensor (found when the kernel returned: Xtensa cores check the bytes after each tensor)",
                    );
                    ctl.core(c).access.store(ACCESS_WRITE, Ordering::Release);
                    exits[c].exit = Exit::Code(FAULT_EXIT);
                }
                Ok((done, changes, None)) => {
                    for (soc, before, after) in changes {
                        write_changes(memory, soc, before, &after);
                    }
                    let rec = ctl.core(c);
                    rec.result.store(done.status, Ordering::Release);
                    rec.state.store(CORE_DONE, Ordering::Release);
                    // Core 0's stdio reaches the host, as the firmware's does.
                    if c == 0 {
                        ctl.stdio_append(1, 0, &done.stdout);
                        ctl.stdio_append(2, 0, &done.stderr);
                    }
                }
                Err(e) => {
                    exits[c].exit = report(memory, c, &e);
                    self.cores[c] = None;
                }
            }
        }
        Ok(exits)
    }

    fn shape(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        op: &CStr,
        deadline: Instant,
    ) -> io::Result<CoreExit> {
        let host = companion(&library.path).ok_or_else(|| {
            io::Error::other(format!(
                "{}: shape functions run in the library's host build, and there is no {} beside it",
                library.path.display(),
                library.path.with_extension("so").display()
            ))
        })?;
        let lib = OpLibrary::locate(&host).map_err(io::Error::other)?;
        self.host.shape(memory, &lib, op, deadline)
    }

    fn shutdown(&mut self) {
        self.stop_cores();
        self.host.shutdown();
    }
}

/// `libNAME.so` beside `libNAME.pool`, if there.
fn companion(pool: &Path) -> Option<PathBuf> {
    let so = pool.with_extension("so");
    so.is_file().then_some(so)
}

/// Writes the bytes of `after` that differ from `before` into device memory at `soc`.
fn write_changes(memory: &DeviceMemory, soc: u64, before: &[u8], after: &[u8]) {
    let mut i = 0;
    while i < before.len() {
        if before[i] == after[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < before.len() && before[i] != after[i] {
            i += 1;
        }
        if let Some(p) = memory.host(soc + start as u64, (i - start) as u64) {
            // SAFETY: `p` spans i - start bytes of the shared device mapping (host() checked
            // the range); no core process writes it while the launch is being collected.
            unsafe { std::ptr::copy_nonoverlapping(after[start..i].as_ptr(), p, i - start) };
        }
    }
}

impl Drop for XtensaBackend {
    fn drop(&mut self) {
        self.stop_cores();
    }
}
