//! Checks on the file itself: the dynamic symbol table, SONAME and imports.

use std::collections::BTreeSet;
use std::path::Path;

use object::read::elf::{ElfFile64, FileHeader};
use object::{Object, ObjectSymbol};

use super::Outcome;

/// The 52 exports (host-nrtucode-extisa.md section 1), the harness's own copy.
pub const EXPORTS: [&str; 52] = [
    "nrtucode_get_api_level",
    "nrtucode_get_build_version",
    "nrtucode_get_git_version",
    "nrtucode_get_memory_image",
    "nrtucode_get_ext_isa",
    "nrtucode_get_num_ext_isa_libs",
    "nrtucode_get_hwdecode_table",
    "nrtucode_context_create",
    "nrtucode_context_destroy",
    "nrtucode_context_set_memhandle_impl",
    "nrtucode_context_get_userdata",
    "nrtucode_context_set_userdata",
    "nrtucode_core_create",
    "nrtucode_core_destroy",
    "nrtucode_core_on_ucode_booted",
    "nrtucode_core_get_context",
    "nrtucode_core_get_userdata",
    "nrtucode_core_set_userdata",
    "nrtucode_core_get_coretype",
    "nrtucode_core_set_friendly_name",
    "nrtucode_core_get_friendly_name",
    "nrtucode_core_enable_logs",
    "nrtucode_core_enable_logs_with_size_hint",
    "nrtucode_core_disable_logs",
    "nrtucode_core_set_max_loglevel",
    "nrtucode_core_print_logs",
    "nrtucode_core_dge_set_priority_class_map",
    "nrtucode_core_dge_get_priority_class_map",
    "nrtucode_core_get_dge_mailbox_addr",
    "nrtucode_core_private_set_dge_mailbox",
    "nrtucode_core_private_get_dge_mailbox_values",
    "nrtucode_core_enable_pc_bounds_check",
    "nrtucode_core_disable_pc_bounds_check",
    "nrtucode_core_private_get_pc_bounds",
    "nrtucode_ll_get_libraries_from_opcodes",
    "nrtucode_ll_create",
    "nrtucode_ll_destroy",
    "nrtucode_ll_get_load_sequence_num_instrs",
    "nrtucode_ll_get_unload_sequence_num_instrs",
    "nrtucode_ll_get_load_sequence",
    "nrtucode_ll_get_unload_sequence",
    "nrtucode_ll_set_friendly_name",
    "nrtucode_ll_get_library_size",
    "nrtucode_opset_create",
    "nrtucode_opset_destroy",
    "nrtucode_opset_add_instruction",
    "nrtucode_opset_private_get_num_opcodes",
    "nrtucode_opset_private_get_num_specializations",
    "nrtucode_opset_private_has_opcode",
    "nrtucode_opset_private_has_specialization",
    "nrtucode_opset_set_friendly_name",
    "nrtucode_opset_get_library_index",
];

/// Libraries a provider may need: the C runtime (and, for providers written in languages
/// with unwinding, the C runtime's unwinder).
const ALLOWED_NEEDED: [&str; 6] = [
    "libc.so.6",
    "ld-linux-x86-64.so.2",
    "libgcc_s.so.1",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
];

pub const CHECKS: &[super::CheckEntry] = &[
    ("exports.exactly-52", "defined dynamic symbols are exactly the 52 nrtucode_* functions (get 7, context 5, core 22, ll 9, opset 9)", exports),
    ("exports.soname", "SONAME libnrtucode_extisa.so", soname),
    ("exports.imports", "needs only the C runtime; imports no dlopen/dlsym and no Neuron symbol", imports),
];

fn read(lib: &Path) -> Result<Vec<u8>, Outcome> {
    std::fs::read(lib).map_err(|e| Outcome::fail(format!("cannot read: {e}")))
}

fn exports(lib: &Path) -> Outcome {
    let bytes = match read(lib) {
        Ok(b) => b,
        Err(o) => return o,
    };
    let Ok(file) = object::File::parse(&*bytes) else {
        return Outcome::fail("not an ELF file");
    };
    let defined: BTreeSet<String> = file
        .dynamic_symbols()
        .filter(|s| !s.is_undefined() && s.is_global())
        .filter_map(|s| s.name().ok().map(String::from))
        .collect();
    let want: BTreeSet<String> = EXPORTS.iter().map(|s| s.to_string()).collect();
    let extra: Vec<_> = defined.difference(&want).collect();
    let missing: Vec<_> = want.difference(&defined).collect();
    if extra.is_empty() && missing.is_empty() {
        Outcome::pass(format!("{} exported", defined.len()))
    } else {
        Outcome::fail(format!("missing {missing:?}; extra {extra:?}"))
    }
}

/// DT_SONAME and DT_NEEDED strings.
fn dynamic_strings(bytes: &[u8]) -> Result<(Option<String>, Vec<String>), String> {
    let elf = ElfFile64::<object::Endianness>::parse(bytes).map_err(|e| e.to_string())?;
    let e = elf.endian();
    let header = elf.elf_header();
    let sections = header.sections(e, bytes).map_err(|e| e.to_string())?;
    let Some((dynamic, link)) = sections.dynamic(e, bytes).map_err(|e| e.to_string())? else {
        return Err("no .dynamic".into());
    };
    let strings = sections
        .strings(e, bytes, link)
        .map_err(|e| e.to_string())?;
    let mut soname = None;
    let mut needed = Vec::new();
    for d in dynamic {
        let tag = d.d_tag.get(e) as u32;
        if tag == object::elf::DT_SONAME || tag == object::elf::DT_NEEDED {
            let s = strings
                .get(d.d_val.get(e) as u32)
                .map_err(|_| "bad string")?;
            let s = String::from_utf8_lossy(s).into_owned();
            if tag == object::elf::DT_SONAME {
                soname = Some(s);
            } else {
                needed.push(s);
            }
        }
    }
    Ok((soname, needed))
}

fn soname(lib: &Path) -> Outcome {
    let bytes = match read(lib) {
        Ok(b) => b,
        Err(o) => return o,
    };
    match dynamic_strings(&bytes) {
        Ok((Some(s), _)) if s == "libnrtucode_extisa.so" => Outcome::pass(s),
        Ok((s, _)) => Outcome::fail(format!("SONAME {s:?}")),
        Err(e) => Outcome::fail(e),
    }
}

fn imports(lib: &Path) -> Outcome {
    let bytes = match read(lib) {
        Ok(b) => b,
        Err(o) => return o,
    };
    let needed = match dynamic_strings(&bytes) {
        Ok((_, n)) => n,
        Err(e) => return Outcome::fail(e),
    };
    let Ok(file) = object::File::parse(&*bytes) else {
        return Outcome::fail("not an ELF file");
    };
    let undefined: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().map(String::from))
        .collect();
    let foreign: Vec<&String> = needed
        .iter()
        .filter(|n| !ALLOWED_NEEDED.contains(&n.as_str()))
        .collect();
    let bad: Vec<&String> = undefined
        .iter()
        .filter(|s| *s == "dlopen" || *s == "dlsym" || s.starts_with("nrt"))
        .collect();
    if foreign.is_empty() && bad.is_empty() {
        Outcome::pass(format!("NEEDED {needed:?}"))
    } else {
        Outcome::fail(format!(
            "NEEDED outside the C runtime {foreign:?}; forbidden imports {bad:?}"
        ))
    }
}
