//! The host prelinker: a split-load Xtensa library is validated, placed into the IRAM and
//! DRAM regions of the Pool engine, relocated (Elf32_Rela; symbols are never resolved) and
//! framed by the 0x20-byte "UCPL " header that `ll_create` stages on the device.
//!
//! This is the stock xt-libloader "host-load split-load" path as the record describes it
//! (host-nrtucode-extisa.md §5.2-§5.4); status codes are xt-libloader's ([`status`]).

pub mod elf;
pub mod encode;
#[doc(hidden)]
pub mod fixture;

use core::fmt;

use elf::{get_u32, put_u32, SplitLoad};
use encode::EncodeError;

/// The device regions a library is placed into (`cayman_memory_bounds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// IRAM link base: the relocation base for code.
    pub iram_base: u32,
    /// IRAM region size, also the size of the code scratch buffer.
    pub iram_size: usize,
    /// DRAM link base for data.
    pub dram_base: u32,
    /// DRAM region size, also the size of the data scratch buffer.
    pub dram_size: usize,
}

pub const CAYMAN_GEOMETRY: Geometry = Geometry {
    iram_base: 0x18000,
    iram_size: 0x8000,
    dram_base: 0xBE000,
    dram_size: 0x2000,
};

/// Bytes of the UCPL header at device offset 0.
pub const UCPL_HEADER_LEN: usize = 0x20;
/// "UCPL " and the code offset 0x20, as one little-endian u64.
pub const UCPL_MAGIC: u64 = 0x0000_0020_4C50_4355;

/// The prelinked image's header. Code follows at `code_seg_off` (0x20), data at
/// `data_seg_off` = 0x20 + align32(code).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ucpl {
    pub code_seg_off: u32,
    pub code_seg_len: u32,
    pub data_seg_off: u32,
    pub data_seg_len: u32,
    pub init: u32,
    pub fini: u32,
    pub start_sym: u32,
}

impl Ucpl {
    /// Header for segments of the given (memsz) lengths, with the vendor's rounding.
    pub fn for_segments(text_memsz: u32, data_memsz: u32) -> Self {
        let code_seg_len = (text_memsz + 3) & !3;
        Ucpl {
            code_seg_off: UCPL_HEADER_LEN as u32,
            code_seg_len,
            data_seg_off: (code_seg_len + 0x3f) & !0x1f,
            data_seg_len: (data_memsz + 3) & !3,
            ..Ucpl::default()
        }
    }

    pub fn to_bytes(&self) -> [u8; UCPL_HEADER_LEN] {
        let mut h = [0u8; UCPL_HEADER_LEN];
        h[0x00..0x04].copy_from_slice(&(UCPL_MAGIC as u32).to_le_bytes());
        h[0x04..0x08].copy_from_slice(&self.code_seg_off.to_le_bytes());
        h[0x08..0x0c].copy_from_slice(&self.code_seg_len.to_le_bytes());
        h[0x0c..0x10].copy_from_slice(&self.data_seg_off.to_le_bytes());
        h[0x10..0x14].copy_from_slice(&self.data_seg_len.to_le_bytes());
        h[0x14..0x18].copy_from_slice(&self.init.to_le_bytes());
        h[0x18..0x1c].copy_from_slice(&self.fini.to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&self.start_sym.to_le_bytes());
        h
    }
}

/// Why prelinking failed: an xt-libloader status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrelinkStatus {
    Xtlib(u32),
}

impl fmt::Display for PrelinkStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrelinkStatus::Xtlib(code) => write!(f, "{code}"),
        }
    }
}

/// xt-libloader status codes the prelinker returns.
pub mod status {
    pub const NOT_ELF: u32 = 1;
    pub const NO_DYNAMIC_SEGMENT: u32 = 4;
    pub const UNKNOWN_SYMBOL: u32 = 5;
    pub const NOT_SPLITLOAD: u32 = 7;
    pub const RELOCATION: u32 = 8;
    pub const UNKNOWN_FORMAT: u32 = 12;
    pub const SEGMENT_TOO_BIG: u32 = 13;
}

/// Relocation types: none, RELATIVE (`*w = reloc_addr(*w + addend)`), and the slot
/// operand/alternate forms that patch a CONST16 with the low/high half of a rebased value.
pub const R_XTENSA_NONE: u32 = 0;
pub const R_XTENSA_RELATIVE: u32 = 5;
pub const R_XTENSA_SLOT0_OP: u32 = 20;
pub const R_XTENSA_SLOT14_OP: u32 = 34;
pub const R_XTENSA_SLOT0_ALT: u32 = 35;
pub const R_XTENSA_SLOT14_ALT: u32 = 49;

/// Byte every unwritten scratch byte holds.
pub const POISON: u8 = 0xA5;
/// Addresses this far below the data segment still count as data when a scratch segment
/// exists.
const SCRATCH_SEPARATION: u32 = 0x400;

/// `.dynamic` tags the walk uses.
const DT_HASH: u32 = 4;
const DT_STRTAB: u32 = 5;
const DT_SYMTAB: u32 = 6;
const DT_RELA: u32 = 7;
const DT_RELASZ: u32 = 8;
const DT_INIT: u32 = 12;
const DT_FINI: u32 = 13;
/// Xtensa's processor-specific start symbol (DT_LOPROC + 2).
const DT_XTENSA_START: u32 = 0x7000_0002;

type Log<'l> = &'l mut dyn FnMut(fmt::Arguments<'_>);

/// Where each segment landed, and how source addresses map to device addresses.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    pub text_dst: u32,
    pub data_dst: u32,
    text_src: u32,
    data_src: u32,
    separation: u32,
}

impl Placement {
    /// `reloc_addr`: rebases a source address into the text or data region.
    pub fn rebase(&self, a: u32) -> u32 {
        if a.wrapping_add(self.separation) >= self.data_src {
            self.data_dst.wrapping_sub(self.data_src).wrapping_add(a)
        } else {
            self.text_dst.wrapping_sub(self.text_src).wrapping_add(a)
        }
    }

    fn rebase_text(&self, a: u32) -> u32 {
        self.text_dst.wrapping_sub(self.text_src).wrapping_add(a)
    }
}

/// What the `.dynamic` walk found.
#[derive(Clone, Copy, Debug, Default)]
struct DynamicInfo {
    rela: Option<u32>,
    rela_count: u32,
    init: u32,
    fini: u32,
    start: u32,
}

/// Prelinks `image` into `code` (IRAM region) and `data` (DRAM region), logging any
/// failure through `log`.
pub fn prelink(
    image: &[u8],
    geometry: &Geometry,
    code: &mut [u8],
    data: &mut [u8],
    log: Log<'_>,
) -> Result<Ucpl, PrelinkStatus> {
    code.fill(POISON);
    data.fill(POISON);
    let elf = SplitLoad::parse(image).map_err(|st| {
        log(format_args!(
            "nrtucode: prelink: failed to validate ELF shared object file (status {st})"
        ));
        PrelinkStatus::Xtlib(st)
    })?;
    let place = place(&elf, geometry);
    let dynamic = walk_dynamic(&elf, &place).ok_or_else(|| {
        log(format_args!(
            "nrtucode: prelink: failed to extract dynamic relocation info"
        ));
        PrelinkStatus::Xtlib(status::NO_DYNAMIC_SEGMENT)
    })?;
    copy_segment(
        &elf,
        &elf.text,
        place.text_dst,
        geometry.iram_base,
        code,
        log,
    )
    .and_then(|()| {
        copy_segment(
            &elf,
            &elf.data,
            place.data_dst,
            geometry.dram_base,
            data,
            log,
        )
    })
    .inspect_err(|_| {
        if elf.align == 0 {
            // The vendor's code (13) stays; this line says why the placement wrapped.
            log(format_args!(
                "nrtucode: prelink: no section gives an alignment ({} section header(s) readable): the segments were placed at their p_paddr instead of in the device regions",
                elf.sections
            ));
        }
    })?;
    // Sites are resolved against the whole region buffers, as the vendor's scratch buffers.
    let mut regions = Regions {
        code: (geometry.iram_base, code),
        data: (geometry.dram_base, data),
    };
    relocate(&elf, &place, &dynamic, &mut regions, log).map_err(PrelinkStatus::Xtlib)?;
    let mut ucpl = Ucpl::for_segments(elf.text.memsz, elf.data.memsz);
    ucpl.init = dynamic.init;
    ucpl.fini = dynamic.fini;
    ucpl.start_sym = dynamic.start;
    Ok(ucpl)
}

/// A library the vendor's prelinker accepts but stages wrongly. [`prelink`] keeps the
/// vendor's behaviour; [`hazards`] names these so callers can warn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hazard {
    /// A pointer into code that lies within 0x400 bytes below the data segment (a scratch
    /// segment exists) is rebased as data, so it points into DRAM, not at its code.
    CodeRebasedAsData {
        /// The relocation's site (source address).
        site: u32,
        /// The code address the pointer holds.
        target: u32,
        /// Where it ends up on the device.
        rebased: u32,
        /// Where the code address belongs on the device.
        intended: u32,
        data_start: u32,
    },
    /// A segment whose p_paddr is not aligned to the library's largest alignment is
    /// placed past its region's base, but the staged image is read from the base: its
    /// first bytes are poison and its last `unstaged` bytes never reach the device.
    UnstagedTail {
        segment: &'static str,
        paddr: u32,
        align: u32,
        placed_at: u32,
        region_base: u32,
        unstaged: u32,
    },
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Hazard::CodeRebasedAsData {
                site,
                target,
                rebased,
                intended,
                data_start,
            } => write!(
                f,
                "the pointer at 0x{site:x} holds code address 0x{target:x}, within 0x{SCRATCH_SEPARATION:x} bytes below the data segment at 0x{data_start:x}: it is rebased as data to 0x{rebased:x} instead of 0x{intended:x} (leave at least 0x{SCRATCH_SEPARATION:x} bytes between text and data)"
            ),
            Hazard::UnstagedTail {
                segment,
                paddr,
                align,
                placed_at,
                region_base,
                unstaged,
            } => write!(
                f,
                "the {segment} segment's p_paddr 0x{paddr:x} is not aligned to 0x{align:x}: it is placed at 0x{placed_at:x} but staged from the region base 0x{region_base:x}, so its last 0x{unstaged:x} bytes never reach the device (align p_paddr to 0x{align:x})"
            ),
        }
    }
}

/// The hazards of a library the prelinker accepts (empty for one it refuses).
pub fn hazards(image: &[u8], geometry: &Geometry) -> Vec<Hazard> {
    let Ok(elf) = SplitLoad::parse(image) else {
        return Vec::new();
    };
    let place = place(&elf, geometry);
    let mut out = Vec::new();
    for (segment, seg, dst, base) in [
        ("text", &elf.text, place.text_dst, geometry.iram_base),
        ("data", &elf.data, place.data_dst, geometry.dram_base),
    ] {
        let skew = dst.wrapping_sub(base);
        if elf.align > 1 && skew != 0 && skew < elf.align {
            out.push(Hazard::UnstagedTail {
                segment,
                paddr: seg.paddr,
                align: elf.align,
                placed_at: dst,
                region_base: base,
                unstaged: skew.min(seg.memsz),
            });
        }
    }
    if elf.scratch.is_none() {
        return out;
    }
    let Some(dynamic) = walk_dynamic(&elf, &place) else {
        return out;
    };
    let Some(relocations) = dynamic
        .rela
        .and_then(|t| elf.relocations(t, dynamic.rela_count.saturating_mul(12)))
    else {
        return out;
    };
    let text = elf.text.paddr..elf.text.paddr.saturating_add(elf.text.memsz);
    let big = elf.is_big_endian();
    for (site, info, addend) in relocations {
        let target = match info {
            R_XTENSA_RELATIVE => {
                // The word the loader rebases, read from the data segment's file image.
                let Some(off) = elf.data.file_offset(site, 4) else {
                    continue;
                };
                get_u32(&image[off as usize..], big).wrapping_add(addend as u32)
            }
            R_XTENSA_SLOT0_OP..=R_XTENSA_SLOT14_ALT => addend as u32,
            _ => continue,
        };
        if text.contains(&target) && target.wrapping_add(SCRATCH_SEPARATION) >= elf.data.paddr {
            out.push(Hazard::CodeRebasedAsData {
                site,
                target,
                rebased: place.rebase(target),
                intended: place.rebase_text(target),
                data_start: elf.data.paddr,
            });
        }
    }
    out
}

/// The fuzz target's property, shared with the seed-corpus test: any bytes are prelinked
/// without a panic or overflow, a success is a consistent image inside the device regions,
/// and the hazard analysis runs on them too.
#[doc(hidden)]
pub fn fuzz_one(image: &[u8]) -> Result<(), PrelinkStatus> {
    let g = CAYMAN_GEOMETRY;
    let (mut code, mut data) = (vec![0u8; g.iram_size], vec![0u8; g.dram_size]);
    let _hazards = hazards(image, &g);
    let u = prelink(image, &g, &mut code, &mut data, &mut |_| {})?;
    assert!(u.code_seg_len as usize <= g.iram_size);
    assert!(u.data_seg_len as usize <= g.dram_size);
    assert_eq!(u.code_seg_off, 0x20);
    assert_eq!(u.code_seg_len % 4, 0);
    assert_eq!(u.data_seg_len % 4, 0);
    assert_eq!(u.data_seg_off, (u.code_seg_len + 0x3f) & !0x1f);
    Ok(())
}

/// Where `image`'s segments would be placed for `geometry` (the validation of [`prelink`]
/// included); for tools and tests that check the result against a static link.
pub fn placement(image: &[u8], geometry: &Geometry) -> Result<Placement, u32> {
    SplitLoad::parse(image).map(|elf| place(&elf, geometry))
}

fn align_up(v: u32, align: u32) -> u32 {
    v.wrapping_add(align).wrapping_sub(1) & !align.wrapping_sub(1)
}

/// `dst = align_up(region_base, align) + (p_paddr & (align - 1))` for each segment, with
/// the vendor's unsigned wrap-around (an alignment of 0 places at 0, which then fails the
/// region bounds check).
fn place(elf: &SplitLoad<'_>, g: &Geometry) -> Placement {
    let a = elf.align;
    let dst = |base: u32, paddr: u32| align_up(base, a).wrapping_add(paddr & a.wrapping_sub(1));
    Placement {
        text_dst: dst(g.iram_base, elf.text.paddr),
        data_dst: dst(g.dram_base, elf.data.paddr),
        text_src: elf.text.paddr,
        data_src: elf.data.paddr,
        separation: if elf.scratch.is_some() {
            SCRATCH_SEPARATION
        } else {
            0
        },
    }
}

fn walk_dynamic(elf: &SplitLoad<'_>, place: &Placement) -> Option<DynamicInfo> {
    let mut info = DynamicInfo::default();
    let mut rela_size = 0;
    for (tag, val) in elf.dynamic_entries()? {
        match tag {
            DT_RELA => info.rela = Some(val),
            DT_RELASZ => rela_size = val,
            DT_INIT => info.init = place.rebase_text(val),
            DT_FINI => info.fini = place.rebase_text(val),
            DT_XTENSA_START => info.start = place.rebase_text(val),
            // Data-rebased by the loader but not needed to prelink.
            DT_HASH | DT_STRTAB | DT_SYMTAB => {}
            _ => {}
        }
    }
    info.rela_count = rela_size / 12;
    Some(info)
}

/// Copies a segment's file bytes to its place in the region buffer and zero-fills it to
/// `p_memsz`.
fn copy_segment(
    elf: &SplitLoad<'_>,
    seg: &elf::Segment,
    dst: u32,
    region_base: u32,
    buf: &mut [u8],
    log: Log<'_>,
) -> Result<(), PrelinkStatus> {
    let start = dst.wrapping_sub(region_base) as usize;
    let end = start
        .checked_add(seg.memsz as usize)
        .filter(|&e| e <= buf.len())
        .ok_or_else(|| {
            log(format_args!(
                "Segment exceeds the size of the split region on device"
            ));
            PrelinkStatus::Xtlib(status::SEGMENT_TOO_BIG)
        })?;
    let bytes = seg.bytes(elf.image).expect("validated segment");
    buf[start..start + bytes.len()].copy_from_slice(bytes);
    buf[start + bytes.len()..end].fill(0);
    Ok(())
}

/// The two region buffers relocation sites may fall in, with their device base addresses.
struct Regions<'b> {
    code: (u32, &'b mut [u8]),
    data: (u32, &'b mut [u8]),
}

impl Regions<'_> {
    /// The bytes at device address `addr` up to the end of the segment that holds them.
    fn site(&mut self, addr: u32) -> Option<&mut [u8]> {
        [&mut self.code, &mut self.data]
            .into_iter()
            .find_map(|(base, buf)| {
                let off = addr.checked_sub(*base)? as usize;
                (off < buf.len()).then(move || &mut buf[off..])
            })
    }
}

fn relocate(
    elf: &SplitLoad<'_>,
    place: &Placement,
    dynamic: &DynamicInfo,
    regions: &mut Regions<'_>,
    log: Log<'_>,
) -> Result<(), u32> {
    let Some(table) = dynamic.rela else {
        return Ok(());
    };
    let relocations = elf
        .relocations(table, dynamic.rela_count * 12)
        .ok_or_else(|| {
            log(format_args!(
                "nrtucode: prelink: failed to extract dynamic relocation info"
            ));
            status::NO_DYNAMIC_SEGMENT
        })?;
    let big = elf.is_big_endian();
    for (r_offset, r_info, addend) in relocations {
        if r_info > 0xff {
            log(format_args!(
                "nrtucode: prelink: relocation at 0x{r_offset:x} references symbol {}; symbols are not resolved",
                r_info >> 8
            ));
            return Err(status::UNKNOWN_SYMBOL);
        }
        let ty = r_info & 0xff;
        if ty == R_XTENSA_NONE {
            continue;
        }
        let site_addr = place.rebase(r_offset);
        let site = regions.site(site_addr);
        match ty {
            R_XTENSA_RELATIVE => {
                let Some(site) = site.filter(|s| s.len() >= 4) else {
                    log(format_args!("Invalid relocation address {site_addr}"));
                    return Err(status::RELOCATION);
                };
                let w = get_u32(site, big);
                put_u32(site, place.rebase(w.wrapping_add(addend as u32)), big);
            }
            R_XTENSA_SLOT0_OP..=R_XTENSA_SLOT14_ALT => {
                let (slot, half) = if ty <= R_XTENSA_SLOT14_OP {
                    (ty - R_XTENSA_SLOT0_OP, place.rebase(addend as u32) & 0xffff)
                } else {
                    (ty - R_XTENSA_SLOT0_ALT, place.rebase(addend as u32) >> 16)
                };
                let Some(site) = site.filter(|s| s.len() >= 4) else {
                    log(format_args!("Invalid relocation address {site_addr}"));
                    return Err(status::RELOCATION);
                };
                if big {
                    log(format_args!(
                        "Failed to set large immediate field in instruction slot {slot} (big-endian instruction encodings are not supported)"
                    ));
                    return Err(status::RELOCATION);
                }
                let needed = encode::site_len(get_u32(site, false)).unwrap_or(4);
                if site.len() < needed {
                    log(format_args!("Invalid load @ 0x{site_addr:x}"));
                    return Err(status::RELOCATION);
                }
                match encode::relocate_op(site, half as u16) {
                    Ok(_) => {}
                    Err(EncodeError::UnknownFormat(w)) => {
                        log(format_args!("Unknown instruction format [0x{w:x}]"));
                        return Err(status::UNKNOWN_FORMAT);
                    }
                    Err(EncodeError::NoImmediateField) => {
                        log(format_args!(
                            "Failed to set large immediate field in instruction slot {slot}"
                        ));
                        return Err(status::RELOCATION);
                    }
                }
            }
            other => {
                log(format_args!("Unknown relocation type {other}"));
                return Err(status::RELOCATION);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fixture::Fixture;
    use super::*;

    fn run(image: &[u8]) -> (Result<Ucpl, PrelinkStatus>, Vec<u8>, Vec<u8>, Vec<String>) {
        let g = CAYMAN_GEOMETRY;
        let (mut code, mut data) = (vec![0u8; g.iram_size], vec![0u8; g.dram_size]);
        let mut logs = Vec::new();
        let r = prelink(image, &g, &mut code, &mut data, &mut |a| {
            logs.push(a.to_string())
        });
        (r, code, data, logs)
    }

    fn word(b: &[u8], off: usize) -> u32 {
        u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
    }

    #[test]
    fn header_bytes_and_rounding() {
        let u = Ucpl {
            init: 0x18040,
            fini: 0x18080,
            start_sym: 0x180c0,
            ..Ucpl::for_segments(0x101, 0x11)
        };
        assert_eq!(u.code_seg_len, 0x104);
        assert_eq!(u.data_seg_off, 0x20 + 0x120);
        assert_eq!(u.data_seg_len, 0x14);
        let h = u.to_bytes();
        assert_eq!(&h[..8], b"UCPL \0\0\0");
        assert_eq!(u64::from_le_bytes(h[..8].try_into().unwrap()), UCPL_MAGIC);
        assert_eq!(u32::from_le_bytes(h[0x0c..0x10].try_into().unwrap()), 0x140);
        assert_eq!(
            u32::from_le_bytes(h[0x1c..0x20].try_into().unwrap()),
            0x180c0
        );
    }

    #[test]
    fn sample_is_placed_relocated_and_framed() {
        let f = Fixture::sample();
        let (r, code, data, logs) = run(&f.build());
        let u = r.unwrap_or_else(|e| panic!("{e}: {logs:?}"));
        assert_eq!(
            word(&code, 0),
            0x00E0_0804,
            "x24 CONST16 <- low half of 0xBE008"
        );
        assert_eq!(word(&code, 4), 0x0000_0B04, "x24 CONST16 <- high half");
        assert_eq!(
            word(&code, 8),
            0x0000_040F,
            "F0 insn0 <- low byte of 0x8004 (bit 8 clear)"
        );
        assert_eq!(
            word(&code, 16) & 0x0040_0000,
            0x0040_0000,
            "F0: imm bit 15 -> bundle bit 86"
        );
        assert_eq!(word(&data, 4), 0x18008, "RELATIVE to text");
        assert_eq!(word(&data, 8), 0xBE004, "RELATIVE to data");
        assert_eq!(&code[28..32], &[POISON; 4], "beyond the segment: poison");
        assert_eq!(u.code_seg_len, 28);
        assert_eq!(u.data_seg_off, 0x40);
        assert_eq!((u.init, u.fini, u.start_sym), (0x18008, 0x1800c, 0x18018));
    }

    #[test]
    fn scratch_separation_rebases_near_data_addresses_as_data() {
        // With a scratch segment, text within 0x400 below the data counts as data.
        let f = Fixture {
            scratch: true,
            ..Fixture::sample()
        };
        let (r, _, _, logs) = run(&f.build());
        assert_eq!(r, Err(PrelinkStatus::Xtlib(status::RELOCATION)), "{logs:?}");
        assert!(logs[0].starts_with("Invalid relocation address"));
    }

    #[test]
    fn scratch_segment_carries_the_table() {
        let f = Fixture {
            scratch: true,
            ..Fixture::sample_at(0x1000)
        };
        let (r, code, data, logs) = run(&f.build());
        let u = r.unwrap_or_else(|e| panic!("{e}: {logs:?}"));
        assert_eq!(word(&code, 0), 0x00E0_0804);
        assert_eq!(word(&data, 8), 0xBE004);
        assert_eq!(
            u.data_seg_len, 0x40,
            "data is 0x40 bytes: the table stays on the host"
        );
        assert_eq!(&data[0x40..0x44], &[POISON; 4]);
    }

    #[test]
    fn big_endian_data_relocates_in_its_byte_order() {
        let mut f = Fixture::sample();
        f.big_endian = true;
        f.relocations.retain(|r| r.1 == 5);
        f.data[4..8].copy_from_slice(&8u32.to_be_bytes());
        f.data[8..12].copy_from_slice(&0x104u32.to_be_bytes());
        let (r, _, data, _) = run(&f.build());
        r.unwrap();
        assert_eq!(&data[4..8], &0x18008u32.to_be_bytes());
        assert_eq!(&data[8..12], &0xBE004u32.to_be_bytes());
        // Instruction relocations are refused for big-endian images, loudly.
        let mut f = Fixture::sample();
        f.big_endian = true;
        let (r, _, _, logs) = run(&f.build());
        assert_eq!(r, Err(PrelinkStatus::Xtlib(status::RELOCATION)));
        assert!(logs[0].contains("instruction slot 0"), "{logs:?}");
    }

    #[test]
    fn unaligned_relative_sites_are_spliced_bytewise() {
        for at in 1..4u32 {
            let mut f = Fixture::sample();
            f.data = vec![0xEE; 16];
            f.data[at as usize..at as usize + 4].copy_from_slice(&0x0000_0010u32.to_le_bytes());
            f.relocations = vec![(0x100 + at, 5, 2)];
            let (r, _, data, logs) = run(&f.build());
            r.unwrap_or_else(|e| panic!("{e}: {logs:?}"));
            let a = at as usize;
            assert_eq!(word(&data, a), 0x18012, "site +{at}: text+0x10+2, rebased");
            assert!(
                data[..a].iter().all(|&b| b == 0xEE),
                "bytes before the site kept"
            );
            assert!(
                data[a + 4..16].iter().all(|&b| b == 0xEE),
                "bytes after the site kept"
            );
        }
    }

    #[test]
    fn placement_keeps_the_paddr_offset_within_the_alignment() {
        let f = Fixture::skewed();
        let (r, code, data, _) = run(&f.build());
        r.unwrap();
        assert_eq!(&code[..4], &[POISON; 4], "text lands at 0x18004");
        assert_eq!(word(&code, 4), 4);
        assert_eq!(&data[..8], &[POISON; 8], "data lands at 0xBE008");
    }

    fn expect(image: Vec<u8>, code: u32, log: &str) {
        let (r, _, _, logs) = run(&image);
        assert_eq!(r, Err(PrelinkStatus::Xtlib(code)), "{logs:?}");
        assert!(
            logs.iter().any(|l| l.contains(log)),
            "want {log:?} in {logs:?}"
        );
    }

    #[test]
    fn malformed_images_get_their_codes() {
        let good = Fixture::sample().build();
        let mut bad = good.clone();
        bad[0] = 0;
        expect(bad, status::NOT_ELF, "validate ELF");
        let mut bad = good.clone();
        bad[4] = 2;
        expect(bad, status::NOT_ELF, "validate ELF");
        let mut bad = good.clone();
        bad[5] = 3;
        expect(bad, status::NOT_ELF, "validate ELF");
        expect(good[..40].to_vec(), status::NOT_ELF, "validate ELF");
        expect(good[..60].to_vec(), status::NOT_SPLITLOAD, "validate ELF");
        let f = Fixture {
            flags: Some(vec![7, 7, 6]),
            ..Fixture::sample()
        };
        expect(f.build(), status::NOT_SPLITLOAD, "validate ELF");
        let f = Fixture {
            flags: Some(vec![5, 5, 6]),
            ..Fixture::sample()
        };
        expect(f.build(), status::NOT_SPLITLOAD, "validate ELF");
        let f = Fixture {
            flags: Some(vec![5, 7, 7]),
            ..Fixture::sample()
        };
        expect(f.build(), status::NOT_SPLITLOAD, "validate ELF");
        let f = Fixture {
            no_dynamic: true,
            ..Fixture::sample()
        };
        expect(f.build(), status::NO_DYNAMIC_SEGMENT, "validate ELF");
    }

    #[test]
    fn relocation_failures_get_their_codes() {
        let with = |r: (u32, u32, i32)| {
            Fixture {
                relocations: vec![r],
                ..Fixture::sample()
            }
            .build()
        };
        expect(
            with((0x104, 5 | 3 << 8, 0)),
            status::UNKNOWN_SYMBOL,
            "references symbol 3",
        );
        expect(
            with((0x104, 1, 0)),
            status::RELOCATION,
            "Unknown relocation type 1",
        );
        expect(
            with((0x104, 50, 0)),
            status::RELOCATION,
            "Unknown relocation type 50",
        );
        expect(
            with((0x9000, 5, 0)),
            status::RELOCATION,
            "Invalid relocation address",
        );
        expect(
            with((0x18, 21, 0)),
            status::UNKNOWN_FORMAT,
            "Unknown instruction format [0xf00d]",
        );
        let mut f = Fixture::sample();
        f.text[8..24].copy_from_slice(&[0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        f.relocations = vec![(0x8, 27, 0)];
        expect(
            f.build(),
            status::RELOCATION,
            "Failed to set large immediate field in instruction slot 7",
        );
    }

    #[test]
    fn oversize_segments_do_not_fit() {
        let f = Fixture {
            text_memsz: Some(0x8001),
            ..Fixture::sample()
        };
        expect(
            f.build(),
            status::SEGMENT_TOO_BIG,
            "Segment exceeds the size of the split region on device",
        );
        let f = Fixture {
            data_memsz: Some(0x2001),
            scratch: true,
            ..Fixture::sample_at(0x1000)
        };
        expect(f.build(), status::SEGMENT_TOO_BIG, "Segment exceeds");
        let f = Fixture {
            data_memsz: Some(0x2000),
            scratch: true,
            ..Fixture::sample_at(0x1000)
        };
        assert!(run(&f.build()).0.is_ok(), "exactly the region size fits");
        let f = Fixture {
            align: 0,
            ..Fixture::sample()
        };
        expect(f.build(), status::SEGMENT_TOO_BIG, "Segment exceeds");
    }

    #[test]
    fn every_truncation_of_a_valid_image_fails_with_its_code() {
        let good = Fixture::sample().build();
        let phoff = u32::from_le_bytes(good[28..32].try_into().unwrap()) as usize;
        let phdrs_end = phoff + 4 * 32;
        let shoff = u32::from_le_bytes(good[32..36].try_into().unwrap()) as usize;
        assert!(shoff > phdrs_end, "the fixture puts the section table last");
        for n in 0..good.len() {
            let (r, ..) = run(&good[..n]);
            let want = if n < 52 {
                status::NOT_ELF // the header itself is cut
            } else if n < phdrs_end {
                status::NOT_SPLITLOAD // program headers cut
            } else if n >= shoff {
                // Only the section table is cut: no alignment, the vendor's placement wraps.
                status::SEGMENT_TOO_BIG
            } else {
                // Past the headers, the segments' file images are cut: the split-load
                // validation refuses them (7) or the .dynamic read fails (4).
                match r {
                    Err(PrelinkStatus::Xtlib(status::NO_DYNAMIC_SEGMENT)) => {
                        status::NO_DYNAMIC_SEGMENT
                    }
                    _ => status::NOT_SPLITLOAD,
                }
            };
            assert_eq!(r, Err(PrelinkStatus::Xtlib(want)), "cut at {n} bytes");
        }
        assert!(run(&good).0.is_ok());
    }

    /// Offset of program header `i`'s field `f` (bytes) in a fixture image.
    fn phdr_field(image: &[u8], i: usize, f: usize) -> usize {
        u32::from_le_bytes(image[28..32].try_into().unwrap()) as usize + i * 32 + f
    }

    #[test]
    fn a_scratch_segment_outside_the_file_is_refused_without_overflow() {
        let f = Fixture {
            scratch: true,
            ..Fixture::sample_at(0x1000)
        };
        let mut img = f.build();
        for bad_offset in [0xffff_f024u32, 0xffff_ffff, img.len() as u32] {
            let at = phdr_field(&img, 2, 4);
            img[at..at + 4].copy_from_slice(&bad_offset.to_le_bytes());
            expect(img.clone(), status::NOT_SPLITLOAD, "validate ELF");
        }
        // A scratch file image larger than its memory image is refused too.
        let mut img = f.build();
        let at = phdr_field(&img, 2, 16);
        img[at..at + 4].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        expect(img, status::NOT_SPLITLOAD, "validate ELF");
    }

    #[test]
    fn headers_at_unaligned_offsets_are_read() {
        // Move the program headers and section table by one byte: the vendor's loader
        // reads them with plain loads, so must we.
        let good = Fixture::sample().build();
        let (r, ..) = run(&good);
        let want = r.unwrap();
        let phoff = u32::from_le_bytes(good[28..32].try_into().unwrap()) as usize;
        let shoff = u32::from_le_bytes(good[32..36].try_into().unwrap()) as usize;
        let phnum = u16::from_le_bytes(good[44..46].try_into().unwrap()) as usize;
        let shnum = u16::from_le_bytes(good[48..50].try_into().unwrap()) as usize;
        let mut moved = good.clone();
        let tail = moved.len();
        moved.push(0);
        let new_ph = moved.len();
        moved.extend_from_slice(&good[phoff..phoff + phnum * 32]);
        moved.push(0);
        moved.push(0);
        let new_sh = moved.len();
        moved.extend_from_slice(&good[shoff..shoff + shnum * 40]);
        assert!(!new_ph.is_multiple_of(4) && !new_sh.is_multiple_of(4) && tail > 0);
        moved[28..32].copy_from_slice(&(new_ph as u32).to_le_bytes());
        moved[32..36].copy_from_slice(&(new_sh as u32).to_le_bytes());
        let (r, code, data, logs) = run(&moved);
        assert_eq!(r.unwrap_or_else(|e| panic!("{e}: {logs:?}")), want);
        let (_, code0, data0, _) = run(&good);
        assert_eq!((code, data), (code0, data0));
    }

    #[test]
    fn no_section_alignment_keeps_code_13_and_says_why() {
        let mut img = Fixture::sample().build();
        img[48..50].copy_from_slice(&0u16.to_le_bytes()); // e_shnum = 0
        let (r, _, _, logs) = run(&img);
        assert_eq!(r, Err(PrelinkStatus::Xtlib(status::SEGMENT_TOO_BIG)));
        assert_eq!(
            logs[0],
            "Segment exceeds the size of the split region on device"
        );
        assert!(
            logs[1].contains("no section gives an alignment (0 section header(s) readable)"),
            "{logs:?}"
        );
    }

    #[test]
    fn code_pointers_near_the_data_start_are_staged_as_the_vendor_does_and_named() {
        // Text runs to 0xd00; the data starts at 0x1000; a scratch segment exists.
        let mut data = vec![0u8; 16];
        data[4..8].copy_from_slice(&0xc80u32.to_le_bytes()); // 0x380 below the data
        data[8..12].copy_from_slice(&0xbf0u32.to_le_bytes()); // 0x410 below: fine
        let f = Fixture {
            scratch: true,
            text: vec![0; 0xd00],
            data,
            data_addr: 0x1000,
            relocations: vec![(0x1004, 5, 0), (0x1008, 5, 0)],
            ..Fixture::default()
        };
        let img = f.build();
        let (r, _, data, logs) = run(&img);
        r.unwrap_or_else(|e| panic!("{e}: {logs:?}"));
        assert_eq!(word(&data, 4), 0xBDC80, "the vendor's rebase: as data");
        assert_eq!(word(&data, 8), 0x18BF0, "0x410 below: as code");
        assert_eq!(
            hazards(&img, &CAYMAN_GEOMETRY),
            vec![Hazard::CodeRebasedAsData {
                site: 0x1004,
                target: 0xc80,
                rebased: 0xBDC80,
                intended: 0x18C80,
                data_start: 0x1000,
            }]
        );
        let text = hazards(&img, &CAYMAN_GEOMETRY)[0].to_string();
        assert!(text.contains("0x1004") && text.contains("0xc80") && text.contains("0xbdc80"));
        // Without a scratch segment there is no separation, and no hazard.
        let f = Fixture {
            scratch: false,
            ..f
        };
        assert!(hazards(&f.build(), &CAYMAN_GEOMETRY).is_empty());
    }

    #[test]
    fn unaligned_paddr_is_staged_as_the_vendor_does_and_named() {
        let f = Fixture::skewed();
        let img = f.build();
        assert!(run(&img).0.is_ok());
        let h = hazards(&img, &CAYMAN_GEOMETRY);
        assert_eq!(
            h,
            vec![
                Hazard::UnstagedTail {
                    segment: "text",
                    paddr: 4,
                    align: 16,
                    placed_at: 0x18004,
                    region_base: 0x18000,
                    unstaged: 4,
                },
                Hazard::UnstagedTail {
                    segment: "data",
                    paddr: 0x108,
                    align: 16,
                    placed_at: 0xBE008,
                    region_base: 0xBE000,
                    unstaged: 8,
                },
            ]
        );
        assert!(h[0]
            .to_string()
            .contains("last 0x4 bytes never reach the device"));
        assert!(hazards(&Fixture::sample().build(), &CAYMAN_GEOMETRY).is_empty());
    }
}
