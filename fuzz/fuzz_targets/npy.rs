//! The `.npy` reader on arbitrary bytes: a tensor that writes and reads back unchanged,
//! or a clear error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    nrt_pool_cli::npy::fuzz_one(bytes);
});
