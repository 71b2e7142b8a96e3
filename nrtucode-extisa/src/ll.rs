//! `nrtucode_loadable_library_t`: a library image staged in device memory, and the 0x40-byte
//! 0x1095 push records that tell the Pool engine to load or unload it.

use core::ffi::c_void;
use core::ptr;

use crate::abi::{nrtucode_coretype_t, nrtucode_flavors_t, NRTUCODE_CORE_SUNDA_Q7_POOL};
use crate::core::Core;
use crate::error::{Error, Result};
use crate::handles::{
    default_name, free_object, malloc_object, nrtucode_loadable_library_t, Handle, NAME_LEN,
};
use crate::images::{self, is_q7_pool};
use crate::objcount;
use crate::platform::{Ctx, Memhandle, PlatformObject, SEV_ERROR, SEV_INFO, SEV_WARNING};
use crate::prelink::{self, Ucpl};

pub type Ll = Handle<nrtucode_loadable_library_t>;

/// Device alignment requested for a staged image (16 MiB).
pub const STAGING_ALIGNMENT: usize = 0x100_0000;
/// Largest staged image (UCPL header + code + data) the device buffer takes.
pub const MAX_STAGED_SIZE: u64 = 0x10000;

/// `ll_create` after its guards.
pub fn create(
    ctx: Ctx,
    coretype: nrtucode_coretype_t,
    flavor: nrtucode_flavors_t,
    library: u64,
) -> Result<Ll> {
    let selector = match library {
        0 if images::cptc_selected() => 3,
        sel => sel,
    };
    let image = images::ext_isa(coretype, flavor, selector)?;
    let p = malloc_object(nrtucode_loadable_library_t {
        context: ctx.as_ptr(),
        device_memhandle: ptr::null_mut(),
        library_selector: selector,
        prelinked_size: 0,
        friendly_name: [0; NAME_LEN + 1],
        _tail: [0; 7],
    })
    .ok_or(Error::Allocation)?;
    // SAFETY: fresh object from malloc_object.
    let ll = unsafe { Ll::from_raw(p) };
    let staged = match coretype {
        // SUNDA images are pushed whole by the firmware's own loader: nothing is staged.
        NRTUCODE_CORE_SUNDA_Q7_POOL => Ok(()),
        ct if is_q7_pool(ct) => stage(ctx, ll, image.so),
        _ => Err(Error::Invalid),
    };
    if let Err(e) = staged {
        free_object(ll);
        return Err(e);
    }
    ll.update(|l| {
        default_name(
            &mut l.friendly_name,
            "nrtucode_ll_t",
            p.as_ptr() as *const c_void,
        )
    });
    ctx.log(SEV_INFO, format_args!("Initialized {}", ll.name()));
    objcount::created();
    Ok(ll)
}

/// Prelinks the library into the two scratch regions and stages the result on the device.
fn stage(ctx: Ctx, ll: Ll, so: &[u8]) -> Result {
    let geometry = prelink::CAYMAN_GEOMETRY;
    let mut code = scratch(geometry.iram_size)?;
    let mut data = scratch(geometry.dram_size)?;
    let ucpl = prelink::prelink(so, &geometry, &mut code, &mut data, &mut |args| {
        ctx.log(SEV_ERROR, args)
    })
    .map_err(|status| {
        ctx.log(
            SEV_ERROR,
            format_args!("Failed prelink with status = {status}"),
        );
        Error::Relocation
    })?;
    // The vendor stages these libraries as they are; so do we, saying what goes wrong.
    for h in prelink::hazards(so, &geometry) {
        ctx.log(SEV_WARNING, format_args!("nrtucode: prelink: warning: {h}"));
    }
    stage_prelinked(ctx, ll, &ucpl, &code, &data)
}

fn scratch(len: usize) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::Allocation)?;
    v.resize(len, 0);
    Ok(v)
}

/// Allocates the device buffer, writes header, code and data, then applies the size cap.
/// The cap is checked after the writes, as in the vendor library, and frees the buffer.
/// `ll` records the staged size only on success; on error any device buffer is freed.
pub fn stage_prelinked(ctx: Ctx, ll: Ll, ucpl: &Ucpl, code: &[u8], data: &[u8]) -> Result {
    let size = u64::from(ucpl.data_seg_off) + u64::from(ucpl.data_seg_len);
    if size == 0 {
        return Ok(());
    }
    let dmh = ctx.device_malloc(size as usize, STAGING_ALIGNMENT)?;
    ll.update(|l| l.device_memhandle = dmh.0);
    let header = ucpl.to_bytes();
    let code_len = (ucpl.code_seg_len as usize).min(code.len());
    let data_len = (ucpl.data_seg_len as usize).min(data.len());
    let writes = ctx
        .write_memhandle(dmh, 0, &header)
        .and_then(|()| ctx.write_memhandle(dmh, u64::from(ucpl.code_seg_off), &code[..code_len]))
        .and_then(|()| ctx.write_memhandle(dmh, u64::from(ucpl.data_seg_off), &data[..data_len]));
    if let Err(e) = writes {
        ctx.device_free(dmh);
        return Err(e);
    }
    if size > MAX_STAGED_SIZE {
        ctx.log(
            SEV_ERROR,
            format_args!("Prelinked library would be larger than the available buffer on device"),
        );
        ctx.device_free(dmh);
        return Err(Error::Enospc);
    }
    ll.update(|l| l.prelinked_size = size);
    Ok(())
}

/// `ll_destroy`: frees the staged buffer if one exists.
pub fn destroy(ll: Ll) {
    let ctx = ll.ctx();
    let (size, dmh) = ll.get(|l| (l.prelinked_size, Memhandle(l.device_memhandle)));
    if size != 0 {
        ctx.device_free(dmh);
    }
    ctx.log(SEV_INFO, format_args!("Destroyed {}", ll.name()));
    free_object(ll);
    objcount::destroyed();
}

/// Direction byte of a push record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Load = 1,
    Unload = 2,
}

impl Direction {
    /// The num_instrs getter whose name the context check failure carries.
    pub fn num_instrs_fn(self) -> &'static str {
        match self {
            Direction::Load => "nrtucode_ll_get_load_sequence_num_instrs",
            Direction::Unload => "nrtucode_ll_get_unload_sequence_num_instrs",
        }
    }
}

/// Bytes in one push record, and its command tag.
pub const PUSH_RECORD_LEN: usize = 0x40;
pub const PUSH_RECORD_TAG: u16 = 0x1095;
/// Records emitted when the library and the core belong to different contexts: one per
/// Pool core, all identical.
pub const RECORDS_ON_CONTEXT_MISMATCH: usize = 8;
/// Required alignment of the caller's record buffer.
pub const RECORD_BUFFER_ALIGN: usize = 8;

const CONTEXT_CHECK_EXPR: &str = "ll->context == nrtucode_core_get_context(core)";

/// The `num_instrs` getters: 1 when the contexts match; otherwise a check failure is
/// logged and 8 is returned (which is also the record count the generator would emit).
pub fn num_instrs(ll: Ll, core: Core, dir: Direction) -> usize {
    if ll.get(|l| l.context) == core.get(|c| c.context) {
        1
    } else {
        core.ctx()
            .check_failed(CONTEXT_CHECK_EXPR, dir.num_instrs_fn());
        RECORDS_ON_CONTEXT_MISMATCH
    }
}

/// One push record, byte-exact.
pub fn push_record(
    dir: Direction,
    device_addr: u64,
    selector: u32,
    size: u32,
) -> [u8; PUSH_RECORD_LEN] {
    let mut r = [0u8; PUSH_RECORD_LEN];
    r[0x00..0x02].copy_from_slice(&PUSH_RECORD_TAG.to_le_bytes());
    r[0x0c] = dir as u8;
    r[0x0d] = 0xFF;
    r[0x10..0x18].copy_from_slice(&device_addr.to_le_bytes());
    r[0x18..0x1c].copy_from_slice(&selector.to_le_bytes());
    r[0x1c..0x20].copy_from_slice(&size.to_le_bytes());
    r
}

/// The shared load/unload emitter after its null guards. `buf_addr` is checked for
/// alignment; `write` receives the records to copy out once every check has passed.
pub fn sequence(
    ll: Ll,
    core: Core,
    dir: Direction,
    max_instrs: usize,
    buf_addr: usize,
    func: &str,
    write: impl FnOnce(&[u8]),
) -> Result<usize> {
    let ctx = ll.ctx();
    if !buf_addr.is_multiple_of(RECORD_BUFFER_ALIGN) {
        ctx.log(
            SEV_ERROR,
            format_args!(
                "nrtucode: invalid API usage in `{func}`: instruction buffer is not correctly aligned"
            ),
        );
        return Err(Error::Invalid);
    }
    let matched = ll.get(|l| l.context) == core.get(|c| c.context);
    let count = if matched {
        1
    } else {
        core.ctx()
            .check_failed(CONTEXT_CHECK_EXPR, dir.num_instrs_fn());
        RECORDS_ON_CONTEXT_MISMATCH
    };
    if max_instrs < count {
        return Err(Error::Enospc);
    }
    let (size, dmh, selector) = ll.get(|l| {
        (
            l.prelinked_size,
            Memhandle(l.device_memhandle),
            l.library_selector,
        )
    });
    let (addr, len) = if dir == Direction::Load && size != 0 && matched {
        (ctx.memhandle_soc_addr(dmh), size as u32)
    } else {
        (0, 0)
    };
    let record = push_record(dir, addr, selector as u32, len);
    let records: Vec<u8> = record
        .iter()
        .copied()
        .cycle()
        .take(count * PUSH_RECORD_LEN)
        .collect();
    write(&records);
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_record_bytes() {
        let r = push_record(Direction::Load, 0x1122_3344_5566_7788, 3, 0x1234);
        let mut want = [0u8; 0x40];
        want[0] = 0x95;
        want[1] = 0x10;
        want[0x0c] = 1;
        want[0x0d] = 0xFF;
        want[0x10..0x18].copy_from_slice(&[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
        want[0x18] = 3;
        want[0x1c] = 0x34;
        want[0x1d] = 0x12;
        assert_eq!(r, want);
        let u = push_record(Direction::Unload, 0, 0, 0);
        assert_eq!(u[0x0c], 2);
        assert_eq!(&u[0x10..], &[0u8; 0x30]);
    }
}
