//! An op library built for the host: `entry_func` and `register_funcs` (what the vendor's
//! build flow exports), and, from our op build helper, `nrt_pool_op_schema`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::schema::{self, KernelSig, NeuronLibrary};

pub use customop_abi::handoff::ENTRY_SYMBOL;
/// `register_funcs(STATUS (*)(void *, const char *, int (*)()))`, C++ mangled.
pub use customop_abi::handoff::REGISTER_FUNCS_SYMBOL;
/// Optional: `const char *nrt_pool_op_schema(void)` (libraries from `nrt-pool build` with
/// a schema).
pub const SCHEMA_SYMBOL: &str = "nrt_pool_op_schema";
/// Optional: `const char *nrt_pool_op_library(void)`, a NEURON_LIBRARY library's ops.
pub const OPS_SYMBOL: &str = "nrt_pool_op_library";
/// Optional: the shape entry of a NEURON_LIBRARY library (see `core`).
pub const SHAPE_SYMBOL: &str = "nrt_pool_op_shape";

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
    /// The library as the user named it (a path, or a label for an in-memory image).
    pub path: PathBuf,
    /// The path a host core loads it from (the file itself, or a descriptor of an image in
    /// memory), as a C string.
    pub c_path: CString,
    pub schema: Option<Vec<KernelSig>>,
    /// A NEURON_LIBRARY library's namespace and ops (their outputs come from its shape
    /// functions at launch time).
    pub ops: Option<NeuronLibrary>,
    /// Built in the device's data model (an i386 shared object): its cores run in 32-bit
    /// core processes (D97).
    pub i386: bool,
    /// An in-memory image's backing file, open as long as the library is loaded (cores
    /// start later and open it through /proc/self/fd).
    _backing: Option<std::fs::File>,
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
            i386: crate::elf_ident::is_i386_library(&c_path),
            c_path,
            schema: None,
            ops: None,
            _backing: None,
        })
    }

    /// A library from bytes (a registered Pool image), in an anonymous memory file.
    pub fn from_bytes(bytes: &[u8], label: &str) -> Result<OpLibrary, LibraryError> {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let failed = |why: String| LibraryError::Load {
            path: label.into(),
            why,
        };
        let mut f =
            crate::backing::memfd(c"nrt-pool-op-library").map_err(|e| failed(e.to_string()))?;
        f.write_all(bytes).map_err(|e| failed(e.to_string()))?;
        let c_path = CString::new(format!("/proc/self/fd/{}", f.as_raw_fd())).expect("no NUL");
        Ok(OpLibrary {
            path: label.into(),
            i386: crate::elf_ident::is_i386_library(&c_path),
            c_path,
            schema: None,
            ops: None,
            _backing: Some(f),
        })
    }

    /// The path the host reads the library's symbols from.
    pub fn file(&self) -> PathBuf {
        PathBuf::from(std::ffi::OsStr::from_bytes(self.c_path.as_bytes()))
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
        if text.starts_with("library ") {
            self.ops =
                Some(
                    NeuronLibrary::parse(&text).map_err(|source| LibraryError::Schema {
                        path: self.path.clone(),
                        source,
                    })?,
                );
            return Ok(());
        }
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
/// The ELF a library file's debug information is read from: the host build itself, or a
/// Pool image's first core image (every core runs the same code at its own origin, so
/// distances from `entry_func` name the same place in each). None when unreadable.
pub fn debug_image(file: &Path) -> Option<Vec<u8>> {
    use nrt_pool_schema::pool_image;
    let bytes = std::fs::read(file).ok()?;
    if !pool_image::is_pool_file(&bytes) {
        return Some(bytes);
    }
    let (iram, dram) = pool_image::parse_file(&bytes).ok()?;
    let cores = pool_image::parse_pair(iram, dram).ok()?;
    cores.first().map(|c| c.elf.to_vec())
}
