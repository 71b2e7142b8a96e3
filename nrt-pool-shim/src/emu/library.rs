//! An op library built for the host: `entry_func` and `register_funcs` (what the vendor's
//! build flow exports), and, from our op build helper, `nrt_pool_op_schema`.

use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};

use super::core::{EntryFn, RegisterFuncsFn};
use super::schema::{self, KernelSig};

pub const ENTRY_SYMBOL: &str = "entry_func";
/// `register_funcs(STATUS (*)(void *, const char *, int (*)()))`, C++ mangled.
pub const REGISTER_FUNCS_SYMBOL: &str = "_Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE";
/// Optional: `const char *nrt_pool_op_schema(void)` (libraries from `nrt-pool build`).
pub const SCHEMA_SYMBOL: &str = "nrt_pool_op_schema";

#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("op library {0}: no such file")]
    NotFound(PathBuf),
    #[error("op library {path}: cannot load: {why}")]
    Load { path: PathBuf, why: String },
    #[error("op library {path}: does not export {symbol} (link it with libneuroncustomop.a and export entry_func and register_funcs)")]
    MissingSymbol { path: PathBuf, symbol: &'static str },
    #[error("op library {path}: its embedded schema is invalid: {source}")]
    Schema {
        path: PathBuf,
        source: schema::SchemaError,
    },
}

pub struct OpLibrary {
    pub path: PathBuf,
    pub(crate) entry: EntryFn,
    pub(crate) register_funcs: RegisterFuncsFn,
    pub schema: Option<Vec<KernelSig>>,
    // Last: the functions above point into it.
    _lib: libloading::Library,
}

impl OpLibrary {
    pub fn open(path: &Path) -> Result<OpLibrary, LibraryError> {
        if !path.exists() {
            return Err(LibraryError::NotFound(path.into()));
        }
        // A relative name without a slash would make dlopen search the library path.
        let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.into());
        // SAFETY: loading runs the library's initializers; an op library's are the C++
        // runtime's and its own static constructors, which the caller chose to run.
        let lib = unsafe {
            libloading::os::unix::Library::open(
                Some(&abs),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
            )
        }
        .map_err(|e| LibraryError::Load {
            path: path.into(),
            why: e.to_string(),
        })?;
        let lib: libloading::Library = lib.into();
        let missing = |symbol| LibraryError::MissingSymbol {
            path: path.into(),
            symbol,
        };
        // SAFETY: the symbols have these C signatures in every op library (the contract of
        // entry_func and register_funcs).
        let (entry, register_funcs, schema_fn) = unsafe {
            let e: EntryFn = *lib
                .get::<EntryFn>(ENTRY_SYMBOL.as_bytes())
                .map_err(|_| missing(ENTRY_SYMBOL))?;
            let r: RegisterFuncsFn = *lib
                .get::<RegisterFuncsFn>(REGISTER_FUNCS_SYMBOL.as_bytes())
                .map_err(|_| missing("register_funcs"))?;
            let s = lib
                .get::<unsafe extern "C" fn() -> *const c_char>(SCHEMA_SYMBOL.as_bytes())
                .ok()
                .map(|s| *s);
            (e, r, s)
        };
        let schema = match schema_fn {
            None => None,
            Some(f) => {
                // SAFETY: returns a static NUL-terminated string (generated code).
                let text = unsafe { CStr::from_ptr(f()) }
                    .to_string_lossy()
                    .into_owned();
                Some(schema::parse(&text).map_err(|source| LibraryError::Schema {
                    path: path.into(),
                    source,
                })?)
            }
        };
        Ok(OpLibrary {
            path: path.into(),
            entry,
            register_funcs,
            schema,
            _lib: lib,
        })
    }

    pub fn signature(&self, kernel: &str) -> Option<&KernelSig> {
        self.schema.as_ref()?.iter().find(|k| k.name == kernel)
    }
}
