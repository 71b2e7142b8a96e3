//! Mutable runtime globals. One core runs one kernel at a time, and each core has its own
//! copy of the library (the vendor links one per core; the emulator loads one per core), so
//! a global is never touched by two threads at once. `with` keeps every access a short,
//! non-reentrant borrow.

use core::cell::UnsafeCell;

/// Transparent: a global's bytes are its value's (the engine reads some by symbol).
#[repr(transparent)]
pub struct Global<T>(UnsafeCell<T>);

// SAFETY: see the module doc: one thread of execution per library instance.
unsafe impl<T> Sync for Global<T> {}

impl<T> Global<T> {
    pub const fn new(v: T) -> Self {
        Global(UnsafeCell::new(v))
    }

    /// Runs `f` on the value. `f` must not re-enter `with` on the same global.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: single thread per instance (module doc) and no re-entry (contract).
        f(unsafe { &mut *self.0.get() })
    }
}
