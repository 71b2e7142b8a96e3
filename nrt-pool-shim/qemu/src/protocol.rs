//! The host-core channel of the board (`board/pool-board.c`): frames
//! `{u32 tag, u32 len}` + `len` bytes, little-endian, commands on the core's fd 3 and
//! replies on its fd 4, which QEMU's semihosting reads and writes for the core.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::time::Duration;

use nrt_pool_engine::deadline::Deadline;

/// Host -> core.
/// (2 and 4 were LOAD and DUMP, before device memory was shared: D63.)
pub const CMD_BOOT: u32 = 1;
pub const CMD_RUN: u32 = 3;
pub const CMD_QUIT: u32 = 5;
pub const CMD_GUARDS: u32 = 6;
/// Hold the next RUN until a debugger clears `board_debug_wait` (no body).
pub const CMD_DEBUG: u32 = 7;
/// Most guard pages the machine holds (its GUARDn registers).
pub const MAX_GUARDS: usize = 31;

/// Core -> host.
pub const RSP_READY: u32 = 1;
pub const RSP_DONE: u32 = 2;
pub const RSP_OUT: u32 = 4;
pub const RSP_FAULT: u32 = 5;
pub const RSP_FATAL: u32 = 6;

/// The board's exit statuses: a fault record was sent, the runtime's fatal error, the
/// channel closed, a malformed command.
pub const EXIT_FAULT: i32 = 99;
pub const EXIT_FATAL: i32 = 70;
pub const EXIT_CHANNEL: i32 = 96;
pub const EXIT_PROTOCOL: i32 = 97;

/// Replies larger than this are refused.
pub const MAX_FRAME: u32 = 80 << 20;

/// What the board needs to start the image (`struct boot` of pool-board.c).
#[derive(Clone, Copy, Debug)]
pub struct Boot {
    pub entry_func: u32,
    pub call_wrapper: u32,
    pub register_funcs: u32,
    /// The SoC address of the core's data scratch area (the board pins it at
    /// [`crate::layout::DATARAM_LOCAL`]).
    pub data_scratch: u64,
    pub data_scratch_size: u32,
    pub hbm_scratch: u64,
    pub hbm_scratch_size: u32,
    /// The SoC addresses the pinned SBUF and hbm_scratch windows show.
    pub sbuf_pin: u64,
    pub hbm_pin: u64,
    pub cores: u32,
    pub core: u32,
    /// The image's `const char *f(void)` giving its schema or op list (0: none).
    pub metadata: u32,
}

impl Boot {
    pub fn encode(&self) -> Vec<u8> {
        [
            self.entry_func,
            self.call_wrapper,
            self.register_funcs,
            self.data_scratch as u32,
            (self.data_scratch >> 32) as u32,
            self.data_scratch_size,
            self.hbm_scratch as u32,
            (self.hbm_scratch >> 32) as u32,
            self.hbm_scratch_size,
            self.sbuf_pin as u32,
            (self.sbuf_pin >> 32) as u32,
            self.hbm_pin as u32,
            (self.hbm_pin >> 32) as u32,
            self.cores,
            self.core,
            self.metadata,
        ]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
    }
}

/// The GUARDS command's payload: the pages no window shows (at most [`MAX_GUARDS`]).
pub fn encode_guards(pages: &[u64]) -> Vec<u8> {
    let mut b = (pages.len() as u32).to_le_bytes().to_vec();
    for p in pages {
        b.extend_from_slice(&p.to_le_bytes());
    }
    b
}

/// One frame to the core.
pub fn send(to: &mut File, tag: u32, parts: &[&[u8]]) -> std::io::Result<()> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let len = u32::try_from(len)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "frame too large"))?;
    let mut head = [0u8; 8];
    head[..4].copy_from_slice(&tag.to_le_bytes());
    head[4..].copy_from_slice(&len.to_le_bytes());
    to.write_all(&head)?;
    for p in parts {
        to.write_all(p)?;
    }
    Ok(())
}

/// How reading a frame ended without one.
#[derive(Debug)]
pub enum RecvError {
    /// The core closed its end (QEMU exited).
    Closed,
    /// Nothing complete before the deadline.
    TimedOut,
    /// A header claiming more than [`MAX_FRAME`] bytes.
    TooLarge(u32),
    Io(std::io::Error),
}

/// Reads exactly `buf.len()` bytes before `deadline`.
fn read_exact_until(from: &mut File, buf: &mut [u8], deadline: &Deadline) -> Result<(), RecvError> {
    let mut done = 0;
    while done < buf.len() {
        if deadline.passed() {
            return Err(RecvError::TimedOut);
        }
        let left = deadline.slice(Duration::from_secs(3600));
        let mut pfd = libc::pollfd {
            fd: from.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(RecvError::Io(e));
        }
        if r == 0 {
            continue;
        }
        match from.read(&mut buf[done..]) {
            Ok(0) => return Err(RecvError::Closed),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(RecvError::Io(e)),
        }
    }
    Ok(())
}

/// The next frame from the core: its tag and payload.
pub fn recv(from: &mut File, deadline: &Deadline) -> Result<(u32, Vec<u8>), RecvError> {
    let mut head = [0u8; 8];
    read_exact_until(from, &mut head, deadline)?;
    let tag = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if len > MAX_FRAME {
        return Err(RecvError::TooLarge(len));
    }
    let mut body = vec![0u8; len as usize];
    read_exact_until(from, &mut body, deadline)?;
    Ok((tag, body))
}

/// The little-endian u32 at `at` of `b`, if present.
pub fn word(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_block_is_sixty_four_bytes_in_the_boards_order() {
        let b = Boot {
            entry_func: 1,
            call_wrapper: 2,
            register_funcs: 3,
            data_scratch: 0x0000_0060_0000_0004,
            data_scratch_size: 5,
            hbm_scratch: 0x0000_0040_0000_0006,
            hbm_scratch_size: 7,
            sbuf_pin: 0x0000_0050_0000_0008,
            hbm_pin: 0x0000_0040_0000_0009,
            cores: 8,
            core: 9,
            metadata: 10,
        };
        let e = b.encode();
        assert_eq!(e.len(), 64);
        let words: Vec<u32> = (0..16).map(|i| word(&e, i * 4).unwrap()).collect();
        assert_eq!(
            words,
            [1, 2, 3, 4, 0x60, 5, 6, 0x40, 7, 8, 0x50, 9, 0x40, 8, 9, 10]
        );
        let g = encode_guards(&[0x0000_0040_0100_0000]);
        assert_eq!(g.len(), 12);
        assert_eq!(
            (word(&g, 0), word(&g, 4), word(&g, 8)),
            (Some(1), Some(0x0100_0000), Some(0x40))
        );
    }

    #[test]
    fn frames_round_trip_and_oversized_headers_are_refused() {
        let (r, w) = pipe();
        let (mut r, mut w) = (r, w);
        send(&mut w, RSP_OUT, &[&1u32.to_le_bytes(), b"hi"]).unwrap();
        let far = &Deadline::after(std::time::Duration::from_secs(5));
        let (tag, body) = recv(&mut r, far).unwrap();
        assert_eq!((tag, &body[..]), (RSP_OUT, &[1, 0, 0, 0, b'h', b'i'][..]));
        w.write_all(&[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).unwrap();
        assert!(matches!(recv(&mut r, far), Err(RecvError::TooLarge(_))));
        drop(w);
        assert!(matches!(recv(&mut r, far), Err(RecvError::Closed)));
        assert_eq!(word(&[1, 2, 3], 0), None);
    }

    #[test]
    fn a_silent_core_times_out() {
        let (mut r, _w) = pipe();
        let soon = Deadline::after(std::time::Duration::from_millis(50));
        assert!(matches!(recv(&mut r, &soon), Err(RecvError::TimedOut)));
    }

    #[test]
    fn an_interrupt_ends_the_wait_long_before_the_deadline() {
        let (mut r, _w) = pipe();
        let asked = std::time::Instant::now();
        let d = Deadline::after(std::time::Duration::from_secs(60)).with_interrupt(Some(
            std::sync::Arc::new(move || asked.elapsed() > std::time::Duration::from_millis(100)),
        ));
        assert!(matches!(recv(&mut r, &d), Err(RecvError::TimedOut)));
        assert!(d.interrupted());
        assert!(asked.elapsed() < std::time::Duration::from_secs(2));
    }

    fn pipe() -> (File, File) {
        crate::core::pipe().unwrap()
    }
}
