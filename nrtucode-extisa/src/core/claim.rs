//! The claim handshake with the booted firmware: a read of the claim word, then a write.
//! It is not a compare-and-swap; the three outcomes are what the firmware relies on.

use super::{control_block::CLAIM_WORD, Core, CLAIM_CLAIMED, CLAIM_UNCLAIMED};
use crate::error::{Error, Result};
use crate::handles::BOOTED_LEGACY;
use crate::platform::{PlatformObject, SEV_ERROR};

/// `core_on_ucode_booted`.
pub fn on_ucode_booted(core: Core) -> Result {
    let ctx = core.ctx();
    let addr = core.dram_base() + CLAIM_WORD;
    match ctx.read_u32(addr)? {
        CLAIM_UNCLAIMED => {
            ctx.write_u32(addr, CLAIM_CLAIMED)?;
            core.update(|c| c.boot_state = BOOTED_LEGACY);
            Ok(())
        }
        CLAIM_CLAIMED => {
            ctx.log(
                SEV_ERROR,
                format_args!(
                    "nrtucode: claim_core: {}: Core is claimed by another nrtucode_core_t instance",
                    core.name()
                ),
            );
            Err(Error::Invalid)
        }
        other => {
            ctx.log(
                SEV_ERROR,
                format_args!(
                    "nrtucode: claim_core: {}: Magic value `{other:x}` mismatch (booted image is incompatible)",
                    core.name()
                ),
            );
            Err(Error::Invalid)
        }
    }
}
