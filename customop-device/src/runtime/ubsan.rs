//! Device faults on host cores: handlers for the compiler checks that host op builds carry.
//!
//! Also (D95): a float-to-integer conversion of NaN or of a value outside the integer's
//! range, and `__builtin_clz`/`ctz` of 0, are undefined in C and give other values on a
//! Pool core than on x86; host builds check for them too (`-fsanitize=float-cast-overflow,
//! builtin`) and a checked launch notes each with its source line (a `rules` finding).
//! Unchecked, a conversion goes on with the device's value where the build's GCC plugin
//! made it call [`super::convert`] (D117), and `clz`/`ctz` of 0 with x86's.
//!
//! A Pool core (Xtensa) faults on a 2- or 4-byte load or store at an address that is not a
//! multiple of its size, and reads 8-byte values as two 4-byte words; x86 does not fault at
//! all. Host op builds are compiled with `-fsanitize=alignment -fno-sanitize-recover`, so
//! each access through a typed pointer calls here when its address is not a multiple of
//! the type's alignment; here the device's rule decides, and a core that would fault ends
//! with the same cause the Xtensa backend reports ("unaligned load/store"), its frames
//! naming the op's line (docs/decisions.md D92). Host builds only: device builds fault for
//! real.

use core::ffi::c_char;
use core::fmt::Write;

/// `__ubsan_source_location` (GCC's and LLVM's layout).
#[repr(C)]
pub struct SourceLocation {
    pub file: *const c_char,
    pub line: u32,
    pub column: u32,
}

/// `__ubsan_type_descriptor`: kind, info, then the type's quoted name (NUL-terminated).
#[repr(C)]
pub struct TypeDescriptor {
    pub kind: u16,
    pub info: u16,
    pub name: [c_char; 0],
}

/// `__ubsan_type_mismatch_data_v1`.
#[repr(C)]
pub struct TypeMismatchData {
    pub location: SourceLocation,
    pub ty: *const TypeDescriptor,
    pub log_alignment: u8,
    pub check_kind: u8,
}

const _: () = assert!(core::mem::size_of::<SourceLocation>() == 8 + core::mem::size_of::<usize>());
const _: () = assert!(
    core::mem::offset_of!(TypeMismatchData, log_alignment)
        == core::mem::size_of::<SourceLocation>() + core::mem::size_of::<usize>()
);

/// The widest access a Pool core checks the alignment of: wider values (`double`,
/// `int64_t`) are moved as 4-byte words.
pub const DEVICE_WORD: u64 = 4;

/// Whether a Pool core faults on an access to `addr` of a type aligned to `align` bytes.
pub fn device_faults(addr: u64, align: u64) -> bool {
    let need = align.clamp(1, DEVICE_WORD);
    !addr.is_multiple_of(need)
}

/// What the access was, in the compiler's numbering (`type_check_kind`).
fn access_name(kind: u8) -> &'static str {
    match kind {
        0 => "load of",
        1 => "store to",
        2 => "reference binding to",
        3 => "member access within",
        4 => "member call on",
        5 => "constructor call on",
        6 | 7 => "downcast of",
        8 => "upcast of",
        9 => "cast to virtual base of",
        _ => "access to",
    }
}

/// A message in a fixed buffer (no allocator here); longer text is cut.
struct Message {
    buf: [u8; 240],
    len: usize,
}

impl Write for Message {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let k = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + k].copy_from_slice(&s.as_bytes()[..k]);
        self.len += k;
        Ok(())
    }
}

/// The type's name as the compiler spelled it (quotes included), at most 64 bytes.
///
/// # Safety
/// `ty` is NULL or a type descriptor the compiler emitted.
unsafe fn type_name(ty: *const TypeDescriptor) -> &'static [u8] {
    if ty.is_null() {
        return b"a value";
    }
    // SAFETY: the descriptor's name follows its two u16 fields, NUL-terminated.
    let name = unsafe { core::ptr::addr_of!((*ty).name).cast::<u8>() };
    let mut n = 0;
    // SAFETY: read up to the NUL (or 64 bytes) of the compiler's string.
    while n < 64 && unsafe { *name.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: those `n` bytes are readable and live as long as the library.
    unsafe { core::slice::from_raw_parts(name, n) }
}

/// Ends the kernel as a Pool core would (its report: "unaligned load/store") where the
/// device's rule says it faults; returns otherwise.
///
/// # Safety
/// `data` is the compiler's record for the check.
unsafe fn misaligned(data: *const TypeMismatchData, addr: usize) {
    if data.is_null() {
        return;
    }
    // SAFETY: the compiler's record (function contract).
    let d = unsafe { &*data };
    let align = 1u64 << d.log_alignment.min(12);
    if !device_faults(addr as u64, align) {
        return;
    }
    let mut m = Message {
        buf: [0; 240],
        len: 0,
    };
    // SAFETY: the record's type descriptor (function contract).
    let ty = unsafe { type_name(d.ty) };
    let _ = m.write_str(customop_abi::UNALIGNED_REPORT);
    let _ = write!(
        m,
        ": {} {} at {addr:#x} (a Pool core needs {}-byte alignment for it; memcpy reads any address)",
        access_name(d.check_kind),
        core::str::from_utf8(ty).unwrap_or("a value"),
        align.min(DEVICE_WORD),
    );
    crate::runtime::platform::fault(&m.buf[..m.len])
}

/// `-fsanitize=alignment` (recoverable, as host op builds compile it): an access the device
/// would not fault on goes on.
///
/// # Safety
/// Called by compiled code with its own record.
#[no_mangle]
pub unsafe extern "C" fn __ubsan_handle_type_mismatch_v1(
    data: *const TypeMismatchData,
    addr: usize,
) {
    // SAFETY: the compiler's record (function contract).
    unsafe { misaligned(data, addr) }
}

/// `-fno-sanitize-recover=alignment` (a build that asked for it): the compiled code does
/// not go on after this call, so an access the device would take ends the kernel too.
///
/// # Safety
/// Called by compiled code with its own record.
#[no_mangle]
pub unsafe extern "C" fn __ubsan_handle_type_mismatch_v1_abort(
    data: *const TypeMismatchData,
    addr: usize,
) -> ! {
    // SAFETY: the compiler's record (function contract).
    unsafe { misaligned(data, addr) };
    crate::runtime::platform::fault(
        b"unaligned load/store: an access the op's build declared unrecoverable (-fno-sanitize-recover=alignment)",
    )
}

/// `__ubsan_float_cast_overflow_data` (GCC): the source location, then the types.
#[repr(C)]
pub struct FloatCastData {
    pub location: SourceLocation,
    pub from: *const TypeDescriptor,
    pub to: *const TypeDescriptor,
}

/// `__ubsan_invalid_builtin_data`: the source location and which builtin (0 ctz, 1 clz).
#[repr(C)]
pub struct BuiltinData {
    pub location: SourceLocation,
    pub kind: u8,
}

/// Notes `what` at `location` in a checked launch (nothing otherwise). The source file's
/// name is given as its distance from `entry_func` (which the op library exports): the
/// host finds both in the library's file.
fn note_arithmetic(what: u32, location: &SourceLocation) {
    let anchor = crate::runtime::exports::entry_func as *const () as usize as u64;
    let file = (location.file as u64).wrapping_sub(anchor);
    let at = (u64::from(location.line) << 32) | u64::from(location.column);
    crate::runtime::check_note(customop_abi::checklog::NoteKind::Arithmetic, what, file, at);
}

/// `-fsanitize=float-cast-overflow`: a conversion of NaN or an out-of-range value.
///
/// # Safety
/// Called by compiled code with its own record.
#[no_mangle]
pub unsafe extern "C" fn __ubsan_handle_float_cast_overflow(
    data: *const FloatCastData,
    _value: usize,
) {
    // SAFETY: the compiler's record (function contract).
    if let Some(d) = unsafe { data.as_ref() } {
        note_arithmetic(customop_abi::checklog::ARITH_FLOAT_TO_INT, &d.location);
    }
}

/// `-fsanitize=builtin`: `__builtin_clz(0)` or `__builtin_ctz(0)`.
///
/// # Safety
/// Called by compiled code with its own record.
#[no_mangle]
pub unsafe extern "C" fn __ubsan_handle_invalid_builtin(data: *const BuiltinData) {
    // SAFETY: the compiler's record (function contract).
    if let Some(d) = unsafe { data.as_ref() } {
        let what = if d.kind == 1 {
            customop_abi::checklog::ARITH_CLZ_ZERO
        } else {
            customop_abi::checklog::ARITH_CTZ_ZERO
        };
        note_arithmetic(what, &d.location);
    }
}

#[cfg(test)]
mod tests {
    use super::device_faults;

    #[test]
    fn the_device_checks_alignment_up_to_a_word() {
        assert!(device_faults(0x1001, 4));
        assert!(device_faults(0x1002, 4));
        assert!(!device_faults(0x1004, 4));
        assert!(device_faults(0x1001, 2));
        assert!(!device_faults(0x1002, 2));
        assert!(!device_faults(0x1001, 1));
        // 8-byte values move as two words: 4-byte alignment is enough.
        assert!(!device_faults(0x1004, 8));
        assert!(device_faults(0x1006, 8));
    }
}
