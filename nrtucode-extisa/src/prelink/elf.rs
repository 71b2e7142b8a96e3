//! A checked view of a split-load Xtensa ELF32 library, with the vendor prelinker's
//! acceptance rules (which are not a general ELF loader's: e_type and e_machine are not
//! checked, EI_VERSION is ignored). Every read is bounds-checked through `object`'s ELF
//! structures, built with its `unaligned` feature so that they have alignment 1: a table at
//! any file offset is read, as the vendor's loader (plain loads on x86) reads it
//! (docs/decisions.md D36). Offsets and sizes from the file are added with checked
//! arithmetic; nothing is cast from untrusted bytes.

use object::elf::{
    Dyn32, FileHeader32, ProgramHeader32, Rela32, SectionHeader32, PT_DYNAMIC, PT_LOAD,
};
use object::read::ReadRef;
use object::Endianness;

use super::status;

pub type E = Endianness;

/// One PT_LOAD (or PT_DYNAMIC) segment, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub offset: u32,
    pub vaddr: u32,
    pub paddr: u32,
    pub filesz: u32,
    pub memsz: u32,
    pub flags: u32,
}

impl Segment {
    fn new(p: &ProgramHeader32<E>, e: E) -> Self {
        Segment {
            offset: p.p_offset.get(e),
            vaddr: p.p_vaddr.get(e),
            paddr: p.p_paddr.get(e),
            filesz: p.p_filesz.get(e),
            memsz: p.p_memsz.get(e),
            flags: p.p_flags.get(e),
        }
    }

    /// The segment's file bytes, if they lie inside the image.
    pub fn bytes<'a>(&self, image: &'a [u8]) -> Option<&'a [u8]> {
        image
            .read_bytes_at(u64::from(self.offset), u64::from(self.filesz))
            .ok()
    }

    /// The file offset of `len` bytes at virtual address `addr`, if this segment's file
    /// image holds them.
    pub fn file_offset(&self, addr: u32, len: u32) -> Option<u32> {
        let rel = addr.checked_sub(self.vaddr)?;
        if u64::from(rel) + u64::from(len) > u64::from(self.filesz) {
            return None;
        }
        self.offset.checked_add(rel)
    }

    /// The file image lies inside `image` and is no larger than the memory image.
    fn is_sound(&self, image: &[u8]) -> bool {
        self.filesz <= self.memsz && self.bytes(image).is_some()
    }
}

/// The segments a split-load library must have, in order.
#[derive(Clone, Debug)]
pub struct SplitLoad<'a> {
    pub image: &'a [u8],
    pub endian: E,
    pub text: Segment,
    pub data: Segment,
    pub scratch: Option<Segment>,
    pub dynamic: Segment,
    /// The largest sh_addralign of a non-empty section (0 if there are none).
    pub align: u32,
    /// Section headers read (0: none, or a table outside the file), for diagnostics.
    pub sections: usize,
}

/// Reads the header; the magic, class and data encoding are checked (NOT_ELF otherwise).
fn header(image: &[u8]) -> Result<(&FileHeader32<E>, E), u32> {
    let h: &FileHeader32<E> = image.read_at(0).map_err(|_| status::NOT_ELF)?;
    let id = &h.e_ident;
    if id.magic != object::elf::ELFMAG || id.class != object::elf::ELFCLASS32 {
        return Err(status::NOT_ELF);
    }
    let endian = match id.data {
        object::elf::ELFDATA2LSB => Endianness::Little,
        object::elf::ELFDATA2MSB => Endianness::Big,
        _ => return Err(status::NOT_ELF),
    };
    Ok((h, endian))
}

impl<'a> SplitLoad<'a> {
    /// Validates the file: ELF32, LE or BE, and program headers in split-load order:
    /// [0] LOAD R+X, [1] LOAD RW, optionally [2] LOAD -W (scratch), then DYNAMIC RW-.
    pub fn parse(image: &'a [u8]) -> Result<Self, u32> {
        let (h, e) = header(image)?;
        let phnum = usize::from(h.e_phnum.get(e));
        let phdrs: &[ProgramHeader32<E>] = image
            .read_slice_at(u64::from(h.e_phoff.get(e)), phnum)
            .map_err(|_| status::NOT_SPLITLOAD)?;
        let is = |i: usize, ty: u32| phdrs.get(i).is_some_and(|p| p.p_type.get(e) == ty);
        let flags = |i: usize| phdrs[i].p_flags.get(e);
        if !(is(0, PT_LOAD) && flags(0) & 7 == 5 && is(1, PT_LOAD) && !flags(1) & 6 == 0) {
            return Err(status::NOT_SPLITLOAD);
        }
        let scratch = (is(2, PT_LOAD) && flags(2) & 6 == 2).then(|| Segment::new(&phdrs[2], e));
        let dyn_index = if scratch.is_some() { 3 } else { 2 };
        if !is(dyn_index, PT_DYNAMIC) {
            // A fourth-position DYNAMIC after a non-scratch LOAD, or none at all.
            return Err(if phdrs.iter().any(|p| p.p_type.get(e) == PT_DYNAMIC) {
                status::NOT_SPLITLOAD
            } else {
                status::NO_DYNAMIC_SEGMENT
            });
        }
        if flags(dyn_index) & 7 != 6 {
            return Err(status::NOT_SPLITLOAD);
        }
        let text = Segment::new(&phdrs[0], e);
        let data = Segment::new(&phdrs[1], e);
        // Every loadable segment is checked, the scratch one too: it carries the relocation
        // table the host reads.
        if ![Some(&text), Some(&data), scratch.as_ref()]
            .into_iter()
            .flatten()
            .all(|seg| seg.is_sound(image))
        {
            return Err(status::NOT_SPLITLOAD);
        }
        Ok(SplitLoad {
            image,
            endian: e,
            text,
            data,
            scratch,
            dynamic: Segment::new(&phdrs[dyn_index], e),
            align: max_section_align(image, h, e),
            sections: section_count(image, h, e),
        })
    }

    /// The `.dynamic` entries up to DT_NULL (or the segment's end).
    pub fn dynamic_entries(&self) -> Option<Vec<(u32, u32)>> {
        let count = self.dynamic.filesz as usize / core::mem::size_of::<Dyn32<E>>();
        let dyns: &[Dyn32<E>] = self
            .image
            .read_slice_at(u64::from(self.dynamic.offset), count)
            .ok()?;
        let e = self.endian;
        Some(
            dyns.iter()
                .map(|d| (d.d_tag.get(e), d.d_val.get(e)))
                .take_while(|&(tag, _)| tag != object::elf::DT_NULL)
                .collect(),
        )
    }

    /// The relocation table at virtual address `addr` (`size` bytes), read from whichever
    /// loadable segment's file image holds it (data, scratch or text).
    pub fn relocations(&self, addr: u32, size: u32) -> Option<Vec<(u32, u32, i32)>> {
        let count = size / 12;
        let len = count.checked_mul(12)?;
        let off = [Some(self.data), self.scratch, Some(self.text)]
            .into_iter()
            .flatten()
            .find_map(|s| s.file_offset(addr, len))?;
        let rela: &[Rela32<E>] = self
            .image
            .read_slice_at(u64::from(off), count as usize)
            .ok()?;
        let e = self.endian;
        Some(
            rela.iter()
                .map(|r| (r.r_offset.get(e), r.r_info.get(e), r.r_addend.get(e)))
                .collect(),
        )
    }

    pub fn is_big_endian(&self) -> bool {
        self.endian == Endianness::Big
    }
}

/// `find_align`: the largest sh_addralign among sections that are not SHT_NULL and not
/// empty; a section table that cannot be read contributes nothing.
fn max_section_align(image: &[u8], h: &FileHeader32<E>, e: E) -> u32 {
    let shdrs: &[SectionHeader32<E>] = image
        .read_slice_at(u64::from(h.e_shoff.get(e)), usize::from(h.e_shnum.get(e)))
        .unwrap_or(&[]);
    shdrs
        .iter()
        .filter(|s| s.sh_type.get(e) != object::elf::SHT_NULL && s.sh_size.get(e) > 0)
        .map(|s| s.sh_addralign.get(e))
        .max()
        .unwrap_or(0)
}

/// How many section headers the table holds, 0 if it cannot be read.
fn section_count(image: &[u8], h: &FileHeader32<E>, e: E) -> usize {
    let n = usize::from(h.e_shnum.get(e));
    image
        .read_slice_at::<SectionHeader32<E>>(u64::from(h.e_shoff.get(e)), n)
        .map_or(0, <[_]>::len)
}

/// Reads a u32 in the image's byte order.
pub fn get_u32(bytes: &[u8], big: bool) -> u32 {
    let b: [u8; 4] = bytes[..4].try_into().expect("4 bytes");
    if big {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    }
}

/// Writes a u32 in the image's byte order.
pub fn put_u32(bytes: &mut [u8], v: u32, big: bool) {
    let b = if big {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    };
    bytes[..4].copy_from_slice(&b);
}
