//! The vendor library's image tables, read the way the library itself reaches its images:
//! relocated pointers in `.data.rel.ro` to 4-instruction x86-64 getters
//! (`lea blob(%rip),%rax; mov %rax,(%rdi); movq $size,(%rsi); ret`).
//!
//! Table addresses are those of the analysed build (host-nrtucode-extisa.md §4): the base
//! memory images `MEMIMG` (38 × {u64 count; desc *}, desc = {u64 flavor key; IRAM, DRAM,
//! SRAM, EXTRAM getters}, stride 0x28), `HWDECODE` (38 × {PROF_CAM, PROF_TABLE getters}) and
//! the ext-ISA tables T0..T3 ({so getter, json getter} per library).

use std::collections::HashMap;

use object::elf::{
    Dyn64, FileHeader64, ProgramHeader64, Rela64, DT_RELA, DT_RELASZ, PT_DYNAMIC, PT_LOAD,
};
use object::read::elf::{FileHeader, ProgramHeader};
use object::{LittleEndian as LE, ReadRef};

pub const MEMIMG_TABLE: u64 = 0x9348a0;
pub const HWDECODE_TABLE: u64 = 0x934bd0;
/// (coretype, table address, libraries)
pub const EXT_ISA_TABLES: [(u32, u64, u32); 4] = [
    (6, 0x934b00, 1),
    (13, 0x934b10, 4),
    (21, 0x934b50, 4),
    (29, 0x934b90, 4),
];
pub const CORETYPE_SLOTS: u64 = 38;
const DESC_STRIDE: u64 = 0x28;
const R_X86_64_RELATIVE: u32 = 8;

/// A blob a getter returns: its file offset and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blob {
    pub offset: u64,
    pub len: u64,
}

/// One base memory image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryImage {
    pub coretype: u32,
    pub flavor_key: u64,
    /// 0 IRAM, 1 DRAM, 2 SRAM, 3 EXTRAM
    pub region: u32,
    pub blob: Blob,
}

/// A loaded view of the vendor file: segments and RELATIVE relocations.
pub struct Vendor<'a> {
    bytes: &'a [u8],
    loads: Vec<(u64, u64, u64)>, // (vaddr, file offset, file size)
    relative: HashMap<u64, u64>,
}

impl<'a> Vendor<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, String> {
        let h = FileHeader64::<LE>::parse(bytes)
            .map_err(|_| "not a little-endian ELF64 file".to_string())?;
        let phdrs = h
            .program_headers(LE, bytes)
            .map_err(|e| format!("program headers: {e}"))?;
        let loads: Vec<(u64, u64, u64)> = phdrs
            .iter()
            .filter(|p| p.p_type(LE) == PT_LOAD)
            .map(|p: &ProgramHeader64<LE>| (p.p_vaddr(LE), p.p_offset(LE), p.p_filesz(LE)))
            .collect();
        let mut v = Vendor {
            bytes,
            loads,
            relative: HashMap::new(),
        };
        let dynamic = phdrs
            .iter()
            .find(|p| p.p_type(LE) == PT_DYNAMIC)
            .ok_or("no PT_DYNAMIC")?;
        let dyns: &[Dyn64<LE>] = bytes
            .read_slice_at(dynamic.p_offset(LE), (dynamic.p_filesz(LE) / 16) as usize)
            .map_err(|_| "dynamic segment outside the file")?;
        let tag = |t: u32| {
            dyns.iter()
                .find(|d| d.d_tag.get(LE) == u64::from(t))
                .map(|d| d.d_val.get(LE))
        };
        if let (Some(rela), Some(size)) = (tag(DT_RELA), tag(DT_RELASZ)) {
            let off = v
                .offset_of(rela, size)
                .ok_or("relocation table outside the file")?;
            let relas: &[Rela64<LE>] = bytes
                .read_slice_at(off, (size / 24) as usize)
                .map_err(|_| "relocation table truncated")?;
            for r in relas {
                if r.r_info.get(LE) & 0xffff_ffff == u64::from(R_X86_64_RELATIVE) {
                    v.relative
                        .insert(r.r_offset.get(LE), r.r_addend.get(LE) as u64);
                }
            }
        }
        Ok(v)
    }

    /// The file offset of `len` bytes at `vaddr`.
    fn offset_of(&self, vaddr: u64, len: u64) -> Option<u64> {
        self.loads.iter().find_map(|&(va, off, size)| {
            let rel = vaddr.checked_sub(va)?;
            (rel.checked_add(len)? <= size).then_some(off + rel)
        })
    }

    fn u64_at(&self, vaddr: u64) -> Option<u64> {
        let off = self.offset_of(vaddr, 8)?;
        self.bytes
            .read_at::<object::U64Bytes<LE>>(off)
            .ok()
            .map(|v| v.get(LE))
    }

    /// A pointer field: its RELATIVE relocation's addend, or the stored value.
    fn pointer_at(&self, vaddr: u64) -> Option<u64> {
        self.relative
            .get(&vaddr)
            .copied()
            .or_else(|| self.u64_at(vaddr))
    }

    /// Decodes a getter; None for a NULL getter, Err for code that is not one.
    fn getter(&self, vaddr: u64) -> Result<Option<Blob>, String> {
        if vaddr == 0 {
            return Ok(None);
        }
        let off = self
            .offset_of(vaddr, 18)
            .ok_or_else(|| format!("getter 0x{vaddr:x} outside the file"))?;
        let c = &self.bytes[off as usize..off as usize + 18];
        let shape = c[..3] == [0x48, 0x8d, 0x05]
            && c[7..10] == [0x48, 0x89, 0x07]
            && c[10..13] == [0x48, 0xc7, 0x06]
            && c[17] == 0xc3;
        if !shape {
            return Err(format!("0x{vaddr:x} is not an image getter ({c:02x?})"));
        }
        let disp = i32::from_le_bytes(c[3..7].try_into().unwrap());
        let len = u64::from(u32::from_le_bytes(c[13..17].try_into().unwrap()));
        let target = (vaddr + 7).wrapping_add_signed(i64::from(disp));
        let offset = self
            .offset_of(target, len)
            .ok_or_else(|| format!("blob 0x{target:x}+0x{len:x} outside the file"))?;
        Ok(Some(Blob { offset, len }))
    }

    /// Every populated base memory image.
    pub fn memory_images(&self) -> Result<Vec<MemoryImage>, String> {
        let mut out = Vec::new();
        for ct in 0..CORETYPE_SLOTS {
            let row = MEMIMG_TABLE + 16 * ct;
            let count = self.u64_at(row).ok_or("MEMIMG table outside the file")?;
            if count == 0 {
                continue;
            }
            if count > 16 {
                return Err(format!("MEMIMG[{ct}] claims {count} flavors"));
            }
            let descs = self
                .pointer_at(row + 8)
                .ok_or("MEMIMG descriptor pointer unreadable")?;
            for i in 0..count {
                let d = descs + DESC_STRIDE * i;
                let key = self
                    .u64_at(d)
                    .ok_or_else(|| format!("MEMIMG[{ct}] descriptor {i} outside the file"))?;
                for region in 0..4u32 {
                    let g = self.pointer_at(d + 8 + 8 * u64::from(region)).unwrap_or(0);
                    if let Some(blob) = self.getter(g)? {
                        out.push(MemoryImage {
                            coretype: ct as u32,
                            flavor_key: key,
                            region,
                            blob,
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    /// Every populated hwdecode table: (coretype, kind 0 CAM / 1 TABLE, blob).
    pub fn hwdecode_tables(&self) -> Result<Vec<(u32, u32, Blob)>, String> {
        let mut out = Vec::new();
        for ct in 0..CORETYPE_SLOTS {
            for kind in 0..2u32 {
                let g = self
                    .pointer_at(HWDECODE_TABLE + 16 * ct + 8 * u64::from(kind))
                    .ok_or("HWDECODE table outside the file")?;
                if let Some(blob) = self.getter(g)? {
                    out.push((ct as u32, kind, blob));
                }
            }
        }
        Ok(out)
    }

    /// The ext-ISA library blobs as the library's own tables point at them:
    /// (coretype, lib, image, json).
    pub fn ext_isa(&self) -> Result<Vec<(u32, u32, Blob, Blob)>, String> {
        let mut out = Vec::new();
        for (ct, table, n) in EXT_ISA_TABLES {
            for lib in 0..n {
                let e = table + 16 * u64::from(lib);
                let so = self.getter(self.pointer_at(e).unwrap_or(0))?;
                let json = self.getter(self.pointer_at(e + 8).unwrap_or(0))?;
                if let (Some(so), Some(json)) = (so, json) {
                    out.push((ct, lib, so, json));
                }
            }
        }
        Ok(out)
    }
}
