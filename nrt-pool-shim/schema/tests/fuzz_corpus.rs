//! The `schema` fuzz target's seed corpus (`fuzz/corpus/schema` at the repository root)
//! runs in `make test`: every input holds the target's property, and each synthesized seed
//! has its documented outcome. `make fuzz-seeds` rewrites the seeds.

use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/schema")
}

/// (name, text, parses) for the schema seeds.
fn schema_seeds() -> Vec<(String, Vec<u8>, bool)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |p: &str| std::fs::read(root.join(p)).unwrap();
    vec![
        ("examples".into(), read("examples/ops/ops.schema"), true),
        (
            "faults".into(),
            read("nrt-pool-shim/testkit/ops/faults.schema"),
            true,
        ),
        (
            "fixed-shape".into(),
            b"t(tensor<f32> x, tensor<f32> s like x) -> tensor<f32>[4, 3]\n".to_vec(),
            true,
        ),
        (
            "keyword".into(),
            b"k(f32 xor) -> tensor<f32>[1]\n".to_vec(),
            false,
        ),
        (
            "unclosed".into(),
            b"k(f32 a -> tensor<f32>[1\n".to_vec(),
            false,
        ),
        (
            "zero-dim".into(),
            b"k(f32 a) -> tensor<f32>[0]\n".to_vec(),
            false,
        ),
        (
            "twice".into(),
            b"k() -> tensor<f32>[1]\nk() -> tensor<f32>[1]\n".to_vec(),
            false,
        ),
    ]
}

#[test]
fn schema_seed_corpus_holds_the_property() {
    let dir = corpus();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("seed corpus") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::panic::catch_unwind(|| nrt_pool_schema::fuzz_one(&bytes))
            .unwrap_or_else(|_| panic!("{} broke the property", path.display()));
        seen += 1;
    }
    let seeds = schema_seeds();
    assert!(seen >= seeds.len());
    for (name, bytes, ok) in seeds {
        let parses = std::str::from_utf8(&bytes).is_ok_and(|t| nrt_pool_schema::parse(t).is_ok());
        assert_eq!(parses, ok, "schema seed {name}");
        let committed = std::fs::read(dir.join(&name)).unwrap_or_default();
        assert_eq!(committed, bytes, "schema/{name}: run `make fuzz-seeds`");
    }
}

#[test]
#[ignore = "writes the seed corpus; run by `make fuzz-seeds`"]
fn write_seed_corpus() {
    std::fs::create_dir_all(corpus()).unwrap();
    for (name, bytes, _) in schema_seeds() {
        std::fs::write(corpus().join(name), bytes).unwrap();
    }
}

fn pool_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/pool_image")
}

/// (name, bytes, parses) for the `pool_image` seeds.
fn pool_seeds() -> Vec<(String, Vec<u8>, bool)> {
    use nrt_pool_schema::pool_image::sample_file;
    let good = sample_file(8);
    let mut bad_version = good.clone();
    bad_version[8] = 9;
    let mut bad_size = good.clone();
    let end = bad_size.len();
    bad_size[end - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    vec![
        ("eight-cores".into(), good.clone(), true),
        ("one-core".into(), sample_file(1), true),
        ("truncated".into(), good[..good.len() - 5].to_vec(), false),
        ("version".into(), bad_version, false),
        ("huge-entry".into(), bad_size, false),
        ("empty".into(), Vec::new(), false),
    ]
}

#[test]
fn pool_image_seed_corpus_holds_the_property() {
    let dir = pool_corpus();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("seed corpus") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::panic::catch_unwind(|| nrt_pool_schema::pool_image::fuzz_one(&bytes))
            .unwrap_or_else(|_| panic!("{} broke the property", path.display()));
        seen += 1;
    }
    let seeds = pool_seeds();
    assert!(seen >= seeds.len());
    for (name, bytes, ok) in seeds {
        let parses = nrt_pool_schema::pool_image::parse_file(&bytes).is_ok();
        assert_eq!(parses, ok, "pool_image seed {name}");
        let committed = std::fs::read(dir.join(&name)).unwrap_or_default();
        assert_eq!(committed, bytes, "pool_image/{name}: run `make fuzz-seeds`");
    }
}

#[test]
#[ignore = "writes the seed corpus; run by `make fuzz-seeds`"]
fn write_pool_seed_corpus() {
    std::fs::create_dir_all(pool_corpus()).unwrap();
    for (name, bytes, _) in pool_seeds() {
        std::fs::write(pool_corpus().join(name), bytes).unwrap();
    }
}
