//! `inspect`: what an ELF32 Xtensa library or a UCPL image holds, in words.

use std::collections::BTreeMap;
use std::fmt::Write;

use nrtucode_extisa::prelink::{Ucpl, UCPL_HEADER_LEN, UCPL_MAGIC};
use object::elf::{FileHeader32, PT_DYNAMIC, PT_LOAD};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, ReadRef};

use crate::{read, ToolError};

/// `inspect FILE [--json]`: the description (or a JSON document) on stdout, and loud
/// warnings for what the vendor's prelinker would stage wrongly.
pub fn run(path: &str, json: bool) -> Result<(), ToolError> {
    let bytes = read(path)?;
    if json {
        println!(
            "{}",
            describe_json(&bytes).map_err(|e| ToolError::Invalid(format!("{path}: {e}")))?
        );
    } else {
        print!(
            "{}",
            describe(&bytes).map_err(|e| ToolError::Invalid(format!("{path}: {e}")))?
        );
    }
    crate::warn_hazards(path, &bytes);
    Ok(())
}

/// The image as a JSON document: a UCPL header's fields, or an ELF's program headers, what
/// the prelinker makes of it (its UCPL header, or the xt-libloader status) and its staging
/// hazards.
pub fn describe_json(b: &[u8]) -> Result<serde_json::Value, String> {
    use nrtucode_extisa::prelink::{self, CAYMAN_GEOMETRY};
    use serde_json::json;
    if b.len() >= 8 && u64::from_le_bytes(b[..8].try_into().unwrap()) == UCPL_MAGIC {
        if b.len() < UCPL_HEADER_LEN {
            return Err("UCPL header truncated".into());
        }
        return Ok(json!({
            "kind": "ucpl",
            "bytes": b.len(),
            "code_seg_off": u32_at(b, 0x04),
            "code_seg_len": u32_at(b, 0x08),
            "data_seg_off": u32_at(b, 0x0c),
            "data_seg_len": u32_at(b, 0x10),
            "init": u32_at(b, 0x14),
            "fini": u32_at(b, 0x18),
            "start_sym": u32_at(b, 0x1c),
        }));
    }
    if !b.starts_with(b"\x7fELF") {
        return Err("neither an ELF nor a UCPL image".into());
    }
    let h = FileHeader32::<Endianness>::parse(b).map_err(|e| format!("ELF32 header: {e}"))?;
    let e = h.endian().map_err(|e| e.to_string())?;
    let phdrs = h
        .program_headers(e, b)
        .map_err(|e| format!("program headers: {e}"))?;
    let segments: Vec<_> = phdrs
        .iter()
        .map(|p| {
            json!({
                "type": match p.p_type(e) { PT_LOAD => "LOAD", PT_DYNAMIC => "DYNAMIC", _ => "OTHER" },
                "offset": p.p_offset(e),
                "vaddr": p.p_vaddr(e),
                "paddr": p.p_paddr(e),
                "filesz": p.p_filesz(e),
                "memsz": p.p_memsz(e),
                "flags": flags(p.p_flags(e)),
            })
        })
        .collect();
    let g = CAYMAN_GEOMETRY;
    let (mut code, mut data) = (vec![0u8; g.iram_size], vec![0u8; g.dram_size]);
    let prelinked = match prelink::prelink(b, &g, &mut code, &mut data, &mut |_| {}) {
        Ok(u) => json!({
            "status": 0,
            "code_seg_len": u.code_seg_len,
            "data_seg_off": u.data_seg_off,
            "data_seg_len": u.data_seg_len,
            "init": u.init,
            "fini": u.fini,
            "start_sym": u.start_sym,
        }),
        Err(prelink::PrelinkStatus::Xtlib(code)) => json!({ "status": code }),
    };
    let hazards: Vec<String> = prelink::hazards(b, &g)
        .iter()
        .map(|h| h.to_string())
        .collect();
    Ok(json!({
        "kind": "elf",
        "bytes": b.len(),
        "big_endian": e == Endianness::Big,
        "machine": h.e_machine.get(e),
        "segments": segments,
        "prelink": prelinked,
        "hazards": hazards,
    }))
}

/// A readable description of an ELF32 or UCPL image.
pub fn describe(bytes: &[u8]) -> Result<String, String> {
    if bytes.len() >= 8 && u64::from_le_bytes(bytes[..8].try_into().unwrap()) == UCPL_MAGIC {
        describe_ucpl(bytes)
    } else if bytes.starts_with(b"\x7fELF") {
        describe_elf(bytes)
    } else {
        Err("neither an ELF nor a UCPL image".into())
    }
}

/// The fuzz target's property: any bytes are described or refused, never a panic (the
/// hazard analysis too).
#[doc(hidden)]
pub fn fuzz_one(bytes: &[u8]) {
    let _described = describe(bytes);
    let _json = describe_json(bytes);
    let _hazards =
        nrtucode_extisa::prelink::hazards(bytes, &nrtucode_extisa::prelink::CAYMAN_GEOMETRY);
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn describe_ucpl(b: &[u8]) -> Result<String, String> {
    if b.len() < UCPL_HEADER_LEN {
        return Err("UCPL header truncated".into());
    }
    let u = Ucpl {
        code_seg_off: u32_at(b, 0x04),
        code_seg_len: u32_at(b, 0x08),
        data_seg_off: u32_at(b, 0x0c),
        data_seg_len: u32_at(b, 0x10),
        init: u32_at(b, 0x14),
        fini: u32_at(b, 0x18),
        start_sym: u32_at(b, 0x1c),
    };
    let total = u64::from(u.data_seg_off) + u64::from(u.data_seg_len);
    let mut s = String::new();
    writeln!(s, "UCPL image, {} bytes", b.len()).unwrap();
    writeln!(
        s,
        "  code  offset 0x{:x} length 0x{:x}",
        u.code_seg_off, u.code_seg_len
    )
    .unwrap();
    writeln!(
        s,
        "  data  offset 0x{:x} length 0x{:x}",
        u.data_seg_off, u.data_seg_len
    )
    .unwrap();
    writeln!(
        s,
        "  init 0x{:x} fini 0x{:x} start 0x{:x}",
        u.init, u.fini, u.start_sym
    )
    .unwrap();
    writeln!(
        s,
        "  staged size 0x{total:x}{}",
        if total == b.len() as u64 {
            ""
        } else {
            " (file length differs!)"
        }
    )
    .unwrap();
    Ok(s)
}

fn flags(f: u32) -> String {
    [(4, 'R'), (2, 'W'), (1, 'X')]
        .iter()
        .map(|&(bit, c)| if f & bit != 0 { c } else { '-' })
        .collect()
}

fn dynamic_tag(tag: u32) -> String {
    match tag {
        3 => "PLTGOT".into(),
        4 => "HASH".into(),
        5 => "STRTAB".into(),
        6 => "SYMTAB".into(),
        7 => "RELA".into(),
        8 => "RELASZ".into(),
        9 => "RELAENT".into(),
        10 => "STRSZ".into(),
        11 => "SYMENT".into(),
        12 => "INIT".into(),
        13 => "FINI".into(),
        16 => "SYMBOLIC".into(),
        0x6fff_fff9 => "RELACOUNT".into(),
        0x7000_0002 => "XTENSA_START".into(),
        t => format!("0x{t:x}"),
    }
}

fn reloc_name(ty: u32) -> String {
    match ty {
        0 => "R_XTENSA_NONE".into(),
        5 => "R_XTENSA_RELATIVE".into(),
        20..=34 => format!("R_XTENSA_SLOT{}_OP", ty - 20),
        35..=49 => format!("R_XTENSA_SLOT{}_ALT", ty - 35),
        t => format!("type {t}"),
    }
}

fn describe_elf(b: &[u8]) -> Result<String, String> {
    let h = FileHeader32::<Endianness>::parse(b).map_err(|e| format!("ELF32 header: {e}"))?;
    let e = h.endian().map_err(|e| e.to_string())?;
    let mut s = String::new();
    writeln!(
        s,
        "ELF32 {}-endian, type {}, machine {}, flags 0x{:x}, entry 0x{:x}",
        if e == Endianness::Little {
            "little"
        } else {
            "big"
        },
        h.e_type.get(e),
        h.e_machine.get(e),
        h.e_flags.get(e),
        h.e_entry.get(e)
    )
    .unwrap();
    let phdrs = h
        .program_headers(e, b)
        .map_err(|e| format!("program headers: {e}"))?;
    writeln!(s, "segments:").unwrap();
    let mut loads = Vec::new();
    let mut dynamic = None;
    for (i, p) in phdrs.iter().enumerate() {
        let ty = match p.p_type(e) {
            PT_LOAD => "LOAD",
            PT_DYNAMIC => "DYNAMIC",
            _ => "OTHER",
        };
        writeln!(
            s,
            "  [{i}] {ty:<7} off 0x{:06x} vaddr 0x{:08x} paddr 0x{:08x} filesz 0x{:05x} memsz 0x{:05x} {}",
            p.p_offset(e),
            p.p_vaddr(e),
            p.p_paddr(e),
            p.p_filesz(e),
            p.p_memsz(e),
            flags(p.p_flags(e))
        )
        .unwrap();
        match p.p_type(e) {
            PT_LOAD => loads.push(p),
            PT_DYNAMIC => dynamic = Some(p),
            _ => {}
        }
    }
    // File offset of `len` bytes at vaddr `a`, via the loadable segments.
    let file_off = |a: u32, len: u32| {
        loads.iter().find_map(|p| {
            let rel = a.checked_sub(p.p_vaddr(e))?;
            (u64::from(rel) + u64::from(len) <= u64::from(p.p_filesz(e)))
                .then(|| p.p_offset(e).checked_add(rel))
                .flatten()
        })
    };
    let mut rela = (None, 0);
    if let Some(d) = dynamic {
        writeln!(s, "dynamic:").unwrap();
        let n = d.p_filesz(e) as usize / 8;
        let words: &[object::U32Bytes<Endianness>] = b
            .read_slice_at(u64::from(d.p_offset(e)), n * 2)
            .map_err(|_| "dynamic segment outside the file")?;
        for pair in words.chunks(2) {
            let (tag, val) = (pair[0].get(e), pair[1].get(e));
            if tag == 0 {
                break;
            }
            writeln!(s, "  {:<12} 0x{val:x}", dynamic_tag(tag)).unwrap();
            match tag {
                7 => rela.0 = Some(val),
                8 => rela.1 = val,
                _ => {}
            }
        }
    }
    if let (Some(addr), size) = rela {
        let count = size / 12;
        let off =
            file_off(addr, count * 12).ok_or("relocation table outside the loadable segments")?;
        let words: &[object::U32Bytes<Endianness>] = b
            .read_slice_at(u64::from(off), count as usize * 3)
            .map_err(|_| "relocation table truncated")?;
        let mut histogram: BTreeMap<u32, usize> = BTreeMap::new();
        let mut with_symbol = 0;
        for r in words.chunks(3) {
            let info = r[1].get(e);
            *histogram.entry(info & 0xff).or_default() += 1;
            with_symbol += usize::from(info > 0xff);
        }
        writeln!(s, "relocations ({count}):").unwrap();
        for (ty, n) in histogram {
            writeln!(s, "  {:<20} ({ty:>2}) x{n}", reloc_name(ty)).unwrap();
        }
        if with_symbol > 0 {
            writeln!(
                s,
                "  {with_symbol} reference a symbol (the prelinker refuses those)"
            )
            .unwrap();
        }
    }
    // Sections are optional to the prelinker (only their alignment counts): say what is
    // wrong with them and go on.
    let sections = match h.sections(e, b) {
        Ok(s) => s,
        Err(why) => {
            writeln!(s, "sections: not readable ({why})").unwrap();
            return Ok(s);
        }
    };
    if let Some((_, kit)) = sections
        .iter()
        .enumerate()
        .find(|(_, sh)| sections.section_name(e, sh).ok() == Some(&b".kernel_info_table"[..]))
    {
        let data = kit
            .data(e, b)
            .map_err(|_| "kernel_info_table outside the file")?;
        writeln!(
            s,
            "kernel_info_table ({} entries at 0x{:x}):",
            data.len() / 8,
            kit.sh_addr(e)
        )
        .unwrap();
        for rec in data.chunks_exact(8) {
            let key = u32::from_be_bytes(rec[..4].try_into().unwrap());
            let entry = u32::from_le_bytes(rec[4..].try_into().unwrap());
            writeln!(
                s,
                "  key 0x{key:08x} (opcode {}, spec {}) -> entry 0x{entry:x}",
                key & 0xff,
                (key >> 8) & 0xff
            )
            .unwrap();
        }
    }
    Ok(s)
}
