//! The stdio channels (fd 1 and 2): the host (emulator) collects them; the device firmware
//! drains its rings after the launch, so there is nothing to flush there.
//!
//! On the host, an op library's static constructors run while it is loaded, before
//! `entry_func` hands over the host's services; on the device the CRT bootstrap comes
//! first and the constructors after it (`__clibrary_init`, then `_init`), so what they
//! print is seen. Host builds therefore keep output written before the services are known
//! (up to [`EARLY_BYTES`]) and pass it on when they are installed.

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

    /// Keeps `bytes` for fd `fd` (1 or 2); the bytes taken, or -1 when they do not fit
    /// (a write is kept whole or not at all).
    pub fn keep(fd: i32, bytes: &[u8]) -> isize {
        if !(1..=2).contains(&fd) {
            return -1;
        }
        if bytes.is_empty() {
            return 0;
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
