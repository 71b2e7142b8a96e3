//! The compiler-side opcode set: 256 opcode slots, each NULL or a 256-byte specialization
//! bitmap. Specializations only mean something for the extended opcode 0xF0.

use core::ffi::c_void;
use core::ptr;

use crate::abi::nrtucode_coretype_t;
use crate::error::{Error, Result};
use crate::handles::{
    default_name, free_object, malloc_object, nrtucode_opset_t, Handle, OPSET_BITMAP_LEN,
    OPSET_SLOTS,
};
use crate::images::is_q7_pool;
use crate::platform::{Ctx, PlatformObject, SEV_INFO};

pub type Opset = Handle<nrtucode_opset_t>;

/// The extended-instruction opcode whose byte 0x0c selects a specialization.
pub const EXTENDED_OPCODE: u8 = 0xF0;
/// Offset of the specialization byte in a 64-byte instruction.
pub const SPECIALIZATION_OFFSET: usize = 0x0c;

impl Opset {
    fn slot(self, opcode: u8) -> *mut u8 {
        self.get(|o| o.opcode_slot[usize::from(opcode)])
    }

    /// A copy of the opcode's specialization bitmap, if the opcode is present.
    fn bitmap(self, opcode: u8) -> Option<[u8; OPSET_BITMAP_LEN]> {
        let p = self.slot(opcode);
        // SAFETY: a non-NULL slot is a live calloc(1, 0x100) bitmap owned by this opset.
        (!p.is_null()).then(|| unsafe { p.cast::<[u8; OPSET_BITMAP_LEN]>().read() })
    }
}

/// `opset_create` after its guards. Opsets are not counted as live objects.
pub fn create(ctx: Ctx) -> Result<Opset> {
    let p = malloc_object(nrtucode_opset_t {
        context: ctx.as_ptr(),
        opcode_slot: [ptr::null_mut(); OPSET_SLOTS],
        friendly_name: [0; 0x28],
    })
    .ok_or(Error::Allocation)?;
    // SAFETY: fresh object from malloc_object.
    let op = unsafe { Opset::from_raw(p) };
    op.update(|o| {
        default_name(
            &mut o.friendly_name,
            "nrtucode_opset_t",
            p.as_ptr() as *const c_void,
        )
    });
    ctx.log(SEV_INFO, format_args!("Initialized {}", op.name()));
    Ok(op)
}

/// `opset_destroy`: frees every bitmap, then the opset.
pub fn destroy(op: Opset) {
    op.ctx()
        .log(SEV_INFO, format_args!("Destroyed {}", op.name()));
    op.get(|o| {
        for &slot in o.opcode_slot.iter().filter(|s| !s.is_null()) {
            // SAFETY: each non-NULL slot is this opset's calloc'd bitmap.
            unsafe { libc::free(slot.cast()) };
        }
    });
    free_object(op);
}

/// `opset_add_instruction` on the instruction's opcode byte and, for 0xF0, its
/// specialization byte. Idempotent; values are not validated.
pub fn add_instruction(op: Opset, opcode: u8, specialization: impl FnOnce() -> u8) -> Result {
    let ctx = op.ctx();
    let mut slot = op.slot(opcode);
    if slot.is_null() {
        // SAFETY: plain calloc of one bitmap.
        slot = unsafe { libc::calloc(1, OPSET_BITMAP_LEN) }.cast();
        op.update(|o| o.opcode_slot[usize::from(opcode)] = slot);
        if slot.is_null() {
            return Err(Error::Allocation);
        }
        ctx.log(
            SEV_INFO,
            format_args!("{} added opcode 0x{opcode:02x}", op.name()),
        );
    }
    if opcode != EXTENDED_OPCODE {
        return Ok(());
    }
    let spec = specialization();
    // SAFETY: `slot` is this opset's live 0x100-byte bitmap and `spec` < 0x100.
    let already = unsafe { core::mem::replace(&mut *slot.add(usize::from(spec)), 1) };
    if already == 0 {
        ctx.log(
            SEV_INFO,
            format_args!(
                "{} added extended opcode 0x{EXTENDED_OPCODE:02x} with specialization 0x{spec:02x}",
                op.name()
            ),
        );
    }
    Ok(())
}

pub fn num_opcodes(op: Opset) -> usize {
    op.get(|o| o.opcode_slot.iter().filter(|s| !s.is_null()).count())
}

/// The byte sum of the opcode's bitmap (0 when absent).
pub fn num_specializations(op: Opset, opcode: u8) -> usize {
    op.bitmap(opcode)
        .map_or(0, |bm| bm.iter().map(|&b| usize::from(b)).sum())
}

pub fn has_opcode(op: Opset, opcode: u8) -> bool {
    !op.slot(opcode).is_null()
}

pub fn has_specialization(op: Opset, opcode: u8, spec: u8) -> bool {
    op.bitmap(opcode)
        .is_some_and(|bm| bm[usize::from(spec)] != 0)
}

/// `opset_get_library_index`: 0 for an empty set or a Q7 POOL coretype; otherwise
/// ERR_UNKNOWN_CORE and the output is left alone. It never selects library 3.
pub fn library_index(op: Opset, coretype: nrtucode_coretype_t) -> Result<usize> {
    if num_opcodes(op) == 0 || is_q7_pool(coretype) {
        Ok(0)
    } else {
        Err(Error::UnknownCore)
    }
}
