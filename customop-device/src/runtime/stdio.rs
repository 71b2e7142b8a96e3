//! The stdio channels (fd 1 and 2): the host (emulator) collects them; the device firmware
//! drains its rings after the launch, so there is nothing to flush there.
//!
//! On the host, an op library's static constructors run while it is loaded, before
//! `entry_func` hands over the host's services; on the device the CRT bootstrap comes
//! first and the constructors after it (`__clibrary_init`, then `_init`), so what they
//! print is seen. Host builds therefore write output from before the services to the file
//! an emulator core puts on descriptor 1000 (a memfd it reads even when the start code then
//! faults; recognised by its name, through raw system calls, so the archive imports nothing),
//! or, loaded anywhere else, keep it (up to [`EARLY_BYTES`]) and pass it on when the
//! services are installed.

/// Writes to fd 1 or 2 through the host's `neuron_host_write`; the bytes written, or -1.
pub fn write(fd: i32, bytes: &[u8]) -> isize {
    match crate::runtime::platform::services().write {
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
    if let Some(w) = crate::runtime::platform::services().write {
        // SAFETY: as above; a zero-length write reads nothing.
        unsafe { w(fd, core::ptr::null(), 0) };
    }
    0
}

pub use customop_abi::stdio::{record, EARLY_STDIO_FD, EARLY_STDIO_NAME};

/// Bytes of early output (records included) a host build keeps.
#[cfg(not(target_os = "none"))]
pub const EARLY_BYTES: usize = 4096;

/// Passes the output kept before the services were known to `write` (when it is one).
#[cfg_attr(target_os = "none", allow(unused_variables))]
pub fn replay_early(write: Option<crate::runtime::platform::WriteFn>) {
    #[cfg(not(target_os = "none"))]
    if let Some(w) = write {
        early::replay(w);
    }
}

/// Output kept before the host's services are known: records of fd (1 byte), length (2
/// bytes, little-endian) and the bytes.
#[cfg(not(target_os = "none"))]
mod early {
    use super::record::{self, HEAD};
    use super::{EARLY_BYTES, EARLY_STDIO_FD, EARLY_STDIO_NAME};
    use crate::runtime::global::Global;
    use crate::runtime::platform::WriteFn;

    struct Early {
        buf: [u8; EARLY_BYTES],
        len: usize,
    }

    static EARLY: Global<Early> = Global::new(Early {
        buf: [0; EARLY_BYTES],
        len: 0,
    });

    /// The link `EARLY_STDIO_FD` is read through (the literal must name that descriptor).
    const EARLY_LINK: &core::ffi::CStr = c"/proc/self/fd/1000";
    const _: () = assert!(EARLY_STDIO_FD == 1000);

    /// A raw system call (x86-64 Linux): the archive imports nothing from the C library.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    unsafe fn syscall3(n: usize, a: usize, b: usize, c: usize) -> isize {
        let ret: isize;
        // SAFETY: the caller passes arguments valid for system call `n`; the kernel
        // clobbers rcx and r11 only.
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") n as isize => ret,
                in("rdi") a,
                in("rsi") b,
                in("rdx") c,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack)
            );
        }
        ret
    }

    /// A raw system call (i386 Linux, host cores in the device's data model: D97). LLVM
    /// keeps ebx for itself, so the first argument is swapped in around `int 0x80`.
    #[cfg(all(target_arch = "x86", target_os = "linux"))]
    unsafe fn syscall3(n: usize, a: usize, b: usize, c: usize) -> isize {
        let ret: isize;
        // SAFETY: the caller passes arguments valid for system call `n`; ebx is restored.
        unsafe {
            core::arch::asm!(
                "xchg ebx, {a}",
                "int 0x80",
                "xchg ebx, {a}",
                a = inout(reg) a => _,
                inlateout("eax") n as isize => ret,
                in("ecx") b,
                in("edx") c,
                options(nostack)
            );
        }
        ret
    }

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    const SYS_READLINK: usize = 89;
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    const SYS_WRITE: usize = 1;
    #[cfg(all(target_arch = "x86", target_os = "linux"))]
    const SYS_READLINK: usize = 85;
    #[cfg(all(target_arch = "x86", target_os = "linux"))]
    const SYS_WRITE: usize = 4;

    /// The emulator core's early-output file, if this process has one: `EARLY_STDIO_FD`,
    /// checked by its name, "/memfd:NAME (deleted)" (anywhere else it is not open, or is
    /// something else).
    #[cfg(all(any(target_arch = "x86_64", target_arch = "x86"), target_os = "linux"))]
    fn early_file() -> Option<usize> {
        let mut target = [0u8; 64];
        // SAFETY: a NUL-terminated path and a writable buffer of its length.
        let n = unsafe {
            syscall3(
                SYS_READLINK,
                EARLY_LINK.as_ptr() as usize,
                target.as_mut_ptr() as usize,
                target.len(),
            )
        };
        let t = target.get(..usize::try_from(n).ok()?)?;
        let name = t.strip_prefix(b"/memfd:")?.strip_suffix(b" (deleted)")?;
        (name == EARLY_STDIO_NAME.to_bytes()).then_some(EARLY_STDIO_FD as usize)
    }

    #[cfg(not(all(any(target_arch = "x86_64", target_arch = "x86"), target_os = "linux")))]
    fn early_file() -> Option<usize> {
        None
    }

    /// Writes all of `b` to `fd` (a regular file: short writes only on error).
    #[cfg(all(any(target_arch = "x86_64", target_arch = "x86"), target_os = "linux"))]
    fn write_all(fd: usize, mut b: &[u8]) -> bool {
        while !b.is_empty() {
            // SAFETY: `b` is readable for its length.
            let n = unsafe { syscall3(SYS_WRITE, fd, b.as_ptr() as usize, b.len()) };
            let Ok(n) = usize::try_from(n) else {
                return false;
            };
            if n == 0 {
                return false;
            }
            b = &b[n..];
        }
        true
    }

    #[cfg(not(all(any(target_arch = "x86_64", target_arch = "x86"), target_os = "linux")))]
    fn write_all(_fd: usize, _b: &[u8]) -> bool {
        false
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
                let head = record::head(fd as u8, piece.len() as u16);
                if !write_all(file, &head) || !write_all(file, piece) {
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
            e.buf[at..at + HEAD].copy_from_slice(&record::head(fd as u8, bytes.len() as u16));
            e.buf[at + HEAD..at + HEAD + bytes.len()].copy_from_slice(bytes);
            e.len += HEAD + bytes.len();
            bytes.len() as isize
        })
    }

    /// Writes every kept record through `w`, in order, and forgets them.
    pub fn replay(w: WriteFn) {
        EARLY.with(|e| {
            let mut at = 0;
            while let Some((fd, bytes, size)) = record::first(&e.buf[at..e.len]) {
                // SAFETY: the service has the documented signature; `bytes` is readable.
                unsafe { w(i32::from(fd), bytes.as_ptr().cast(), bytes.len()) };
                at += size;
            }
            e.len = 0;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::record;
    use std::vec;

    #[test]
    fn records_read_back_as_written_and_partial_ones_wait() {
        let mut buf = std::vec::Vec::new();
        for (fd, bytes) in [(1u8, &b"hello"[..]), (2, b""), (1, &[0u8, 255, 7][..])] {
            buf.extend_from_slice(&record::head(fd, bytes.len() as u16));
            buf.extend_from_slice(bytes);
        }
        let mut at = 0;
        let mut seen = std::vec::Vec::new();
        while let Some((fd, bytes, size)) = record::first(&buf[at..]) {
            seen.push((fd, bytes.to_vec()));
            at += size;
        }
        assert_eq!(at, buf.len());
        assert_eq!(
            seen,
            [(1, b"hello".to_vec()), (2, vec![]), (1, vec![0, 255, 7])]
        );
        for cut in 0..record::HEAD + 5 {
            assert_eq!(
                record::first(&buf[..cut]).is_some(),
                cut == record::HEAD + 5
            );
        }
    }
}
