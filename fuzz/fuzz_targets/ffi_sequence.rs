//! The launch FFI misused: a sequence of its calls from several threads, valid and invalid
//! handles, names and tensors, each in a fresh process; every call returns a documented
//! code, nothing crashes, hangs or is left running, and the engine works after. The
//! sequence runs in `nrt-pool-ffi-sequence` (the runtime's lifecycle is the process's), so
//! libFuzzer's coverage does not reach into it: this target mutates sequences from the seed
//! corpus without coverage guidance (docs/decisions.md D109).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    nrt_pool_shim::sequence::fuzz_one(bytes);
});
