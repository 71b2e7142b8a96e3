//! A synthetic "vendor" provider file, built to the documented layout.

use std::path::{Path, PathBuf};

use nrtucode_extisa::prelink::fixture::Fixture;

/// (offset, size, coretype, lib) of the 13 documented images.
pub const DOCUMENTED: [(u64, u64, u32, u32); 13] = [
    (0x921660, 0xd308, 6, 0),
    (0x5b0cc0, 0xa260, 13, 0),
    (0x5afd40, 0xf5c, 13, 1),
    (0x5ae820, 0x1500, 13, 2),
    (0x5a7e80, 0x6974, 13, 3),
    (0x2ffee0, 0xa260, 21, 0),
    (0x2fef60, 0xf5c, 21, 1),
    (0x2fda40, 0x1500, 21, 2),
    (0x2f70a0, 0x6974, 21, 3),
    (0x1ce60, 0xa260, 29, 0),
    (0x1bee0, 0xf5c, 29, 1),
    (0x1a9c0, 0x1500, 29, 2),
    (0x14020, 0x6974, 29, 3),
];

const DATA_RELRO_FILE: u64 = 0x933000;
const DATA_RELRO_VMA: u64 = 0x934000;
const EXT_ISA_TABLES: [(u32, u64); 4] = [
    (6, 0x934b00),
    (13, 0x934b10),
    (21, 0x934b50),
    (29, 0x934b90),
];
const MEMIMG: u64 = 0x9348a0;
const HWDECODE: u64 = 0x934bd0;

/// A little-endian ELF64 laid out like the analysed vendor library: each ext-ISA image at
/// its documented offset (our fixture, padded to the documented size) behind its JSON, and
/// the library's own tables at their documented addresses (.data.rel.ro at file offset +
/// 0x1000) holding RELATIVE-relocated pointers to x86-64 getters. No hash matches and there
/// is no build-id, so extraction needs --allow-unverified.
struct Builder {
    file: Vec<u8>,
    relocs: Vec<(u64, u64)>,
    next_getter: u64,
}

impl Builder {
    fn put(&mut self, off: u64, bytes: &[u8]) {
        self.file[off as usize..off as usize + bytes.len()].copy_from_slice(bytes);
    }

    /// `lea target(%rip),%rax; mov %rax,(%rdi); movq $len,(%rsi); ret`; returns its address.
    fn getter(&mut self, target: u64, len: u32) -> u64 {
        let g = self.next_getter;
        self.next_getter += 0x20;
        let disp = (target as i64 - (g as i64 + 7)) as i32;
        let mut code = vec![0x48, 0x8d, 0x05];
        code.extend_from_slice(&disp.to_le_bytes());
        code.extend_from_slice(&[0x48, 0x89, 0x07, 0x48, 0xc7, 0x06]);
        code.extend_from_slice(&len.to_le_bytes());
        code.push(0xc3);
        self.put(g, &code);
        g
    }

    /// A relocated pointer (the file holds 0; the RELATIVE addend holds the value).
    fn pointer(&mut self, vma: u64, value: u64) {
        self.relocs.push((vma, value));
    }

    fn word(&mut self, vma: u64, v: u64) {
        self.put(vma - DATA_RELRO_VMA + DATA_RELRO_FILE, &v.to_le_bytes());
    }
}

/// Memory images the synthetic file carries: (coretype, key, region, offset, len, fill).
pub const MEMORY: [(u32, u64, u32, u64, u32, u8); 4] = [
    (13, 1, 0, 0x931400, 0x100, 0x11),
    (13, 1, 1, 0x931500, 0x80, 0x22),
    (13, 17, 0, 0x931580, 0x40, 0x33),
    (2, 1, 0, 0x9315c0, 0x40, 0x66),
];

pub fn build() -> Vec<u8> {
    let mut v = Builder {
        file: vec![0; 0x935000],
        relocs: vec![],
        next_getter: 0x1000,
    };
    for &(offset, size, ct, lib) in &DOCUMENTED {
        let mut elf = Fixture::sample().build();
        elf.resize(size as usize, 0);
        v.put(offset, &elf);
        let (json, json_len): (&[u8], u64) = if ct == 6 {
            (br#"{"library":"all.stripped.so","functions":[]}"#, 0x6c0)
        } else {
            (br#"{"dummy_message": "hello world"}"#, 0x20)
        };
        v.put(offset - json_len, json);
        let so = v.getter(offset, size as u32);
        let js = v.getter(offset - json_len, json_len as u32);
        let table = EXT_ISA_TABLES.iter().find(|t| t.0 == ct).unwrap().1;
        v.pointer(table + 16 * u64::from(lib), so);
        v.pointer(table + 16 * u64::from(lib) + 8, js);
    }
    // Each coretype's descriptors: one 0x28-byte {key, 4 getters} per flavor key.
    let mut next_desc = 0x934e40u64;
    for ct in [13u32, 2] {
        let mut keys: Vec<u64> = MEMORY.iter().filter(|m| m.0 == ct).map(|m| m.1).collect();
        keys.dedup();
        v.word(MEMIMG + 16 * u64::from(ct), keys.len() as u64);
        v.pointer(MEMIMG + 16 * u64::from(ct) + 8, next_desc);
        for key in keys {
            v.word(next_desc, key);
            for &(_, _, region, off, len, fill) in MEMORY.iter().filter(|m| m.0 == ct && m.1 == key)
            {
                v.put(off, &vec![fill; len as usize]);
                let g = v.getter(off, len);
                v.pointer(next_desc + 8 + 8 * u64::from(region), g);
            }
            next_desc += 0x28;
        }
    }
    v.put(0x931000, &[0x44; 0x400]);
    v.put(0x92f000, &[0x55; 0x2000]);
    let cam = v.getter(0x931000, 0x400);
    let tbl = v.getter(0x92f000, 0x2000);
    v.pointer(HWDECODE + 16 * 7, cam);
    v.pointer(HWDECODE + 16 * 7 + 8, tbl);

    // .rela.dyn at 0x8000 and .dynamic at 0x7000, in the text segment (vaddr == offset).
    let relocs = std::mem::take(&mut v.relocs);
    for (i, (vma, addend)) in relocs.iter().enumerate() {
        let r: Vec<u8> = [*vma, 8, *addend]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        v.put(0x8000 + 24 * i as u64, &r);
    }
    let dynamic: Vec<u8> = [7u64, 0x8000, 8, 24 * relocs.len() as u64, 9, 24, 0, 0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    v.put(0x7000, &dynamic);
    let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    h.extend_from_slice(&3u16.to_le_bytes());
    h.extend_from_slice(&62u16.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    for x in [0u64, 64, 0] {
        h.extend_from_slice(&x.to_le_bytes());
    }
    h.extend_from_slice(&0u32.to_le_bytes());
    for x in [64u16, 56, 3, 64, 0, 0] {
        h.extend_from_slice(&x.to_le_bytes());
    }
    let phdr = |ty: u32, flags: u32, off: u64, vaddr: u64, size: u64| -> Vec<u8> {
        let mut p = ty.to_le_bytes().to_vec();
        p.extend_from_slice(&flags.to_le_bytes());
        for x in [off, vaddr, vaddr, size, size, 0x1000] {
            p.extend_from_slice(&x.to_le_bytes());
        }
        p
    };
    h.extend(phdr(1, 5, 0, 0, DATA_RELRO_FILE));
    h.extend(phdr(1, 6, DATA_RELRO_FILE, DATA_RELRO_VMA, 0x2000));
    h.extend(phdr(2, 6, 0x7000, 0x7000, dynamic.len() as u64));
    v.put(0, &h);
    v.file
}

pub fn synthetic_vendor(dir: &Path) -> PathBuf {
    let p = dir.join("libnrtucode_extisa.so");
    std::fs::write(&p, build()).unwrap();
    p
}
