//! NumPy `.npy` files (format 1.0-3.0): little-endian, C-order arrays of the launch dtypes.
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

const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses a `.npy` image. `hint` picks bf16 for `<u2` data when the kernel expects bf16.
pub fn parse(bytes: &[u8], path: &str, hint: Option<DType>) -> Result<HostTensor, NpyError> {
    let bad = |why: &str| NpyError::Malformed {
        path: path.into(),
        why: why.into(),
    };
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("missing \\x93NUMPY magic"));
    }
    let (hlen, start): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(&format!("format version {v}"))),
    };
    let header = bytes
        .get(
            start
                ..start
                    .checked_add(hlen)
                    .ok_or_else(|| bad("header length"))?,
        )
        .ok_or_else(|| bad("truncated header"))?;
    let header = std::str::from_utf8(header).map_err(|_| bad("header is not text"))?;
    let descr = dict_value(header, "descr").ok_or_else(|| bad("no 'descr' in header"))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"').to_string();
    let fortran = match dict_value(header, "fortran_order").map(str::trim) {
        Some("False") => false,
        Some("True") => true,
        _ => return Err(bad("no 'fortran_order' True or False in header")),
    };
    let shape = dict_value(header, "shape").ok_or_else(|| bad("no 'shape' in header"))?;
    let shape = parse_shape(shape).ok_or_else(|| bad("unreadable shape"))?;
    let descr_norm = descr.replace('=', "<");
    let dtype = match hint {
        Some(h) if h.npy_descr() == descr_norm => Some(h),
        _ => DType::ALL
            .into_iter()
            .find(|t| t.npy_descr() == descr_norm && *t != DType::BF16),
    }
    .ok_or_else(|| NpyError::Dtype {
        path: path.into(),
        descr: descr.clone(),
        supported: DType::ALL.map(|t| t.npy_descr()).join(" "),
    })?;
    // A 0-d array is one element.
    let shape = if shape.is_empty() { vec![1] } else { shape };
    let data = &bytes[start + hlen..];
    let want = shape
        .iter()
        .try_fold(dtype.size() as u64, |n, &d| n.checked_mul(d));
    let data = if fortran && want == Some(data.len() as u64) {
        to_c_order(data, &shape, dtype.size())
    } else {
        data.to_vec()
    };
    HostTensor::new(dtype, shape, data).map_err(|source| NpyError::Tensor {
        path: path.into(),
        source,
    })
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

fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    Some(&rest[..end])
}

fn parse_shape(s: &str) -> Option<Vec<u64>> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_end_matches('L').parse().ok())
        .collect()
}

pub fn read(path: &Path, hint: Option<DType>) -> Result<HostTensor, NpyError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io {
        path: p.clone(),
        source,
    })?;
    parse(&bytes, &p, hint)
}

/// The `.npy` image of a tensor (format 1.0, header padded to 64 bytes).
pub fn encode(t: &HostTensor) -> Vec<u8> {
    let shape = match t.shape.as_slice() {
        [one] => format!("({one},)"),
        s => format!(
            "({})",
            s.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        t.dtype.npy_descr()
    );
    let total = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat(total.next_multiple_of(64) - total));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + t.data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&t.data);
    out
}

/// Writes atomically: a sibling temporary file, then a rename.
pub fn write(path: &Path, t: &HostTensor) -> Result<(), NpyError> {
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
        f.write_all(&encode(t))?;
        f.sync_all()?;
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
        let s = patch(&s, "(1,)", "()  ");
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
