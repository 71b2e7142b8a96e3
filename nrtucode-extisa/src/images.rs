//! Coretype routing and the image getters: ext-ISA libraries, base memory images and the
//! hardware-decode profile tables.
//!
//! The vendor embeds its images; nothing proprietary ships here. Images are served from the
//! directory named by [`IMAGE_DIR_ENV`] (layout in README and docs/decisions.md) and live
//! for the rest of the process once read, as embedded images would.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::abi::*;
use crate::error::{Error, Result};

/// Environment variable naming the image directory.
pub const IMAGE_DIR_ENV: &str = "NRTUCODE_EXTISA_IMAGE_DIR";
/// Set (to anything) to select the CPTC decode library (index 3) by default.
pub const CPTC_ENV: &str = "NRT_UCODE_UNSTABLE_LIBRARY_FLAG_CPTC_DECODE";
/// Selects the DEFAULT flavor of base memory images.
pub const FLAVOR_ENV: &str = "NEURON_UCODE_FLAVOR";
/// A removed switch; get_memory_image refuses to run while it is "1".
pub const MPLUS_ENV: &str = "NRTUCODE_MPLUS_ON_MARIANA";

/// The 0x99-byte stderr notice for the removed MPLUS switch. The vendor's exact wording is
/// not in the record (only its length and subject); this text is ours.
pub const MPLUS_REMOVED_MESSAGE: &str = "nrtucode: the NRTUCODE_MPLUS_ON_MARIANA flag has been removed; set NEURON_RT_DBG_V4_PLUS=0/1 instead to choose Mariana or Mariana-Plus microcode images.\n";
const _: () = assert!(MPLUS_REMOVED_MESSAGE.len() == 0x99);

/// Highest valid coretype slot for the flat per-coretype tables.
pub const MAX_CORETYPE: u32 = NRTUCODE_CORE_SLOTS - 1;

/// Q7 POOL coretypes, scheme A: bound 29, mask 0x20202040 ({6, 13, 21, 29}).
pub fn is_q7_pool(coretype: nrtucode_coretype_t) -> bool {
    coretype <= 29 && (0x2020_2040u32 >> coretype) & 1 == 1
}

/// The ext-ISA tables laid end to end, as in the vendor's `.data.rel.ro`: (coretype, first
/// flat slot, libraries). A library index is not checked against its table's count, so an
/// index past the end reads the next table's entries.
const EXT_ISA_TABLES: [(u32, usize, usize); 4] = [(6, 0, 1), (13, 1, 4), (21, 5, 4), (29, 9, 4)];
const EXT_ISA_SLOTS: usize = 13;

/// (coretype, library) of the image a flat slot holds.
fn ext_isa_slot_owner(slot: usize) -> (u32, u64) {
    let &(ct, first, _) = EXT_ISA_TABLES
        .iter()
        .rev()
        .find(|&&(_, first, _)| slot >= first)
        .expect("slot 0 belongs to the first table");
    (ct, (slot - first) as u64)
}

/// Resolves (coretype, library index) to the image entry the vendor's router would reach.
pub fn ext_isa_entry(coretype: nrtucode_coretype_t, library: u64) -> Result<(u32, u64)> {
    let &(_, first, _) = EXT_ISA_TABLES
        .iter()
        .find(|&&(ct, _, _)| ct == coretype)
        .ok_or(Error::UnknownCore)?;
    let slot = usize::try_from(library)
        .ok()
        .and_then(|l| l.checked_add(first))
        .filter(|&s| s < EXT_ISA_SLOTS)
        .ok_or(Error::MissingImage)?;
    Ok(ext_isa_slot_owner(slot))
}

/// `get_num_ext_isa_libs`.
pub fn num_ext_isa_libs(coretype: nrtucode_coretype_t) -> Result<usize> {
    EXT_ISA_TABLES
        .iter()
        .find(|&&(ct, _, _)| ct == coretype)
        .map(|&(_, _, n)| n)
        .ok_or(Error::UnknownCore)
}

/// An ext-ISA library image and its optional JSON manifest.
#[derive(Clone, Copy, Debug)]
pub struct ExtIsaImage {
    pub so: &'static [u8],
    pub json: Option<&'static [u8]>,
}

/// The internal router behind `get_ext_isa` and `ll_create`.
pub fn ext_isa(
    coretype: nrtucode_coretype_t,
    flavor: nrtucode_flavors_t,
    library: u64,
) -> Result<ExtIsaImage> {
    // Explicit flavors 1-3 and DEFAULT are accepted; none changes which image is served.
    if flavor >= 4 {
        return Err(Error::UnknownImage);
    }
    let (ct, lib) = ext_isa_entry(coretype, library)?;
    let dir = image_dir().ok_or(Error::MissingImage)?;
    let so = load(&ext_isa_file(&dir, ct, lib, "elf")).ok_or(Error::MissingImage)?;
    let json = load(&ext_isa_file(&dir, ct, lib, "json"));
    Ok(ExtIsaImage { so, json })
}

/// Where an image directory keeps library `lib` of coretype `ct` (`ext` is "elf" for the
/// library, "json" for its manifest).
pub fn ext_isa_file(dir: &Path, ct: u32, lib: u64, ext: &str) -> PathBuf {
    dir.join("ext-isa")
        .join(format!("ct{ct}"))
        .join(format!("lib{lib}.{ext}"))
}

/// Where an image directory keeps a base memory image (`region` 0-3, flavor key `key`).
pub fn memory_image_file(
    dir: &Path,
    ct: u32,
    key: u32,
    region: nrtucode_image_t,
) -> Option<PathBuf> {
    let file = match region {
        NRTUCODE_IMAGE_IRAM => "iram.bin",
        NRTUCODE_IMAGE_DRAM => "dram.bin",
        NRTUCODE_IMAGE_SRAM => "sram.bin",
        NRTUCODE_IMAGE_EXTRAM => "extram.bin",
        _ => return None,
    };
    Some(
        dir.join("memory")
            .join(format!("ct{ct}"))
            .join(key.to_string())
            .join(file),
    )
}

/// `ll_get_libraries_from_opcodes`: the opcode lists are never read; one library is
/// reported for any non-empty list (3 with the CPTC switch on Cayman and later).
pub fn libraries_from_opcodes(
    coretype: nrtucode_coretype_t,
    num_opcodes: usize,
) -> Result<Option<usize>> {
    if num_opcodes == 0 {
        return Ok(None);
    }
    match coretype {
        NRTUCODE_CORE_SUNDA_Q7_POOL => Ok(Some(0)),
        NRTUCODE_CORE_CAYMAN_Q7_POOL
        | NRTUCODE_CORE_MARIANA_Q7_POOL
        | NRTUCODE_CORE_MARIANA_PLUS_Q7_POOL => Ok(Some(if cptc_selected() { 3 } else { 0 })),
        _ => Err(Error::UnknownCore),
    }
}

pub fn cptc_selected() -> bool {
    std::env::var_os(CPTC_ENV).is_some()
}

/// Flavor keys of the base memory images each coretype row holds, in table order.
fn memory_image_keys(coretype: u32) -> &'static [u32] {
    const SUNDA: &[u32] = &[1];
    const NX_AND_CCE: &[u32] = &[1, 2, 3];
    const Q7_POOL: &[u32] = &[1, 17, 18, 19, 2, 3];
    match coretype {
        0..=6 => SUNDA,
        13 | 21 | 29 => Q7_POOL,
        7..=30 => NX_AND_CCE,
        // 31..=37: the internal-only generation; this 4-generation build has no rows.
        _ => &[],
    }
}

/// DEFAULT resolves through NEURON_UCODE_FLAVOR: unset or unknown -> RELEASE.
fn resolve_memory_flavor(flavor: nrtucode_flavors_t) -> u32 {
    if flavor != NRTUCODE_FLAVORS_DEFAULT {
        return flavor;
    }
    match std::env::var(FLAVOR_ENV).as_deref() {
        Ok("debug") | Ok("DEBUG") => NRTUCODE_FLAVORS_DEBUG,
        Ok("test") | Ok("TEST") => NRTUCODE_FLAVORS_TEST,
        _ => NRTUCODE_FLAVORS_RELEASE,
    }
}

/// What `get_memory_image` does besides returning an image: the MPLUS refusal writes its
/// notice to stderr.
pub fn memory_image(
    coretype: nrtucode_coretype_t,
    region: nrtucode_image_t,
    flavor: nrtucode_flavors_t,
) -> Result<&'static [u8]> {
    if coretype > MAX_CORETYPE {
        return Err(Error::UnknownCore);
    }
    if std::env::var_os(MPLUS_ENV).is_some_and(|v| v == "1") {
        use std::io::Write;
        let _ = std::io::stderr().write_all(MPLUS_REMOVED_MESSAGE.as_bytes());
        return Err(Error::Invalid);
    }
    let key = resolve_memory_flavor(flavor);
    if !memory_image_keys(coretype).contains(&key) || region > NRTUCODE_IMAGE_EXTRAM {
        return Err(Error::UnknownImage);
    }
    // No EXTRAM image is "no image" (2), the code libnrt reads as "no EXTRAM"; any other
    // absent region is a missing image (3).
    let absent = if region == NRTUCODE_IMAGE_EXTRAM {
        Error::UnknownImage
    } else {
        Error::MissingImage
    };
    let Some(dir) = image_dir() else {
        return Err(absent);
    };
    memory_image_file(&dir, coretype, key, region)
        .and_then(|p| load(&p))
        .ok_or(absent)
}

/// Where an image directory keeps a hwdecode table (kind 0 PROF_CAM, 1 PROF_TABLE).
pub fn hwdecode_file(dir: &Path, ct: u32, kind: nrtucode_hwdecode_kind_t) -> Option<PathBuf> {
    let file = match kind {
        NRTUCODE_HWDECODE_PROF_CAM => "prof_cam.bin",
        NRTUCODE_HWDECODE_PROF_TABLE => "prof_table.bin",
        _ => return None,
    };
    Some(dir.join("hwdecode").join(format!("ct{ct}")).join(file))
}

/// Sizes of the two profile tables.
pub const PROF_CAM_SIZE: usize = 0x400;
pub const PROF_TABLE_SIZE: usize = 0x2000;

/// Rows with hardware-decode tables: NX ACT/DVE/POOL/PE of Cayman, Mariana and Mariana-Plus.
fn has_hwdecode(coretype: u32) -> bool {
    matches!(coretype, 7..=10 | 15..=18 | 23..=26)
}

/// `get_hwdecode_table`. A row without a table, or whose table is absent or of the wrong
/// size, is ERR_UNKNOWN_IMAGE, the code the vendor returns for a NULL getter.
pub fn hwdecode_table(
    coretype: nrtucode_coretype_t,
    kind: nrtucode_hwdecode_kind_t,
) -> Result<&'static [u8]> {
    if coretype > MAX_CORETYPE {
        return Err(Error::UnknownCore);
    }
    let size = match kind {
        NRTUCODE_HWDECODE_PROF_CAM => PROF_CAM_SIZE,
        NRTUCODE_HWDECODE_PROF_TABLE => PROF_TABLE_SIZE,
        _ => return Err(Error::UnknownImage),
    };
    if !has_hwdecode(coretype) {
        return Err(Error::UnknownImage);
    }
    image_dir()
        .and_then(|d| hwdecode_file(&d, coretype, kind))
        .and_then(|p| load(&p))
        .filter(|t| t.len() == size)
        .ok_or(Error::UnknownImage)
}

fn image_dir() -> Option<PathBuf> {
    std::env::var_os(IMAGE_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Images read so far, by path. They are never freed: callers hold the returned pointers
/// for the life of the process, as they would hold pointers into the vendor's `.rodata`.
static LOADED: Mutex<Option<HashMap<PathBuf, &'static [u8]>>> = Mutex::new(None);

fn load(path: &Path) -> Option<&'static [u8]> {
    let mut cache = LOADED.lock();
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(&bytes) = cache.get(path) {
        return Some(bytes);
    }
    // Absence is not cached: an image placed later is found by the next call.
    let bytes: &'static [u8] = Box::leak(std::fs::read(path).ok()?.into_boxed_slice());
    cache.insert(path.to_path_buf(), bytes);
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q7_pool_coretypes_are_exactly_6_13_21_29() {
        let cts: Vec<u32> = (0..64).filter(|&c| is_q7_pool(c)).collect();
        assert_eq!(cts, vec![6, 13, 21, 29]);
    }

    #[test]
    fn library_index_past_its_table_reads_the_next_table() {
        assert_eq!(ext_isa_entry(6, 0), Ok((6, 0)));
        assert_eq!(ext_isa_entry(6, 1), Ok((13, 0)));
        assert_eq!(ext_isa_entry(13, 3), Ok((13, 3)));
        assert_eq!(ext_isa_entry(13, 4), Ok((21, 0)));
        assert_eq!(ext_isa_entry(21, 7), Ok((29, 3)));
        assert_eq!(ext_isa_entry(29, 4), Err(Error::MissingImage));
        assert_eq!(ext_isa_entry(29, u64::MAX), Err(Error::MissingImage));
        assert_eq!(ext_isa_entry(14, 0), Err(Error::UnknownCore));
        assert_eq!(ext_isa_entry(5, 0), Err(Error::UnknownCore));
    }

    #[test]
    fn lib_counts() {
        assert_eq!(num_ext_isa_libs(6), Ok(1));
        for ct in [13, 21, 29] {
            assert_eq!(num_ext_isa_libs(ct), Ok(4));
        }
        for ct in (0..40).filter(|c| ![6, 13, 21, 29].contains(c)) {
            assert_eq!(num_ext_isa_libs(ct), Err(Error::UnknownCore));
        }
    }

    #[test]
    fn memory_image_accepts_the_flavor_keys_each_row_has() {
        // Observed through `memory_image` with no image directory: a flavor the row has is a
        // missing image (3), one it lacks is an unknown image (2); past slot 37 the
        // coretype is unknown (1). Counts per the digest: SUNDA rows 1 descriptor (key 1),
        // NX and CCE rows 3, Q7 POOL rows 6 (the DKL keys 17-19 too), slots 31-37 none here.
        assert!(
            image_dir().is_none(),
            "unit tests run without an image directory"
        );
        let accepted = |ct: u32| -> Vec<u32> {
            (1..=32)
                .filter(|&key| match memory_image(ct, NRTUCODE_IMAGE_IRAM, key) {
                    Err(Error::MissingImage) => true,
                    Err(Error::UnknownImage) => false,
                    other => panic!("ct {ct} key {key}: {other:?}"),
                })
                .collect()
        };
        for ct in 0..=37u32 {
            let keys = accepted(ct);
            let want: &[u32] = match ct {
                0..=6 => &[1],
                13 | 21 | 29 => &[1, 2, 3, 17, 18, 19],
                7..=30 => &[1, 2, 3],
                _ => &[],
            };
            assert_eq!(keys, want, "coretype {ct}");
            // DEFAULT resolves to RELEASE without NEURON_UCODE_FLAVOR.
            let default = memory_image(ct, NRTUCODE_IMAGE_IRAM, NRTUCODE_FLAVORS_DEFAULT);
            assert_eq!(
                default.is_err_and(|e| e == Error::MissingImage),
                want.contains(&1),
                "coretype {ct}"
            );
            // Regions past EXTRAM are unknown even for a flavor the row has.
            assert_eq!(memory_image(ct, 4, 1), Err(Error::UnknownImage));
        }
        assert_eq!(
            memory_image(38, NRTUCODE_IMAGE_IRAM, 1),
            Err(Error::UnknownCore)
        );
        assert!(has_hwdecode(7) && has_hwdecode(26) && !has_hwdecode(11) && !has_hwdecode(2));
    }
}
