//! The prelink fuzz target's seed corpus (`fuzz/corpus/prelink` at the repository root)
//! runs in `make test`: every
//! seed is handled without a panic, and successes are consistent images.
//! `make fuzz-seeds` regenerates the synthesized seeds (the ignored test below).

use std::path::{Path, PathBuf};

use nrtucode_extisa::prelink::fixture::Fixture;
use nrtucode_extisa::prelink::{self, PrelinkStatus};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/prelink")
}

/// What the fuzz target checks, for one input.
fn run_one(image: &[u8]) -> Result<(), PrelinkStatus> {
    prelink::fuzz_one(image)
}

/// Each named seed's documented outcome: Ok, or the xt-libloader status.
fn expected(name: &str) -> Option<Result<(), u32>> {
    use prelink::status::*;
    Some(match name {
        "sample"
        | "scratch"
        | "aligned-paddr"
        | "big-endian"
        | "gnu-split.so"
        | "gnu-split-inline.so" => Ok(()),
        "flix-f0" | "flix-f1" | "flix-f2" | "flix-f3" | "flix-f6" | "flix-f7" | "flix-n1"
        | "flix-n2" => Ok(()),
        // No published scatter for these formats: "Failed to set large immediate field".
        "flix-f11" | "flix-n0" => Err(RELOCATION),
        "x16-unknown" => Err(UNKNOWN_FORMAT),
        "oversize-text" | "oversize-data" | "zero-align" => Err(SEGMENT_TOO_BIG),
        "bad-flags" => Err(NOT_SPLITLOAD),
        "no-dynamic" => Err(NO_DYNAMIC_SEGMENT),
        "symbol-reloc" => Err(UNKNOWN_SYMBOL),
        "unknown-reloc" | "site-outside" => Err(RELOCATION),
        "truncated" => Err(NOT_SPLITLOAD),
        _ => return None,
    })
}

#[test]
fn seed_corpus_runs_clean_with_each_seeds_documented_outcome() {
    let mut named = 0;
    for entry in std::fs::read_dir(corpus()).expect("seed corpus") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| run_one(&bytes));
        let result = result.unwrap_or_else(|_| panic!("{} panicked", path.display()));
        let name = path.file_name().unwrap().to_str().unwrap();
        // Inputs the fuzzer added only need to be handled without a panic.
        if let Some(want) = expected(name) {
            named += 1;
            let got = result.map_err(|PrelinkStatus::Xtlib(code)| code);
            assert_eq!(got, want, "seed {name}");
        }
    }
    let synthesized = seeds();
    assert_eq!(named, synthesized.len() + 2, "every seed is in the corpus");
    for (name, bytes) in synthesized {
        assert!(expected(name).is_some(), "{name} has an expected outcome");
        let committed = std::fs::read(corpus().join(name)).unwrap();
        assert_eq!(committed, bytes, "{name}: run `make fuzz-seeds`");
    }
}

/// The synthesized seeds: valid libraries of every shape and each documented failure.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let sample = Fixture::sample();
    let mut v = vec![
        ("sample", sample.build()),
        (
            "scratch",
            Fixture {
                scratch: true,
                ..Fixture::sample_at(0x1000)
            }
            .build(),
        ),
        ("aligned-paddr", Fixture::skewed().build()),
        (
            "oversize-text",
            Fixture {
                text_memsz: Some(0x8001),
                ..Fixture::sample()
            }
            .build(),
        ),
        (
            "oversize-data",
            Fixture {
                data_memsz: Some(0x2001),
                scratch: true,
                ..Fixture::sample_at(0x1000)
            }
            .build(),
        ),
        (
            "bad-flags",
            Fixture {
                flags: Some(vec![7, 7, 6]),
                ..Fixture::sample()
            }
            .build(),
        ),
        (
            "no-dynamic",
            Fixture {
                no_dynamic: true,
                ..Fixture::sample()
            }
            .build(),
        ),
        (
            "symbol-reloc",
            Fixture {
                relocations: vec![(0x104, 5 | 1 << 8, 0)],
                ..Fixture::sample()
            }
            .build(),
        ),
        (
            "unknown-reloc",
            Fixture {
                relocations: vec![(0x104, 2, 0)],
                ..Fixture::sample()
            }
            .build(),
        ),
        (
            "site-outside",
            Fixture {
                relocations: vec![(0x7000, 5, 0)],
                ..Fixture::sample()
            }
            .build(),
        ),
        (
            "zero-align",
            Fixture {
                align: 0,
                ..Fixture::sample()
            }
            .build(),
        ),
    ];
    let mut be = Fixture::sample();
    be.big_endian = true;
    be.relocations.retain(|r| r.1 == 5);
    v.push(("big-endian", be.build()));
    let mut truncated = sample.build();
    truncated.truncate(120);
    v.push(("truncated", truncated));
    // One FLIX bundle of each format (and the unknown ones) with a SLOT0_OP relocation.
    let bundles: [(&str, &[u32]); 11] = [
        ("flix-f0", &[0xF, 0, 0, 0x4100_0000]),
        ("flix-f3", &[0xE, 0, 0, 0]),
        ("flix-f1", &[0xF, 0, 0, 0x4104_0000]),
        ("flix-f2", &[0xF, 0, 0, 0x4108_0000]),
        ("flix-f6", &[0xF, 0, 0, 0x4108_8000]),
        ("flix-f7", &[0xF, 0, 0, 0x4106_0000]),
        ("flix-n2", &[0x0100_000F, 0x4200_0000, 0, 0]),
        ("flix-n1", &[0x0100_000F, 0x4000_0000, 0, 0]),
        ("flix-f11", &[0xF, 0, 0, 0]),
        ("flix-n0", &[0x0100_000F, 0, 0, 0]),
        ("x16-unknown", &[0x8, 0, 0, 0]),
    ];
    for (name, words) in bundles {
        let text: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let f = Fixture {
            text,
            relocations: vec![(0, 20, 0x104), (0, 35, 0x104)],
            ..Fixture::sample()
        };
        v.push((name, f.build()));
    }
    v
}

#[test]
#[ignore = "writes the seed corpus; run by `make fuzz-seeds`"]
fn write_seed_corpus() {
    let dir = corpus();
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    // The GNU-built libraries too, when the Xtensa toolchain is installed.
    let tmp = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xtensa/build.sh");
    if std::process::Command::new(script)
        .arg(tmp.path())
        .status()
        .is_ok_and(|s| s.success())
    {
        for lib in ["split.so", "split-inline.so"] {
            std::fs::copy(tmp.path().join(lib), dir.join(format!("gnu-{lib}"))).unwrap();
        }
    }
}
