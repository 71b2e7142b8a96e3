//! Checking mode's notes: what a core's runtime saw during a checked launch that
//! only it can see (a block freed twice, blocks still held at the kernel's end, a TCM copy
//! into a freed block, accessor and destination rules), written into its data scratch
//! area at [`crate::blob::scratch::CHECK_LOG`], read by the engine after the launch.

use core::mem::{offset_of, size_of};

/// The log's header: notes written, and notes that did not fit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckLogHeader {
    pub count: u32,
    pub dropped: u32,
    pub reserved: [u32; 6],
}

/// One note: its kind and what it names.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckNote {
    /// A [`NoteKind`] value.
    pub kind: u32,
    /// How many (blocks, cores), by kind.
    pub count: u32,
    /// An address or a byte count, by kind.
    pub a: u64,
    /// A second value, by kind.
    pub b: u64,
    pub reserved: u64,
}

const _: () = assert!(size_of::<CheckLogHeader>() == 32);
const _: () = assert!(size_of::<CheckNote>() == 32);
const _: () = assert!(offset_of!(CheckNote, a) == 8);
const _: () = assert!(offset_of!(CheckNote, b) == 16);

/// Bytes of the log in the data scratch area.
pub const CHECK_LOG_SIZE: usize = 0x800;
/// Notes the log holds after its header.
pub const MAX_NOTES: usize =
    (CHECK_LOG_SIZE - size_of::<CheckLogHeader>()) / size_of::<CheckNote>();

/// What a note says. Append-only values.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteKind {
    /// `tcm_free` (b = 0) or an HBM free (b = 1) of `a`, which no live block starts at.
    DoubleFree = 1,
    /// `count` tcm_malloc blocks of `a` bytes in all still held when the kernel returned.
    TcmLeak = 2,
    /// `count` HBM blocks of `a` bytes in all still held when the kernel returned (D87).
    HbmLeak = 3,
    /// A multicore launch (`count` cores) whose kernel never took `get_dst_tensor()`.
    NoDstTensor = 4,
    /// A standard (b = 1) or stream (b = 2) accessor on the tensor at SoC `a` while
    /// `count` cores run.
    MulticoreAccessor = 5,
    /// A copy of `count` bytes into (b = 1) or out of (b = 0) TCM at `a`, inside a block
    /// the TCM heap had freed.
    UseAfterFree = 6,
    /// A host build's `new` of `a` bytes the device heap could not give (the device build
    /// fails there).
    HeapFull = 7,
    /// A store past the end of a heap block of `a` bytes: byte `count` of the red zone after
    /// it changed; `b` the heap (0 malloc/new, 1 tcm_malloc, 2 HBM) (D88).
    HeapOverrun = 8,
    /// Host builds: an operation whose result C leaves undefined and a Pool core computes
    /// differently from x86 (D95): `count` what ([`ARITH_FLOAT_TO_INT`], ...), `a` the
    /// address of the source file's name in the op library less that of its `entry_func`
    /// (wrapping), `b` the line (high 32 bits) and column.
    Arithmetic = 9,
    /// `count` blocks of `a` bytes in all from the core's libc heap (`malloc`, `calloc`,
    /// `realloc`, `new`, `new[]`) still held when the kernel returned.
    LibcLeak = 10,
    /// Host builds: `count` of the blocks [`NoteKind::LibcLeak`] counts were made by the code
    /// at `b` (its address in the op library less that of `entry_func`, wrapping: the host
    /// names the line from the library's file).
    LeakSite = 11,
}

/// [`NoteKind::Arithmetic`]: a float-to-integer conversion of NaN or of a value outside the
/// integer's range.
pub const ARITH_FLOAT_TO_INT: u32 = 1;
/// [`NoteKind::Arithmetic`]: `__builtin_clz(0)` (and its `l`/`ll` forms).
pub const ARITH_CLZ_ZERO: u32 = 2;
/// [`NoteKind::Arithmetic`]: `__builtin_ctz(0)`.
pub const ARITH_CTZ_ZERO: u32 = 3;

impl NoteKind {
    pub fn from_u32(v: u32) -> Option<NoteKind> {
        Some(match v {
            1 => NoteKind::DoubleFree,
            2 => NoteKind::TcmLeak,
            3 => NoteKind::HbmLeak,
            4 => NoteKind::NoDstTensor,
            5 => NoteKind::MulticoreAccessor,
            6 => NoteKind::UseAfterFree,
            7 => NoteKind::HeapFull,
            8 => NoteKind::HeapOverrun,
            9 => NoteKind::Arithmetic,
            10 => NoteKind::LibcLeak,
            11 => NoteKind::LeakSite,
            _ => return None,
        })
    }
}
