//! The stdio channels (fd 1 and 2): the host (emulator) collects them; the device firmware
//! drains its rings after the launch, so there is nothing to flush there.

/// Writes to fd 1 or 2 through the host's `neuron_host_write`; the bytes written, or -1.
pub fn write(fd: i32, bytes: &[u8]) -> isize {
    match crate::platform::services().write {
        // SAFETY: the service has the documented signature; `bytes` is readable.
        Some(w) => unsafe { w(fd, bytes.as_ptr().cast(), bytes.len()) },
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
