//! Placing a launch's arguments and output in device memory and building the argument
//! blob each core reads; the checks a launch passes first.

use super::*;

impl PoolEngine {
    /// Core `c`'s argument blob (in its data scratch area).
    pub(crate) fn write_blob(&self, c: usize, blob: &ArgBlob) {
        let (p, _) = self.memory.scratch_host(c);
        // SAFETY: the blob's place in this core's data scratch area (inside the region,
        // which is 64 KiB); unaligned-safe write.
        unsafe {
            p.add(scratch::ARG_BLOB)
                .cast::<ArgBlob>()
                .write_unaligned(*blob)
        };
    }

    pub(crate) fn read_blob(&self, c: usize) -> ArgBlob {
        let (p, _) = self.memory.scratch_host(c);
        // SAFETY: as write_blob; the core wrote it (plain data, any bits valid).
        unsafe { p.add(scratch::ARG_BLOB).cast::<ArgBlob>().read_unaligned() }
    }

    /// Records a device tensor used by this launch (its guard page, if it has one).
    pub(crate) fn place_device(&mut self, label: &str, d: &DeviceTensor) {
        let len = tensor::numel(&d.shape) * d.dtype.size() as u64;
        self.placed.push(PlacedTensor {
            label: label.into(),
            soc: d.soc,
            len,
            elem: d.dtype.size() as u64,
            guard: self.resident_guards.get(&d.soc).copied(),
        });
    }

    /// "argument N (name)" for fault reports and errors.
    pub(crate) fn arg_label(&self, kernel: &str, i: usize) -> String {
        let name = self
            .library
            .as_ref()
            .and_then(|l| l.signature(kernel))
            .and_then(|s| s.params.get(i))
            .map(|p| format!(" ({})", p.name));
        format!("argument {i}{}", name.unwrap_or_default())
    }

    /// Places the arguments and builds the argument blob (output still empty).
    pub(crate) fn marshal(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        sbuf_next: &mut u64,
    ) -> Result<ArgBlob, EmuError> {
        let mut blob = empty_blob(args.len());
        for (i, a) in args.iter().enumerate() {
            blob.types[i] = ARG_TYPE_TENSOR;
            let label = self.arg_label(kernel, i);
            let (dtype, shape, data, loc) = match a {
                LaunchArg::Tensor(t, loc) => (t.dtype, t.shape.as_slice(), t.data.as_slice(), *loc),
                LaunchArg::Scalar(dt, bytes) => {
                    if bytes.len() != dt.size() {
                        return Err(TensorError::Size {
                            dtype: *dt,
                            shape: vec![1],
                            want: dt.size() as u64,
                            got: bytes.len() as u64,
                        }
                        .into());
                    }
                    // The scalar pulls read up to 8 bytes whatever the dtype (as the
                    // vendor's do): the 1-element tensor gets 8 bytes of room, zero-filled.
                    let mut padded = bytes.clone();
                    padded.resize(SCALAR_ROOM, 0);
                    blob.args[i] = self
                        .place(
                            &label,
                            *dt,
                            &[1],
                            Contents::Bytes(&padded),
                            Location::Hbm,
                            sbuf_next,
                        )
                        .map_err(|e| named(&label, e))?;
                    continue;
                }
                LaunchArg::Device(d) => {
                    tensor::check_rank(&d.shape).map_err(|e| named(&label, e.into()))?;
                    blob.args[i] = device_descriptor(d);
                    self.place_device(&label, d);
                    continue;
                }
            };
            blob.args[i] = self
                .place(&label, dtype, shape, Contents::Bytes(data), loc, sbuf_next)
                .map_err(|e| named(&label, e))?;
        }
        Ok(blob)
    }

    /// Places one tensor (or a scalar's room) for this launch, in HBM or SBUF, with a guard
    /// page after it when tensors are guarded.
    pub(crate) fn place(
        &mut self,
        label: &str,
        dtype: DType,
        shape: &[u64],
        data: Contents<'_>,
        loc: Location,
        sbuf_next: &mut u64,
    ) -> Result<ArgTensor, EmuError> {
        tensor::check_rank(shape)?;
        // Bytes placed: the tensor's, or the data given (a scalar's room).
        let n = match data {
            Contents::Bytes(d) => d.len() as u64,
            Contents::Fill(_) => tensor::numel(shape) * dtype.size() as u64,
        };
        let dims: Vec<u32> = shape.iter().map(|&d| d as u32).collect();
        let (t, soc, guard) = match loc {
            Location::Hbm => {
                let p = self.memory.alloc_hbm(n, self.guard_tensors)?;
                (ArgTensor::hbm(dtype.isa(), p.soc, &dims), p.soc, p.guard)
            }
            Location::Sbuf => {
                // Guarded: the tensor ends where a page starts, and that page stays unused.
                let (off, guard) = if self.guard_tensors {
                    let pages = n.div_ceil(PAGE) * PAGE;
                    let off = sbuf_next.next_multiple_of(PAGE) + (pages - n);
                    (off, Some(off + n))
                } else {
                    (sbuf_next.next_multiple_of(64), None)
                };
                let end = off + n + guard.map_or(0, |_| PAGE);
                self.memory.check_sbuf(end)?;
                *sbuf_next = end;
                // One partition: the runtime addresses SBUF tensors as contiguous bytes
                // from the SBUF base (docs/decisions.md, "SBUF tensors in the emulator").
                (
                    ArgTensor::sbuf(dtype.isa(), off as u32, &dims, 1),
                    memory::SBUF_BASE + off,
                    guard.map(|g| memory::SBUF_BASE + g),
                )
            }
        };
        let dst = self
            .memory
            .bytes_populated(soc, n as usize)
            .ok_or(MemoryError::HbmFull { want: n, left: 0 })?;
        match data {
            Contents::Bytes(d) => copy_parallel(dst, d),
            Contents::Fill(b) => fill_parallel(dst, b),
        }
        self.placed.push(PlacedTensor {
            label: label.into(),
            soc,
            len: n,
            elem: dtype.size() as u64,
            guard,
        });
        Ok(t)
    }

    /// A placed tensor's bytes, in place (the engine places tensors in HBM or SBUF only).
    pub(crate) fn placed_bytes(&self, t: &ArgTensor, dtype: DType) -> Result<&[u8], EmuError> {
        let n = t.num_elem() * dtype.size();
        let soc = t.soc_addr(memory::SBUF_BASE).unwrap_or(0);
        Ok(self.memory.read(soc, n).ok_or(MemoryError::HbmFull {
            want: n as u64,
            left: 0,
        })?)
    }
}

/// What a placed tensor starts as: the caller's bytes, or every byte one value (an output:
/// zero, or a checked launch's poison).
#[derive(Clone, Copy)]
pub(crate) enum Contents<'a> {
    Bytes(&'a [u8]),
    Fill(u8),
}

/// How a run's memory starts (issue #27): its output (placed with the launch, or a device
/// destination, which `None` leaves as it is and a placed output gets zeroed), and the
/// byte the runtime fills new heap blocks with (0: none). Unchecked launches: the default.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fill {
    pub output: Option<u8>,
    pub heaps: u8,
}

impl Fill {
    /// A checked run's: the output and new heap blocks all `poison`.
    pub(crate) fn poison(poison: u8) -> Fill {
        Fill {
            output: Some(poison),
            heaps: poison,
        }
    }
}

/// An argument blob for `n` arguments, nothing placed yet.
pub(crate) fn empty_blob(n: usize) -> ArgBlob {
    ArgBlob::empty(n as u32, memory::SBUF_BASE)
}

/// An `EmuError` about one argument (or the output), with its label.
pub(crate) fn named(what: &str, e: EmuError) -> EmuError {
    match e {
        EmuError::Tensor(source) => EmuError::Argument {
            what: what.into(),
            source,
        },
        other => other,
    }
}
