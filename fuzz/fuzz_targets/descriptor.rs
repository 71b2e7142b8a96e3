//! The device runtime's descriptor checks on arbitrary 48-byte descriptors: a broken rule
//! (a device fault) or a consistent shape, never a panic or an overflow.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    neuroncustomop::descriptor::fuzz_one(bytes);
});
