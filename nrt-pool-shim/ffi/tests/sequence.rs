//! The launch FFI misused: the `ffi_sequence` fuzz target's property
//! (`nrt_pool_shim::sequence`) on its seed corpus (`fuzz/corpus/ffi_sequence`, run by `make
//! test`) and on sequences written here for what they mean; `make fuzz-seeds` rewrites the
//! seeds. The op library the sequences register is the examples' mlp ops, built under
//! `target/tmp/ffi-sequence` (where the fuzz target looks for it).

use std::path::{Path, PathBuf};

use nrt_pool_shim::sequence::{judge, Setup};
use nrt_pool_testkit as common;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/ffi_sequence")
}

/// The setup with the mlp library built (once per test process).
fn setup() -> Setup {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let library = BUILT
        .get_or_init(|| {
            let root = common::root();
            let dir = root.join("target/tmp/ffi-sequence");
            std::fs::create_dir_all(&dir).unwrap();
            nrt_pool_build::build_or_reuse(&common::neuron_ops(
                &dir,
                "mlp_ops",
                root.join("examples/mlp/relu.cpp"),
                root.join("examples/mlp/shape.cpp"),
                false,
                Default::default(),
            ))
            .unwrap()
            .library
        })
        .clone();
    let root = common::root();
    Setup {
        helper: PathBuf::from(env!("CARGO_BIN_EXE_nrt-pool-ffi-sequence")),
        shim: root.join("target/release/libnrt_pool_shim.so"),
        library,
    }
}

/// Steps as the decoder reads them: one thread count, then 12-byte steps (an opcode and
/// its operands), dealt to the threads in turn.
fn steps(threads: u8, steps: &[&[u8]]) -> Vec<u8> {
    let mut v = vec![threads.saturating_sub(1)];
    for s in steps {
        let mut step = s.to_vec();
        step.resize(12, 0);
        v.extend(step);
    }
    v
}

const INIT: &[u8] = &[0];
const REGISTER: &[u8] = &[2, 0];
const CLOSE: &[u8] = &[1, 0xC1];
const VALID_PAIR: &[u8] = &[12, 0];
const VALID_LAUNCH: &[u8] = &[13, 1];
const CHECKS_ALL: &[u8] = &[7, 2];
const PROFILE_ON: &[u8] = &[8, 1];
const LAST_PROFILE: &[u8] = &[9, 3];

/// Hand-written sequences and what they mean: (name, bytes).
fn written() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("empty", vec![]),
        (
            "launch-before-init",
            steps(1, &[VALID_LAUNCH, REGISTER, INIT]),
        ),
        (
            "the-valid-path",
            steps(1, &[INIT, REGISTER, VALID_PAIR, VALID_LAUNCH]),
        ),
        (
            "checked-and-profiled",
            steps(
                1,
                &[
                    INIT,
                    REGISTER,
                    CHECKS_ALL,
                    PROFILE_ON,
                    VALID_PAIR,
                    LAST_PROFILE,
                ],
            ),
        ),
        (
            "close-then-everything",
            steps(1, &[INIT, REGISTER, CLOSE, VALID_PAIR, REGISTER, INIT]),
        ),
        (
            "four-threads-racing",
            steps(
                4,
                &[
                    INIT,
                    INIT,
                    INIT,
                    INIT,
                    REGISTER,
                    REGISTER,
                    VALID_PAIR,
                    VALID_PAIR,
                    VALID_LAUNCH,
                    VALID_LAUNCH,
                    REGISTER,
                    VALID_PAIR,
                ],
            ),
        ),
        (
            "close-while-others-launch",
            steps(
                3,
                &[INIT, REGISTER, VALID_PAIR, VALID_PAIR, VALID_PAIR, CLOSE],
            ),
        ),
        (
            "bad-names-and-slots",
            steps(
                2,
                &[
                    INIT,
                    REGISTER,
                    &[5, 5, 3, 4, 9, 200, 2, 0xFF],
                    &[4, 7, 9, 5, 1, 2, 3],
                    &[6, 8, 2, 9, 9, 9, 9, 9, 9, 9],
                    &[3, 1, 200, 0],
                ],
            ),
        ),
        (
            "bad-registrations",
            steps(
                1,
                &[
                    INIT,
                    &[2, 2],
                    &[2, 3],
                    &[2, 4],
                    &[2, 5],
                    &[2, 6],
                    VALID_PAIR,
                ],
            ),
        ),
    ]
}

/// Deterministic pseudo-random sequences for the seed corpus (xorshift).
fn random_seeds(n: usize) -> Vec<(String, Vec<u8>)> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            let len = 13 + (next() % 200) as usize;
            // Mostly opened and registered first, so that the rest reaches the engine.
            let mut v: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if i % 4 != 0 {
                v.splice(1..1, steps(1, &[INIT, REGISTER])[1..].iter().copied());
            }
            (format!("random-{i:02}"), v)
        })
        .collect()
}

#[test]
fn written_sequences_keep_the_contract() {
    let setup = setup();
    for (name, bytes) in written() {
        if let Err(e) = judge(&bytes, &setup) {
            panic!("{name}: {e}");
        }
    }
}

#[test]
fn the_seed_corpus_keeps_the_contract() {
    let setup = setup();
    let mut n = 0;
    for e in std::fs::read_dir(corpus()).expect("fuzz/corpus/ffi_sequence (make fuzz-seeds)") {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        if let Err(e) = judge(&bytes, &setup) {
            panic!("{}: {e}", p.display());
        }
        n += 1;
    }
    assert!(n >= 20, "only {n} seeds");
}

/// A property that can fail: a helper that dies, or says the contract broke, is judged so.
#[test]
fn a_broken_sequence_is_judged_broken() {
    let mut setup = setup();
    setup.shim = PathBuf::from("/nonexistent/libnrt_pool_shim.so");
    let e = judge(&[0], &setup).unwrap_err();
    assert!(e.contains("exited 3") && e.contains("/nonexistent"), "{e}");
}

#[test]
#[ignore = "rewrites fuzz/corpus/ffi_sequence: make fuzz-seeds"]
fn write_seed_corpus() {
    let dir = corpus();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let all = written()
        .into_iter()
        .map(|(n, b)| (n.to_string(), b))
        .chain(random_seeds(24));
    for (name, bytes) in all {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}
