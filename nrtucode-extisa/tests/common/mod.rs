//! A provider context wired to a fresh simulated device, through the exported C API only.
#![allow(dead_code)]

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::Arc;

use nrt_sim_device::{tables, HostLogLine, SimDevice, SimError};
use nrtucode_extisa::ffi::context::*;
use nrtucode_extisa::ffi::core::*;
use nrtucode_extisa::*;

pub const DRAM: u64 = 0x2_0000_0000;

unsafe extern "C" fn userdata_of(ctx: *mut c_void) -> *mut c_void {
    // SAFETY: the simulated device only calls this with provider contexts.
    unsafe { nrtucode_context_get_userdata(ctx.cast()) }
}

pub struct Rig {
    pub dev: Arc<SimDevice>,
    pub ctx: *mut nrtucode_context_t,
}

impl Rig {
    /// A context with the simulated rw and memhandle tables and the device as userdata.
    pub fn new() -> Rig {
        tables::bind_userdata_getter(userdata_of);
        let dev = SimDevice::new();
        let mut ctx = ptr::null_mut();
        // SAFETY: valid table and out pointer.
        let rc = unsafe { nrtucode_context_create(3, rw(), &mut ctx) };
        assert_eq!(rc, NRTUCODE_SUCCESS);
        // SAFETY: live context, valid table and device pointer (kept alive by the Rig).
        unsafe {
            nrtucode_context_set_memhandle_impl(ctx, memhandles());
            nrtucode_context_set_userdata(ctx, Arc::as_ptr(&dev) as *mut c_void);
        }
        Rig { dev, ctx }
    }

    /// A second context on the same device.
    pub fn sibling_context(&self) -> *mut nrtucode_context_t {
        let mut ctx = ptr::null_mut();
        // SAFETY: as in `new`.
        unsafe {
            assert_eq!(nrtucode_context_create(3, rw(), &mut ctx), 0);
            nrtucode_context_set_memhandle_impl(ctx, memhandles());
            nrtucode_context_set_userdata(ctx, Arc::as_ptr(&self.dev) as *mut c_void);
        }
        ctx
    }

    /// A core of `ct` whose control block is mapped at `dram` (not yet claimed).
    /// Several cores may share one control block: a block already mapped there is kept
    /// (and must be exactly the control block's extent); any other mapping error fails.
    pub fn core_at(&self, ct: u32, dram: u64) -> *mut nrtucode_core_t {
        match self.dev.map_control_block(dram) {
            Ok(()) => {}
            Err(SimError::Overlap { addr, .. }) if addr == dram => {
                let mut claim = [0u8; 4];
                self.dev
                    .peek(dram, &mut claim)
                    .expect("a control block is already mapped at this address");
            }
            Err(e) => panic!("cannot map the control block at {dram:#x}: {e}"),
        }
        let mut core = ptr::null_mut();
        // SAFETY: live context and out pointer.
        assert_eq!(
            unsafe { nrtucode_core_create(self.ctx, ct, 0x1000, dram, 0x3000, &mut core) },
            0
        );
        core
    }

    /// A claimed NX POOL core at DRAM.
    pub fn booted_core(&self, ct: u32) -> *mut nrtucode_core_t {
        let core = self.core_at(ct, DRAM);
        // SAFETY: live core.
        assert_eq!(unsafe { nrtucode_core_on_ucode_booted(core, 0) }, 0);
        core
    }

    pub fn logs(&self) -> Vec<HostLogLine> {
        self.dev.host_logs()
    }

    pub fn log_texts(&self) -> Vec<String> {
        self.logs()
            .into_iter()
            .map(|l| l.text().into_owned())
            .collect()
    }

    pub fn has_log(&self, sev: u32, text: &str) -> bool {
        self.logs().iter().any(|l| l.sev == sev && l.text() == text)
    }

    pub fn writes(&self) -> Vec<(u64, Vec<u8>)> {
        self.dev.writes()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // SAFETY: the rig's own live context.
        unsafe { nrtucode_context_destroy(self.ctx) };
    }
}

pub fn rw() -> *const nrtucode_platform_rw_t {
    (&tables::RW_TABLE as *const tables::RwTable).cast()
}

pub fn memhandles() -> *const nrtucode_platform_memhandle_t {
    (&tables::MEMHANDLE_TABLE as *const tables::MemhandleTable).cast()
}

pub fn name_of(core: *mut nrtucode_core_t) -> String {
    // SAFETY: live core; the name is NUL-terminated inside the handle.
    unsafe { CStr::from_ptr(nrtucode_core_get_friendly_name(core)) }
        .to_string_lossy()
        .into_owned()
}

/// Reads a byte of a handle at a documented offset.
pub fn byte_at<T>(obj: *const T, off: usize) -> u8 {
    // SAFETY: callers pass offsets inside the object's documented size.
    unsafe { obj.cast::<u8>().add(off).read() }
}

pub fn u64_at<T>(obj: *const T, off: usize) -> u64 {
    // SAFETY: as byte_at; unaligned read of a documented field.
    unsafe { obj.cast::<u8>().add(off).cast::<u64>().read_unaligned() }
}

pub fn u32_at<T>(obj: *const T, off: usize) -> u32 {
    // SAFETY: as byte_at.
    unsafe { obj.cast::<u8>().add(off).cast::<u32>().read_unaligned() }
}
