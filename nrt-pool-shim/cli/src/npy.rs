//! NumPy `.npy` files (format 1.0-3.0) of the launch dtypes, read and written through `npyz`
//! (either byte order and array order in, little-endian C order out).
//! Writes go to a temporary file that is renamed into place, so a failed run never leaves a
//! half-written output.

use std::io::Write;
use std::path::Path;

use nrt_pool_engine::tensor::{byte_len, DType, HostTensor, TensorError};

#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a .npy file ({why})")]
    Malformed { path: String, why: String },
    #[error("{path}: dtype '{descr}' is not supported (use one of: {supported})")]
    Dtype {
        path: String,
        descr: String,
        supported: String,
    },
    #[error("{path}: {source}")]
    Tensor { path: String, source: TensorError },
}

/// Parses a `.npy` image. The header (format 1.0-3.0, dtype, order, shape) is read by `npyz`;
/// the data is taken in bulk: big-endian elements are swapped to little-endian and
/// Fortran-order arrays reordered to C order. `hint` picks bf16 for `<u2` data when the
/// kernel expects bf16.
pub fn parse(bytes: &[u8], path: &str, hint: Option<DType>) -> Result<HostTensor, NpyError> {
    parse_owned(bytes.to_vec(), path, hint)
}

/// [`parse`] of a file image already in memory: the data moves to the front of the same
/// buffer rather than into a copy (a 64 MiB input is read once and copied never).
pub fn parse_owned(
    mut bytes: Vec<u8>,
    path: &str,
    hint: Option<DType>,
) -> Result<HostTensor, NpyError> {
    let h = head(&bytes, path, hint)?;
    let want = h.data_len();
    let Head {
        dtype,
        shape,
        start,
        big_endian,
        fortran,
    } = h;
    bytes.drain(..start.min(bytes.len()));
    let mut data = bytes;
    let size = dtype.size();
    if big_endian && size > 1 {
        for element in data.chunks_exact_mut(size) {
            element.reverse();
        }
    }
    if fortran && want == Some(data.len() as u64) {
        data = to_c_order(&data, &shape, size);
    }
    HostTensor::new(dtype, shape, data).map_err(|source| NpyError::Tensor {
        path: path.into(),
        source,
    })
}

/// A `.npy` header: the element type and shape, where the data starts, and whether the data
/// needs reordering (big-endian elements, Fortran order).
struct Head {
    dtype: DType,
    shape: Vec<u64>,
    start: usize,
    big_endian: bool,
    fortran: bool,
}

impl Head {
    /// The data's length in bytes, as the shape and dtype give it (None if it overflows).
    fn data_len(&self) -> Option<u64> {
        nrt_pool_engine::tensor::byte_len(&self.shape, self.dtype)
    }
}

/// Where a `.npy` header ends, from the version and header-length fields at the start of
/// `prefix` (its first 12 bytes suffice); None for an unknown version or a short prefix.
fn header_end(prefix: &[u8]) -> Option<u64> {
    match prefix.get(6) {
        Some(1) => prefix
            .get(8..10)
            .map(|b| 10 + u16::from_le_bytes([b[0], b[1]]) as u64),
        Some(2 | 3) => prefix
            .get(8..12)
            .map(|b| 12 + u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64),
        _ => None,
    }
}

/// Reads the header at the start of `bytes` (which may end anywhere after it).
fn head(bytes: &[u8], path: &str, hint: Option<DType>) -> Result<Head, NpyError> {
    let bad = |why: String| NpyError::Malformed {
        path: path.into(),
        why,
    };
    if !bytes.starts_with(b"\x93NUMPY") {
        return Err(bad("missing \\x93NUMPY magic".into()));
    }
    // npyz allocates the header length it reads before reading; check it against the file
    // first, so a corrupt length cannot ask for gigabytes.
    match header_end(bytes) {
        None => {
            let v = bytes.get(6).map_or("missing".into(), |v| v.to_string());
            return Err(bad(format!("format version {v}")));
        }
        Some(end) if end > bytes.len() as u64 => return Err(bad("truncated header".into())),
        Some(_) => {}
    }
    let mut cursor = std::io::Cursor::new(bytes);
    let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(|e| {
        bad(match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "truncated header".into(),
            _ => e.to_string(),
        })
    })?;
    // The cursor is now at the first data byte; its position is within `bytes`.
    let start = usize::try_from(cursor.position()).map_err(|_| bad("header length".into()))?;
    let unsupported = |descr: String| NpyError::Dtype {
        path: path.into(),
        descr,
        supported: DType::ALL
            .into_iter()
            .filter(|&t| t != DType::BF16)
            .map(|t| format!("{} '{}'", t.numpy_name(), t.npy_descr()))
            .collect::<Vec<_>>()
            .join(", ")
            + "; bf16 as its uint16 words, bf16:X.npy",
    };
    let npyz::DType::Plain(ts) = header.dtype() else {
        return Err(unsupported(header.dtype().descr()));
    };
    let dtype = dtype_of(&ts, hint).ok_or_else(|| unsupported(ts.to_string()))?;
    // A 0-d array is one element.
    let shape = match header.shape() {
        [] => vec![1],
        s => s.to_vec(),
    };
    Ok(Head {
        dtype,
        shape,
        start,
        big_endian: ts.endianness() == npyz::Endianness::Big,
        fortran: header.order() == npyz::Order::Fortran,
    })
}

/// The launch dtype stored as `ts` (either byte order); bf16 only when the kernel asks for it,
/// since NumPy stores its raw words as `uint16`.
fn dtype_of(ts: &npyz::TypeStr, hint: Option<DType>) -> Option<DType> {
    let same = |t: DType| {
        let ours: npyz::TypeStr = t.npy_descr().parse().expect("our descriptors parse");
        ours.type_char() == ts.type_char() && ours.size_field() == ts.size_field()
    };
    match hint {
        Some(h) if same(h) => Some(h),
        _ => DType::ALL
            .into_iter()
            .find(|&t| t != DType::BF16 && same(t)),
    }
}

/// Column-major (Fortran-order) elements of `shape` in row-major (C) order.
fn to_c_order(data: &[u8], shape: &[u64], size: usize) -> Vec<u8> {
    let n = data.len() / size.max(1);
    let mut out = Vec::with_capacity(data.len());
    // Fortran strides in elements: 1, d0, d0*d1, ...
    let mut strides = Vec::with_capacity(shape.len());
    let mut acc = 1usize;
    for &d in shape {
        strides.push(acc);
        acc = acc.saturating_mul(d as usize);
    }
    let mut index = vec![0u64; shape.len()];
    for _ in 0..n {
        let src: usize = index
            .iter()
            .zip(&strides)
            .map(|(&i, &s)| i as usize * s)
            .sum();
        out.extend_from_slice(&data[src * size..(src + 1) * size]);
        // Advance the C-order index: last axis fastest.
        for k in (0..shape.len()).rev() {
            index[k] += 1;
            if index[k] < shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
    out
}

/// A `.npy` file opened for reading: the file, its length, the path as reports name it, and
/// how an I/O error on it is reported.
fn open(path: &Path) -> Result<(std::fs::File, u64, String), NpyError> {
    let p = path.display().to_string();
    let f = std::fs::File::open(path).map_err(io_error(&p))?;
    let len = f.metadata().map_err(io_error(&p))?.len();
    Ok((f, len, p))
}

fn io_error(path: &str) -> impl Fn(std::io::Error) -> NpyError + Copy + '_ {
    move |source| NpyError::Io {
        path: path.into(),
        source,
    }
}

pub fn read(path: &Path, hint: Option<DType>) -> Result<HostTensor, NpyError> {
    use std::io::Read;
    let (mut f, len, p) = open(path)?;
    let io = io_error(&p);
    // Read into a buffer that asks for huge pages (a 64 MiB input then costs 32 faults, not
    // 16k); the data stays in it (parse_owned moves it to the front).
    let mut bytes = nrt_pool_engine::host_buffer(usize::try_from(len).unwrap_or(0));
    f.read_to_end(&mut bytes).map_err(io)?;
    parse_owned(bytes, &p, hint)
}

/// A `.npy` file read straight into a device tensor of `engine` (no host copy), when its
/// data needs no reordering (little-endian, C order, as NumPy writes by default); None
/// otherwise, for [`read`] to take.
pub fn read_into_device(
    path: &Path,
    hint: Option<DType>,
    engine: &mut nrt_pool_open::Pool,
) -> Result<Option<nrt_pool_engine::DeviceTensor>, NpyError> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut f, len, p) = open(path)?;
    let io = io_error(&p);
    // The magic, version and header length, then the whole header.
    let mut prefix = vec![0u8; 12.min(len as usize)];
    f.read_exact(&mut prefix).map_err(io)?;
    let Some(header_end) = header_end(&prefix).filter(|&e| e <= len) else {
        return Ok(None);
    };
    let mut header = prefix;
    header.resize(header_end as usize, 0);
    f.read_exact(&mut header[12.min(header_end as usize)..])
        .map_err(io)?;
    let Ok(h) = head(&header, &p, hint) else {
        return Ok(None);
    };
    if hint.is_some_and(|want| want != h.dtype) {
        return Ok(None);
    }
    if h.big_endian && h.dtype.size() > 1
        || h.fortran && h.shape.iter().filter(|&&d| d > 1).count() > 1
        || h.data_len() != Some(len - h.start as u64)
    {
        return Ok(None);
    }
    let d = match engine.tensors.alloc_device_for_overwrite(h.dtype, h.shape) {
        Ok(d) => d,
        Err(_) => return Ok(None),
    };
    let (memory, at, n) = engine
        .tensors
        .device_file_range(&d)
        .expect("a device tensor lies in device memory");
    // File to memory file inside the kernel; through the mapping where that is refused.
    if send(&f, h.start as u64, memory, at, n).is_err() {
        f.seek(SeekFrom::Start(h.start as u64)).map_err(io)?;
        let bytes = engine
            .tensors
            .device_bytes_mut(&d)
            .expect("a device tensor's bytes lie in device memory");
        f.read_exact(bytes).map_err(io)?;
    }
    Ok(Some(d))
}

/// Copies `n` bytes from `from` at `from_at` to `to` at `to_at` with `sendfile` (the kernel
/// copies between the files' pages; `to`'s file position is used and moved).
fn send(
    from: &std::fs::File,
    from_at: u64,
    to: &std::fs::File,
    to_at: u64,
    n: usize,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut to_pos = to;
    std::io::Seek::seek(&mut to_pos, std::io::SeekFrom::Start(to_at))?;
    let mut off = libc::off_t::try_from(from_at).map_err(std::io::Error::other)?;
    let mut left = n;
    while left > 0 {
        // SAFETY: two open descriptors and an offset this function owns.
        let r = unsafe { libc::sendfile(to.as_raw_fd(), from.as_raw_fd(), &mut off, left) };
        match r {
            r if r > 0 => left -= r as usize,
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// The `.npy` image of a tensor: a C-order header written by `npyz`, then the data.
pub fn encode(t: &HostTensor) -> Vec<u8> {
    let mut out = header(t);
    out.extend_from_slice(&t.data);
    out
}

/// The `.npy` header of a tensor (magic, version, padded dictionary).
fn header(t: &HostTensor) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let dtype = npyz::DType::Plain(t.dtype.npy_descr().parse().expect("our descriptors parse"));
    {
        use npyz::WriterBuilder;
        npyz::WriteOptions::new_header_only()
            .dtype(dtype)
            .shape(&t.shape)
            .writer(&mut out)
            .write_header_only()
            .expect("writing to a Vec cannot fail");
    }
    out
}

/// Writes a device tensor of `engine` as a `.npy` file, atomically as [`write`] does, its
/// data copied from the device memory file by the kernel.
pub fn write_device(
    path: &Path,
    engine: &nrt_pool_open::Pool,
    d: &nrt_pool_engine::DeviceTensor,
) -> Result<(), NpyError> {
    let t = HostTensor {
        dtype: d.dtype,
        shape: d.shape.clone(),
        data: Vec::new(),
    };
    // From the tensor's device memory, mapped into this process in one call first
    // (`device_bytes`): a plain write from there beat `sendfile` between the files (~13 vs
    // ~25 ms for 64 MiB here).
    let bytes = engine
        .tensors
        .device_bytes(d)
        .expect("a device tensor's bytes lie in device memory");
    write_with(path, &header(&t), |mut f| f.write_all(bytes))
}

/// Writes atomically: a sibling temporary file, then a rename.
pub fn write(path: &Path, t: &HostTensor) -> Result<(), NpyError> {
    write_parts(path, &header(t), &t.data)
}

/// `head` then `data` into `path`, atomically.
fn write_parts(path: &Path, head: &[u8], data: &[u8]) -> Result<(), NpyError> {
    write_with(path, head, |mut f| f.write_all(data))
}

/// `head`, then what `data` writes after it, into `path`, atomically: a sibling temporary
/// file renamed into place. An existing `path` is removed just before the rename: ext4
/// writes a file back synchronously when a rename replaces another (its `auto_da_alloc`
/// guard), which cost a 64 MiB output ~50 ms here; removing first keeps every moment's
/// file whole (the old one, none, or the new one) without that wait.
fn write_with(
    path: &Path,
    head: &[u8],
    data: impl FnOnce(&std::fs::File) -> std::io::Result<()>,
) -> Result<(), NpyError> {
    let io = |source| NpyError::Io {
        path: path.display().to_string(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map_or("out".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(head)?;
        data(&f)?;
        drop(f);
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

/// The fuzz target's property, shared with the seed-corpus test: any bytes parse without
/// a panic, and a tensor read is consistent and survives a write and a read unchanged.
#[doc(hidden)]
pub fn fuzz_one(bytes: &[u8]) {
    for hint in [None, Some(DType::BF16), Some(DType::F32)] {
        if let Ok(t) = parse(bytes, "fuzz.npy", hint) {
            assert_eq!(
                t.data.len() as u64,
                byte_len(&t.shape, t.dtype).expect("checked size")
            );
            let again = parse(&encode(&t), "again.npy", Some(t.dtype)).expect("own encoding");
            assert_eq!(again, t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replaces the first `from` in a binary image (headers are ASCII, the magic is not).
    fn patch(img: &[u8], from: &str, to: &str) -> Vec<u8> {
        let at = img
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .unwrap();
        [&img[..at], to.as_bytes(), &img[at + from.len()..]].concat()
    }

    #[test]
    fn round_trips_every_dtype() {
        for t in DType::ALL {
            let data: Vec<u8> = (0..6 * t.size()).map(|i| i as u8).collect();
            let x = HostTensor::new(t, vec![2, 3], data).unwrap();
            let img = encode(&x);
            assert_eq!((img.len() - x.data.len()) % 64, 0);
            assert_eq!(parse(&img, "x", Some(t)).unwrap(), x);
        }
    }

    #[test]
    fn reads_numpy_written_headers() {
        // As numpy 1.x writes np.arange(3, dtype=np.int32) and a 0-d float32.
        let mut img =
            b"\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }"
                .to_vec();
        img.resize(10 + 0x76 - 1, b' ');
        img.push(b'\n');
        img.extend([0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]);
        let t = parse(&img, "a.npy", None).unwrap();
        assert_eq!((t.dtype, t.shape.clone()), (DType::I32, vec![3]));
        let s = encode(&HostTensor::from_f32(vec![1], &[2.5]).unwrap());
        let s = patch(&s, "(1, )", "()   ");
        let t = parse(&s, "s.npy", None).unwrap();
        assert_eq!(t.to_f32(), Some(vec![2.5]));
    }

    #[test]
    fn malformed_files_name_the_problem() {
        let e = |b: &[u8]| parse(b, "f.npy", None).unwrap_err().to_string();
        assert!(e(b"hello").contains("magic"));
        let good = encode(&HostTensor::from_f32(vec![2], &[1.0, 2.0]).unwrap());
        assert!(e(&good[..good.len() - 1]).contains("needs 8 bytes, got 7"));

        assert!(e(&patch(&good, "<f4", "<c8")).contains("'<c8' is not supported"));
        assert!(e(&good[..20]).contains("truncated header"));
        // A header length of ~4 GB in a tiny file is refused before anything is allocated.
        let mut huge = good.clone();
        huge[6] = 3;
        huge[8..12].copy_from_slice(&0xEAEB_7B00u32.to_le_bytes());
        assert!(e(&huge).contains("truncated header"));
        huge[6] = 7;
        assert!(e(&huge).contains("format version 7"));
    }

    #[test]
    fn fortran_order_arrays_are_read_in_c_order() {
        // np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)): memory 0 3 1 4 2 5.
        let column_major: Vec<u8> = [0i16, 3, 1, 4, 2, 5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let x = HostTensor::new(DType::I16, vec![2, 3], column_major).unwrap();
        let img = patch(&encode(&x), "False", "True ");
        let t = parse(&img, "f.npy", None).unwrap();
        let c: Vec<u8> = (0i16..6).flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!((t.shape.clone(), t.data), (vec![2, 3], c));
        // Rank 3: element [i, j, k] sits at i + 2j + 6k in memory.
        let shape = [2u64, 3, 4];
        let mut mem = vec![0u8; 24];
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    mem[i + 2 * j + 6 * k] = (i * 12 + j * 4 + k) as u8;
                }
            }
        }
        let x = HostTensor::new(DType::U8, shape.to_vec(), mem).unwrap();
        let t = parse(&patch(&encode(&x), "False", "True "), "f.npy", None).unwrap();
        assert_eq!(t.data, (0u8..24).collect::<Vec<_>>());
    }

    #[test]
    fn big_endian_input_is_converted_to_little_endian() {
        // np.array([1.5, -2.0], dtype='>f4') and np.array([258, -3], dtype='>i8').
        let be: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let x = HostTensor::new(DType::F32, vec![2], be).unwrap();
        let t = parse(&patch(&encode(&x), "<f4", ">f4"), "b.npy", None).unwrap();
        assert_eq!(t.to_f32(), Some(vec![1.5, -2.0]));
        let be: Vec<u8> = [258i64, -3].iter().flat_map(|v| v.to_be_bytes()).collect();
        let x = HostTensor::new(DType::I64, vec![2], be).unwrap();
        let t = parse(&patch(&encode(&x), "<i8", ">i8"), "b.npy", None).unwrap();
        let le: Vec<u8> = [258i64, -3].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!((t.dtype, t.data), (DType::I64, le));
        // Big-endian bf16 words with the kernel's hint, and a Fortran-order big-endian array.
        let x =
            HostTensor::new(DType::U16, vec![2, 2], vec![0x3f, 0x80, 0, 1, 0, 2, 0, 3]).unwrap();
        let img = patch(&patch(&encode(&x), "<u2", ">u2"), "False", "True ");
        let t = parse(&img, "b.npy", Some(DType::BF16)).unwrap();
        assert_eq!(t.dtype, DType::BF16);
        assert_eq!(t.data, vec![0x80, 0x3f, 2, 0, 1, 0, 3, 0]);
    }

    #[test]
    fn unsupported_dtypes_are_refused_by_name() {
        let e = |b: &[u8]| parse(b, "f.npy", None).unwrap_err().to_string();
        let good = encode(&HostTensor::from_f32(vec![2], &[1.0, 2.0]).unwrap());
        for (descr, shown) in [("<f4", "'<f8'"), ("<f4", "'>c8'"), ("<f4", "'|b1'")] {
            let to = &shown[1..shown.len() - 1];
            let msg = e(&patch(&good, descr, to));
            assert!(
                msg.contains(&format!("dtype {shown} is not supported")),
                "{msg}"
            );
            assert!(
                msg.contains("float32 '<f4'") && msg.starts_with("f.npy: "),
                "{msg}"
            );
            // Each supported dtype once, by NumPy's name (bf16 has none).
            assert_eq!(msg.matches("'<u2'").count(), 1, "{msg}");
            assert!(msg.contains("bf16:X.npy"), "{msg}");
        }
        // A structured dtype is named too, not reported as a broken file.
        let msg = e(&patch(&good, "'<f4'", "[('a', '<f4')]"));
        assert!(msg.contains("is not supported"), "{msg}");
    }

    #[test]
    fn failed_writes_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let t = HostTensor::from_f32(vec![1], &[1.0]).unwrap();
        let missing = dir.path().join("no/such/dir/out.npy");
        assert!(write(&missing, &t).is_err());
        let ok = dir.path().join("out.npy");
        write(&ok, &t).unwrap();
        assert_eq!(read(&ok, None).unwrap(), t);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
