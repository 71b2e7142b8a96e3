//! A core's fault report: the backend's record with the SoC address, the tensor it falls
//! after, the instruction and the stack named from the op library, and what came out
//! before it.

use std::path::Path;

use customop_abi::control::FaultKind;

use super::backend::{self, FaultRecord, Stack};
use super::device_tensors::DeviceTensors;
use super::error::{status_name, DeviceFault};
use super::symbolize;

/// What a fault report is read against: device memory and the library's file.
pub(crate) struct FaultReport<'a> {
    tensors: &'a DeviceTensors,
    library: &'a Path,
}

impl<'a> FaultReport<'a> {
    pub(crate) fn new(tensors: &'a DeviceTensors, library: &'a Path) -> FaultReport<'a> {
        FaultReport { tensors, library }
    }

    /// The report of core `c`'s fault in `kernel` (a kernel, or the start code or a shape
    /// function named so).
    pub(crate) fn of(&self, c: usize, record: &FaultRecord, kernel: &str) -> DeviceFault {
        let soc_addr = record.host_addr.and_then(|h| self.tensors.memory.soc_of(h));
        let message = if record.kind == FaultKind::Entry {
            let s = record.status;
            format!("entry_func returned {s} ({})", status_name(s))
        } else {
            record.message.clone()
        };
        // The library's file, read and parsed once for the instruction's name and the stack.
        let wanted = record.pc.is_some() || matches!(record.stack, Stack::Host { .. });
        let bytes = wanted.then(|| std::fs::read(self.library).ok()).flatten();
        let named = bytes.as_deref().and_then(symbolize::Symbolizer::new);
        let file_name = self
            .library
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
            tensor: soc_addr.and_then(|soc| self.tensors.tensor_at(soc)),
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
}
