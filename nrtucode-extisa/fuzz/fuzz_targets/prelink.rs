//! ll_create's parser and relocator on arbitrary bytes: never a panic or an out-of-bounds
//! access, and a success is always a consistent image that fits the device buffer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nrtucode_extisa::prelink::{self, CAYMAN_GEOMETRY};

fuzz_target!(|image: &[u8]| {
    let g = CAYMAN_GEOMETRY;
    let (mut code, mut data) = (vec![0u8; g.iram_size], vec![0u8; g.dram_size]);
    if let Ok(u) = prelink::prelink(image, &g, &mut code, &mut data, &mut |_| {}) {
        assert!(u.code_seg_len as usize <= g.iram_size);
        assert!(u.data_seg_len as usize <= g.dram_size);
        assert!(u.data_seg_off + u.data_seg_len <= 0x20 + 0x8000 + 0x2000);
    }
});
