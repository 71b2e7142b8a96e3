//! errno.h: the error numbers the device libc reports (Linux's values, so host and device
//! builds of an op compare equal) and, on the device, the one `errno` of a core (one
//! kernel at a time per core: a global, D72).

pub const ENOMEM: core::ffi::c_int = 12;
pub const EINVAL: core::ffi::c_int = 22;
pub const EDOM: core::ffi::c_int = 33;
pub const ERANGE: core::ffi::c_int = 34;
pub const EILSEQ: core::ffi::c_int = 84;

#[cfg(all(feature = "archive", device_libc))]
mod c {
    use core::ffi::c_int;

    use crate::runtime::global::Global;

    static ERRNO: Global<c_int> = Global::new(0);

    /// Sets the core's errno.
    pub fn set(e: c_int) {
        ERRNO.with(|v| *v = e);
    }

    /// `errno` (include/device/errno.h expands to `*__neuron_errno()`).
    #[no_mangle]
    pub extern "C" fn __neuron_errno() -> *mut c_int {
        ERRNO.with(|v| v as *mut c_int)
    }
}
#[cfg(all(feature = "archive", device_libc))]
pub use c::set;
