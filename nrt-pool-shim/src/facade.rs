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

/// The symbols libnrt binds, in the order of its `ucode_func_symbols` table.
pub const LIBNRT_BIND_ORDER: [&str; 30] = [
    "nrtucode_get_api_level",
    "nrtucode_get_git_version",
    "nrtucode_get_build_version",
    "nrtucode_get_memory_image",
    "nrtucode_get_ext_isa",
    "nrtucode_context_create",
    "nrtucode_context_destroy",
    "nrtucode_core_get_context",
    "nrtucode_context_get_userdata",
    "nrtucode_context_set_userdata",
    "nrtucode_context_set_memhandle_impl",
    "nrtucode_core_on_ucode_booted",
    "nrtucode_core_create",
    "nrtucode_core_destroy",
    "nrtucode_core_enable_logs",
    "nrtucode_core_disable_logs",
    "nrtucode_core_print_logs",
    "nrtucode_core_get_friendly_name",
    "nrtucode_core_set_friendly_name",
    "nrtucode_get_num_ext_isa_libs",
    "nrtucode_ll_create",
    "nrtucode_ll_set_friendly_name",
    "nrtucode_ll_destroy",
    "nrtucode_ll_get_libraries_from_opcodes",
    "nrtucode_ll_get_load_sequence",
    "nrtucode_ll_get_unload_sequence",
    "nrtucode_core_dge_set_priority_class_map",
    "nrtucode_core_get_dge_mailbox_addr",
    "nrtucode_core_enable_pc_bounds_check",
    "nrtucode_core_disable_pc_bounds_check",
];

#[derive(Debug, thiserror::Error)]
pub enum FacadeError {
    #[error("cannot load {path}: {source}")]
    Load { path: PathBuf, source: libloading::Error },
    #[error("{path} lacks {symbol} (libnrt binds all 30 symbols or none)")]
    MissingSymbol { path: PathBuf, symbol: &'static str },
    #[error("Incompatible version of {path}! Compatibility id: {found}, expected: {expected}")]
    ApiLevel { path: PathBuf, found: c_int, expected: c_int },
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
    pub ll_get_libraries_from_opcodes:
        unsafe extern "C" fn(u32, *const u8, usize, *const u8, usize, *mut usize, *mut usize) -> Res,
    pub ll_get_load_sequence: unsafe extern "C" fn(LlHandle, CoreHandle, usize, *mut c_char, *mut usize) -> Res,
    pub ll_get_unload_sequence: unsafe extern "C" fn(LlHandle, CoreHandle, usize, *mut c_char, *mut usize) -> Res,
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
        let lib = unsafe { Library::new(path) }
            .map_err(|source| FacadeError::Load { path: path.into(), source })?;
        let mut ptrs = [std::ptr::null_mut::<c_void>(); 30];
        for (slot, &symbol) in ptrs.iter_mut().zip(LIBNRT_BIND_ORDER.iter()) {
            // SAFETY: the symbol is only read as an address here.
            let sym = unsafe { lib.get::<*mut c_void>(symbol.as_bytes()) }
                .map_err(|_| FacadeError::MissingSymbol { path: path.into(), symbol })?;
            *slot = *sym;
        }
        macro_rules! bind {
            ($($field:ident = $i:expr),* $(,)?) => {
                Bound { $(
                    // SAFETY: a non-NULL address of the documented function, typed per its
                    // documented C signature.
                    $field: unsafe { std::mem::transmute::<*mut c_void, _>(ptrs[$i]) },
                )* }
            };
        }
        let api = bind!(
            get_api_level = 0, get_git_version = 1, get_build_version = 2, get_memory_image = 3,
            get_ext_isa = 4, context_create = 5, context_destroy = 6, core_get_context = 7,
            context_get_userdata = 8, context_set_userdata = 9, context_set_memhandle_impl = 10,
            core_on_ucode_booted = 11, core_create = 12, core_destroy = 13, core_enable_logs = 14,
            core_disable_logs = 15, core_print_logs = 16, core_get_friendly_name = 17,
            core_set_friendly_name = 18, get_num_ext_isa_libs = 19, ll_create = 20,
            ll_set_friendly_name = 21, ll_destroy = 22, ll_get_libraries_from_opcodes = 23,
            ll_get_load_sequence = 24, ll_get_unload_sequence = 25,
            core_dge_set_priority_class_map = 26, core_get_dge_mailbox_addr = 27,
            core_enable_pc_bounds_check = 28, core_disable_pc_bounds_check = 29,
        );
        // SAFETY: bound per the documented signatures; the strings are static C strings.
        let (level, build, git) = unsafe {
            (
                (api.get_api_level)(),
                cstr((api.get_build_version)()),
                cstr((api.get_git_version)()),
            )
        };
        if level != REQUIRED_API_LEVEL {
            return Err(FacadeError::ApiLevel { path: path.into(), found: level, expected: REQUIRED_API_LEVEL });
        }
        Ok(UcodeFacade { api, path: path.into(), build_version: build, git_version: git, _lib: lib })
    }
}

/// libnrt's copy of a version string: "unknown" for NULL.
fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return "unknown".into();
    }
    // SAFETY: the provider returns a NUL-terminated static string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
