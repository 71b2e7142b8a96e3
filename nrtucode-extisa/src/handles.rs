//! The four handle objects, byte-exact. Each is a plain `malloc` block of the vendor's size
//! (no vtable, no Rust allocation) so that a caller who inspects or interposes allocations
//! sees what the vendor library produces. Layouts are pinned by the asserts at the bottom.
//!
//! [`Handle`] is how the rest of the crate reaches a live object: every field access is a
//! short borrow that ends before any caller callback runs, because callbacks may re-enter
//! the provider with the same context.
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_void, CStr};
use core::fmt;
use core::mem::{offset_of, size_of};
use core::ptr::NonNull;

use crate::abi::{nrtucode_coretype_t, nrtucode_platform_memhandle_t, nrtucode_platform_rw_t};

/// Length of every friendly-name field that `snprintf`/`strncpy` may fill; the byte after
/// it is forced to NUL.
pub const NAME_LEN: usize = 0x20;

/// `nrtucode_context_t`, malloc(0x28).
#[repr(C)]
pub struct nrtucode_context_t {
    pub rw_impl: *const nrtucode_platform_rw_t,
    pub memhandle_impl: *const nrtucode_platform_memhandle_t,
    pub userdata: *mut c_void,
    /// Capacity of `log_scratch`; grows, never shrinks.
    pub log_scratch_size: u64,
    pub log_scratch: *mut c_char,
}

/// `boot_state` values.
pub const NOT_BOOTED: u32 = 0;
pub const BOOTED_LEGACY: u32 = 1;

/// `nrtucode_core_t`, malloc(0x70).
#[repr(C)]
pub struct nrtucode_core_t {
    pub context: *mut nrtucode_context_t,
    pub userdata: *mut c_void,
    /// Stored as given; the DGE gates test it against the NX_POOL kinds.
    pub coretype: nrtucode_coretype_t,
    pub _pad0: u32,
    pub iram_base: u64,
    /// Base of the device control block (claim word, log ring, DGE, pc bounds).
    pub dram_base: u64,
    pub apb_base: u64,
    pub boot_state: u32,
    pub _pad1: u32,
    /// The log ring's memhandle; NULL while logs are off.
    pub log_memhandle: *mut c_void,
    pub log_buf_size: u32,
    /// Host-side tail of the log ring.
    pub log_read_cursor: u32,
    pub friendly_name: [c_char; NAME_LEN + 1],
    pub _tail: [u8; 7],
}

/// `nrtucode_ll_t` (public name `nrtucode_loadable_library_t`), malloc(0x48).
#[repr(C)]
pub struct nrtucode_loadable_library_t {
    pub context: *mut nrtucode_context_t,
    /// Valid only while `prelinked_size != 0`.
    pub device_memhandle: *mut c_void,
    /// The resolved library index (record +0x18).
    pub library_selector: u64,
    /// Staged byte count (UCPL header + code + data); 0 when nothing was staged.
    pub prelinked_size: u64,
    pub friendly_name: [c_char; NAME_LEN + 1],
    pub _tail: [u8; 7],
}

/// Number of opcode slots in an opset, and bytes in each specialization bitmap.
pub const OPSET_SLOTS: usize = 256;
pub const OPSET_BITMAP_LEN: usize = 0x100;

/// `nrtucode_opset_t`, malloc(0x830).
#[repr(C)]
pub struct nrtucode_opset_t {
    pub context: *mut nrtucode_context_t,
    /// NULL, or a calloc(1, 0x100) specialization bitmap.
    pub opcode_slot: [*mut u8; OPSET_SLOTS],
    pub friendly_name: [c_char; 0x28],
}

const _: () = assert!(size_of::<nrtucode_context_t>() == 0x28);
const _: () = assert!(offset_of!(nrtucode_context_t, rw_impl) == 0x00);
const _: () = assert!(offset_of!(nrtucode_context_t, memhandle_impl) == 0x08);
const _: () = assert!(offset_of!(nrtucode_context_t, userdata) == 0x10);
const _: () = assert!(offset_of!(nrtucode_context_t, log_scratch_size) == 0x18);
const _: () = assert!(offset_of!(nrtucode_context_t, log_scratch) == 0x20);

const _: () = assert!(size_of::<nrtucode_core_t>() == 0x70);
const _: () = assert!(offset_of!(nrtucode_core_t, context) == 0x00);
const _: () = assert!(offset_of!(nrtucode_core_t, userdata) == 0x08);
const _: () = assert!(offset_of!(nrtucode_core_t, coretype) == 0x10);
const _: () = assert!(offset_of!(nrtucode_core_t, iram_base) == 0x18);
const _: () = assert!(offset_of!(nrtucode_core_t, dram_base) == 0x20);
const _: () = assert!(offset_of!(nrtucode_core_t, apb_base) == 0x28);
const _: () = assert!(offset_of!(nrtucode_core_t, boot_state) == 0x30);
const _: () = assert!(offset_of!(nrtucode_core_t, log_memhandle) == 0x38);
const _: () = assert!(offset_of!(nrtucode_core_t, log_buf_size) == 0x40);
const _: () = assert!(offset_of!(nrtucode_core_t, log_read_cursor) == 0x44);
const _: () = assert!(offset_of!(nrtucode_core_t, friendly_name) == 0x48);
const _: () = assert!(offset_of!(nrtucode_core_t, friendly_name) + NAME_LEN == 0x68);

const _: () = assert!(size_of::<nrtucode_loadable_library_t>() == 0x48);
const _: () = assert!(offset_of!(nrtucode_loadable_library_t, device_memhandle) == 0x08);
const _: () = assert!(offset_of!(nrtucode_loadable_library_t, library_selector) == 0x10);
const _: () = assert!(offset_of!(nrtucode_loadable_library_t, prelinked_size) == 0x18);
const _: () = assert!(offset_of!(nrtucode_loadable_library_t, friendly_name) == 0x20);
const _: () = assert!(offset_of!(nrtucode_loadable_library_t, friendly_name) + NAME_LEN == 0x40);

const _: () = assert!(size_of::<nrtucode_opset_t>() == 0x830);
const _: () = assert!(offset_of!(nrtucode_opset_t, opcode_slot) == 0x008);
const _: () = assert!(offset_of!(nrtucode_opset_t, friendly_name) == 0x808);
const _: () = assert!(offset_of!(nrtucode_opset_t, friendly_name) + NAME_LEN == 0x828);

/// The three child objects (core, library, opset): each has a context back pointer and a
/// friendly name.
pub trait Named {
    const TYPE_NAME: &'static str;
    fn context(&self) -> *mut nrtucode_context_t;
    fn friendly_name(&self) -> &[c_char];
    fn friendly_name_mut(&mut self) -> &mut [c_char];
}

macro_rules! named {
    ($t:ty, $type_name:literal) => {
        impl Named for $t {
            const TYPE_NAME: &'static str = $type_name;
            fn context(&self) -> *mut nrtucode_context_t {
                self.context
            }
            fn friendly_name(&self) -> &[c_char] {
                &self.friendly_name
            }
            fn friendly_name_mut(&mut self) -> &mut [c_char] {
                &mut self.friendly_name
            }
        }
    };
}
named!(nrtucode_core_t, "nrtucode_core_t");
named!(nrtucode_loadable_library_t, "nrtucode_ll_t");
named!(nrtucode_opset_t, "nrtucode_opset_t");

/// A live handle object created by this library. Holds no borrow: callers may re-enter
/// through callbacks, so each access below is a short, self-contained borrow.
pub struct Handle<T>(NonNull<T>);

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Handle<T> {}

impl<T> Handle<T> {
    /// # Safety
    /// `ptr` must point to a live `T` made by this library's create function, not yet
    /// destroyed, and not accessed concurrently from another thread during the call.
    pub unsafe fn from_raw(ptr: NonNull<T>) -> Self {
        Handle(ptr)
    }

    pub fn as_ptr(self) -> *mut T {
        self.0.as_ptr()
    }

    /// Reads through a short shared borrow. `f` must not call back into the caller.
    pub fn get<R>(self, f: impl FnOnce(&T) -> R) -> R {
        // SAFETY: the constructor's contract makes the pointee live and unaliased by
        // another thread; the borrow ends before any callback can re-enter.
        f(unsafe { self.0.as_ref() })
    }

    /// Mutates through a short exclusive borrow. `f` must not call back into the caller.
    pub fn update<R>(self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: as in `get`; no other borrow of the pointee is alive during `f`.
        f(unsafe { &mut *self.0.as_ptr() })
    }
}

/// Allocates `T` with libc `malloc(size_of::<T>())` and moves `value` in; None on OOM.
pub fn malloc_object<T>(value: T) -> Option<NonNull<T>> {
    // SAFETY: plain malloc of the struct's size; a non-NULL result is suitably aligned for
    // any fundamental type (glibc guarantees 16), which covers every handle struct.
    let p = unsafe { libc::malloc(size_of::<T>()) }.cast::<T>();
    let p = NonNull::new(p)?;
    // SAFETY: `p` is a fresh, exclusive, correctly sized allocation.
    unsafe { p.as_ptr().write(value) };
    Some(p)
}

/// Frees an object from [`malloc_object`]. The handle must not be used afterwards.
pub fn free_object<T>(h: Handle<T>) {
    // SAFETY: every Handle points to a malloc_object allocation (constructor contract);
    // the handle types hold no Drop fields, so a plain free is complete.
    unsafe { libc::free(h.as_ptr().cast()) }
}

/// Fills a friendly-name field as `snprintf(field, 0x21, "<type>@%p", obj)` does, then
/// forces the NUL at `NAME_LEN`.
pub fn default_name(field: &mut [c_char], type_name: &str, obj: *const c_void) {
    let text = format!("{type_name}@{obj:p}");
    store_name(field, text.as_bytes());
}

/// `strncpy(field, name, NAME_LEN)` followed by `field[NAME_LEN] = 0`.
pub fn store_name(field: &mut [c_char], name: &[u8]) {
    let n = name
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(name.len())
        .min(NAME_LEN);
    for (i, slot) in field.iter_mut().take(NAME_LEN).enumerate() {
        *slot = if i < n { name[i] as c_char } else { 0 };
    }
    field[NAME_LEN] = 0;
}

/// The friendly name's bytes, as printed with `%s` (up to the NUL, unchanged).
pub fn name_bytes(field: &[c_char]) -> Vec<u8> {
    field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect()
}

/// First of the 256 private-use code points that carry raw bytes through `fmt` (see
/// [`RawBytes`]).
const BYTE_CARRIER: u32 = 0x10_FF00;

/// Caller bytes (names, device log text) inside a `format_args!` log line, passed through
/// unchanged as `%s` does: `fmt` only carries UTF-8, so every byte that is not part of a
/// plain UTF-8 character travels as one private-use code point (U+10FF00 + byte), which
/// [`line_bytes`] turns back into that byte.
pub struct RawBytes<'a>(pub &'a [u8]);

impl fmt::Display for RawBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                if u32::from(c) >= BYTE_CARRIER {
                    // A real U+10FFxx would be read back as a carrier: send its bytes.
                    let mut b = [0u8; 4];
                    for &x in c.encode_utf8(&mut b).as_bytes() {
                        f.write_char(carrier(x))?;
                    }
                } else {
                    f.write_char(c)?;
                }
            }
            for &x in chunk.invalid() {
                f.write_char(carrier(x))?;
            }
        }
        Ok(())
    }
}

fn carrier(b: u8) -> char {
    char::from_u32(BYTE_CARRIER + u32::from(b)).expect("U+10FF00..=U+10FFFF are chars")
}

/// A formatted log line as the bytes it stands for (carriers back to their bytes).
pub fn line_bytes(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match u32::from(c).checked_sub(BYTE_CARRIER) {
            Some(b) => out.push(b as u8),
            None => out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes()),
        }
    }
    out
}

/// An owned name for log lines (see [`RawBytes`]).
pub struct RawName(pub Vec<u8>);

impl fmt::Display for RawName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        RawBytes(&self.0).fmt(f)
    }
}

/// Reads a caller's C string lazily, when (and only if) a log line is formatted, mirroring a
/// `%s` argument that is only touched by vsnprintf.
pub struct CStrArg(pub NonNull<c_char>);

impl fmt::Display for CStrArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: the caller passed a NUL-terminated string (the C API contract for names).
        let s = unsafe { CStr::from_ptr(self.0.as_ptr()) };
        RawBytes(s.to_bytes()).fmt(f)
    }
}

/// Copies at most `NAME_LEN` bytes of a caller's C string, stopping at its NUL, as strncpy
/// reads it (never past the first NUL or the limit).
pub fn read_name_prefix(p: NonNull<c_char>) -> Vec<u8> {
    let mut out = Vec::with_capacity(NAME_LEN);
    for i in 0..NAME_LEN {
        // SAFETY: bytes up to and including the string's NUL are readable (C contract);
        // the loop stops at the first NUL.
        let b = unsafe { *p.as_ptr().add(i) } as u8;
        if b == 0 {
            break;
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_name_truncates_and_forces_nul() {
        let mut f = [0x55 as c_char; NAME_LEN + 1];
        store_name(&mut f, b"0123456789abcdef0123456789abcdefXYZ");
        assert_eq!(name_bytes(&f), b"0123456789abcdef0123456789abcdef");
        assert_eq!(f[NAME_LEN], 0);
        store_name(&mut f, b"ab");
        assert_eq!(&f[..4], &[b'a' as c_char, b'b' as c_char, 0, 0]);
        assert!(f[2..].iter().all(|&c| c == 0), "strncpy pads with NULs");
    }

    #[test]
    fn raw_bytes_pass_through_formatting_unchanged() {
        let cases: [&[u8]; 6] = [
            b"caf\xe9",
            "café".as_bytes(),
            b"\xff\xfe\x00\x80 tail",
            "\u{10FF41} is a carrier code point".as_bytes(),
            b"\xf4\x8f\xbf",
            b"",
        ];
        for bytes in cases {
            let line = format!("<{}> {}", RawBytes(bytes), 7);
            let mut want = b"<".to_vec();
            want.extend_from_slice(bytes);
            want.extend_from_slice(b"> 7");
            assert_eq!(line_bytes(&line), want, "{bytes:?}");
        }
    }

    #[test]
    fn default_name_is_type_at_pointer() {
        let mut f = [0 as c_char; NAME_LEN + 1];
        default_name(
            &mut f,
            "nrtucode_core_t",
            0x5555_1234_5678usize as *const c_void,
        );
        assert_eq!(name_bytes(&f), b"nrtucode_core_t@0x555512345678");
    }
}
