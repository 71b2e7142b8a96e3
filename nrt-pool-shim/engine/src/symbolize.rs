//! Addresses in fault reports named by an image's symbols: the core reports the faulting
//! instruction (and, for a host library, its load base); the host reads the image's symbol
//! table (never loading it) and names the function around the address.

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// "function+0xoff in file" (demangled) for the instruction at `pc` in the library loaded at
/// `base`, when the library's symbols cover it.
pub fn locate(library: &Path, base: u64, pc: u64) -> Option<String> {
    let vaddr = pc.checked_sub(base).filter(|_| base != 0)?;
    let bytes = std::fs::read(library).ok()?;
    let (name, off) = symbol_at(&bytes, vaddr, true)?;
    let file_name = library
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some(format!("{name}+{off:#x} in {file_name}"))
}

/// The function symbol around `vaddr` in the ELF image `bytes`: its demangled name and the
/// offset into it. A symbol without a size names addresses up to the next symbol, and only
/// inside `.text` unless `unsized_outside_text`.
pub fn symbol_at(bytes: &[u8], vaddr: u64, unsized_outside_text: bool) -> Option<(String, u64)> {
    let file = object::File::parse(bytes).ok()?;
    let best = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() <= vaddr)
        .filter(|s| s.size() == 0 || vaddr < s.address() + s.size())
        .max_by_key(|s| s.address())?;
    if best.size() == 0 && !unsized_outside_text {
        let text = file.section_by_name(".text")?;
        if !(text.address()..text.address() + text.size()).contains(&vaddr) {
            return None;
        }
    }
    let name = demangle(best.name_bytes().ok()?);
    Some((name, vaddr - best.address()))
}

pub use nrt_pool_schema::demangle;
