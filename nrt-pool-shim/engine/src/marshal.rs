//! What placing a launch's tensors takes: what a placed tensor starts as, how a run's
//! memory starts, the empty argument blob, and errors named after their argument.

use customop_abi::blob::ArgBlob;

use super::error::EmuError;
use super::memory;

/// What a placed tensor starts as: the caller's bytes, or every byte one value (an output:
/// zero, or a checked launch's poison).
#[derive(Clone, Copy)]
pub(crate) enum Contents<'a> {
    Bytes(&'a [u8]),
    Fill(u8),
}

/// How a run's memory starts: its output (placed with the launch, or a device
/// destination, which `None` leaves as it is and a placed output gets zeroed), and the
/// byte the runtime fills new heap blocks with (0: none). Unchecked launches: the default.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fill {
    pub output: Option<u8>,
    pub heaps: u8,
}

impl Fill {
    /// A checked run's: the output and new heap blocks all `poison`.
    pub(crate) fn poison(poison: u8) -> Fill {
        Fill {
            output: Some(poison),
            heaps: poison,
        }
    }
}

/// An argument blob for `n` arguments, nothing placed yet.
pub(crate) fn empty_blob(n: usize) -> ArgBlob {
    ArgBlob::empty(n as u32, memory::SBUF_BASE)
}

/// An `EmuError` about one argument (or the output), with its label.
pub(crate) fn named(what: &str, e: EmuError) -> EmuError {
    match e {
        EmuError::Tensor(source) => EmuError::Argument {
            what: what.into(),
            source,
        },
        other => other,
    }
}
