//! `nrt_set_pool_eng_ucode`, libnrt's seam for a custom Pool image, and the lifecycle it
//! is judged against (`nrt_pool_init` / `nrt_pool_close` play `nrt_init` / `nrt_close`).
//!
//! As in libnrt, the seam stores the caller's four pointer/size values (not copies);
//! `nrt_pool_init` reads the images, and a registered pair replaces the stock Pool image,
//! as `tpb_eng_init_hals_v2` does. An IRAM image that is an op library built for the host
//! is what the emulator runs.
#![allow(clippy::missing_safety_doc, non_camel_case_types)]

use std::ffi::c_void;
use std::mem::{offset_of, size_of};

use parking_lot::Mutex;

use crate::boundary::{guard, set_error, Lifecycle, STATE};
use crate::pairs;
use nrt_pool_engine::PoolImage;
use nrt_pool_open::OpenOptions;
use nrt_pool_open::Pool;

/// `nrt_ucode_img`: one image (16 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct nrt_ucode_img {
    pub bin: *mut c_void,
    pub size: usize,
}

/// `nrt_ucode_info`: the IRAM and DRAM images of a Pool program (32 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct nrt_ucode_info {
    pub iram: nrt_ucode_img,
    pub dram: nrt_ucode_img,
}

const _: () = assert!(size_of::<nrt_ucode_img>() == 16);
const _: () = assert!(size_of::<nrt_ucode_info>() == 32);
const _: () = assert!(offset_of!(nrt_ucode_info, dram) == 16);
const _: () = assert!(offset_of!(nrt_ucode_img, size) == 8);

/// `NRT_STATUS` values the seam returns.
pub type NRT_STATUS = u32;
pub const NRT_SEAM_STORED: NRT_STATUS = 0;
/// Any state other than the three below (init in progress).
pub const NRT_SEAM_BAD_STATE: NRT_STATUS = 1;
/// The runtime is initialised: the image can no longer change.
pub const NRT_SEAM_AFTER_INIT: NRT_STATUS = 0xd;
/// The runtime is closed.
pub const NRT_SEAM_AFTER_CLOSE: NRT_STATUS = 0xe;

/// libnrt's four globals: `pool_eng_{iram,dram}_bin{,_size}`.
struct Registered {
    iram: usize,
    iram_size: usize,
    dram: usize,
    dram_size: usize,
}

static REGISTERED: Mutex<Registered> = Mutex::new(Registered {
    iram: 0,
    iram_size: 0,
    dram: 0,
    dram_size: 0,
});

/// Registers a custom Pool IRAM/DRAM pair; call before `nrt_pool_init`. A NULL
/// `ucode_info` is dereferenced, as libnrt does (the process faults).
#[no_mangle]
pub unsafe extern "C" fn nrt_set_pool_eng_ucode(ucode_info: *const nrt_ucode_info) -> NRT_STATUS {
    guard(|| {
        let state = STATE.lock();
        match *state {
            Lifecycle::Uninitialized => {}
            Lifecycle::Initialized(_) => return NRT_SEAM_AFTER_INIT,
            Lifecycle::Closed => return NRT_SEAM_AFTER_CLOSE,
            Lifecycle::Initializing => return NRT_SEAM_BAD_STATE,
        }
        // SAFETY: libnrt reads the struct unguarded; a NULL pointer faults here as there
        // (a volatile read so the access is not optimised away).
        let info = unsafe { std::ptr::read_volatile(ucode_info) };
        *REGISTERED.lock() = Registered {
            iram: info.iram.bin as usize,
            iram_size: info.iram.size,
            dram: info.dram.bin as usize,
            dram_size: info.dram.size,
        };
        NRT_SEAM_STORED
    })
}

/// Copies a registered image (NULL: none).
///
/// # Safety
/// `addr` is NULL or points at `size` readable bytes (the seam's contract with its caller).
unsafe fn image(addr: usize, size: usize) -> Option<Vec<u8>> {
    // SAFETY: function contract.
    (addr != 0).then(|| unsafe { std::slice::from_raw_parts(addr as *const u8, size) }.to_vec())
}

/// Builds the engine: the stock image (none in the emulator) or the registered pair, and
/// the op library if the IRAM image is one (`Pool::open_image`), with the
/// environment's call defaults.
fn init_engine() -> Result<Pool, String> {
    let r = REGISTERED.lock();
    // SAFETY: the caller of nrt_set_pool_eng_ucode keeps its images alive until init, as
    // libnrt requires.
    let (iram, dram) = unsafe { (image(r.iram, r.iram_size), image(r.dram, r.dram_size)) };
    drop(r);
    let img = PoolImage {
        registered: iram.is_some() || dram.is_some(),
        iram: iram.unwrap_or_default(),
        dram: dram.unwrap_or_default(),
    };
    let o = OpenOptions::from_env("nrt_pool").map_err(|e| e.to_string())?;
    Pool::open_image(img, &o).map_err(|e| e.to_string())
}

/// `nrt_init` for the emulated engine: 0, or 1 with `nrt_pool_last_error` set (also when
/// already initialised or closed).
#[no_mangle]
pub extern "C" fn nrt_pool_init() -> i32 {
    guard(|| {
        {
            let mut s = STATE.lock();
            if !matches!(*s, Lifecycle::Uninitialized) {
                set_error(
                    "nrt_pool_init: the engine is already initialised or closed",
                    true,
                );
                return 1;
            }
            *s = Lifecycle::Initializing;
        }
        let built = init_engine();
        let mut s = STATE.lock();
        match built {
            Ok(e) => {
                pairs::forget_all();
                *s = Lifecycle::Initialized(Box::new(e));
                0
            }
            Err(e) => {
                *s = Lifecycle::Uninitialized;
                set_error(format!("nrt_pool_init: {e}"), true);
                1
            }
        }
    })
}

/// `nrt_close`: releases the engine; the process's runtime stays closed.
#[no_mangle]
pub extern "C" fn nrt_pool_close() -> i32 {
    guard(|| {
        let mut s = STATE.lock();
        match *s {
            Lifecycle::Initialized(ref e) => {
                // What each suppression matched, once, as the run ends.
                for line in e.suppressions().map(|s| s.summary()).unwrap_or_default() {
                    eprintln!("nrt_pool: {line}");
                }
                pairs::forget_all();
                *s = Lifecycle::Closed;
                0
            }
            _ => {
                set_error("nrt_pool_close: the engine is not initialised", true);
                1
            }
        }
    })
}

/// Whether the engine runs a registered Pool image (1), the stock one (0), or is not
/// initialised (-1).
#[no_mangle]
pub extern "C" fn nrt_pool_image_is_registered() -> i32 {
    guard(|| match &*STATE.lock() {
        Lifecycle::Initialized(e) => i32::from(e.image().registered),
        _ => -1,
    })
}
