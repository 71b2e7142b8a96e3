//! The stdio channels (fd 1 and 2): the host (emulator) collects them; the device firmware
//! drains its rings after the launch, so there is nothing to flush there.
//!
//! On the host, an op library's static constructors run while it is loaded, before
//! `entry_func` hands over the host's services; on the device the CRT bootstrap comes
//! first and the constructors after it (`__clibrary_init`, then `_init`), so what they
//! print is seen. Host builds therefore write output from before the services to the file
//! the emulator's core names in `NRT_POOL_EARLY_STDIO_FD` (it reads it even when the start
//! code then faults), or, loaded anywhere else, keep it (up to [`EARLY_BYTES`]) and pass it
//! on when the services are installed.

/// Writes to fd 1 or 2 through the host's `neuron_host_write`; the bytes written, or -1.
pub fn write(fd: i32, bytes: &[u8]) -> isize {
    match crate::platform::services().write {
        // SAFETY: the service has the documented signature; `bytes` is readable.
        Some(w) => unsafe { w(fd, bytes.as_ptr().cast(), bytes.len()) },
        #[cfg(not(target_os = "none"))]
        None => early::keep(fd, bytes),
        #[cfg(target_os = "none")]
        None => -1,
    }
}

/// `fsync(fd)`: a zero-length write asks the host to flush the channel.
pub fn flush(fd: i32) -> i32 {
    if let Some(w) = crate::platform::services().write {
        // SAFETY: as above; a zero-length write reads nothing.
        unsafe { w(fd, core::ptr::null(), 0) };
    }
    0
}

/// Bytes of early output (records included) a host build keeps.
#[cfg(not(target_os = "none"))]
pub const EARLY_BYTES: usize = 4096;

/// Passes the output kept before the services were known to `write` (when it is one).
#[cfg_attr(target_os = "none", allow(unused_variables))]
pub fn replay_early(write: Option<crate::platform::WriteFn>) {
    #[cfg(not(target_os = "none"))]
    if let Some(w) = write {
        early::replay(w);
    }
}

/// Output kept before the host's services are known: records of fd (1 byte), length (2
/// bytes, little-endian) and the bytes.
#[cfg(not(target_os = "none"))]
mod early {
    use super::EARLY_BYTES;
    use crate::global::Global;
    use crate::platform::WriteFn;

    struct Early {
        buf: [u8; EARLY_BYTES],
        len: usize,
    }

    static EARLY: Global<Early> = Global::new(Early {
        buf: [0; EARLY_BYTES],
        len: 0,
    });

    const HEAD: usize = 3;

    extern "C" {
        fn getenv(name: *const core::ffi::c_char) -> *const core::ffi::c_char;
        fn write(fd: core::ffi::c_int, buf: *const core::ffi::c_void, n: usize) -> isize;
    }

    /// The emulator core's early-output file, if it named one: a decimal descriptor.
    fn early_file() -> Option<core::ffi::c_int> {
        // SAFETY: getenv with a NUL-terminated name; NULL or a NUL-terminated value.
        let v = unsafe { getenv(c"NRT_POOL_EARLY_STDIO_FD".as_ptr()) };
        if v.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated value (above).
        let digits = unsafe { core::ffi::CStr::from_ptr(v) }.to_bytes();
        if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(
            digits
                .iter()
                .fold(0, |n, d| n * 10 + core::ffi::c_int::from(d - b'0')),
        )
    }

    /// Writes all of `b` to `fd` (a regular file: short writes only on error).
    fn write_all(fd: core::ffi::c_int, mut b: &[u8]) -> bool {
        while !b.is_empty() {
            // SAFETY: `b` is readable for its length.
            let n = unsafe { write(fd, b.as_ptr().cast(), b.len()) };
            if n <= 0 {
                return false;
            }
            b = &b[n as usize..];
        }
        true
    }

    /// Keeps `bytes` for fd `fd` (1 or 2): in the emulator core's early-output file as
    /// records of (fd, 16-bit length, bytes), else in the buffer. The bytes taken, or -1
    /// when they cannot be kept (a write is kept whole or not at all in the buffer).
    pub fn keep(fd: i32, bytes: &[u8]) -> isize {
        if !(1..=2).contains(&fd) {
            return -1;
        }
        if bytes.is_empty() {
            return 0;
        }
        if let Some(file) = early_file() {
            // (Records of at most 1 KiB: the core reads the file through a 4 KiB buffer.)
            for piece in bytes.chunks(1024) {
                let n = (piece.len() as u16).to_le_bytes();
                if !write_all(file, &[fd as u8, n[0], n[1]]) || !write_all(file, piece) {
                    return -1;
                }
            }
            return bytes.len() as isize;
        }
        EARLY.with(|e| {
            let room = EARLY_BYTES - e.len;
            if bytes.len() > u16::MAX as usize || HEAD + bytes.len() > room {
                return -1;
            }
            let at = e.len;
            e.buf[at] = fd as u8;
            e.buf[at + 1..at + HEAD].copy_from_slice(&(bytes.len() as u16).to_le_bytes());
            e.buf[at + HEAD..at + HEAD + bytes.len()].copy_from_slice(bytes);
            e.len += HEAD + bytes.len();
            bytes.len() as isize
        })
    }

    /// Writes every kept record through `w`, in order, and forgets them.
    pub fn replay(w: WriteFn) {
        EARLY.with(|e| {
            let mut at = 0;
            while at + HEAD <= e.len {
                let fd = i32::from(e.buf[at]);
                let n = usize::from(u16::from_le_bytes([e.buf[at + 1], e.buf[at + 2]]));
                let bytes = &e.buf[at + HEAD..at + HEAD + n];
                // SAFETY: the service has the documented signature; `bytes` is readable.
                unsafe { w(fd, bytes.as_ptr().cast(), n) };
                at += HEAD + n;
            }
            e.len = 0;
        });
    }
}
