//! The provider's error type and its mapping onto `nrtucode_result_t`.

use crate::abi::*;

/// Why a call failed. `Callback` carries an rw/memhandle callback's non-zero return code,
/// which the provider passes through verbatim (it never remaps callback errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    UnknownCore,
    UnknownImage,
    MissingImage,
    Version,
    Allocation,
    Io,
    Enospc,
    Invalid,
    Relocation,
    Callback(u32),
}

pub type Result<T = ()> = core::result::Result<T, Error>;

impl Error {
    pub fn code(self) -> nrtucode_result_t {
        match self {
            Error::UnknownCore => NRTUCODE_ERR_UNKNOWN_CORE,
            Error::UnknownImage => NRTUCODE_ERR_UNKNOWN_IMAGE,
            Error::MissingImage => NRTUCODE_ERR_MISSING_IMAGE,
            Error::Version => NRTUCODE_ERR_VERSION,
            Error::Allocation => NRTUCODE_ERR_ALLOCATION,
            Error::Io => NRTUCODE_ERR_IO,
            Error::Enospc => NRTUCODE_ERR_ENOSPC,
            Error::Invalid => NRTUCODE_ERR_INVALID,
            Error::Relocation => NRTUCODE_ERR_RELOCATION,
            Error::Callback(rc) => rc,
        }
    }

    /// A callback's return code: 0 is success, anything else passes through.
    pub fn from_callback(rc: core::ffi::c_int) -> Result {
        match rc {
            0 => Ok(()),
            rc => Err(Error::Callback(rc as u32)),
        }
    }
}

/// Maps a core result onto the C result code.
pub fn result_code(r: Result) -> nrtucode_result_t {
    match r {
        Ok(()) => NRTUCODE_SUCCESS,
        Err(e) => e.code(),
    }
}
