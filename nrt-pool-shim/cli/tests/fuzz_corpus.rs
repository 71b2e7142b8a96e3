//! The `npy` fuzz target's seed corpus (`fuzz/corpus/npy` at the repository root) runs in
//! `make test`: every input holds the target's property, and each synthesized seed has its
//! documented outcome. `make fuzz-seeds` rewrites the seeds.

use std::path::{Path, PathBuf};

use nrt_pool_cli::npy;
use nrt_pool_engine::tensor::{DType, HostTensor};

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// A `.npy` image with its header text edited (`from` -> `to`, same length).
fn edited(t: &HostTensor, from: &str, to: &str) -> Vec<u8> {
    let mut img = npy::encode(t);
    let at = img
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap_or_else(|| panic!("{from:?} not in {:?}", String::from_utf8_lossy(&img)));
    img.splice(at..at + from.len(), to.bytes());
    img
}

/// (name, bytes, parses) for the npy seeds.
fn npy_seeds() -> Vec<(String, Vec<u8>, bool)> {
    let mut v = Vec::new();
    for t in DType::ALL {
        let data: Vec<u8> = (0..6 * t.size()).map(|i| i as u8).collect();
        let x = HostTensor::new(t, vec![2, 3], data).unwrap();
        v.push((format!("c-{t}"), npy::encode(&x), true));
    }
    let f = HostTensor::from_f32(vec![2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    v.push(("fortran".into(), edited(&f, "False", "True "), true));
    let one = HostTensor::from_f32(vec![1], &[2.5]).unwrap();
    v.push(("zero-d".into(), edited(&one, "(1, )", "()   "), true));
    let mut empty = edited(&one, "(1, )", "(0, )");
    empty.truncate(empty.len() - 4);
    v.push(("empty".into(), empty, false));
    v.push(("f64".into(), edited(&f, "<f4", "<f8"), false));
    v.push(("big-endian".into(), edited(&f, "<f4", ">f4"), true));
    let mut cut = npy::encode(&f);
    cut.truncate(cut.len() - 1);
    v.push(("truncated-data".into(), cut, false));
    v.push((
        "shape-size-mismatch".into(),
        edited(&f, "(2, 3, )", "(9, 9, )"),
        false,
    ));
    let mut huge = npy::encode(&f);
    huge[6] = 3;
    huge[8..12].copy_from_slice(&0xEAEB_7B00u32.to_le_bytes());
    v.push(("huge-header-length".into(), huge, false));
    v.push(("not-npy".into(), b"\x93NUMPY\x01\x00".to_vec(), false));
    v
}

fn check(
    target: &str,
    seeds: Vec<(String, Vec<u8>, bool)>,
    parses: impl Fn(&[u8]) -> bool,
    property: impl Fn(&[u8]) + std::panic::RefUnwindSafe,
) {
    let dir = corpus(target);
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("seed corpus") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::panic::catch_unwind(|| property(&bytes))
            .unwrap_or_else(|_| panic!("{} broke the property", path.display()));
        seen += 1;
    }
    assert!(seen >= seeds.len(), "{target}: {seen} inputs");
    for (name, bytes, ok) in seeds {
        assert_eq!(parses(&bytes), ok, "{target} seed {name}");
        let committed = std::fs::read(dir.join(&name)).unwrap_or_default();
        assert_eq!(committed, bytes, "{target}/{name}: run `make fuzz-seeds`");
    }
}

#[test]
fn npy_seed_corpus_holds_the_property() {
    check(
        "npy",
        npy_seeds(),
        |b| npy::parse(b, "seed.npy", None).is_ok(),
        npy::fuzz_one,
    );
}

#[test]
#[ignore = "writes the seed corpora; run by `make fuzz-seeds`"]
fn write_seed_corpus() {
    for (target, seeds) in [("npy", npy_seeds())] {
        let dir = corpus(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes, _) in seeds {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
}
