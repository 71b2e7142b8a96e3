//! ctype.h for device builds: the "C" locale's character classes (the only locale on a
//! core), from Rust's ASCII classes; anything outside 0..=255 (EOF) is in no class.

use core::ffi::c_int;

/// The byte `c` stands for, when it is one.
fn byte(c: c_int) -> Option<u8> {
    u8::try_from(c).ok()
}

/// Whether `c` is in the class `f` tests (C returns nonzero; 1 here).
fn class(c: c_int, f: fn(&u8) -> bool) -> c_int {
    c_int::from(byte(c).is_some_and(|b| f(&b)))
}

#[no_mangle]
pub extern "C" fn isalnum(c: c_int) -> c_int {
    class(c, u8::is_ascii_alphanumeric)
}

#[no_mangle]
pub extern "C" fn isalpha(c: c_int) -> c_int {
    class(c, u8::is_ascii_alphabetic)
}

#[no_mangle]
pub extern "C" fn isblank(c: c_int) -> c_int {
    class(c, |b| *b == b' ' || *b == b'\t')
}

#[no_mangle]
pub extern "C" fn iscntrl(c: c_int) -> c_int {
    class(c, u8::is_ascii_control)
}

#[no_mangle]
pub extern "C" fn isdigit(c: c_int) -> c_int {
    class(c, u8::is_ascii_digit)
}

#[no_mangle]
pub extern "C" fn isgraph(c: c_int) -> c_int {
    class(c, u8::is_ascii_graphic)
}

#[no_mangle]
pub extern "C" fn islower(c: c_int) -> c_int {
    class(c, u8::is_ascii_lowercase)
}

#[no_mangle]
pub extern "C" fn isprint(c: c_int) -> c_int {
    class(c, |b| b.is_ascii_graphic() || *b == b' ')
}

#[no_mangle]
pub extern "C" fn ispunct(c: c_int) -> c_int {
    class(c, u8::is_ascii_punctuation)
}

/// C's white space includes the vertical tab, which Rust's ASCII class leaves out.
#[no_mangle]
pub extern "C" fn isspace(c: c_int) -> c_int {
    class(c, |b| b.is_ascii_whitespace() || *b == 0x0b)
}

#[no_mangle]
pub extern "C" fn isupper(c: c_int) -> c_int {
    class(c, u8::is_ascii_uppercase)
}

#[no_mangle]
pub extern "C" fn isxdigit(c: c_int) -> c_int {
    class(c, u8::is_ascii_hexdigit)
}

#[no_mangle]
pub extern "C" fn tolower(c: c_int) -> c_int {
    byte(c).map_or(c, |b| b.to_ascii_lowercase().into())
}

#[no_mangle]
pub extern "C" fn toupper(c: c_int) -> c_int {
    byte(c).map_or(c, |b| b.to_ascii_uppercase().into())
}
