//! What a core's accesses were: the tensor access counts after a profiled launch
//! ([`customop_abi::access`]; the runtime keeps them in its image, which lies in device
//! memory, so the engine reads them there by the runtime's symbol: issue #44, D100), and
//! the bytes it read and wrote in a traced launch (the access plugin's record: D101).

use std::path::{Path, PathBuf};

use customop_abi::access::{AccessCounts, ACCESS_COUNTS_BYTES, ACCESS_COUNTS_SYMBOL};
use nrt_pool_engine::accesses::CoreAccesses;
use nrt_pool_engine::memory::DeviceMemory;
use nrt_pool_engine::symbolize::{ImageSet, StackAddr};
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

/// The access plugin's `-plugin` argument for core `core`'s record in `dir` (D101): the
/// kernel's span between the board's markers.
pub fn trace_plugin(qemu: &Path, dir: &Path, core: usize, (begin, end): (u64, u64)) -> String {
    format!(
        "{},out={},begin={begin:#x},end={end:#x}",
        qemu.with_file_name(crate::tools::ACCESS_PLUGIN).display(),
        record_path(dir, core).display()
    )
}

fn record_path(dir: &Path, core: usize) -> PathBuf {
    dir.join(format!("core{core}.access"))
}

/// Arms (or disarms) core `core`'s plugin for its next kernel: only an armed kernel is
/// recorded, so the untraced launches of a checked call run on the same cores.
pub fn arm(dir: &Path, core: usize, on: bool) -> std::io::Result<()> {
    let flag = record_path(dir, core).with_extension("access.on");
    if on {
        std::fs::write(flag, b"")
    } else {
        match std::fs::remove_file(flag) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Core `core`'s record of its last kernel (taken from `dir`), its PCs named from `images`
/// (the core's image and the board): None when the core wrote none or it cannot be read.
pub fn trace(dir: &Path, core: usize, images: &[&[u8]]) -> Option<CoreAccesses> {
    let path = record_path(dir, core);
    let bytes = std::fs::read(&path).ok()?;
    let _gone = std::fs::remove_file(&path);
    let mut a = CoreAccesses::parse(&bytes).ok()?;
    let named = ImageSet::new(images);
    for pc in a.pcs() {
        let frames = named.frames(StackAddr {
            addr: u64::from(pc),
            exact: true,
        });
        // The op author's line where the access is theirs; the innermost frame otherwise
        // (a copy inside the runtime: tensor_to_tcm, tcm_to_tensor, a stream accessor).
        let line = match frames.iter().find(|f| f.is_op_code()) {
            Some(f) => Some(f.describe()),
            None => frames.first().map(|f| {
                format!(
                    "{} (a copy of the runtime's: tensor_to_tcm, tcm_to_tensor or a stream \
                     accessor)",
                    f.describe()
                )
            }),
        };
        if let Some(l) = line {
            a.lines.insert(pc, l);
        }
    }
    Some(a)
}
