//! The Pool image parser on arbitrary bytes: a parse or an error naming what is wrong,
//! never a panic; what parses writes back to the same cores.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    nrt_pool_schema::pool_image::fuzz_one(bytes);
});
