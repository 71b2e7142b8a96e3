//! The C side of the wire layouts is checked against this crate: the op
//! author's header `include/neuron_customop.hpp` (host g++, 64-bit, and the Xtensa g++,
//! 32-bit, where installed) and the board's handoff block (`pool-board.c`, Xtensa gcc)
//! are compiled with static asserts whose values come from the Rust definitions.

use std::path::{Path, PathBuf};
use std::process::Command;

use customop_abi::blob::{scratch, ArgBlob, ARG_BLOB_MAGIC, ARG_TYPE_TENSOR, MAX_ARGS};
use customop_abi::descriptor::ArgTensor;
use customop_abi::MAX_STACK_SIZE;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The asserts every compile of the header carries (pointer size from the target).
fn header_checks() -> String {
    format!(
        r#"#include "neuron_customop.hpp"
#include <stddef.h>
static_assert(sizeof(NeuronArgTensor) == {tensor}, "descriptor size");
static_assert(sizeof(NeuronArgBlob) == {blob}, "blob size");
static_assert(offsetof(NeuronArgBlob, args) == {args}, "blob args");
static_assert(offsetof(NeuronArgBlob, types) == {types}, "blob types");
static_assert(offsetof(NeuronArgBlob, check_fill) == {check_fill}, "blob check_fill");
static_assert(offsetof(NeuronArgBlob, output) == {output}, "blob output");
static_assert(NEURON_ARG_BLOB_OFFSET == {blob_at}, "blob offset");
static_assert(NEURON_ARG_BLOB_MAGIC == {magic}u, "blob magic");
static_assert(NEURON_ARG_TYPE_TENSOR == {ty}, "tensor arg type");
static_assert(NEURON_MAX_ARGS == {max_args}, "max args");
static_assert(NEURON_DATA_SCRATCH_MIN_SIZE == {min_scratch}, "data scratch minimum");
static_assert(NRT_POOL_MAX_STACK_SIZE == {max_stack}, "STACK_SIZE limit");
static_assert(sizeof(SUNDA_UCODE_LIB) == 9 * sizeof(void *), "handoff size");
static_assert(offsetof(SUNDA_UCODE_LIB, get_libc_fn) == 3 * sizeof(void *), "get_libc_fn");
static_assert(offsetof(SUNDA_UCODE_LIB, register_ext_isa_fn_v3) == 8 * sizeof(void *), "v3");
"#,
        tensor = std::mem::size_of::<ArgTensor>(),
        blob = std::mem::size_of::<ArgBlob>(),
        args = std::mem::offset_of!(ArgBlob, args),
        types = std::mem::offset_of!(ArgBlob, types),
        check_fill = std::mem::offset_of!(ArgBlob, check_fill),
        output = std::mem::offset_of!(ArgBlob, output),
        blob_at = scratch::ARG_BLOB,
        magic = ARG_BLOB_MAGIC,
        ty = ARG_TYPE_TENSOR,
        max_args = MAX_ARGS,
        min_scratch = scratch::MIN_SIZE,
        max_stack = MAX_STACK_SIZE,
    )
}

fn compile(compiler: &str, args: &[&str], source: &str, ext: &str) -> Option<std::process::Output> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("check.{ext}"));
    std::fs::write(&file, source).unwrap();
    Command::new(compiler)
        .args(args)
        .arg("-fsyntax-only")
        .arg(&file)
        .output()
        .ok()
}

fn assert_compiles(what: &str, out: Option<std::process::Output>) {
    let out = out.unwrap_or_else(|| panic!("{what}: compiler not found"));
    assert!(
        out.status.success(),
        "{what}: the C layout disagrees with customop-abi:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A wrong value is caught: the check is not vacuous.
#[test]
fn a_wrong_value_fails_the_compile() {
    let include = format!("-I{}", root().join("include").display());
    let bad = header_checks().replace("== 560", "== 561");
    let out = compile("g++", &["-std=c++17", &include], &bad, "cpp").expect("g++");
    assert!(!out.status.success(), "a wrong blob size compiled");
}

#[test]
fn the_op_authors_header_matches_on_the_host() {
    let include = format!("-I{}", root().join("include").display());
    assert_compiles(
        "neuron_customop.hpp (g++, 64-bit)",
        compile("g++", &["-std=c++17", &include], &header_checks(), "cpp"),
    );
}

/// Device builds: the header for a 32-bit core, and the board's handoff block. Needs the
/// Xtensa tools (`make tools-build`); reported, not silently passed, without them.
#[test]
fn the_header_and_the_board_match_on_a_32_bit_core() {
    if Command::new("xtensa-lx106-elf-gcc")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("UNSUPPORTED: no xtensa-lx106-elf-gcc (make tools-build installs it)");
        return;
    }
    let include = format!("-I{}", root().join("include").display());
    let device = format!("-I{}", root().join("include/device").display());
    assert_compiles(
        "neuron_customop.hpp (Xtensa g++, 32-bit)",
        compile(
            "xtensa-lx106-elf-g++",
            &["-std=c++17", "-ffreestanding", &device, &include],
            &header_checks(),
            "cpp",
        ),
    );
    let board = root().join("nrt-pool-shim/qemu/board/pool-board.c");
    let mut source = std::fs::read_to_string(&board).expect("the board's source");
    source.push_str(&format!(
        "\n_Static_assert(sizeof(struct handoff) == {}, \"handoff size\");\n\
         _Static_assert(__builtin_offsetof(struct handoff, get_libc_fn) == 12, \"get_libc_fn\");\n",
        // SUNDA_UCODE_LIB's nine pointer-sized fields, 4 bytes each on the core.
        std::mem::size_of::<customop_abi::handoff::SundaUcodeLib>() / std::mem::size_of::<usize>()
            * 4
    ));
    let board_dir = format!("-I{}", board.parent().unwrap().display());
    assert_compiles(
        "pool-board.c's handoff (Xtensa gcc)",
        compile(
            "xtensa-lx106-elf-gcc",
            &["-std=c11", "-ffreestanding", "-mabi=windowed", &board_dir],
            &source,
            "c",
        ),
    );
}
