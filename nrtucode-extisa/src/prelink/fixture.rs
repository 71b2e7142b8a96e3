//! Synthesized split-load ELF32 libraries for tests, the fuzz seed corpus and the tool:
//! the shapes GNU toolchains do not emit (FLIX bundles, big-endian, scratch segments,
//! oversize segments, broken program headers, symbol relocations).

/// A split-load library to synthesize. Addresses are source (link-time) addresses.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub big_endian: bool,
    pub text: Vec<u8>,
    pub text_addr: u32,
    pub text_memsz: Option<u32>,
    pub data: Vec<u8>,
    pub data_addr: u32,
    pub data_memsz: Option<u32>,
    /// Put the relocation table and `.dynamic` in a `-WX` scratch segment.
    pub scratch: bool,
    /// (r_offset, r_info, r_addend)
    pub relocations: Vec<(u32, u32, i32)>,
    pub init: Option<u32>,
    pub fini: Option<u32>,
    pub start: Option<u32>,
    /// sh_addralign of the one section header describing the text.
    pub align: u32,
    /// Program header flags, in order (text, data, [scratch], dynamic).
    pub flags: Option<Vec<u32>>,
    /// Leave out the PT_DYNAMIC header.
    pub no_dynamic: bool,
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture {
            big_endian: false,
            text: vec![],
            text_addr: 0,
            text_memsz: None,
            data: vec![],
            data_addr: 0x100,
            data_memsz: None,
            scratch: false,
            relocations: vec![],
            init: None,
            fini: None,
            start: None,
            align: 4,
            flags: None,
            no_dynamic: false,
        }
    }
}

const EHDR: usize = 52;
const PHDR: usize = 32;
const SHDR: usize = 40;

struct Out {
    bytes: Vec<u8>,
    big: bool,
}

impl Out {
    fn u16(&mut self, v: u16) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend_from_slice(&b);
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend_from_slice(&b);
    }
    fn pad_to(&mut self, off: usize) {
        self.bytes.resize(off, 0);
    }

    /// The ELF32 header of an Xtensa shared object: `nph` program headers, section
    /// headers at `shoff`.
    fn elf_header(&mut self, shoff: usize, nph: usize) {
        let data = if self.big { 2 } else { 1 };
        self.bytes
            .extend_from_slice(&[0x7f, b'E', b'L', b'F', 1, data, 1, 0]);
        self.pad_to(16);
        self.u16(3); // ET_DYN
        self.u16(94); // EM_XTENSA
        self.u32(1);
        self.u32(0); // e_entry
        self.u32(EHDR as u32);
        self.u32(shoff as u32);
        self.u32(0x300);
        self.u16(EHDR as u16);
        self.u16(PHDR as u16);
        self.u16(nph as u16);
        self.u16(SHDR as u16);
        self.u16(2);
        self.u16(0);
    }
}

impl Fixture {
    /// Serializes the library.
    pub fn build(&self) -> Vec<u8> {
        let big = self.big_endian;
        let data_memsz = self
            .data_memsz
            .unwrap_or(self.data.len() as u32)
            .max(self.data.len() as u32);
        // Without scratch the area follows the data's file bytes (inside the data segment).
        let area_addr = if self.scratch {
            (self.data_addr + data_memsz + 0xF) & !0xF
        } else {
            self.data_addr + self.data.len() as u32
        };
        let (dynamic_area, rela_size, dynamic_size) = self.dynamic_area(area_addr);
        let dynamic_addr = area_addr + rela_size;

        let nph = if self.scratch { 4 } else { 3 } - usize::from(self.no_dynamic);
        let text_off = (EHDR + nph * PHDR + 15) & !15;
        let data_off = (text_off + self.text.len() + 15) & !15;
        let data_file = if self.scratch {
            self.data.clone()
        } else {
            [&self.data[..], &dynamic_area].concat()
        };
        let area_off = if self.scratch {
            (data_off + data_file.len() + 15) & !15
        } else {
            data_off + self.data.len()
        };
        let file_end = if self.scratch {
            area_off + dynamic_area.len()
        } else {
            data_off + data_file.len()
        };
        let shoff = (file_end + 3) & !3;

        let mut o = Out {
            bytes: Vec::new(),
            big,
        };
        o.elf_header(shoff, nph);

        let text_memsz = self.text_memsz.unwrap_or(self.text.len() as u32);
        let data_filesz = data_file.len() as u32;
        let mut phdrs: Vec<(u32, usize, u32, u32, u32)> = vec![
            (
                1,
                text_off,
                self.text_addr,
                self.text.len() as u32,
                text_memsz,
            ),
            (
                1,
                data_off,
                self.data_addr,
                data_filesz,
                data_memsz.max(data_filesz),
            ),
        ];
        if self.scratch {
            phdrs.push((
                1,
                area_off,
                area_addr,
                dynamic_area.len() as u32,
                dynamic_area.len() as u32,
            ));
        }
        if !self.no_dynamic {
            let dyn_off = area_off + rela_size as usize;
            phdrs.push((2, dyn_off, dynamic_addr, dynamic_size, dynamic_size));
        }
        let default_flags: Vec<u32> = if self.scratch {
            vec![5, 7, 3, 6]
        } else {
            vec![5, 7, 6]
        };
        let flags = self.flags.clone().unwrap_or(default_flags);
        for (i, (ty, off, addr, filesz, memsz)) in phdrs.into_iter().enumerate() {
            o.u32(ty);
            o.u32(off as u32);
            o.u32(addr);
            o.u32(addr);
            o.u32(filesz);
            o.u32(memsz);
            o.u32(flags.get(i).copied().unwrap_or(0));
            o.u32(4);
        }
        o.pad_to(text_off);
        o.bytes.extend_from_slice(&self.text);
        o.pad_to(data_off);
        o.bytes.extend_from_slice(&data_file);
        if self.scratch {
            o.pad_to(area_off);
            o.bytes.extend_from_slice(&dynamic_area);
        }
        o.pad_to(shoff);
        // Section headers: the NULL section, and one PROGBITS carrying the alignment.
        o.bytes.extend_from_slice(&[0; SHDR]);
        for v in [
            0,
            1,
            6,
            self.text_addr,
            text_off as u32,
            self.text.len().max(1) as u32,
            0,
            0,
            self.align,
            0,
        ] {
            o.u32(v);
        }
        o.bytes
    }

    /// The dynamic area at `area_addr`: the relocation table, then `.dynamic`; with the
    /// table's size and `.dynamic`'s.
    fn dynamic_area(&self, area_addr: u32) -> (Vec<u8>, u32, u32) {
        let big = self.big_endian;
        let word = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut area = Vec::new();
        for &(off, info, addend) in &self.relocations {
            area.extend_from_slice(&word(off));
            area.extend_from_slice(&word(info));
            area.extend_from_slice(&word(addend as u32));
        }
        let rela_size = area.len() as u32;
        let mut entries: Vec<(u32, u32)> = vec![];
        if !self.relocations.is_empty() {
            entries.extend([(7, area_addr), (8, rela_size), (9, 12)]);
        }
        entries.extend(self.init.map(|v| (12, v)));
        entries.extend(self.fini.map(|v| (13, v)));
        entries.extend(self.start.map(|v| (0x7000_0002, v)));
        entries.push((0, 0));
        for (tag, val) in &entries {
            area.extend_from_slice(&word(*tag));
            area.extend_from_slice(&word(*val));
        }
        (area, rela_size, (entries.len() * 8) as u32)
    }

    /// A small valid library: a narrow CONST16 pair, a FLIX F0 bundle with a CONST16 and a
    /// pointer in data, all relocated; init/fini/start set. Data links at 0x100.
    pub fn sample() -> Fixture {
        Fixture::sample_at(0x100)
    }

    /// [`Fixture::sample`] without relocations, linked at p_paddr 0x4 (text) and 0x108
    /// (data) with a 16-byte section alignment: the vendor places the segments 4 and 8
    /// bytes past their region bases but stages from the bases (a staging hazard).
    pub fn skewed() -> Fixture {
        Fixture {
            text_addr: 0x4,
            data_addr: 0x108,
            align: 16,
            relocations: vec![],
            ..Fixture::sample()
        }
    }

    /// [`Fixture::sample`] with its data linked at `d` (with a scratch segment, data must
    /// start at least 0x400 past the text, or text addresses rebase as data).
    pub fn sample_at(d: u32) -> Fixture {
        let mut text = Vec::new();
        text.extend_from_slice(&0x0000_0004u32.to_le_bytes()); // x24 CONST16 (lo)
        text.extend_from_slice(&0x0000_0004u32.to_le_bytes()); // x24 CONST16 (hi)
        for w in [0x0000_000Fu32, 0, 0, 0x4100_0000] {
            text.extend_from_slice(&w.to_le_bytes()); // F0 bundle, slot 0 CONST16
        }
        text.extend_from_slice(&[0x0d, 0xf0, 0x00, 0x00]); // padding
        let mut data = vec![0u8; 16];
        data[4..8].copy_from_slice(&0x0000_0008u32.to_le_bytes()); // pointer to text+8
        data[8..12].copy_from_slice(&(d + 4).to_le_bytes()); // pointer to data+4
        Fixture {
            text,
            data,
            data_addr: d,
            data_memsz: Some(0x40),
            relocations: vec![
                (0x0, 20, d as i32 + 8), // SLOT0_OP  -> low half of data+8
                (0x4, 35, d as i32 + 8), // SLOT0_ALT -> high half
                (0x8, 20, 0x4),          // F0 bundle <- text+4
                (d + 4, 5, 0),           // RELATIVE in data
                (d + 8, 5, 0),           // RELATIVE in data
                (d + 12, 0, 0),          // NONE
            ],
            init: Some(0x8),
            fini: Some(0xc),
            start: Some(0x18),
            ..Fixture::default()
        }
    }
}
