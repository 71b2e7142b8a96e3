//! A core's tensor access counts after a profiled launch ([`customop_abi::access`]): the
//! runtime keeps them in its image, which lies in device memory, so the engine reads them
//! there by the runtime's symbol (issue #44, D100).

use customop_abi::access::{AccessCounts, ACCESS_COUNTS_BYTES, ACCESS_COUNTS_SYMBOL};
use nrt_pool_engine::memory::DeviceMemory;
use object::{Object, ObjectSymbol};

use crate::layout;

/// Core `core`'s counts from its `image`, or None when the image's runtime keeps none (an
/// image linked before the counts existed) or the bytes are not in device memory.
pub fn counts(memory: &DeviceMemory, core: usize, image: &[u8]) -> Option<AccessCounts> {
    let file = object::File::parse(image).ok()?;
    let local = file
        .symbols()
        .find(|s| s.name_bytes().ok() == Some(ACCESS_COUNTS_SYMBOL.as_bytes()))?
        .address();
    let offset = local.checked_sub(u64::from(layout::image_org(core)))?;
    if offset.checked_add(ACCESS_COUNTS_BYTES as u64)? > layout::IMAGE_BYTES {
        return None;
    }
    let bytes = memory.read(layout::image_soc(core) + offset, ACCESS_COUNTS_BYTES)?;
    Some(AccessCounts::from_le_bytes(bytes.try_into().ok()?))
}
