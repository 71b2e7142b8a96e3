//! Device tensors: kept in HBM across launches, uploaded, downloaded and released one by one.

use super::*;

impl PoolEngine {
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
    /// ([`PoolEngine::device_bytes_mut`]): until then they are whatever that memory held.
    pub fn alloc_device_for_overwrite(
        &mut self,
        dtype: DType,
        shape: Vec<u64>,
    ) -> Result<DeviceTensor, EmuError> {
        tensor::check_rank(&shape)?;
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
        tensor::check_len(dtype, &shape, bytes.len())?;
        let d = self.alloc_device_for_overwrite(dtype, shape)?;
        let dst = self.device_bytes_mut(&d).ok_or(MemoryError::HbmFull {
            want: bytes.len() as u64,
            left: 0,
        })?;
        copy_parallel(dst, bytes);
        Ok(d)
    }

    /// Runs `f`, then releases every device tensor allocated while it ran (a binding's
    /// arguments copied in for one call), whether `f` succeeded or not. Nested, the inner
    /// call's tensors go with the outer one's.
    pub fn with_temporaries<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        if self.temporaries.is_some() {
            return f(self);
        }
        self.temporaries = Some(Vec::new());
        let r = f(self);
        for soc in self.temporaries.take().unwrap_or_default() {
            self.free_resident(soc);
        }
        r
    }

    /// Releases device tensor `d` (its handle must not be used again): its memory holds
    /// later device tensors. False, and nothing released, if `d` is not a live device
    /// tensor of this engine (released already, or from before a
    /// [`PoolEngine::free_device_tensors`]).
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
        tensor::check_len(d.dtype, &d.shape, dst.len())?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Device tensors are released one by one, in any order: their memory is reused, and
    /// once the lowest are gone, HBM's bottom-up launch tensors can use it again; a second
    /// release, or one from before a reset, changes nothing; uploads check their size.
    #[test]
    pub(crate) fn device_tensors_are_freed_one_by_one() {
        let mut e = PoolEngine::new(64 << 20, PoolImage::default()).unwrap();
        let kept = e.upload_bytes(DType::U8, vec![4], &[1, 2, 3, 4]).unwrap();
        let a = e.upload_bytes(DType::F32, vec![1024], &[7; 4096]).unwrap();
        let b = e.alloc_device(DType::U8, vec![3 << 20]).unwrap();
        let c = e.alloc_device(DType::U8, vec![100]).unwrap();
        assert!(c.soc < b.soc && b.soc < a.soc && a.soc < kept.soc);
        // A middle one: its place is reused by a tensor that fits.
        assert!(e.free_device(&a));
        assert!(!e.free_device(&a), "a second release is refused");
        let a2 = e.alloc_device(DType::F32, vec![512]).unwrap();
        assert!(a2.soc > b.soc && a2.soc < kept.soc, "in a's old range");
        assert_eq!(
            e.device_bytes(&a2).unwrap(),
            &[0; 2048],
            "zeroed on allocation"
        );
        // All but `kept`, in any order: the whole range below it is free again, as one.
        for d in [&c, &a2, &b] {
            assert!(e.free_device(d));
        }
        let big = e.alloc_device(DType::U8, vec![60 << 20]).unwrap();
        assert!(big.soc < kept.soc);
        assert_eq!(e.device_bytes(&kept).unwrap(), &[1, 2, 3, 4]);
        assert!(e.free_device(&big));
        assert!(matches!(
            e.upload_bytes(DType::F32, vec![2], &[0; 7]),
            Err(EmuError::Tensor(TensorError::Size {
                want: 8,
                got: 7,
                ..
            }))
        ));
        // Temporaries go when the scope ends, kept tensors stay, failure or not.
        let probe = e.alloc_device(DType::U8, vec![64]).unwrap();
        assert!(e.free_device(&probe));
        let r: Result<(), ()> = e.with_temporaries(|e| {
            e.upload_bytes(DType::U8, vec![1 << 20], &[9; 1 << 20])
                .unwrap();
            e.with_temporaries(|e| e.alloc_device(DType::U8, vec![1 << 20]).unwrap());
            Err(())
        });
        assert!(r.is_err());
        let after = e.alloc_device(DType::U8, vec![64]).unwrap();
        assert_eq!(after.soc, probe.soc, "the temporaries' range is free again");
        e.free_device_tensors();
        assert!(!e.free_device(&kept), "gone with the reset");
    }
}
