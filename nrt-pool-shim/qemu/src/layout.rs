//! The emulated core's address space under QEMU's nrt-pool machine
//! (`nrt-pool-shim/qemu/machine/nrt-pool.c`) and the SoC addresses its pinned windows show
//! (docs/decisions.md D56, D63). Device memory is the engine's; these constants say where
//! the op images and the cores' scratch slices lie in it.

/// Where the core's data scratch area (the NX dataram) is pinned.
pub const DATARAM_LOCAL: u32 = 0x0008_0000;

/// The core's local stack (the board's and the kernel's): 8 KiB of RAM ending at
/// 0x50000000 (nrt-pool.c), and below it no memory down to the end of window 7. An access
/// in the 16 MiB below it with the stack pointer there too is a stack overflow (D79); one
/// further down is a stack pointer gone wild, reported as the memory fault it is.
pub const LOCAL_STACK_BASE: u32 = 0x4FFF_E000;
pub const LOCAL_STACK_TOP: u32 = 0x5000_0000;
pub const STACK_GAP_LO: u32 = LOCAL_STACK_BASE - (16 << 20);
/// The guard page below an HBM stack.
pub const STACK_GUARD_BYTES: u64 = 4096;

/// The pinned windows' local bases (the runtime's `SBUF_WINDOW`, `HBM_SCRATCH_WINDOW`) and
/// their span.
pub const SBUF_WINDOW: u32 = 0x8000_0000;
pub const HBM_WINDOW: u32 = 0x8400_0000;
pub const WINDOW_SPAN: u64 = 64 << 20;

/// The SoC address the HBM window shows (HBM's base, as the engine places it).
pub const HBM_SOC: u64 = 0x0040_0000_0000;
/// The SoC address the SBUF window shows.
pub const SBUF_SOC: u64 = 0x0050_0000_0000;

/// Each core's op image: 2 MiB at the start of HBM scratch (seed 000, section 5).
pub const IMAGE_BYTES: u64 = 0x20_0000;
pub const CORES: usize = 8;

/// Where core `core`'s image is linked.
pub const fn image_org(core: usize) -> u32 {
    HBM_WINDOW + (core as u32) * IMAGE_BYTES as u32
}

/// Each core's hbm_scratch (heaps): the engine's slice size, after the eight images (where
/// the engine puts its scratch slices: at the end of the bytes `RESERVED_HBM` keeps free).
pub const HBM_SCRATCH_BYTES: u64 = nrt_pool_engine::memory::HBM_SCRATCH_BYTES;

/// Where core `core`'s op image lies in device memory (what `image_org` shows).
pub const fn image_soc(core: usize) -> u64 {
    HBM_SOC + core as u64 * IMAGE_BYTES
}

/// HBM the images and the scratch slices take, from its start; tensors come after. Both
/// lie in the pinned window (D74).
pub const RESERVED_HBM: u64 = CORES as u64 * (IMAGE_BYTES + HBM_SCRATCH_BYTES);
const _: () = assert!(RESERVED_HBM <= WINDOW_SPAN);

/// The core-local address of SoC address `soc`, when a pinned window shows it.
pub fn local_of(soc: u64) -> Option<u32> {
    if (HBM_SOC..HBM_SOC + WINDOW_SPAN).contains(&soc) {
        Some(HBM_WINDOW + (soc - HBM_SOC) as u32)
    } else if (SBUF_SOC..SBUF_SOC + WINDOW_SPAN).contains(&soc) {
        Some(SBUF_WINDOW + (soc - SBUF_SOC) as u32)
    } else {
        None
    }
}

/// The SoC address a core-local address shows through a pinned window (the inverse of
/// [`local_of`]).
pub fn soc_of(local: u32) -> Option<u64> {
    let l = u64::from(local);
    let (sbuf, hbm) = (u64::from(SBUF_WINDOW), u64::from(HBM_WINDOW));
    if (hbm..hbm + WINDOW_SPAN).contains(&l) {
        Some(HBM_SOC + (l - hbm))
    } else if (sbuf..sbuf + WINDOW_SPAN).contains(&l) {
        Some(SBUF_SOC + (l - sbuf))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_images_scratch_and_tensors() {
        assert_eq!(image_org(0), 0x8400_0000);
        assert_eq!(image_org(7), 0x84E0_0000);
        let first_scratch = HBM_SOC + RESERVED_HBM - CORES as u64 * HBM_SCRATCH_BYTES;
        assert_eq!(local_of(first_scratch), Some(0x8500_0000));
        let last_scratch_end = HBM_SOC + RESERVED_HBM - 1;
        assert_eq!(local_of(last_scratch_end), Some(0x87FF_FFFF));
        for soc in [
            first_scratch,
            image_soc(7) + 5,
            SBUF_SOC + 4,
            HBM_SOC + WINDOW_SPAN - 1,
        ] {
            assert_eq!(local_of(soc).and_then(soc_of), Some(soc));
        }
        assert_eq!(soc_of(0x0008_0000), None);
        assert_eq!(local_of(image_soc(3)), Some(image_org(3)));
        assert_eq!(
            local_of(HBM_SOC + RESERVED_HBM),
            None,
            "tensors: dynamic windows"
        );
        assert_eq!(local_of(HBM_SOC + WINDOW_SPAN - 1), Some(0x87FF_FFFF));
        assert_eq!(local_of(HBM_SOC + WINDOW_SPAN), None);
        assert_eq!(local_of(SBUF_SOC + 4), Some(0x8000_0004));
    }
}
