//! Device memory and the tensors in it: device tensors kept in HBM across launches
//! (allocated, uploaded, downloaded and released one by one), and a launch's own tensors,
//! placed with it in HBM or SBUF with guard pages after them, with the argument blob each
//! core reads.

use std::collections::HashMap;

use customop_abi::blob::{scratch, ArgBlob, ARG_TYPE_TENSOR};
use customop_abi::descriptor::ArgTensor;

use super::copy::{copy_parallel, fill_parallel, host_copy};
use super::error::EmuError;
use super::marshal::{empty_blob, named, Contents, Fill};
use super::memory::{self, DeviceMemory, MemoryError, Placed, PAGE};
use super::tensor::{self, DType, HostTensor, Location, TensorError};
use super::values::{device_descriptor, DeviceTensor, LaunchArg, OutputSpec};
use super::SCALAR_ROOM;

/// A tensor placed for the current launch (or resident), for fault reports.
#[derive(Clone, Debug)]
struct PlacedTensor {
    label: String,
    soc: u64,
    len: u64,
    /// Bytes per element (reports count elements).
    elem: u64,
    guard: Option<u64>,
}

/// The engine's device memory and the tensors in it (a part of [`PoolEngine`]).
pub struct DeviceTensors {
    pub memory: DeviceMemory,
    /// Place each tensor so that its first byte past the end is a guard page the cores
    /// protect: an out-of-bounds access is a reported fault naming the tensor (on by
    /// default; hardware would corrupt silently).
    pub guard_tensors: bool,
    /// This launch's tensors.
    placed: Vec<PlacedTensor>,
    /// Resident (device) tensors' guard pages, by SoC address.
    resident_guards: HashMap<u64, u64>,
    /// Inside [`PoolEngine::with_temporaries`]: the device tensors allocated since.
    temporaries: Option<Vec<u64>>,
}

impl DeviceTensors {
    /// Tensors in `memory`, guarded.
    pub(crate) fn new(memory: DeviceMemory) -> DeviceTensors {
        DeviceTensors {
            memory,
            guard_tensors: true,
            placed: Vec::new(),
            resident_guards: HashMap::new(),
            temporaries: None,
        }
    }

    /// A zeroed device tensor.
    pub fn alloc_device(
        &mut self,
        dtype: DType,
        shape: Vec<u64>,
    ) -> Result<DeviceTensor, EmuError> {
        let d = self.alloc_device_for_overwrite(dtype, shape)?;
        let n = self.device_len(&d);
        self.memory.zero(d.soc, n).ok_or(MemoryError::HbmFull {
            want: n as u64,
            left: 0,
        })?;
        Ok(d)
    }

    /// A device tensor whose bytes the caller is about to write in full
    /// ([`Self::device_bytes_mut`]): until then they are whatever that memory held.
    pub fn alloc_device_for_overwrite(
        &mut self,
        dtype: DType,
        shape: Vec<u64>,
    ) -> Result<DeviceTensor, EmuError> {
        tensor::validate_rank(&shape)?;
        let n = tensor::numel(&shape)
            .checked_mul(dtype.size() as u64)
            .ok_or(MemoryError::HbmFull {
                want: u64::MAX,
                left: 0,
            })?;
        let Placed { soc, guard } = self.memory.alloc_resident(n, self.guard_tensors)?;
        if let Some(g) = guard {
            self.resident_guards.insert(soc, g);
        }
        if let Some(t) = &mut self.temporaries {
            t.push(soc);
        }
        Ok(DeviceTensor { dtype, shape, soc })
    }

    pub(crate) fn device_len(&self, d: &DeviceTensor) -> usize {
        tensor::numel(&d.shape) as usize * d.dtype.size()
    }

    /// A device tensor's bytes, in place (no copy).
    /// Whether two device tensors' bytes overlap.
    pub(crate) fn overlap(&self, a: &DeviceTensor, b: &DeviceTensor) -> bool {
        let (la, lb) = (self.device_len(a) as u64, self.device_len(b) as u64);
        a.soc < b.soc + lb && b.soc < a.soc + la
    }

    pub fn device_bytes(&self, d: &DeviceTensor) -> Option<&[u8]> {
        self.memory.read(d.soc, self.device_len(d))
    }

    /// A device tensor's place in the device memory file: the file, the offset and the
    /// length, for copies between files that never touch the mapping (`sendfile`), so the
    /// kernel neither zeroes fresh pages first nor maps them into this process.
    pub fn device_file_range(&self, d: &DeviceTensor) -> Option<(&std::fs::File, u64, usize)> {
        let n = self.device_len(d);
        let off = self.memory.file_offset(d.soc, n)?;
        Some((self.memory.file(), off, n))
    }

    /// A device tensor's bytes, writable in place: a large tensor's pages are allocated up
    /// front in one call.
    pub fn device_bytes_mut(&mut self, d: &DeviceTensor) -> Option<&mut [u8]> {
        let n = self.device_len(d);
        self.memory.bytes_populated(d.soc, n)
    }

    /// A device tensor holding a copy of `t`.
    pub fn upload(&mut self, t: &HostTensor) -> Result<DeviceTensor, EmuError> {
        self.upload_bytes(t.dtype, t.shape.clone(), &t.data)
    }

    /// A device tensor of `dtype` and `shape` holding a copy of `bytes` (one copy, straight
    /// from the caller's buffer: a binding's array needs no staging tensor first).
    pub fn upload_bytes(
        &mut self,
        dtype: DType,
        shape: Vec<u64>,
        bytes: &[u8],
    ) -> Result<DeviceTensor, EmuError> {
        tensor::validate_len(dtype, &shape, bytes.len())?;
        let d = self.alloc_device_for_overwrite(dtype, shape)?;
        let dst = self.device_bytes_mut(&d).ok_or(MemoryError::HbmFull {
            want: bytes.len() as u64,
            left: 0,
        })?;
        copy_parallel(dst, bytes);
        Ok(d)
    }

    /// Starts keeping the device tensors allocated from now on, to release them together
    /// ([`PoolEngine::with_temporaries`]); false when already keeping them (nested).
    pub fn begin_temporaries(&mut self) -> bool {
        if self.temporaries.is_some() {
            return false;
        }
        self.temporaries = Some(Vec::new());
        true
    }

    /// Releases the device tensors allocated since [`Self::begin_temporaries`].
    pub fn end_temporaries(&mut self) {
        for soc in self.temporaries.take().unwrap_or_default() {
            self.free_resident(soc);
        }
    }

    /// Releases device tensor `d` (its handle must not be used again): its memory holds
    /// later device tensors. False, and nothing released, if `d` is not a live device
    /// tensor of this engine (released already, or from before a
    /// [`Self::free_device_tensors`]).
    pub fn free_device(&mut self, d: &DeviceTensor) -> bool {
        self.free_resident(d.soc)
    }

    /// Releases the device tensor at `soc` and forgets its guard page; whether it was live.
    pub(crate) fn free_resident(&mut self, soc: u64) -> bool {
        let live = self.memory.free_resident(soc);
        if live {
            self.resident_guards.remove(&soc);
        }
        live
    }

    /// What backs the device memory: huge pages or the system's shared-memory pages (D66).
    pub fn backing(&self) -> memory::Backing {
        self.memory.backing
    }

    /// Copies a device tensor's bytes into `dst` (exactly its length), one copy split over
    /// the CPUs when large: a binding's output buffer needs no staging tensor.
    pub fn download_into(&self, d: &DeviceTensor, dst: &mut [u8]) -> Result<(), EmuError> {
        let bytes = self.device_bytes(d).ok_or(MemoryError::HbmFull {
            want: self.device_len(d) as u64,
            left: 0,
        })?;
        tensor::validate_len(d.dtype, &d.shape, dst.len())?;
        copy_parallel(dst, bytes);
        Ok(())
    }

    /// A device tensor's bytes on the host.
    pub fn download(&self, d: &DeviceTensor) -> Result<HostTensor, EmuError> {
        let bytes = self.device_bytes(d).ok_or(MemoryError::HbmFull {
            want: self.device_len(d) as u64,
            left: 0,
        })?;
        Ok(HostTensor::new(d.dtype, d.shape.clone(), host_copy(bytes))?)
    }

    /// Releases every device tensor (their handles must not be used again).
    pub fn free_device_tensors(&mut self) {
        self.memory.reset_resident();
        self.resident_guards.clear();
    }

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

    /// Places the arguments and builds the argument blob (output still empty).
    fn marshal(
        &mut self,
        args: &[LaunchArg],
        labels: &[String],
        sbuf_next: &mut u64,
    ) -> Result<ArgBlob, EmuError> {
        let mut blob = empty_blob(args.len());
        for (i, a) in args.iter().enumerate() {
            blob.types[i] = ARG_TYPE_TENSOR;
            let label = labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("argument {i}"));
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
                    tensor::validate_rank(&d.shape).map_err(|e| named(&label, e.into()))?;
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
        tensor::validate_rank(shape)?;
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
                self.memory.validate_sbuf(end)?;
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

    /// Places the (checked) arguments and the output (in `device`, or placed with the
    /// launch, starting as `fill` says): the argument blob.
    pub(crate) fn place_launch(
        &mut self,
        args: &[LaunchArg],
        labels: &[String],
        spec: &OutputSpec,
        device: Option<&DeviceTensor>,
        fill: Fill,
    ) -> Result<ArgBlob, EmuError> {
        self.memory.reset_hbm();
        self.placed.clear();
        let mut sbuf_next = 0u64;
        let mut blob = self.marshal(args, labels, &mut sbuf_next)?;
        blob.check_fill = fill.heaps;
        blob.output = match device {
            Some(d) => {
                self.place_device("the output", d);
                if let (Some(p), Some(dst)) = (fill.output, self.device_bytes_mut(d)) {
                    fill_parallel(dst, p);
                }
                device_descriptor(d)
            }
            None => self
                .place(
                    "the output",
                    spec.dtype,
                    &spec.shape,
                    Contents::Fill(fill.output.unwrap_or(0)),
                    spec.location,
                    &mut sbuf_next,
                )
                .map_err(|e| named("the output", e))?,
        };
        Ok(blob)
    }

    /// The tensor whose guard page holds `soc`: "the output (16 bytes) at offset 16".
    pub(crate) fn tensor_at(&self, soc: u64) -> Option<String> {
        self.placed.iter().find_map(|t| {
            let g = t.guard?;
            (soc >= g && soc < g + PAGE)
                .then(|| format!("{} ({} bytes) at offset {}", t.label, t.len, soc - t.soc))
        })
    }

    /// The guard pages of this launch's tensors (none when tensors are not guarded).
    pub(crate) fn guards(&self) -> Vec<u64> {
        if !self.guard_tensors {
            return Vec::new();
        }
        self.placed.iter().filter_map(|t| t.guard).collect()
    }

    /// This launch's tensors as a traced run watches them.
    pub(crate) fn watched(&self) -> Vec<crate::accesses::WatchedTensor> {
        self.placed
            .iter()
            .map(|t| crate::accesses::WatchedTensor {
                label: t.label.clone(),
                soc: t.soc,
                len: t.len,
                elem: t.elem,
            })
            .collect()
    }

    /// The name of this launch's tensor at SoC `soc` ("argument 0 (x)", "the output"),
    /// else its address.
    pub(crate) fn label_at(&self, soc: u64) -> String {
        self.placed
            .iter()
            .find(|t| soc >= t.soc && soc - t.soc < t.len.max(1))
            .map_or_else(
                || format!("the tensor at SoC {soc:#x}"),
                |t| t.label.clone(),
            )
    }

    /// Forgets the last launch's tensors (a shape function places none).
    pub(crate) fn clear_placed(&mut self) {
        self.placed.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Device tensors are released one by one, in any order: their memory is reused, and
    /// once the lowest are gone, HBM's bottom-up launch tensors can use it again; a second
    /// release, or one from before a reset, changes nothing; uploads check their size.
    #[test]
    pub(crate) fn device_tensors_are_freed_one_by_one() {
        let mut t = DeviceTensors::new(DeviceMemory::with_reserve(64 << 20, 0).unwrap());
        let kept = t.upload_bytes(DType::U8, vec![4], &[1, 2, 3, 4]).unwrap();
        let a = t.upload_bytes(DType::F32, vec![1024], &[7; 4096]).unwrap();
        let b = t.alloc_device(DType::U8, vec![3 << 20]).unwrap();
        let c = t.alloc_device(DType::U8, vec![100]).unwrap();
        assert!(c.soc < b.soc && b.soc < a.soc && a.soc < kept.soc);
        // A middle one: its place is reused by a tensor that fits.
        assert!(t.free_device(&a));
        assert!(!t.free_device(&a), "a second release is refused");
        let a2 = t.alloc_device(DType::F32, vec![512]).unwrap();
        assert!(a2.soc > b.soc && a2.soc < kept.soc, "in a's old range");
        assert_eq!(
            t.device_bytes(&a2).unwrap(),
            &[0; 2048],
            "zeroed on allocation"
        );
        // All but `kept`, in any order: the whole range below it is free again, as one.
        for d in [&c, &a2, &b] {
            assert!(t.free_device(d));
        }
        let big = t.alloc_device(DType::U8, vec![60 << 20]).unwrap();
        assert!(big.soc < kept.soc);
        assert_eq!(t.device_bytes(&kept).unwrap(), &[1, 2, 3, 4]);
        assert!(t.free_device(&big));
        assert!(matches!(
            t.upload_bytes(DType::F32, vec![2], &[0; 7]),
            Err(EmuError::Tensor(TensorError::Size {
                want: 8,
                got: 7,
                ..
            }))
        ));
        // Temporaries go when the scope ends, kept tensors stay, failure or not.
        let probe = t.alloc_device(DType::U8, vec![64]).unwrap();
        assert!(t.free_device(&probe));
        assert!(t.begin_temporaries());
        t.upload_bytes(DType::U8, vec![1 << 20], &[9; 1 << 20])
            .unwrap();
        assert!(!t.begin_temporaries(), "nested: the outer scope's");
        t.alloc_device(DType::U8, vec![1 << 20]).unwrap();
        t.end_temporaries();
        let after = t.alloc_device(DType::U8, vec![64]).unwrap();
        assert_eq!(after.soc, probe.soc, "the temporaries' range is free again");
        t.free_device_tensors();
        assert!(!t.free_device(&kept), "gone with the reset");
    }
}
