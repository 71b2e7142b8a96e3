//! The context as the rest of the crate sees it: safe calls into the caller's two callback
//! tables, the context logger and the check-failure path.

use core::ffi::{c_char, c_int, c_void};
use core::fmt;
use core::ptr;

use crate::abi::*;
use crate::error::{Error, Result};
use crate::fatal::unguarded_null;
use crate::handles::{self, nrtucode_context_t, Handle, Named};

pub type Ctx = Handle<nrtucode_context_t>;

/// A device allocation as the caller's memhandle table names it: an opaque token the
/// provider stores and hands back, never dereferences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memhandle(pub *mut c_void);

impl Memhandle {
    pub const NONE: Memhandle = Memhandle(ptr::null_mut());

    pub fn is_none(self) -> bool {
        self.0.is_null()
    }
}

/// Log severities the library itself uses.
pub const SEV_ERROR: u32 = 1;
/// Warnings of ours the vendor does not emit (hazards it stages silently); D37.
pub const SEV_WARNING: u32 = 2;
pub const SEV_INFO: u32 = 4;

/// Largest formatted length for which the scratch buffer is grown (0x3fff, per the record).
const LOG_SCRATCH_GROW_LIMIT: usize = 0x3fff;

/// A callback slot the caller left NULL is called anyway by the vendor (SIGSEGV).
fn slot<F>(f: Option<F>) -> F {
    f.unwrap_or_else(|| unguarded_null())
}

impl Ctx {
    fn raw(self) -> *mut nrtucode_context_t {
        self.as_ptr()
    }

    fn rw(self) -> nrtucode_platform_rw_t {
        let table = self.get(|c| c.rw_impl);
        // SAFETY: context_create rejects a NULL table and the caller keeps it alive for the
        // context's lifetime (the vendor stores the pointer the same way). Copying the
        // 32-byte table reads it only.
        unsafe { *table }
    }

    fn memhandle(self) -> nrtucode_platform_memhandle_t {
        let table = self.get(|c| c.memhandle_impl);
        if table.is_null() {
            // set_memhandle_impl stores without validation; a NULL table is dereferenced.
            unguarded_null();
        }
        // SAFETY: non-NULL table pointer the caller installed and keeps alive.
        unsafe { *table }
    }

    /// rw `read_device`.
    pub fn read(self, dev_addr: u64, dst: &mut [u8]) -> Result {
        let f = slot(self.rw().read_device);
        // SAFETY: `dst` is a valid writable buffer of `dst.len()` bytes for the call.
        let rc = unsafe { f(self.raw(), dev_addr, dst.len(), dst.as_mut_ptr().cast()) };
        Error::from_callback(rc)
    }

    /// rw `read_device` straight into caller memory (used where the vendor tail-calls).
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes.
    pub unsafe fn read_raw(self, dev_addr: u64, len: usize, dst: *mut c_void) -> Result {
        let f = slot(self.rw().read_device);
        // SAFETY: forwarded caller buffer (function contract).
        Error::from_callback(unsafe { f(self.raw(), dev_addr, len, dst) })
    }

    /// rw `write_device`.
    pub fn write(self, dev_addr: u64, src: &[u8]) -> Result {
        let f = slot(self.rw().write_device);
        // SAFETY: `src` is a valid readable buffer of `src.len()` bytes for the call.
        let rc = unsafe { f(self.raw(), dev_addr, src.len(), src.as_ptr().cast()) };
        Error::from_callback(rc)
    }

    /// rw `write_device` straight from caller memory.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes.
    pub unsafe fn write_raw(self, dev_addr: u64, len: usize, src: *const c_void) -> Result {
        let f = slot(self.rw().write_device);
        // SAFETY: forwarded caller buffer (function contract).
        Error::from_callback(unsafe { f(self.raw(), dev_addr, len, src) })
    }

    pub fn write_u32(self, dev_addr: u64, v: u32) -> Result {
        self.write(dev_addr, &v.to_le_bytes())
    }

    pub fn write_u64(self, dev_addr: u64, v: u64) -> Result {
        self.write(dev_addr, &v.to_le_bytes())
    }

    pub fn read_u32(self, dev_addr: u64) -> Result<u32> {
        let mut b = [0u8; 4];
        self.read(dev_addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn read_u64(self, dev_addr: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(dev_addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// rw `log_level_enabled`.
    pub fn level_enabled(self, sev: u32) -> bool {
        let f = slot(self.rw().log_level_enabled);
        // SAFETY: plain call with the context, as the table's contract requires.
        unsafe { f(self.raw(), sev) }
    }

    /// The context logger: nothing is formatted unless the level is enabled; the line goes
    /// through the context's scratch buffer (grown up to the 0x3fff limit) to rw `log`.
    pub fn log(self, sev: u32, args: fmt::Arguments<'_>) {
        if !self.level_enabled(sev) {
            return;
        }
        // Caller bytes inside the line travel as carriers (handles::RawBytes).
        let text = handles::line_bytes(&std::fmt::format(args));
        let n = text.len();
        let (mut cap, mut buf) = self.get(|c| (c.log_scratch_size as usize, c.log_scratch));
        if n <= LOG_SCRATCH_GROW_LIMIT && cap < n + 1 {
            // SAFETY: `buf` is the context's own malloc'd scratch buffer.
            let grown = unsafe { libc::realloc(buf.cast(), n + 1) }.cast::<c_char>();
            if !grown.is_null() {
                buf = grown;
                cap = n + 1;
                self.update(|c| {
                    c.log_scratch = grown;
                    c.log_scratch_size = cap as u64;
                });
            }
        }
        if buf.is_null() || cap == 0 {
            return;
        }
        let len = n.min(cap - 1);
        // SAFETY: `buf` holds `cap` bytes and `len + 1 <= cap`.
        unsafe {
            ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), len);
            *buf.add(len) = 0;
        }
        let f = slot(self.rw().log);
        // SAFETY: NUL-terminated line of `len` bytes in the context's scratch buffer.
        unsafe { f(self.raw(), sev, buf, len) }
    }

    /// The check-failure path: logged at severity 1, result 8.
    pub fn check_failed(self, expr: &str, func: &str) -> Error {
        self.log(
            SEV_ERROR,
            format_args!("nrtucode: invalid API usage: check `{expr}` in `{func}` failed"),
        );
        Error::Invalid
    }

    /// memhandle `device_malloc`.
    pub fn device_malloc(self, size: usize, alignment: usize) -> Result<Memhandle> {
        let f = slot(self.memhandle().device_malloc);
        let mut handle: *mut c_void = ptr::null_mut();
        // SAFETY: `handle` is a valid out slot for the call.
        let rc = unsafe { f(self.raw(), size, alignment, &mut handle) };
        Error::from_callback(rc).map(|()| Memhandle(handle))
    }

    /// memhandle `device_free`.
    pub fn device_free(self, handle: Memhandle) {
        let f = slot(self.memhandle().device_free);
        // SAFETY: hands back a handle the same table produced.
        unsafe { f(self.raw(), handle.0) }
    }

    /// memhandle `read_memhandle`.
    pub fn read_memhandle(self, handle: Memhandle, off: u64, dst: &mut [u8]) -> Result {
        let f = slot(self.memhandle().read_memhandle);
        // SAFETY: `dst` is writable for its length.
        let rc = unsafe {
            f(
                self.raw(),
                handle.0,
                off,
                dst.len(),
                dst.as_mut_ptr().cast(),
            )
        };
        Error::from_callback(rc)
    }

    /// memhandle `write_memhandle`.
    pub fn write_memhandle(self, handle: Memhandle, off: u64, src: &[u8]) -> Result {
        let f = slot(self.memhandle().write_memhandle);
        // SAFETY: `src` is readable for its length.
        let rc = unsafe { f(self.raw(), handle.0, off, src.len(), src.as_ptr().cast()) };
        Error::from_callback(rc)
    }

    /// memhandle `get_memhandle_soc_addr` (NULL in the built-in table: SIGSEGV, as vendor).
    pub fn memhandle_soc_addr(self, handle: Memhandle) -> u64 {
        let f = slot(self.memhandle().get_memhandle_soc_addr);
        // SAFETY: plain call with a handle from the same table.
        unsafe { f(self.raw(), handle.0) }
    }
}

/// What a provider object's handle does through its platform: its context, and its
/// friendly name as the context's log shows it (an extension of [`Handle`], which knows
/// nothing of platforms).
pub trait PlatformObject: Copy {
    /// The context this object was created in.
    fn ctx(self) -> Ctx;
    /// The friendly name, as `%s` prints it (its bytes unchanged in log lines).
    fn name(self) -> handles::RawName;
    /// Names a fresh object "<type>@<address>".
    fn set_default_name(self);
    /// `*_set_friendly_name`: logs "<old> renamed <new>" (reading the new name only if the
    /// line is formatted), then strncpy into the 0x20-byte field with a forced NUL.
    fn rename(self, name: ptr::NonNull<c_char>);
}

impl<T: Named> PlatformObject for Handle<T> {
    fn ctx(self) -> Ctx {
        let p = self.get(|o| o.context());
        // SAFETY: create stores a live, non-NULL context; the caller destroys children
        // before their context (the vendor's contract, with the same back pointer).
        unsafe { Ctx::from_raw(ptr::NonNull::new_unchecked(p)) }
    }

    fn name(self) -> handles::RawName {
        handles::RawName(self.get(|o| handles::name_bytes(o.friendly_name())))
    }

    fn set_default_name(self) {
        let addr = self.as_ptr() as *const c_void;
        self.update(|o| handles::default_name(o.friendly_name_mut(), T::TYPE_NAME, addr));
    }

    fn rename(self, name: ptr::NonNull<c_char>) {
        self.ctx().log(
            SEV_INFO,
            format_args!("{} renamed {}", self.name(), handles::CStrArg(name)),
        );
        let prefix = handles::read_name_prefix(name);
        self.update(|o| handles::store_name(o.friendly_name_mut(), &prefix));
    }
}

/// Builds a `Ctx` from a context pointer a callback handed back to us.
///
/// # Safety
/// `ctx` must be a live context of this library.
unsafe fn ctx_from_callback(ctx: *mut nrtucode_context_t) -> Option<Ctx> {
    // SAFETY: forwarded contract.
    ptr::NonNull::new(ctx).map(|p| unsafe { Ctx::from_raw(p) })
}

unsafe extern "C" fn dummy_malloc(
    ctx: *mut nrtucode_context_t,
    _size: usize,
    _alignment: usize,
    out_handle: *mut *mut c_void,
) -> c_int {
    crate::ffi::boundary::catch("plat_memhandle_dummy_malloc", || {
        if !out_handle.is_null() {
            // SAFETY: the provider always passes a valid out slot.
            unsafe { *out_handle = ptr::null_mut() };
        }
        // SAFETY: only the provider calls this table, always with its own live context.
        if let Some(c) = unsafe { ctx_from_callback(ctx) } {
            c.log(
                SEV_ERROR,
                format_args!(
                    "nrtucode_context_t@{ctx:p}: memhandle platform implementation is required but is not attached"
                ),
            );
        }
        NRTUCODE_ERR_INVALID as c_int
    })
}

unsafe extern "C" fn dummy_free(_ctx: *mut nrtucode_context_t, _handle: *mut c_void) {}

unsafe extern "C" fn dummy_read(
    _ctx: *mut nrtucode_context_t,
    _handle: *mut c_void,
    _off: u64,
    _len: usize,
    _dst: *mut c_void,
) -> c_int {
    NRTUCODE_ERR_INVALID as c_int
}

unsafe extern "C" fn dummy_write(
    _ctx: *mut nrtucode_context_t,
    _handle: *mut c_void,
    _off: u64,
    _len: usize,
    _src: *const c_void,
) -> c_int {
    NRTUCODE_ERR_INVALID as c_int
}

/// `plat_memhandle_dummy`: every context starts with it. Allocation fails with 8 and a log
/// line; the SoC-address slot is NULL.
pub static MEMHANDLE_NOT_ATTACHED: nrtucode_platform_memhandle_t = nrtucode_platform_memhandle_t {
    device_malloc: Some(dummy_malloc),
    device_free: Some(dummy_free),
    read_memhandle: Some(dummy_read),
    write_memhandle: Some(dummy_write),
    get_memhandle_soc_addr: None,
};
