//! ll_create's parser, relocator and hazard analysis on arbitrary bytes: never a panic or
//! an out-of-bounds access, and a success is always a consistent image that fits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|image: &[u8]| {
    // A refusal (an xt-libloader status) is a valid outcome; a panic is not.
    let _status: Result<(), _> = nrtucode_extisa::prelink::fuzz_one(image);
});
