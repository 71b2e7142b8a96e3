//! The DGE host-private API (priority classes, mailboxes) and the PC-bounds check, each
//! with its gates in the vendor's order.

use core::ffi::c_void;

use super::control_block::{DGE_MAILBOXES, DGE_PRIORITY_MAP, PC_BOUNDS_HI, PC_BOUNDS_LO};
use super::Core;
use crate::abi::{nrtucode_dge_mailbox_t, NRTUCODE_DGE_MAILBOX_RESET};
use crate::error::{Error, Result};
use crate::platform::{PlatformObject, SEV_ERROR, SEV_INFO};

/// Priority classes and mailboxes the control block holds.
pub const DGE_SLOTS: usize = 4;

/// Coretypes that are NX POOL engines in the 4-generation build: bound 0x19, mask 0x2020204.
pub fn is_nx_pool(coretype: u32) -> bool {
    coretype <= 0x19 && (0x0202_0204u32 >> coretype) & 1 == 1
}

/// The kind gate's assert text, as its check failure prints it.
pub const KIND_GATE_EXPR: &str = "((core)->kind == NRTUCODE_CORE_SUNDA_NX_POOL) || \
((core)->kind == NRTUCODE_CORE_CAYMAN_NX_POOL) || \
((core)->kind == NRTUCODE_CORE_MARIANA_NX_POOL) || \
((core)->kind == NRTUCODE_CORE_MARIANA_PLUS_NX_POOL) && \
\"Expected core kind: \" \"NX\" \"_\" \"POOL\"";

fn require_nx_pool(core: Core, func: &str) -> Result {
    if is_nx_pool(core.get(|c| c.coretype)) {
        Ok(())
    } else {
        Err(core.ctx().check_failed(KIND_GATE_EXPR, func))
    }
}

/// The boot and kind gates of the priority-map and mailbox-address calls.
pub fn gates(core: Core, func: &str) -> Result {
    core.require_booted(func)?;
    require_nx_pool(core, func)
}

/// `dge_set_priority_class_map` after gates and the `classes` guard: n > 4 is 8, no log.
///
/// # Safety
/// `classes` must be readable for `n` u32s.
pub unsafe fn set_priority_class_map(core: Core, classes: *const u32, n: usize) -> Result {
    if n > DGE_SLOTS {
        return Err(Error::Invalid);
    }
    let addr = core.dram_base() + DGE_PRIORITY_MAP;
    // SAFETY: forwarded caller buffer of 4n bytes (function contract).
    unsafe { core.ctx().write_raw(addr, 4 * n, classes.cast::<c_void>()) }
}

/// `dge_get_priority_class_map` after gates and the `classes` guard.
///
/// # Safety
/// `classes` must be writable for `n` u32s.
pub unsafe fn get_priority_class_map(core: Core, classes: *mut u32, n: usize) -> Result {
    if n > DGE_SLOTS {
        return Err(Error::Invalid);
    }
    let addr = core.dram_base() + DGE_PRIORITY_MAP;
    // SAFETY: forwarded caller buffer of 4n bytes (function contract).
    unsafe { core.ctx().read_raw(addr, 4 * n, classes.cast::<c_void>()) }
}

/// `get_dge_mailbox_addr` after gates and the `addr` guard: mailboxes the caller will not
/// use (num..4) are reset, and the mailbox array's device address is returned.
pub fn mailbox_addr(core: Core, num_mailbox: usize) -> Result<u64> {
    if num_mailbox > DGE_SLOTS {
        return Err(Error::Invalid);
    }
    let ctx = core.ctx();
    let base = core.dram_base() + DGE_MAILBOXES;
    for i in num_mailbox..DGE_SLOTS {
        ctx.write_u32(base + 4 * i as u64, NRTUCODE_DGE_MAILBOX_RESET)?;
    }
    Ok(base)
}

fn mailbox_slot(core: Core, idx: usize, func: &str) -> Result<u64> {
    require_nx_pool(core, func)?;
    if idx >= DGE_SLOTS {
        return Err(Error::Invalid);
    }
    Ok(core.dram_base() + DGE_MAILBOXES + 4 * idx as u64)
}

/// `core_private_set_dge_mailbox`: kind gate only (no boot gate).
pub fn set_mailbox(core: Core, idx: usize, mb: nrtucode_dge_mailbox_t) -> Result {
    let addr = mailbox_slot(core, idx, "nrtucode_core_private_set_dge_mailbox")?;
    core.ctx().write(addr, &mailbox_bytes(mb))
}

/// `core_private_get_dge_mailbox_values`: the kind and index gates come before the `out`
/// guard, so the caller passes a closure that resolves `out` when it is needed.
pub fn get_mailbox(
    core: Core,
    idx: usize,
    out: impl FnOnce() -> core::ptr::NonNull<nrtucode_dge_mailbox_t>,
) -> Result {
    let addr = mailbox_slot(core, idx, "nrtucode_core_private_get_dge_mailbox_values")?;
    let out = out();
    let mut b = [0u8; 4];
    core.ctx().read(addr, &mut b)?;
    // SAFETY: `out` is the caller's writable, non-NULL mailbox (checked by the closure).
    unsafe { out.as_ptr().write_unaligned(mailbox_from_bytes(b)) };
    Ok(())
}

pub fn mailbox_bytes(mb: nrtucode_dge_mailbox_t) -> [u8; 4] {
    let m = mb.bitmask.to_le_bytes();
    [mb.reserved, mb.priority, m[0], m[1]]
}

pub fn mailbox_from_bytes(b: [u8; 4]) -> nrtucode_dge_mailbox_t {
    nrtucode_dge_mailbox_t {
        reserved: b[0],
        priority: b[1],
        bitmask: u16::from_le_bytes([b[2], b[3]]),
    }
}

/// `enable_pc_bounds_check`: no boot or kind gate; lo must be below hi (unsigned).
pub fn enable_pc_bounds(core: Core, lo: u64, hi: u64) -> Result {
    let ctx = core.ctx();
    if lo >= hi {
        ctx.log(
            SEV_ERROR,
            format_args!(
                "enable_pc_bounds_check : lower bound(0x{lo:x}) must be smaller than upper bound(0x{hi:x})"
            ),
        );
        return Err(Error::Invalid);
    }
    write_pc_bounds(core, lo, hi)?;
    ctx.log(
        SEV_INFO,
        format_args!(
            "{}: enabled PC bounds check for range [0x{lo:x}, 0x{hi:x}]",
            core.name()
        ),
    );
    Ok(())
}

/// `disable_pc_bounds_check`: the widest range, [0, ~0].
pub fn disable_pc_bounds(core: Core) -> Result {
    write_pc_bounds(core, 0, u64::MAX)?;
    core.ctx().log(
        SEV_INFO,
        format_args!("{}: disabled PC bounds check", core.name()),
    );
    Ok(())
}

fn write_pc_bounds(core: Core, lo: u64, hi: u64) -> Result {
    let ctx = core.ctx();
    let dram = core.dram_base();
    ctx.write_u64(dram + PC_BOUNDS_LO, lo)?;
    ctx.write_u64(dram + PC_BOUNDS_HI, hi)
}

/// `core_private_get_pc_bounds`: both reads must succeed before either output is written.
pub fn pc_bounds(core: Core) -> Result<(u64, u64)> {
    let ctx = core.ctx();
    let dram = core.dram_base();
    let lo = ctx.read_u64(dram + PC_BOUNDS_LO)?;
    let hi = ctx.read_u64(dram + PC_BOUNDS_HI)?;
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nx_pool_kinds_are_exactly_2_9_17_25() {
        let kinds: Vec<u32> = (0..64).filter(|&k| is_nx_pool(k)).collect();
        assert_eq!(kinds, vec![2, 9, 17, 25]);
    }

    #[test]
    fn mailbox_reset_value_is_lowest_priority_all_enabled() {
        let mb = mailbox_from_bytes(NRTUCODE_DGE_MAILBOX_RESET.to_le_bytes());
        assert_eq!(
            mb,
            nrtucode_dge_mailbox_t {
                reserved: 0,
                priority: 0xFF,
                bitmask: 0xFFFF
            }
        );
        assert_eq!(mailbox_bytes(mb), NRTUCODE_DGE_MAILBOX_RESET.to_le_bytes());
    }
}
