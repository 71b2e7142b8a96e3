//! The op schema parser on arbitrary text: kernels that print and parse back the same,
//! or an error naming the line, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    nrt_pool_schema::fuzz_one(bytes);
});
