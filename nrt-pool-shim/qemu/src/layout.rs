//! The emulated core's address space (QEMU `virt` machine, de212, RAM from 0x60000000) and
//! the SoC addresses the pinned windows show (docs/decisions.md D56).

/// QEMU's RAM: 0x60000000 up to the end of the board's region after the HBM window.
pub const RAM_BASE: u32 = 0x6000_0000;
pub const RAM_END: u64 = 0x8C00_0000;
/// `-m` for QEMU.
pub const RAM_MIB: u64 = (RAM_END - RAM_BASE as u64) >> 20;

/// Where the host names the machine's core that runs the board (the others halt).
pub const CORE_WORD: u32 = 0x8bff_fffc;

/// The core's data scratch area (TCM): the argument blob at +0x800, the dataram and libc
/// heaps' pools.
pub const DATA_SCRATCH: u32 = 0x6400_0000;
pub const DATA_SCRATCH_BYTES: u32 = 64 << 10;

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

/// Each core's hbm_scratch (heaps): 2 MiB after the eight images.
pub const HBM_SCRATCH_BYTES: u64 = 2 << 20;
pub const fn hbm_scratch(core: usize) -> u64 {
    HBM_SOC + CORES as u64 * IMAGE_BYTES + core as u64 * HBM_SCRATCH_BYTES
}

/// Tensors: the rest of the window, after the images and the scratch slices.
pub const TENSORS_SOC: u64 = HBM_SOC + (32 << 20);
pub const TENSORS_END: u64 = HBM_SOC + WINDOW_SPAN;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_images_scratch_and_tensors() {
        assert_eq!(image_org(0), 0x8400_0000);
        assert_eq!(image_org(7), 0x84E0_0000);
        assert_eq!(local_of(hbm_scratch(0)), Some(0x8500_0000));
        assert_eq!(local_of(TENSORS_SOC), Some(0x8600_0000));
        assert_eq!(local_of(TENSORS_END - 1), Some(0x87FF_FFFF));
        assert_eq!(local_of(TENSORS_END), None);
        assert_eq!(local_of(SBUF_SOC + 4), Some(0x8000_0004));
        assert!(u64::from(HBM_WINDOW) + WINDOW_SPAN <= RAM_END);
        assert_eq!(RAM_MIB, 704);
    }
}
