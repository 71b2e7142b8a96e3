//! `libnrt_pool_shim.so`: the emulated Pool engine's C interface (`include/nrt_pool.h`),
//! `nrt_set_pool_eng_ucode` and the versioned launch FFI, and nothing else.
//!
//! [`seam`] is libnrt's `nrt_set_pool_eng_ucode` and the engine's lifecycle; [`launch`] is
//! the launch FFI for C/C++ runtimes, with [`checks`] and [`profile`] beside it. Every
//! export crosses `boundary` (panics abort, engine errors become the header's codes);
//! `argv` is the checked view of a launch's argument slots and `pairs` the output a
//! C output + launch pair shares. [`sequence`] is the FFI's misuse fuzzer's property (a
//! sequence of calls from several threads, run in a fresh process).

mod argv;
mod boundary;
pub mod checks;
pub mod launch;
mod pairs;
pub mod profile;
pub mod seam;
pub mod sequence;
