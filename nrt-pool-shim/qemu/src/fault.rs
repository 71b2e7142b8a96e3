//! A core's fault, as the board reports it: the exception vector taken, EXCCAUSE, the PC
//! (EPC1, or DEPC for a double exception), EXCVADDR, and the PC named by the image's symbols.

use std::fmt;

use nrt_pool_engine::symbolize::{ImageSet, SourceFrame};

use crate::layout;

/// Xtensa EXCCAUSE values (Xtensa ISA reference, exception causes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultCause {
    IllegalInstruction,
    Syscall,
    InstructionFetchError,
    LoadStoreError,
    Alloca,
    IntegerDivideByZero,
    Privileged,
    LoadStoreAlignment,
    InstructionPifData,
    LoadStorePifData,
    InstructionPifAddress,
    LoadStorePifAddress,
    InstructionFetchProhibited,
    LoadProhibited,
    StoreProhibited,
    /// A `break` instruction (debug exception; `__builtin_trap` emits one).
    Break,
    /// A debug exception of another kind, or an interrupt, at this level.
    HighPriority {
        level: u32,
        debugcause: u32,
    },
    Other(u32),
}

impl FaultCause {
    pub fn from_exccause(c: u32) -> FaultCause {
        use FaultCause::*;
        match c {
            0 => IllegalInstruction,
            1 => Syscall,
            2 => InstructionFetchError,
            3 => LoadStoreError,
            5 => Alloca,
            6 => IntegerDivideByZero,
            8 => Privileged,
            9 => LoadStoreAlignment,
            12 => InstructionPifData,
            13 => LoadStorePifData,
            14 => InstructionPifAddress,
            15 => LoadStorePifAddress,
            20 => InstructionFetchProhibited,
            28 => LoadProhibited,
            29 => StoreProhibited,
            c => Other(c),
        }
    }

    /// Whether EXCVADDR names a data address for this cause.
    pub fn has_address(self) -> bool {
        use FaultCause::*;
        matches!(
            self,
            LoadStoreError
                | LoadStoreAlignment
                | LoadStorePifData
                | LoadStorePifAddress
                | LoadProhibited
                | StoreProhibited
                | InstructionFetchError
                | InstructionPifAddress
                | InstructionPifData
                | InstructionFetchProhibited
        )
    }
}

impl fmt::Display for FaultCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FaultCause::*;
        let s = match self {
            IllegalInstruction => "illegal instruction",
            Syscall => "syscall",
            InstructionFetchError => "instruction fetch error",
            LoadStoreError => "load/store error",
            Alloca => "alloca (MOVSP) exception",
            IntegerDivideByZero => "integer divide by zero",
            Privileged => "privileged instruction",
            LoadStoreAlignment => "unaligned load/store",
            InstructionPifData => "instruction fetch bus error",
            LoadStorePifData => "load/store bus error",
            InstructionPifAddress => "instruction fetch from no memory",
            LoadStorePifAddress => "load/store to no memory",
            InstructionFetchProhibited => "instruction fetch prohibited",
            LoadProhibited => "load prohibited",
            StoreProhibited => "store prohibited",
            Break => "break instruction (a trap)",
            HighPriority { level, debugcause } => {
                return write!(
                    f,
                    "debug exception or interrupt at level {level} (DEBUGCAUSE {debugcause:#x})"
                )
            }
            Other(c) => return write!(f, "exception cause {c}"),
        };
        f.write_str(s)
    }
}

/// What ended a core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoreFault {
    /// An exception the board does not handle.
    Exception {
        core: usize,
        cause: FaultCause,
        /// A double exception: a window overflow or underflow faulted (a bad stack pointer).
        window: bool,
        pc: u32,
        address: u32,
        symbol: Option<String>,
        /// For an access where the core has no memory (a PIF address error): whether it
        /// was a write, and the SoC address it stood for when a window spans it (a guard
        /// page, or past the end of what the window shows).
        write: Option<bool>,
        soc: Option<u64>,
        /// The call stack, innermost first, named from the images.
        stack: Vec<SourceFrame>,
    },
    /// The kernel's stack outgrew what it had: the local stack (STACK_SIZE fitted there) or
    /// its HBM stack of STACK_SIZE bytes.
    StackOverflow {
        core: usize,
        stack_size: u32,
        hbm: bool,
        pc: u32,
        symbol: Option<String>,
        stack: Vec<SourceFrame>,
    },
    /// The runtime's fatal error (a broken rule), with its message and the call stack
    /// that reached it.
    Fatal {
        core: usize,
        message: Vec<u8>,
        stack: Vec<SourceFrame>,
    },
    /// The core did not finish before the deadline.
    Timeout {
        core: usize,
        pc: Option<u32>,
        symbol: Option<String>,
        /// The source line of `pc` (and the functions inlined there).
        stack: Vec<SourceFrame>,
    },
    /// QEMU ended without a report: its exit status or the signal that killed it (when
    /// known), and its stderr.
    Exited {
        core: usize,
        status: Option<i32>,
        signal: Option<i32>,
        stderr: String,
    },
}

/// A fault's words without the core's number or (for a stack overflow) its kind: what the
/// engine's report adds to its own "core N: <kind>".
pub struct Detail<'a>(&'a CoreFault);

impl CoreFault {
    /// The core that faulted.
    pub fn core(&self) -> usize {
        match self {
            CoreFault::Exception { core, .. }
            | CoreFault::StackOverflow { core, .. }
            | CoreFault::Fatal { core, .. }
            | CoreFault::Timeout { core, .. }
            | CoreFault::Exited { core, .. } => *core,
        }
    }

    pub fn detail(&self) -> Detail<'_> {
        Detail(self)
    }

    /// The call stack at the fault, innermost first (empty when the board sent none).
    pub fn stack(&self) -> &[SourceFrame] {
        match self {
            CoreFault::Exception { stack, .. }
            | CoreFault::StackOverflow { stack, .. }
            | CoreFault::Fatal { stack, .. }
            | CoreFault::Timeout { stack, .. } => stack,
            CoreFault::Exited { .. } => &[],
        }
    }
}

impl fmt::Display for CoreFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "core {}: ", self.core())?;
        if let CoreFault::StackOverflow { .. } = self {
            write!(f, "stack overflow: ")?;
        }
        self.detail().fmt(f)
    }
}

impl fmt::Display for Detail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            CoreFault::Exception {
                cause,
                window,
                pc,
                address,
                symbol,
                write,
                soc,
                ..
            } => {
                let what = match (cause, write) {
                    (FaultCause::LoadStorePifAddress, Some(true)) => "store to no memory".into(),
                    (FaultCause::LoadStorePifAddress, Some(false)) => "load from no memory".into(),
                    _ => cause.to_string(),
                };
                if *window {
                    write!(
                        f,
                        "window exception ({what} while spilling or refilling registers)"
                    )?;
                } else {
                    write!(f, "{what}")?;
                }
                write!(f, " at pc {pc:#010x}")?;
                if let Some(s) = symbol {
                    write!(f, " ({s})")?;
                }
                if cause.has_address() || *window {
                    write!(f, ", address {address:#010x}")?;
                }
                if let Some(soc) = soc {
                    write!(f, " (SoC {soc:#x})")?;
                }
                Ok(())
            }
            CoreFault::StackOverflow {
                stack_size,
                hbm,
                pc,
                symbol,
                ..
            } => {
                if *hbm {
                    write!(f, "more than STACK_SIZE={stack_size} bytes (its HBM stack)")?;
                } else {
                    let local = layout::LOCAL_STACK_TOP - layout::LOCAL_STACK_BASE;
                    write!(
                        f,
                        "more than the core's {} KiB of local stack (STACK_SIZE={stack_size} \
                         fitted there)",
                        local / 1024
                    )?;
                }
                write!(f, " at pc {pc:#010x}")?;
                if let Some(s) = symbol {
                    write!(f, " ({s})")?;
                }
                write!(
                    f,
                    "; build with -DSTACK_SIZE=N for a larger stack (N at most {}, D79)",
                    MAX_STACK_SIZE
                )
            }
            CoreFault::Fatal { message, .. } => {
                write!(f, "{}", String::from_utf8_lossy(message))
            }
            CoreFault::Timeout { pc, symbol, .. } => {
                write!(f, "timed out")?;
                if let Some(pc) = pc {
                    write!(f, " at pc {pc:#010x}")?;
                }
                if let Some(s) = symbol {
                    write!(f, " ({s})")?;
                }
                Ok(())
            }
            CoreFault::Exited {
                status,
                signal,
                stderr,
                ..
            } => {
                write!(f, "qemu-system-xtensa ended")?;
                if let Some(s) = status {
                    write!(f, " with status {s}")?;
                }
                if let Some(s) = signal {
                    write!(
                        f,
                        ", killed by {}",
                        nrt_pool_engine::signal::signal_name(*s)
                    )?;
                }
                if !stderr.trim().is_empty() {
                    write!(f, ": {}", stderr.trim())?;
                }
                Ok(())
            }
        }
    }
}

/// The machine's LAST_ACCESS values (nrt-pool.c).
const ACCESS_WRITE: u32 = 2;
const ACCESS_SOC: u32 = 0x100;

/// The largest STACK_SIZE the guide supports (the runtime's; the build refuses more).
use customop_abi::MAX_STACK_SIZE;

/// Decodes the board's fault record (`[kind, EXCCAUSE, EPC1, EXCVADDR, DEPC, PS, PRID,
/// ACCESS, SOC lo, SOC hi, STACK_SIZE, guard lo, guard hi, a1]`; kinds 4-9 carry DEBUGCAUSE
/// and the level's EPC in the first two places; ACCESS and SOC describe PIF address
/// errors; the last four the launch's stack and the faulting code's stack pointer).
pub fn decode(core: usize, body: &[u8], images: &[&[u8]]) -> Option<CoreFault> {
    let named = ImageSet::new(images);
    let w = |i: usize| crate::protocol::word(body, i * 4);
    let (kind, cause, epc1, vaddr, depc) = (w(0)?, w(1)?, w(2)?, w(3)?, w(4)?);
    let (access, soc_lo, soc_hi) = (w(7).unwrap_or(0), w(8).unwrap_or(0), w(9).unwrap_or(0));
    let window = kind == 3;
    let pc = if window { depc } else { epc1 };
    let soc = u64::from(soc_hi) << 32 | u64::from(soc_lo);
    if let (Some(stack_size), Some(guard_lo), Some(guard_hi), Some(sp)) =
        (w(10), w(11), w(12), w(13))
    {
        let guard = u64::from(guard_hi) << 32 | u64::from(guard_lo);
        let pif = matches!(
            FaultCause::from_exccause(cause),
            FaultCause::LoadStorePifAddress
        );
        // The local stack: an access below it with the stack pointer there too (or while
        // spilling registers); an HBM stack: an access to its guard page.
        let local = (layout::STACK_GAP_LO..layout::LOCAL_STACK_BASE).contains(&vaddr)
            && (window && (layout::STACK_GAP_LO..layout::LOCAL_STACK_TOP).contains(&sp)
                || (layout::STACK_GAP_LO..layout::LOCAL_STACK_BASE + 256).contains(&sp));
        let hbm = guard != 0
            && access & ACCESS_SOC != 0
            && (guard..guard + layout::STACK_GUARD_BYTES).contains(&soc);
        if kind <= 3 && (pif || window) && (local || hbm) {
            return Some(CoreFault::StackOverflow {
                core,
                stack_size,
                hbm,
                pc,
                symbol: named.symbol(u64::from(pc)),
                stack: stack(body, &named),
            });
        }
    }
    let cause = match kind {
        // DEBUGCAUSE bits 3 and 4: BREAK, BREAK.N.
        4.. if cause & 0x18 != 0 => FaultCause::Break,
        4.. => FaultCause::HighPriority {
            level: kind - 2,
            debugcause: cause,
        },
        _ => FaultCause::from_exccause(cause),
    };
    let bus = matches!(
        cause,
        FaultCause::LoadStorePifAddress | FaultCause::InstructionPifAddress
    ) && access & 3 != 0;
    Some(CoreFault::Exception {
        core,
        cause,
        window,
        pc,
        address: vaddr,
        symbol: named.symbol(u64::from(pc)),
        write: (bus && cause == FaultCause::LoadStorePifAddress)
            .then_some(access & 3 == ACCESS_WRITE),
        soc: (bus && access & ACCESS_SOC != 0).then_some(soc),
        stack: stack(body, &named),
    })
}

/// Words of the record before its call stack (a frame count, then the PCs).
const RECORD_WORDS: usize = 14;

/// The call stack a fault record carries, named from the images (the first PC is the
/// faulting instruction, the rest return addresses).
pub fn stack(body: &[u8], images: &ImageSet<'_>) -> Vec<SourceFrame> {
    let w = |i: usize| crate::protocol::word(body, i * 4);
    let count = w(RECORD_WORDS).unwrap_or(0) as usize;
    let pcs: Vec<u64> = (0..count.min(64))
        .map_while(|i| w(RECORD_WORDS + 1 + i).map(u64::from))
        .collect();
    images.stack(&pcs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_and_reports_read_as_sentences() {
        assert_eq!(FaultCause::from_exccause(29), FaultCause::StoreProhibited);
        let f = CoreFault::Exception {
            core: 3,
            cause: FaultCause::from_exccause(0),
            window: false,
            pc: 0x8400_0123,
            address: 0,
            symbol: Some("boom()+0x3".into()),
            write: None,
            soc: None,
            stack: Vec::new(),
        };
        assert_eq!(
            f.to_string(),
            "core 3: illegal instruction at pc 0x84000123 (boom()+0x3)"
        );
        let w = CoreFault::Exception {
            core: 0,
            cause: FaultCause::from_exccause(15),
            window: true,
            pc: 0x6000_0080,
            address: 0x10,
            symbol: None,
            write: None,
            soc: None,
            stack: Vec::new(),
        };
        assert!(w.to_string().starts_with("core 0: window exception"), "{w}");
        assert!(w.to_string().ends_with("address 0x00000010"), "{w}");
    }

    #[test]
    fn short_fault_records_are_not_decoded() {
        assert_eq!(decode(0, &[0; 19], &[]), None);
        let mut rec = Vec::new();
        for w in [2u32, 28, 0x8400_0010, 0x1234, 0, 0, 0] {
            rec.extend_from_slice(&w.to_le_bytes());
        }
        let f = decode(1, &rec, &[]).unwrap();
        assert_eq!(
            f.to_string(),
            "core 1: load prohibited at pc 0x84000010, address 0x00001234"
        );
        // A store into a guard page: the machine's note names the write and the SoC byte.
        let mut rec = Vec::new();
        for w in [
            2u32,
            15,
            0x8400_0010,
            0x8600_1000,
            0,
            0,
            1,
            0x102,
            0x0200_1000,
            0x40,
        ] {
            rec.extend_from_slice(&w.to_le_bytes());
        }
        let f = decode(1, &rec, &[]).unwrap();
        assert_eq!(
            f.to_string(),
            "core 1: store to no memory at pc 0x84000010, address 0x86001000 (SoC 0x4002001000)"
        );
    }
}
