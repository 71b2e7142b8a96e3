//! The `inspect` fuzz target's seed corpus (`fuzz/corpus/inspect` at the repository root)
//! runs in `make test`: every input is described or refused without a panic, and each
//! synthesized seed has its documented outcome. `make fuzz-seeds` rewrites the seeds.

use std::path::{Path, PathBuf};

use nrtucode_extisa::prelink::fixture::Fixture;
use nrtucode_tool::inspect;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/inspect")
}

/// (name, bytes, described) for the seeds.
fn seeds() -> Vec<(&'static str, Vec<u8>, bool)> {
    let sample = Fixture::sample().build();
    let ucpl = nrtucode_tool::prelink::stage(&sample).unwrap();
    let mut short_ucpl = ucpl.clone();
    short_ucpl.truncate(0x10);
    let mut bad_phoff = sample.clone();
    bad_phoff[28..32].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let mut no_sections = sample.clone();
    no_sections[48..50].copy_from_slice(&0u16.to_le_bytes());
    vec![
        ("elf-sample", sample.clone(), true),
        (
            "elf-scratch",
            Fixture {
                scratch: true,
                ..Fixture::sample_at(0x1000)
            }
            .build(),
            true,
        ),
        ("elf-no-sections", no_sections, true),
        ("elf-phoff-outside", bad_phoff, false),
        ("ucpl-sample", ucpl, true),
        ("ucpl-truncated", short_ucpl, false),
        ("neither", b"hello, inspect".to_vec(), false),
    ]
}

#[test]
fn inspect_seed_corpus_holds_the_property() {
    let dir = corpus();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("seed corpus") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::panic::catch_unwind(|| inspect::fuzz_one(&bytes))
            .unwrap_or_else(|_| panic!("{} panicked", path.display()));
        seen += 1;
    }
    let seeds = seeds();
    assert!(seen >= seeds.len());
    for (name, bytes, described) in seeds {
        assert_eq!(inspect::describe(&bytes).is_ok(), described, "seed {name}");
        let committed = std::fs::read(dir.join(name)).unwrap_or_default();
        assert_eq!(committed, bytes, "inspect/{name}: run `make fuzz-seeds`");
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
