//! Host addresses in fault reports named by the op library's symbols: the core reports the
//! faulting instruction and the library's load base; the host reads the library file's
//! symbol table (never loading it) and names the function around the address.

use std::path::Path;

use object::{Object, ObjectSymbol, SymbolKind};

/// "function+0xoff" (demangled) for the instruction at `pc` in the library loaded at
/// `base`, when the library's symbols cover it.
pub fn locate(library: &Path, base: u64, pc: u64) -> Option<String> {
    let vaddr = pc.checked_sub(base).filter(|_| base != 0)?;
    let bytes = std::fs::read(library).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    let best = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() <= vaddr)
        .filter(|s| s.size() == 0 || vaddr < s.address() + s.size())
        .max_by_key(|s| s.address())?;
    let raw = best.name_bytes().ok()?;
    let name = demangle(raw);
    let file_name = library
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some(format!(
        "{name}+{:#x} in {file_name}",
        vaddr - best.address()
    ))
}

pub use nrt_pool_schema::demangle;
