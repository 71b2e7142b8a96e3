//! libnrt's side of the microcode provider: `dlopen`, the 30-symbol bind in libnrt's order,
//! the API-level check, and the calls libnrt makes. Declared here from the documented
//! contract (not from any provider header), so it binds ours or the vendor's library alike.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};

use libloading::Library;

/// Opaque provider handles, as libnrt holds them.
pub type Ctx = *mut c_void;
pub type CoreHandle = *mut c_void;
pub type LlHandle = *mut c_void;

/// The API level libnrt requires.
pub const REQUIRED_API_LEVEL: c_int = 3;

#[derive(Debug, thiserror::Error)]
pub enum FacadeError {
    #[error("cannot load {path}: {source}")]
    Load {
        path: PathBuf,
        source: libloading::Error,
    },
    #[error("{path} lacks {symbol} (libnrt binds all 30 symbols or none)")]
    MissingSymbol { path: PathBuf, symbol: &'static str },
    #[error("Incompatible version of {path}! Compatibility id: {found}, expected: {expected}")]
    ApiLevel {
        path: PathBuf,
        found: c_int,
        expected: c_int,
    },
}

type Res = u32;

/// The 30 bound entry points, typed per the documented signatures.
#[allow(clippy::type_complexity)]
pub struct Bound {
    pub get_api_level: unsafe extern "C" fn() -> c_int,
    pub get_git_version: unsafe extern "C" fn() -> *const c_char,
    pub get_build_version: unsafe extern "C" fn() -> *const c_char,
    pub get_memory_image: unsafe extern "C" fn(u32, u32, u32, *mut *mut u8, *mut usize) -> Res,
    pub get_ext_isa: unsafe extern "C" fn(u32, u32, *mut [usize; 4]) -> Res,
    pub context_create: unsafe extern "C" fn(u32, *const c_void, *mut Ctx) -> Res,
    pub context_destroy: unsafe extern "C" fn(Ctx) -> Res,
    pub core_get_context: unsafe extern "C" fn(CoreHandle) -> Ctx,
    pub context_get_userdata: unsafe extern "C" fn(Ctx) -> *mut c_void,
    pub context_set_userdata: unsafe extern "C" fn(Ctx, *mut c_void),
    pub context_set_memhandle_impl: unsafe extern "C" fn(Ctx, *const c_void),
    pub core_on_ucode_booted: unsafe extern "C" fn(CoreHandle, u32) -> Res,
    pub core_create: unsafe extern "C" fn(Ctx, u32, u64, u64, u64, *mut CoreHandle) -> Res,
    pub core_destroy: unsafe extern "C" fn(CoreHandle) -> Res,
    pub core_enable_logs: unsafe extern "C" fn(CoreHandle) -> Res,
    pub core_disable_logs: unsafe extern "C" fn(CoreHandle) -> Res,
    pub core_print_logs: unsafe extern "C" fn(CoreHandle) -> Res,
    pub core_get_friendly_name: unsafe extern "C" fn(CoreHandle) -> *const c_char,
    pub core_set_friendly_name: unsafe extern "C" fn(CoreHandle, *const c_char),
    pub get_num_ext_isa_libs: unsafe extern "C" fn(u32, *mut usize) -> Res,
    pub ll_create: unsafe extern "C" fn(Ctx, u32, u32, u64, *mut LlHandle) -> Res,
    pub ll_set_friendly_name: unsafe extern "C" fn(LlHandle, *const c_char),
    pub ll_destroy: unsafe extern "C" fn(LlHandle) -> Res,
    pub ll_get_libraries_from_opcodes: unsafe extern "C" fn(
        u32,
        *const u8,
        usize,
        *const u8,
        usize,
        *mut usize,
        *mut usize,
    ) -> Res,
    pub ll_get_load_sequence:
        unsafe extern "C" fn(LlHandle, CoreHandle, usize, *mut c_char, *mut usize) -> Res,
    pub ll_get_unload_sequence:
        unsafe extern "C" fn(LlHandle, CoreHandle, usize, *mut c_char, *mut usize) -> Res,
    pub core_dge_set_priority_class_map: unsafe extern "C" fn(CoreHandle, *const u32, usize) -> Res,
    pub core_get_dge_mailbox_addr: unsafe extern "C" fn(CoreHandle, usize, *mut u64) -> Res,
    pub core_enable_pc_bounds_check: unsafe extern "C" fn(CoreHandle, u64, u64) -> Res,
    pub core_disable_pc_bounds_check: unsafe extern "C" fn(CoreHandle) -> Res,
}

/// A provider bound the way libnrt binds it. The library stays loaded while this lives.
pub struct UcodeFacade {
    pub api: Bound,
    pub path: PathBuf,
    pub build_version: String,
    pub git_version: String,
    _lib: Library,
}

impl UcodeFacade {
    /// `dlopen` + the 30-symbol bind in order + the API-level check. Any failure leaves
    /// nothing bound (libnrt zeroes all 30 pointers and `dlclose`s).
    pub fn open(path: &Path) -> Result<Self, FacadeError> {
        // SAFETY: loading a provider runs its initialisers; that is the point of the call.
        let lib = unsafe { Library::new(path) }.map_err(|source| FacadeError::Load {
            path: path.into(),
            source,
        })?;
        let api = bind_all(&lib, path)?;
        // SAFETY: bound per the documented signatures; the strings are static C strings.
        let (level, build, git) = unsafe {
            (
                (api.get_api_level)(),
                cstr((api.get_build_version)()),
                cstr((api.get_git_version)()),
            )
        };
        if level != REQUIRED_API_LEVEL {
            return Err(FacadeError::ApiLevel {
                path: path.into(),
                found: level,
                expected: REQUIRED_API_LEVEL,
            });
        }
        Ok(UcodeFacade {
            api,
            path: path.into(),
            build_version: build,
            git_version: git,
            _lib: lib,
        })
    }
}

/// Declares the libnrt bind table: `LIBNRT_BIND_ORDER` and a binder that resolves the
/// fields of [`Bound`] in exactly that order (struct fields are evaluated in source order).
macro_rules! bind_table {
    ($($field:ident),* $(,)?) => {
        /// The symbols libnrt binds, in the order of its `ucode_func_symbols` table.
        pub const LIBNRT_BIND_ORDER: [&str; 30] = [$(concat!("nrtucode_", stringify!($field))),*];

        fn bind_all(lib: &Library, path: &Path) -> Result<Bound, FacadeError> {
            Ok(Bound { $($field: symbol(lib, path, concat!("nrtucode_", stringify!($field)))?,)* })
        }
    };
}

bind_table!(
    get_api_level,
    get_git_version,
    get_build_version,
    get_memory_image,
    get_ext_isa,
    context_create,
    context_destroy,
    core_get_context,
    context_get_userdata,
    context_set_userdata,
    context_set_memhandle_impl,
    core_on_ucode_booted,
    core_create,
    core_destroy,
    core_enable_logs,
    core_disable_logs,
    core_print_logs,
    core_get_friendly_name,
    core_set_friendly_name,
    get_num_ext_isa_libs,
    ll_create,
    ll_set_friendly_name,
    ll_destroy,
    ll_get_libraries_from_opcodes,
    ll_get_load_sequence,
    ll_get_unload_sequence,
    core_dge_set_priority_class_map,
    core_get_dge_mailbox_addr,
    core_enable_pc_bounds_check,
    core_disable_pc_bounds_check,
);

/// One function pointer, typed by the `Bound` field it fills (its documented signature).
fn symbol<T: Copy>(lib: &Library, path: &Path, name: &'static str) -> Result<T, FacadeError> {
    // SAFETY: `T` is the documented C signature of `name`; the library outlives the pointer
    // (UcodeFacade keeps it loaded).
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|_| FacadeError::MissingSymbol {
            path: path.into(),
            symbol: name,
        })
}

/// libnrt's copy of a version string: "unknown" for NULL.
fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return "unknown".into();
    }
    // SAFETY: the provider returns a NUL-terminated static string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
