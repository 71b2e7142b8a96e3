//! The `descriptor` fuzz target's seed corpus (`fuzz/corpus/descriptor` at the repository
//! root) runs in `make test`: every input's descriptors end in a rule or a consistent
//! shape, and each synthesized seed has its documented outcome. `make fuzz-seeds` rewrites
//! the seeds.

use std::path::{Path, PathBuf};

use neuroncustomop::descriptor::{self as d, ArgTensor};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/descriptor")
}

fn wire(t: &ArgTensor) -> Vec<u8> {
    // SAFETY: ArgTensor is 48 bytes of plain data.
    unsafe { std::slice::from_raw_parts((t as *const ArgTensor).cast::<u8>(), 48) }.to_vec()
}

/// (name, bytes, the bytes of the first descriptor or the rule's site).
fn seeds() -> Vec<(&'static str, Vec<u8>, Result<usize, &'static str>)> {
    let f32_2x3 = ArgTensor::hbm(d::DTYPE_FP32, 0x40_0000_0000, &[2, 3]);
    let sbuf = ArgTensor::sbuf(d::DTYPE_INT16, 0x100, &[128, 4], 1);
    let big = ArgTensor::hbm(d::DTYPE_INT8, 0, &[70_000, 3]);
    let mut huge = wire(&big);
    // Inline 4-D dims of 0xffffffff each: the element count does not fit.
    huge[8..24].copy_from_slice(&[0xff; 16]);
    let mut rank0 = wire(&f32_2x3);
    rank0[8..24].fill(0);
    let mut out_of_line = wire(&f32_2x3);
    out_of_line[1] = d::SHAPE_OUT_OF_LINE;
    let mut fp8 = wire(&f32_2x3);
    fp8[2] = d::DTYPE_FP8_EXP4;
    let mut two = wire(&f32_2x3);
    two.extend(wire(&sbuf));
    vec![
        ("hbm-f32-2x3", wire(&f32_2x3), Ok(24)),
        ("sbuf-i16-128x4", wire(&sbuf), Ok(1024)),
        ("hbm-4d-large", wire(&big), Ok(210_000)),
        ("two-descriptors", two, Ok(24)),
        ("overflowing-4d", huge, Err("utypes.hpp:139")),
        ("rank-0", rank0, Err("utypes.hpp:139")),
        ("out-of-line", out_of_line, Err("utypes.hpp:94")),
        ("fp8-dtype", fp8, Err("utypes.hpp:37")),
    ]
}

#[test]
fn descriptor_seed_corpus_holds_the_property() {
    let dir = corpus();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("seed corpus") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::panic::catch_unwind(|| d::fuzz_one(&bytes))
            .unwrap_or_else(|_| panic!("{} panicked", path.display()));
        seen += 1;
    }
    let seeds = seeds();
    assert!(seen >= seeds.len());
    for (name, bytes, want) in seeds {
        let t = ArgTensor::from_bytes(bytes[..48].try_into().unwrap());
        let got = t.try_num_bytes().map_err(|r| r.site);
        assert_eq!(got, want, "seed {name}");
        let committed = std::fs::read(dir.join(name)).unwrap_or_default();
        assert_eq!(committed, bytes, "descriptor/{name}: run `make fuzz-seeds`");
    }
}

#[test]
#[ignore = "writes the seed corpus; run by `make fuzz-seeds`"]
fn write_seed_corpus() {
    std::fs::create_dir_all(corpus()).unwrap();
    for (name, bytes, _) in seeds() {
        std::fs::write(corpus().join(name), bytes).unwrap();
    }
}
