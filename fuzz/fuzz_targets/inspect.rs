//! `nrtucode-tool inspect` on arbitrary bytes (ELF32, UCPL or neither): a description or
//! a reason, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    nrtucode_tool::inspect::fuzz_one(bytes);
});
