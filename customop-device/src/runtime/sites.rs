//! Where each block of the core's libc heap was made (issue #42): the address of the code
//! that called `malloc`, `calloc`, `realloc` or `new`, so a block still held when the
//! kernel returns names its line. Host builds in the device's data model only (i386, built
//! with frame pointers: the caller is read from the frame); Pool images keep no sites (their
//! loaded bytes stay within the vendor's 64 KiB).

use super::global::Global;
use super::state::LIBC_BLOCKS;

/// (block address, site) of the blocks made this launch; address 0 is an empty slot.
static SITES: Global<[(usize, usize); LIBC_BLOCKS]> = Global::new([(0, 0); LIBC_BLOCKS]);

/// The return address of the function this expands in: the code that called it.
#[macro_export]
#[doc(hidden)]
macro_rules! caller {
    () => {{
        let ret: usize;
        // SAFETY: the archive is built with frame pointers on i386
        // (customop-device/i386/build-archive.sh): [ebp + 4] is this function's return
        // address; a read of the current frame.
        unsafe {
            core::arch::asm!(
                "mov {}, [ebp + 4]",
                out(reg) ret,
                options(nostack, readonly, preserves_flags)
            )
        };
        ret
    }};
}

/// Block `addr` was made at `site` (0: unknown).
pub fn made(addr: usize, site: usize) {
    if addr == 0 || site == 0 {
        return;
    }
    SITES.with(|t| {
        if let Some(slot) = t.iter_mut().find(|e| e.0 == 0) {
            *slot = (addr, site);
        }
    });
}

/// Block `addr` was freed.
pub fn freed(addr: usize) {
    SITES.with(|t| {
        if let Some(slot) = t.iter_mut().find(|e| e.0 == addr) {
            *slot = (0, 0);
        }
    });
}

/// A new launch: no block made yet.
pub fn reset() {
    SITES.with(|t| *t = [(0, 0); LIBC_BLOCKS]);
}

/// Each site with blocks still recorded, and how many (at most `N` sites).
pub fn held<const N: usize>() -> ([(usize, u32); N], usize) {
    let mut out = [(0usize, 0u32); N];
    let mut n = 0;
    SITES.with(|t| {
        for &(addr, site) in t.iter() {
            if addr == 0 {
                continue;
            }
            match out[..n].iter_mut().find(|e| e.0 == site) {
                Some(e) => e.1 += 1,
                None if n < N => {
                    out[n] = (site, 1);
                    n += 1;
                }
                None => {}
            }
        }
    });
    (out, n)
}
