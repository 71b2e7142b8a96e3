//! `INT_MIN / -1` as a Pool core computes it (D95). The quotient does not fit,
//! so C leaves it undefined; x86's `idiv` traps (SIGFPE) where the device's divide gives
//! `INT_MIN` (and a remainder of 0). A host core that traps on an `idiv` whose divisor is
//! -1 writes the device's quotient and remainder and goes on after the instruction, so the
//! kernel computes what the device does. A divisor of 0 stays a trap, as on the device.

use nrt_pool_engine::memory::PAGE;
use std::ffi::c_void;

/// The register a ModRM/SIB number (0-15, REX bit included) names, in glibc's `gregs`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn greg(n: u8) -> usize {
    const ORDER: [i32; 16] = [
        libc::REG_RAX,
        libc::REG_RCX,
        libc::REG_RDX,
        libc::REG_RBX,
        libc::REG_RSP,
        libc::REG_RBP,
        libc::REG_RSI,
        libc::REG_RDI,
        libc::REG_R8,
        libc::REG_R9,
        libc::REG_R10,
        libc::REG_R11,
        libc::REG_R12,
        libc::REG_R13,
        libc::REG_R14,
        libc::REG_R15,
    ];
    ORDER[usize::from(n & 15)] as usize
}

/// The register a ModRM/SIB number (0-7) names on i386 (the core runner, D97).
#[cfg(all(target_arch = "x86", target_os = "linux"))]
fn greg(n: u8) -> usize {
    const ORDER: [i32; 8] = [
        libc::REG_EAX,
        libc::REG_ECX,
        libc::REG_EDX,
        libc::REG_EBX,
        libc::REG_ESP,
        libc::REG_EBP,
        libc::REG_ESI,
        libc::REG_EDI,
    ];
    ORDER[usize::from(n & 7)] as usize
}

/// An `idiv r/m32` or `idiv r/m64` as decoded: its length and its divisor's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Idiv {
    pub len: usize,
    pub wide: bool,
    pub divisor: Operand,
}

/// Where an instruction's r/m operand is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Operand {
    Register(u8),
    /// base register (None: none, or RIP-relative when `rip`), index register and scale,
    /// displacement.
    Memory {
        base: Option<u8>,
        index: Option<(u8, u8)>,
        disp: i64,
        rip: bool,
    },
}

/// Decodes `code` as `[REX] F7 /7 ...` (signed divide of a 32- or 64-bit operand); None for
/// anything else (other prefixes, 8- and 16-bit forms, `div`).
pub(super) fn decode(code: &[u8]) -> Option<Idiv> {
    let mut i = 0;
    let rex = match *code.first()? {
        b @ 0x40..=0x4f => {
            i += 1;
            b
        }
        _ => 0,
    };
    if *code.get(i)? != 0xf7 {
        return None;
    }
    let modrm = *code.get(i + 1)?;
    if (modrm >> 3) & 7 != 7 {
        return None;
    }
    let (md, rm) = (modrm >> 6, modrm & 7);
    let (rex_b, rex_x) = ((rex & 1) << 3, ((rex >> 1) & 1) << 3);
    let mut len = i + 2;
    let wide = rex & 8 != 0;
    if md == 3 {
        return Some(Idiv {
            len,
            wide,
            divisor: Operand::Register(rm | rex_b),
        });
    }
    let (mut base, mut index, mut rip) = (Some(rm | rex_b), None, false);
    let mut disp_bytes = match md {
        1 => 1,
        2 => 4,
        _ => 0,
    };
    if rm == 4 {
        let sib = *code.get(len)?;
        len += 1;
        let idx = ((sib >> 3) & 7) | rex_x;
        if idx != 4 {
            index = Some((idx, 1u8 << (sib >> 6)));
        }
        base = Some((sib & 7) | rex_b);
        if sib & 7 == 5 && md == 0 {
            base = None;
            disp_bytes = 4;
        }
    } else if rm == 5 && md == 0 {
        base = None;
        rip = true;
        disp_bytes = 4;
    }
    let disp = match disp_bytes {
        1 => i64::from(*code.get(len)? as i8),
        4 => i64::from(i32::from_le_bytes(code.get(len..len + 4)?.try_into().ok()?)),
        _ => 0,
    };
    len += disp_bytes;
    Some(Idiv {
        len,
        wide,
        divisor: Operand::Memory {
            base,
            index,
            disp,
            rip,
        },
    })
}

/// For a SIGFPE in context `uctx`: if the instruction is a signed divide by -1, writes the
/// device's quotient (the dividend's `INT_MIN`) and remainder (0), moves past it and says
/// so. Reads only the faulting instruction and its operand (both were just read by the
/// processor); async-signal-safe.
pub(super) fn device_overflow(uctx: *mut c_void) -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        if uctx.is_null() {
            return false;
        }
        // SAFETY: SA_SIGINFO handlers get the interrupted context as a ucontext_t.
        let g = unsafe { &mut (*uctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
        let rip = g[libc::REG_RIP as usize] as u64;
        // An x86 instruction is at most 15 bytes; read no further than its page's end (a
        // longer one there fails to decode and stays a trap).
        let n = 15.min(PAGE as usize - (rip as usize % PAGE as usize));
        // SAFETY: the instruction that trapped starts in mapped code, up to its page's end.
        let code = unsafe { std::slice::from_raw_parts(rip as *const u8, n) };
        let Some(d) = decode(code) else {
            return false;
        };
        let reg = |n: u8| g[greg(n)] as u64;
        let divisor = match d.divisor {
            Operand::Register(r) => reg(r),
            Operand::Memory {
                base,
                index,
                disp,
                rip: relative,
            } => {
                let mut at = if relative { rip + d.len as u64 } else { 0 };
                if let Some(b) = base {
                    at = at.wrapping_add(reg(b));
                }
                if let Some((i, scale)) = index {
                    at = at.wrapping_add(reg(i).wrapping_mul(u64::from(scale)));
                }
                let at = at.wrapping_add(disp as u64);
                // SAFETY: the processor read this operand just before trapping.
                unsafe {
                    if d.wide {
                        std::ptr::read_unaligned(at as *const u64)
                    } else {
                        u64::from(std::ptr::read_unaligned(at as *const u32))
                    }
                }
            }
        };
        let minus_one = if d.wide {
            divisor == u64::MAX
        } else {
            divisor as u32 == u32::MAX
        };
        if !minus_one {
            return false;
        }
        let (quotient, rax) = if d.wide {
            (i64::MIN as u64, libc::REG_RAX as usize)
        } else {
            // A 32-bit result is written zero-extended.
            (u64::from(i32::MIN as u32), libc::REG_RAX as usize)
        };
        g[rax] = quotient as i64;
        g[libc::REG_RDX as usize] = 0;
        g[libc::REG_RIP as usize] = (rip + d.len as u64) as i64;
        true
    }
    #[cfg(all(target_arch = "x86", target_os = "linux"))]
    {
        if uctx.is_null() {
            return false;
        }
        // SAFETY: SA_SIGINFO handlers get the interrupted context as a ucontext_t.
        let g = unsafe { &mut (*uctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
        let eip = g[libc::REG_EIP as usize] as u32 as usize;
        let n = 15.min(PAGE as usize - (eip % PAGE as usize));
        // SAFETY: the instruction that trapped starts in mapped code, up to its page's end.
        let code = unsafe { std::slice::from_raw_parts(eip as *const u8, n) };
        // 0x40-0x4f are instructions of their own on i386, never a prefix of `idiv`.
        if matches!(code.first(), Some(0x40..=0x4f)) {
            return false;
        }
        let Some(d) = decode(code) else {
            return false;
        };
        let reg = |n: u8| g[greg(n)] as u32;
        let divisor = match d.divisor {
            Operand::Register(r) => reg(r),
            // On i386 the no-base form is an absolute address, not RIP-relative.
            Operand::Memory {
                base, index, disp, ..
            } => {
                let mut at = disp as u32;
                if let Some(b) = base {
                    at = at.wrapping_add(reg(b));
                }
                if let Some((i, scale)) = index {
                    at = at.wrapping_add(reg(i).wrapping_mul(u32::from(scale)));
                }
                // SAFETY: the processor read this operand just before trapping.
                unsafe { std::ptr::read_unaligned(at as usize as *const u32) }
            }
        };
        if divisor != u32::MAX {
            return false;
        }
        g[libc::REG_EAX as usize] = i32::MIN;
        g[libc::REG_EDX as usize] = 0;
        g[libc::REG_EIP as usize] = (eip + d.len) as i32;
        true
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", target_os = "linux"),
        all(target_arch = "x86", target_os = "linux")
    )))]
    {
        let _ = uctx;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_divides_decode_with_their_operands() {
        // idiv ecx; idiv r9d; idiv rcx
        assert_eq!(
            decode(&[0xf7, 0xf9]),
            Some(Idiv {
                len: 2,
                wide: false,
                divisor: Operand::Register(1)
            })
        );
        assert_eq!(
            decode(&[0x41, 0xf7, 0xf9]).map(|d| d.divisor),
            Some(Operand::Register(9))
        );
        assert_eq!(
            decode(&[0x48, 0xf7, 0xf9]).map(|d| (d.len, d.wide)),
            Some((3, true))
        );
        // idiv dword [rbp-0x14]
        assert_eq!(
            decode(&[0xf7, 0x7d, 0xec]),
            Some(Idiv {
                len: 3,
                wide: false,
                divisor: Operand::Memory {
                    base: Some(5),
                    index: None,
                    disp: -0x14,
                    rip: false
                }
            })
        );
        // idiv dword [rsp+rax*4+0x10]
        assert_eq!(
            decode(&[0xf7, 0x7c, 0x84, 0x10]),
            Some(Idiv {
                len: 4,
                wide: false,
                divisor: Operand::Memory {
                    base: Some(4),
                    index: Some((0, 4)),
                    disp: 0x10,
                    rip: false
                }
            })
        );
        // idiv dword [rip+0x100]
        assert_eq!(
            decode(&[0xf7, 0x3d, 0x00, 0x01, 0x00, 0x00]),
            Some(Idiv {
                len: 6,
                wide: false,
                divisor: Operand::Memory {
                    base: None,
                    index: None,
                    disp: 0x100,
                    rip: true
                }
            })
        );
        // div ecx (unsigned), a 16-bit idiv, something else: not ours.
        assert_eq!(decode(&[0xf7, 0xf1]), None);
        assert_eq!(decode(&[0x66, 0xf7, 0xf9]), None);
        assert_eq!(decode(&[0x90]), None);
        assert_eq!(decode(&[0xf7]), None);
    }
}
