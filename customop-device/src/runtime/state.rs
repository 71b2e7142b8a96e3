//! The runtime's state and operations: the handoff, the scratch areas, translation, the
//! three heaps, memcpy and the argument cursor. `exports` gives them their C ABI.

use core::mem::{offset_of, size_of};

use crate::runtime::redzone::{self, HeapKind};

use crate::descriptor::{ArgTensor, LOCATION_SBUF};
use crate::rule;
use crate::rule::{fatal, require};
use crate::runtime::global::Global;
use crate::runtime::heap::{Heap, HeapError};
use crate::runtime::platform::{self, WindowHw};
use crate::runtime::translate::{TranslationCtx, PINNED_MASK, SBUF_RECORD};

/// The dynamic windows' local bases and MEM_WINDOWn_LO registers (windows 3, 5, 6).
pub const DYNAMIC_WINDOWS: [(usize, u64); 3] = [
    (0x0700_0000, 0x0010_0218),
    (0x0900_0000, 0x0010_0228),
    (0x0A00_0000, 0x0010_0230),
];
/// Local bases of the pinned SBUF and hbm_scratch windows (device).
pub const SBUF_WINDOW: usize = 0x8000_0000;
pub const HBM_SCRATCH_WINDOW: usize = 0x8400_0000;
/// Bytes each pinned window spans.
pub const PINNED_SPAN: u64 = 1 << 26;

pub use customop_abi::blob::{scratch, ArgBlob, ARG_BLOB_MAGIC, ARG_TYPE_TENSOR, MAX_ARGS};
use customop_abi::checklog::{CheckLogHeader, CheckNote, NoteKind, MAX_NOTES};

/// `ArgExtractor` (504 bytes on 32-bit targets): the vendor's argument container.
#[repr(C)]
pub struct ArgExtractor {
    pub num_args: usize,
    pub max_args: usize,
    pub args: [ArgTensor; MAX_ARGS],
    pub arg_types: [u8; MAX_ARGS],
}

/// `ArgParser` (512 bytes on 32-bit targets).
#[repr(C)]
pub struct ArgParser {
    pub isa_args: ArgExtractor,
    pub curr_arg: usize,
}

/// `UTensor` (56 bytes): an 8-byte storage handle header, then the descriptor.
#[repr(C)]
pub struct UTensor {
    pub xt_ptr: u64,
    pub t: ArgTensor,
}

#[cfg(target_pointer_width = "32")]
const _: () = {
    assert!(size_of::<ArgExtractor>() == 504);
    assert!(offset_of!(ArgExtractor, args) == 8);
    assert!(offset_of!(ArgExtractor, arg_types) == 488);
    assert!(size_of::<ArgParser>() == 512);
    assert!(offset_of!(ArgParser, curr_arg) == 0x1f8);
};
const _: () = assert!(size_of::<UTensor>() == 56);
const _: () = assert!(offset_of!(UTensor, t) + 2 == 10, "dtype at UTensor+10");

/// `NeuronMemcpyMethod`.
pub const C_MEMCPY: u32 = 0;
pub const VEC_MEMCPY: u32 = 1;
pub const DMA: u32 = 2;
pub const MAX_METHODS: u32 = 3;
/// The vendor's default method.
pub const DEFAULT_METHOD: u32 = DMA;

/// Block descriptors of the device libc heap: the most a `Heap` has, so that C++
/// containers' many small nodes fit (the record gives 32 for the two Neuron heaps and
/// nothing for this one; D17).
pub const LIBC_BLOCKS: usize = 128;

pub struct State {
    pub data_scratch: usize,
    pub data_scratch_size: usize,
    pub hbm_scratch: u64,
    pub hbm_scratch_size: usize,
    pub dma_queue: (u32, u32),
    pub translate: TranslationCtx,
    pub hbm_heap: Heap,
    pub dataram_heap: Heap,
    pub libc_heap: Heap<LIBC_BLOCKS>,
    pub memcpy_method: u32,
    pub curr_arg: usize,
    pub get_dst_tensor_called: bool,
    /// Checking mode: the byte new heap blocks are filled with (the blob's `check_fill`;
    /// 0: none).
    pub check_fill: u8,
    /// The TCM, HBM and libc heaps as the kernel found them (live blocks, free bytes);
    /// blocks beyond them at its end were leaked.
    pub heaps_at_setup: [(usize, u64); 3],
    /// Checking mode: the blocks whose red zones are watched (redzone.rs).
    pub red_zones: crate::runtime::redzone::RedZones,
}

pub static STATE: Global<State> = Global::new(State {
    data_scratch: 0,
    data_scratch_size: 0,
    hbm_scratch: 0,
    hbm_scratch_size: 0,
    dma_queue: (0, 0),
    translate: TranslationCtx {
        records: [crate::runtime::translate::MapRecord {
            ptr: u64::MAX,
            window: 0,
            mask: u64::MAX,
            reg_location: 0,
        }; 5],
        next_alloc: 0,
    },
    hbm_heap: Heap::empty(),
    dataram_heap: Heap::empty(),
    libc_heap: Heap::empty(),
    memcpy_method: initial_memcpy_method(),
    curr_arg: 0,
    get_dst_tensor_called: false,
    check_fill: 0,
    heaps_at_setup: [(0, 0); 3],
    red_zones: crate::runtime::redzone::RedZones::new(),
});

/// DMA where an engine exists (the host's emulated one), VEC otherwise (docs/decisions.md,
/// "DMA on the device").
const fn initial_memcpy_method() -> u32 {
    if cfg!(target_os = "none") {
        VEC_MEMCPY
    } else {
        DEFAULT_METHOD
    }
}

/// Records what `entry_func` learned from the host.
pub fn set_scratch(data: usize, data_size: usize, hbm: u64, hbm_size: usize, dma: (u32, u32)) {
    require(
        data_size >= scratch::MIN_SIZE,
        rule!(
            "start_exit.cpp:451",
            "extended_isa::sdk::data_scratch_size >= sizeof(data_scratch_map_t)"
        ),
    );
    STATE.with(|s| {
        s.data_scratch = data;
        s.data_scratch_size = data_size;
        s.hbm_scratch = hbm;
        s.hbm_scratch_size = hbm_size;
        s.dma_queue = dma;
    });
}

/// What `switch_stack_or_call_wrapper` does before every launch: fresh heaps (the previous
/// launch's allocations are forgotten) and a fresh translation table.
pub fn init_for_launch() {
    super::access::reset();
    let (data, data_size, hbm, hbm_size) = STATE.with(|s| {
        (
            s.data_scratch,
            s.data_scratch_size,
            s.hbm_scratch,
            s.hbm_scratch_size,
        )
    });
    let hbm_window = local_of_pinned(hbm);
    STATE.with(|s| {
        s.hbm_heap.init(hbm, hbm_size as u64);
        s.dataram_heap.init(
            (data + scratch::DATARAM_POOL) as u64,
            scratch::DATARAM_POOL_SIZE as u64,
        );
        s.libc_heap.init(
            (data + scratch::LIBC_POOL) as u64,
            data_size.saturating_sub(scratch::LIBC_POOL) as u64,
        );
        // SBUF is pinned once the launch's argument blob names its base (customop_setup).
        s.translate =
            TranslationCtx::new(DYNAMIC_WINDOWS, (u64::MAX, SBUF_WINDOW), (hbm, hbm_window));
        s.translate.records[SBUF_RECORD].ptr = u64::MAX;
        s.get_dst_tensor_called = false;
        s.curr_arg = 0;
    });
}

/// Local base of a pinned 64 MiB window holding `soc`.
fn local_of_pinned(soc: u64) -> usize {
    #[cfg(target_os = "none")]
    {
        let _ = soc;
        HBM_SCRATCH_WINDOW
    }
    #[cfg(not(target_os = "none"))]
    {
        platform::host_map(soc & PINNED_MASK, PINNED_SPAN)
    }
}

/// The local address of `soc` in the core's hbm_scratch, through the pinned window that
/// shows it (unlike [`translate`], never a dynamic window a later translation remaps).
pub fn local_of_hbm_scratch(soc: u64) -> usize {
    let hbm = STATE.with(|s| s.hbm_scratch);
    local_of_pinned(hbm) + (soc & (PINNED_SPAN - 1)) as usize
}

/// `neuron_translate`.
pub fn translate(soc: u64) -> usize {
    STATE.with(|s| s.translate.translate(soc, &mut WindowHw))
}

/// `neuron_translate_mapping_lookup`.
pub fn mapping_lookup(soc: u64) -> Option<(u64, u64)> {
    STATE.with(|s| s.translate.lookup(soc))
}

// ---- the argument protocol ----

fn blob() -> &'static mut ArgBlob {
    let base = STATE.with(|s| s.data_scratch);
    require(
        base != 0,
        rule!("wrapper_api.cpp", "entry_func has run (data scratch known)"),
    );
    // SAFETY: the data scratch area holds an ArgBlob at ARG_BLOB (the launch protocol), it
    // is suitably aligned (the scratch area is 64-byte aligned) and only this core uses it.
    unsafe { &mut *((base + scratch::ARG_BLOB) as *mut ArgBlob) }
}

/// `customop_setup`: starts reading this launch's arguments.
pub fn setup() {
    let b = blob();
    require(
        b.magic == ARG_BLOB_MAGIC,
        rule!("wrapper_api.cpp", "the host wrote the argument blob"),
    );
    require(
        (b.num_args as usize) <= MAX_ARGS,
        rule!(
            "arg_extractor.hpp:16",
            "num_args < max_args_ (at most 10 arguments)"
        ),
    );
    let sbuf = b.sbuf_base;
    let sbuf_window = if sbuf != 0 {
        local_of_sbuf(sbuf)
    } else {
        SBUF_WINDOW
    };
    let fill = b.check_fill;
    STATE.with(|s| {
        s.curr_arg = 0;
        s.get_dst_tensor_called = false;
        s.check_fill = fill;
        s.red_zones.clear();
        s.heaps_at_setup = [
            (
                s.dataram_heap.live_allocations(),
                s.dataram_heap.free_bytes(),
            ),
            (s.hbm_heap.live_allocations(), s.hbm_heap.free_bytes()),
            (s.libc_heap.live_allocations(), s.libc_heap.free_bytes()),
        ];
        if sbuf != 0 {
            let r = &mut s.translate.records[SBUF_RECORD];
            r.ptr = sbuf & PINNED_MASK;
            r.window = sbuf_window;
        }
    });
}

fn local_of_sbuf(sbuf: u64) -> usize {
    #[cfg(target_os = "none")]
    {
        let _ = sbuf;
        SBUF_WINDOW
    }
    #[cfg(not(target_os = "none"))]
    {
        platform::host_map(sbuf & PINNED_MASK, PINNED_SPAN)
    }
}

/// `ArgParser::next_ucode_arg<UTensor>`: the next descriptor, with the vendor's checks.
pub fn next_arg() -> &'static ArgTensor {
    let b = blob();
    let i = STATE.with(|s| s.curr_arg);
    require(
        i < b.num_args as usize,
        rule!("arg_parser.hpp:66", "curr_arg_ < isa_args.get_num()"),
    );
    require(
        b.types[i] == ARG_TYPE_TENSOR,
        rule!(
            "arg_parser.hpp:67",
            "isa_args.get_types()[curr_arg_] == NEURON_ISA_TPB_CUSTOM_OP_ARG_TYPE_TENSOR"
        ),
    );
    STATE.with(|s| s.curr_arg += 1);
    &b.args[i]
}

/// The SoC address of a tensor's first byte: SBUF tensors are relative to the SBUF base.
pub fn tensor_soc_addr(t: &ArgTensor) -> u64 {
    // The blob (the SBUF base) is only read for SBUF tensors, as before.
    let sbuf_base = if t.location == LOCATION_SBUF {
        blob().sbuf_base
    } else {
        0
    };
    t.soc_addr(sbuf_base).unwrap_or_else(|| {
        fatal(rule!(
            "utypes.hpp:64",
            "xt_ptr_ (tensor location is SBUF or HBM)"
        ))
    })
}

/// A scalar argument: the first element of the next (1-element) tensor, read as `T`
/// without a type check, as the vendor's pulls do.
pub fn next_scalar<T: Copy>() -> T {
    let t = next_arg();
    let local = translate(tensor_soc_addr(t));
    // SAFETY: the translated address is the tensor's first byte in a mapped window; the read
    // is unaligned-safe.
    unsafe { (local as *const T).read_unaligned() }
}

/// `get_dst_tensor`: the destination descriptor; the returned tensor will not be copied.
pub fn dst_tensor() -> &'static ArgTensor {
    STATE.with(|s| s.get_dst_tensor_called = true);
    &blob().output
}

/// `customop_return_tensor`: copies `src` into the destination unless the kernel already
/// wrote it through `get_dst_tensor`.
pub fn return_tensor(src: &ArgTensor) {
    if STATE.with(|s| s.get_dst_tensor_called) {
        return;
    }
    let dst = blob().output;
    require(
        src.dtype == dst.dtype,
        rule!(
            "utypes.hpp:65",
            "aten_t.dtype().toScalarType() == isa_to_torch_dtype(t_.dtype)"
        ),
    );
    require(
        src.num_bytes() == dst.num_bytes(),
        rule!(
            "utypes.hpp:65",
            "the returned tensor has the destination's size"
        ),
    );
    copy_tensor(tensor_soc_addr(&dst), tensor_soc_addr(src), dst.num_bytes());
}

/// HBM→HBM through a dataram staging buffer, in chunks of the free dataram.
fn copy_tensor(dst: u64, src: u64, n: usize) {
    let mut done = 0usize;
    while done < n {
        let room = STATE.with(|s| s.dataram_heap.max_free_space(0)) as usize;
        require(room > 0, rule!("utypes.hpp:74", "buffer_bytes > 0"));
        let chunk = room.min(n - done);
        let stage = dataram_allocate(chunk as u32, 0)
            .unwrap_or_else(|_| fatal(rule!("utypes.hpp:73", "ret == 0")));
        memcpy_from_soc(stage, src + done as u64, chunk as u32);
        memcpy_to_soc(dst + done as u64, stage, chunk as u32);
        let _ = dataram_deallocate(stage);
        done += chunk;
    }
}

// ---- allocators ----

pub fn hbm_allocate(size: u32, align: u32) -> Result<u64, HeapError> {
    let r = redzone::allocate(
        HeapKind::Hbm,
        size,
        0,
        |n| STATE.with(|s| s.hbm_heap.alloc(n, align)),
        local_of_hbm_scratch,
    );
    if let Ok(soc) = r {
        poison_block(local_of_hbm_scratch(soc), size as usize);
    }
    r
}

/// Checking mode: writes a note into this core's check log (nothing outside checked
/// launches; a full log counts what it drops). Its callers (a copy's use-after-free check,
/// the heaps' checks) reach it only in checking mode, so host builds charge its stack when
/// it is taken, not at every call that could take it (D128); never inlined: the device
/// frames table finds it by its name.
#[inline(never)]
pub fn check_note(kind: NoteKind, count: u32, a: u64, b: u64) {
    crate::runtime::stack::charged_path(customop_abi::stack::CHECK_NOTE);
    let (fill, data) = STATE.with(|s| (s.check_fill, s.data_scratch));
    if fill == 0 || data == 0 {
        return;
    }
    let header = (data + scratch::CHECK_LOG) as *mut CheckLogHeader;
    // SAFETY: the data scratch area holds the log at CHECK_LOG (the scratch map: inside the
    // area, 8-byte aligned); only this core writes it during a launch, the host reads it
    // after.
    unsafe {
        let mut h = header.read_volatile();
        if h.count as usize >= MAX_NOTES {
            h.dropped = h.dropped.saturating_add(1);
        } else {
            let note = header.add(1).cast::<CheckNote>().add(h.count as usize);
            note.write_volatile(CheckNote {
                kind: kind as u32,
                count,
                a,
                b,
                reserved: 0,
            });
            h.count += 1;
        }
        header.write_volatile(h);
    }
}

/// Checking mode, at the kernel's end: `tcm_malloc` blocks, HBM blocks and `malloc`/`new`
/// blocks (the core's libc heap) the kernel took and still holds. A kernel's tensors give their HBM back when their last copy goes (the
/// headers' reference-counted storage, D87), so an HBM block still held is a tensor kept
/// past the kernel (a static one) or a `neuron_hbm_allocate` without its deallocate.
pub fn check_leaks() {
    let zones = [
        redzone::watched_bytes(HeapKind::Tcm),
        redzone::watched_bytes(HeapKind::Hbm),
        redzone::watched_bytes(HeapKind::Libc),
    ];
    let (sites, held) = redzone::held_sites::<8>(HeapKind::Libc);
    redzone::verify_all();
    let (now, before) = STATE.with(|s| {
        (
            [
                (
                    s.dataram_heap.live_allocations(),
                    s.dataram_heap.free_bytes(),
                ),
                (s.hbm_heap.live_allocations(), s.hbm_heap.free_bytes()),
                (s.libc_heap.live_allocations(), s.libc_heap.free_bytes()),
            ],
            s.heaps_at_setup,
        )
    });
    for ((kind, zone), (now, before)) in [NoteKind::TcmLeak, NoteKind::HbmLeak, NoteKind::LibcLeak]
        .into_iter()
        .zip(zones)
        .zip(now.into_iter().zip(before))
    {
        let blocks = now.0.saturating_sub(before.0);
        if blocks > 0 {
            let bytes = before.1.saturating_sub(now.1).saturating_sub(zone);
            check_note(kind, blocks as u32, bytes, 0);
        }
    }
    // Where the libc blocks still held were made (D104), as distances from entry_func.
    #[cfg(feature = "exports")]
    let anchor = crate::runtime::exports::entry_func as *const () as usize as u64;
    #[cfg(not(feature = "exports"))]
    let anchor = 0;
    for &(site, count) in &sites[..held] {
        check_note(
            NoteKind::LeakSite,
            count,
            0,
            u64::from(site).wrapping_sub(anchor),
        );
    }
}

/// Checking mode: a copy of `n` bytes into (`into`) or out of local memory at `local` that
/// lies in a block the TCM heap has freed.
pub fn check_tcm_copy(local: usize, n: u32, into: bool) {
    if STATE.with(|s| s.check_fill == 0 || !s.dataram_heap.is_free(local as u64)) {
        return;
    }
    check_note(NoteKind::UseAfterFree, n, local as u64, u64::from(into));
}

/// In checking mode, fills a block just handed out with the launch's fill byte, so that a
/// kernel reading it before writing it shows (the device gives whatever was there).
pub fn poison_block(local: usize, len: usize) {
    let fill = STATE.with(|s| s.check_fill);
    if fill != 0 && local != 0 {
        // SAFETY: `local..local + len` is a block this core's heap just handed out, in
        // memory the core owns.
        unsafe { core::ptr::write_bytes(local as *mut u8, fill, len) };
    }
}

pub fn hbm_deallocate(addr: u64) -> Result<(), HeapError> {
    redzone::release(local_of_hbm_scratch(addr));
    STATE.with(|s| s.hbm_heap.free(addr))
}

pub fn hbm_alloc_size(addr: u64) -> Option<u64> {
    STATE.with(|s| s.hbm_heap.alloc_size(addr))
}

pub fn dataram_allocate(size: u32, align: u32) -> Result<usize, HeapError> {
    let r = redzone::allocate(
        HeapKind::Tcm,
        size,
        0,
        |n| STATE.with(|s| s.dataram_heap.alloc(n, align)),
        |a| a as usize,
    )
    .map(|a| a as usize);
    if let Ok(p) = r {
        poison_block(p, size as usize);
    }
    r
}

pub fn dataram_deallocate(p: usize) -> Result<(), HeapError> {
    redzone::release(p);
    STATE.with(|s| s.dataram_heap.free(p as u64))
}

pub fn dataram_max_free_space(align: u32) -> u64 {
    STATE.with(|s| s.dataram_heap.max_free_space(align))
}

// ---- memcpy ----

/// `neuron_set_memcpy_method`: 0 C, 1 VEC, 2 DMA; anything from 3 on is refused (-1),
/// as is DMA where there is no engine.
pub fn set_memcpy_method(m: u32) -> i32 {
    // DMA where a host serves it (the emulator's host cores, the QEMU board), as D19 says.
    let dma_ok = platform::services().dma.is_some();
    if m >= MAX_METHODS || (m == DMA && !dma_ok) {
        return -1;
    }
    STATE.with(|s| s.memcpy_method = m);
    0
}

pub fn memcpy_method() -> u32 {
    STATE.with(|s| s.memcpy_method)
}

/// `neuron_memcpy(void*, uint64_t, uint32_t)`: HBM→local.
pub fn memcpy_from_soc(local: usize, soc: u64, n: u32) {
    transfer(local, soc, true, n)
}

/// `neuron_memcpy(uint64_t, void*, uint32_t)`: local→HBM.
pub fn memcpy_to_soc(soc: u64, local: usize, n: u32) {
    transfer(local, soc, false, n)
}

fn transfer(local: usize, soc: u64, to_local: bool, n: u32) {
    match memcpy_method() {
        DMA => {
            let dma = platform::services()
                .dma
                .unwrap_or_else(|| fatal(rule!("data_transfer.cpp:299", "a DMA engine")));
            // SAFETY: the service has the documented signature; `local` is the caller's
            // buffer of `n` bytes.
            let rc = unsafe { dma(local as *mut core::ffi::c_void, soc, to_local, n) };
            require(
                rc == 0,
                rule!("data_transfer.cpp:299", "DMA transfer completed"),
            );
        }
        m => windowed_copy(local, soc, to_local, n, m == VEC_MEMCPY),
    }
}

/// `memcpy_data_transfer_impl`: window by window through the translation table.
fn windowed_copy(local: usize, soc: u64, to_local: bool, n: u32, vector: bool) {
    let mut left = n as u64;
    let (mut l, mut h) = (local, soc);
    while left > 0 {
        // One lookup gives the window and how far it reaches (a translation just made
        // always hits, the vendor's `ret == 0`).
        let (nx, end) = STATE.with(|s| s.translate.translate_span(h, &mut WindowHw));
        let chunk = left.min(end - h + 1) as usize;
        let (dst, src) = if to_local { (l, nx) } else { (nx, l) };
        // SAFETY: `l` is the caller's buffer and `nx` the mapped window, both valid for
        // `chunk` bytes (the window's remaining span bounds the chunk).
        unsafe {
            if vector {
                crate::runtime::mem::copy_vector(dst as *mut u8, src as *const u8, chunk)
            } else {
                crate::runtime::mem::copy_bytes(dst as *mut u8, src as *const u8, chunk)
            }
        }
        l += chunk;
        h += chunk as u64;
        left -= chunk as u64;
    }
}
