//! The 32-bit core runner's command line (D97), shared by the engine that starts cores in it
//! and the build flow that runs a device-model op library's registration in it (D114).

/// The first argument: a runner from another build says so instead of misreading the rest.
pub const PROTOCOL: &str = "nrt-pool-core/2";

/// The role that loads a registration library and prints its NEURON_LIBRARY registration:
/// `nrt-pool-core PROTOCOL registration LIBRARY`.
pub const REGISTRATION_ROLE: &str = "registration";

/// The registration library's function the runner calls:
/// `int nrt_pool_registration_text(char *buf, int size)` writes the registration's lines
/// (NUL-terminated, truncated to `size`) and returns their full length, or a negative
/// number when the registration failed (the text then says why).
pub const REGISTRATION_SYMBOL: &str = "nrt_pool_registration_text";
