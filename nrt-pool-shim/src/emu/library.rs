//! An op library built for the host: `entry_func` and `register_funcs` (what the vendor's
//! build flow exports), and, from our op build helper, `nrt_pool_op_schema`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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
    #[error("op library {path}: its embedded schema is invalid: {source}")]
    Schema {
        path: PathBuf,
        source: schema::SchemaError,
    },
    #[error("op library {path}: its embedded schema is not UTF-8 text")]
    SchemaNotText { path: PathBuf },
    #[error("op library {path}: kernel name {name:?} is not UTF-8 (names are kept as their bytes, never altered)")]
    NameNotText { path: PathBuf, name: String },
}

/// An op library the engine runs. The host process never loads it: each core process
/// loads it (its static constructors are user code), and the load-time probe reports the
/// kernels and schema it carries.
pub struct OpLibrary {
    pub path: PathBuf,
    /// The absolute path the cores dlopen.
    pub(crate) c_path: CString,
    pub schema: Option<Vec<KernelSig>>,
}

impl OpLibrary {
    /// The library at `path`, checked to exist (not loaded).
    pub fn locate(path: &Path) -> Result<OpLibrary, LibraryError> {
        if !path.is_file() {
            return Err(LibraryError::NotFound(path.into()));
        }
        // A relative name without a slash would make dlopen search the library path.
        let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.into());
        let c_path = CString::new(abs.as_os_str().as_bytes()).map_err(|_| LibraryError::Load {
            path: path.into(),
            why: "the path contains a NUL byte".into(),
        })?;
        Ok(OpLibrary {
            path: path.into(),
            c_path,
            schema: None,
        })
    }

    /// Takes the schema text the probe found.
    pub(crate) fn set_schema(&mut self, text: Option<Vec<u8>>) -> Result<(), LibraryError> {
        let Some(bytes) = text else {
            self.schema = None;
            return Ok(());
        };
        let text = String::from_utf8(bytes).map_err(|_| LibraryError::SchemaNotText {
            path: self.path.clone(),
        })?;
        self.schema = Some(schema::parse(&text).map_err(|source| LibraryError::Schema {
            path: self.path.clone(),
            source,
        })?);
        Ok(())
    }

    pub fn signature(&self, kernel: &str) -> Option<&KernelSig> {
        self.schema.as_ref()?.iter().find(|k| k.name == kernel)
    }
}
