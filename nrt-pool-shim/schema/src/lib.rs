//! The op contract the Pool engine and the op build flow share: the element types a launch
//! marshals, kernel signatures (the schema an op library embeds) and their C++ names, the
//! Pool image an Xtensa op library is packed into, and the data model host builds use.

mod data_model;
mod dtype;
pub mod ops;
pub mod pool_image;
mod signature;

pub use data_model::DataModel;
pub use dtype::{f32_to_f16, DType};
pub use ops::{ArgKind, NeuronLibrary, OpSig};
pub use signature::{fuzz_one, parse, KernelSig, Param, ParamKind, ResultShape, SchemaError};

/// Most arguments a kernel takes (the launch protocol's argument blob).
pub const MAX_ARGS: usize = customop_abi::blob::MAX_ARGS;

/// A C++ symbol's readable name (the raw bytes, escaped, when it is not a mangled name).
pub fn demangle(raw: &[u8]) -> String {
    // Rust's symbols (the device runtime's) first: their legacy form is also a valid C++
    // name, which would read as nested namespaces ending in a hash.
    if let Ok(text) = std::str::from_utf8(raw) {
        if let Ok(d) = rustc_demangle::try_demangle(text) {
            return format!("{d:#}");
        }
    }
    cpp_demangle::Symbol::new(raw)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| raw.escape_ascii().to_string())
}
