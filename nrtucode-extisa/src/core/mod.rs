//! `nrtucode_core_t`: one engine's bring-up handle and the device control block it drives.

pub mod claim;
pub mod dge;
pub mod logs;

use core::ffi::c_void;
use core::ptr;

use crate::abi::nrtucode_coretype_t;
use crate::error::{Error, Result};
use crate::handles::{
    default_name, free_object, malloc_object, nrtucode_core_t, Handle, NAME_LEN, NOT_BOOTED,
};
use crate::objcount;
use crate::platform::{Ctx, Memhandle, PlatformObject, SEV_ERROR, SEV_INFO};

pub type Core = Handle<nrtucode_core_t>;

/// Offsets in the device control block at `dram_base`.
pub mod control_block {
    pub const CLAIM_WORD: u64 = 0x00;
    pub const LOG_RING_SIZE: u64 = 0x04;
    pub const LOG_RING_ADDR: u64 = 0x08;
    pub const LOG_HEAD: u64 = 0x10;
    pub const MAX_LOG_LEVEL: u64 = 0x14;
    pub const DGE_PRIORITY_MAP: u64 = 0x18;
    pub const DGE_MAILBOXES: u64 = 0x28;
    pub const PC_BOUNDS_LO: u64 = 0x38;
    pub const PC_BOUNDS_HI: u64 = 0x40;
    /// Bytes the provider may touch.
    pub const SIZE: u64 = 0x48;
}

/// The claim word the booted firmware leaves for a host to take.
pub const CLAIM_UNCLAIMED: u32 = 0x6099_CB34;
/// The claim word once a host core handle owns the engine.
pub const CLAIM_CLAIMED: u32 = 0x502B_2DA1;

/// The boot gate's expression, as the check failure names it.
pub const BOOT_GATE_EXPR: &str = "(core)->boot_state == BOOTED_LEGACY";

impl Core {
    pub fn dram_base(self) -> u64 {
        self.get(|c| c.dram_base)
    }

    /// The boot gate shared by the log and DGE calls: a check failure (8) unless claimed.
    pub fn require_booted(self, func: &str) -> Result {
        if self.get(|c| c.boot_state) == crate::handles::BOOTED_LEGACY {
            Ok(())
        } else {
            Err(self.ctx().check_failed(BOOT_GATE_EXPR, func))
        }
    }
}

/// `core_create` after its guards. No device I/O; the coretype is not validated.
pub fn create(
    ctx: Ctx,
    coretype: nrtucode_coretype_t,
    iram_base: u64,
    dram_base: u64,
    apb_base: u64,
) -> Result<Core> {
    let Some(p) = malloc_object(nrtucode_core_t {
        context: ctx.as_ptr(),
        userdata: ptr::null_mut(),
        coretype,
        _pad0: 0,
        iram_base,
        dram_base,
        apb_base,
        boot_state: NOT_BOOTED,
        _pad1: 0,
        log_memhandle: ptr::null_mut(),
        log_buf_size: 0,
        log_read_cursor: 0,
        friendly_name: [0; NAME_LEN + 1],
        _tail: [0; 7],
    }) else {
        ctx.log(
            SEV_ERROR,
            format_args!("Failed to allocate nrtucode_core_t"),
        );
        return Err(Error::Allocation);
    };
    // SAFETY: fresh object from malloc_object.
    let core = unsafe { Core::from_raw(p) };
    core.update(|c| {
        default_name(
            &mut c.friendly_name,
            "nrtucode_core_t",
            p.as_ptr() as *const c_void,
        )
    });
    ctx.log(SEV_INFO, format_args!("Initialized {}", core.name()));
    objcount::created();
    Ok(core)
}

/// `core_destroy`: turn logs off (result ignored), free a ring that is still attached,
/// release the claim if this handle took it, then free.
pub fn destroy(core: Core) {
    let _ = logs::disable(core);
    let ctx = core.ctx();
    let (log_mh, boot_state, dram) =
        core.get(|c| (Memhandle(c.log_memhandle), c.boot_state, c.dram_base));
    if !log_mh.is_none() {
        ctx.device_free(log_mh);
    }
    if boot_state != NOT_BOOTED {
        let _ = ctx.write_u32(dram + control_block::CLAIM_WORD, CLAIM_UNCLAIMED);
    }
    ctx.log(SEV_INFO, format_args!("Destroyed {}", core.name()));
    free_object(core);
    objcount::destroyed();
}
