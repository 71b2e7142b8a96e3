//! Early output: what a host build's static constructors print before `entry_func` hands
//! over the host's services travels as records on a file the emulator core opens on
//! [`EARLY_STDIO_FD`] (a memfd named [`EARLY_STDIO_NAME`]; D67).

/// The descriptor an emulator core puts its early-output file on, and the file's (memfd)
/// name: the runtime writes there only when the descriptor is that file.
pub const EARLY_STDIO_FD: i32 = 1000;
pub const EARLY_STDIO_NAME: &core::ffi::CStr = c"pool-early-stdio";

/// Early output records: fd (1 byte), length (2 bytes, little-endian), the bytes. Written
/// by the runtime (its buffer, the emulator core's file) and read back by the runtime's
/// replay and the engine's core.
pub mod record {
    /// A record's head before its bytes.
    pub const HEAD: usize = 3;

    /// The head of a record of `len` bytes for `fd`.
    pub fn head(fd: u8, len: u16) -> [u8; HEAD] {
        let n = len.to_le_bytes();
        [fd, n[0], n[1]]
    }

    /// The record at the start of `buf`: (fd, bytes, its whole size), or None when `buf`
    /// does not hold a whole one.
    pub fn first(buf: &[u8]) -> Option<(u8, &[u8], usize)> {
        let (&fd, rest) = buf.split_first()?;
        let n = usize::from(u16::from_le_bytes([*rest.first()?, *rest.get(1)?]));
        let bytes = buf.get(HEAD..HEAD + n)?;
        Some((fd, bytes, HEAD + n))
    }
}
