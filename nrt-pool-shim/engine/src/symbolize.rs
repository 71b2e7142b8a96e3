//! Addresses in fault reports named from an image: its DWARF line tables (file, line and
//! the functions inlined there, read with gimli/addr2line), else its symbol table. The core
//! reports the faulting instruction and the return addresses of its callers (for a host
//! library, with its load base); the host reads the image (never loading it) and names them.

use std::borrow::Cow;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionFlags, SymbolKind};

/// The function symbol around `vaddr` in `file`: its demangled name and the offset into
/// it. A symbol without a size names addresses up to the next symbol, and only inside
/// `.text` unless `unsized_outside_text`.
fn symbol_in(
    file: &object::File<'_>,
    vaddr: u64,
    unsized_outside_text: bool,
) -> Option<(String, u64)> {
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

/// One address of a call stack, in an image's own addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackAddr {
    pub addr: u64,
    /// The faulting instruction itself; otherwise a return address, looked up one byte
    /// earlier (inside the call).
    pub exact: bool,
}

/// One frame of a call stack as the image's debug information names it. A call that was
/// inlined gives several frames for one address, innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFrame {
    /// The image's address (a return address for a caller).
    pub addr: u64,
    /// The function, demangled ("relu_forward(at::Tensor const&)").
    pub function: Option<String>,
    /// The source file as the compiler was given it.
    pub file: Option<String>,
    pub line: Option<u32>,
    /// This frame was inlined into the next one.
    pub inlined: bool,
}

/// Folders of the op API's headers (this project's `include/`): frames in them are the
/// runtime's checks, not the op author's code.
const API_HEADER_FOLDERS: [&str; 6] = [
    "/include/ATen/",
    "/include/c10/",
    "/include/torch/",
    "/include/neuron/",
    "/include/device/",
    "/include/torchneuron/",
];

/// Files the build generates around an op (its launch wrappers and registration).
const GENERATED_FILES: [&str; 3] = [
    "nrt_pool_op_wrapper.cpp",
    "nrt_pool_registration.cpp",
    "nrt_pool_returns_",
];

impl SourceFrame {
    /// Whether the frame lies in code the op author wrote: not in the runtime (Rust), the
    /// op API's headers, a system header or library, or the build's generated wrappers.
    pub fn is_op_code(&self) -> bool {
        let Some(file) = &self.file else {
            return false;
        };
        let name = file.rsplit('/').next().unwrap_or(file);
        !(file.ends_with(".rs")
            || file.starts_with("/usr/")
            || file.starts_with("/rustc/")
            || file.ends_with("neuron_customop.hpp")
            || API_HEADER_FOLDERS.iter().any(|d| file.contains(d))
            || GENERATED_FILES.iter().any(|g| name.starts_with(g)))
    }

    /// "relu.cpp:41 in relu_forward(at::Tensor const&)", the file shown relative to the
    /// current folder when it lies inside it.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        match (&self.file, self.line) {
            (Some(f), Some(l)) => s.push_str(&format!("{}:{l}", shown_path(f))),
            (Some(f), None) => s.push_str(&shown_path(f)),
            _ => s.push_str(&format!("{:#x}", self.addr)),
        }
        if let Some(func) = &self.function {
            s.push_str(" in ");
            s.push_str(func);
        }
        s
    }
}

fn shown_path(file: &str) -> String {
    let path = Path::new(file);
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(|p| p.display().to_string()))
        .unwrap_or_else(|| file.to_string())
}

type Reader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// An ELF image's names for addresses: DWARF where it has some, its symbols otherwise.
pub struct Symbolizer<'a> {
    file: object::File<'a>,
    dwarf: Option<addr2line::Context<Reader<'a>>>,
}

impl<'a> Symbolizer<'a> {
    /// None when `bytes` is not an object file this build reads.
    pub fn new(bytes: &'a [u8]) -> Option<Symbolizer<'a>> {
        let file = object::File::parse(bytes).ok()?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let has_dwarf = file.section_by_name(".debug_info").is_some();
        let dwarf = has_dwarf
            .then(|| {
                let load = |id: gimli::SectionId| -> Result<Reader<'a>, gimli::Error> {
                    Ok(gimli::EndianSlice::new(section(&file, id.name()), endian))
                };
                gimli::Dwarf::load(load)
                    .ok()
                    .and_then(|d| addr2line::Context::from_dwarf(d).ok())
            })
            .flatten();
        Some(Symbolizer { file, dwarf })
    }

    /// "function+0xoff" (demangled) for the instruction at `pc` of this library loaded at
    /// `base`, when its symbols cover it (an address outside the library, libc's abort
    /// say, is not named after its last symbol).
    pub fn locate(&self, base: u64, pc: u64) -> Option<String> {
        let vaddr = pc.checked_sub(base).filter(|_| base != 0)?;
        if !self.maps(vaddr) {
            return None;
        }
        let (name, off) = symbol_in(&self.file, vaddr, true)?;
        Some(format!("{name}+{off:#x}"))
    }

    /// The call stack of a fault in this library loaded at `base`, from the host addresses
    /// a core reported (the first the faulting instruction when `first_exact`, the rest
    /// return addresses): those inside the library's loaded segments, named.
    pub fn library_stack(&self, base: u64, addrs: &[u64], first_exact: bool) -> Vec<SourceFrame> {
        let local: Vec<StackAddr> = addrs
            .iter()
            .enumerate()
            .filter_map(|(i, &a)| {
                let vaddr = a.checked_sub(base).filter(|_| base != 0)?;
                self.maps(vaddr).then_some(StackAddr {
                    addr: vaddr,
                    exact: i == 0 && first_exact,
                })
            })
            .collect();
        self.stack(&local)
    }

    /// Whether one of the image's loaded segments holds `vaddr`.
    pub fn maps(&self, vaddr: u64) -> bool {
        self.file
            .segments()
            .any(|s| (s.address()..s.address().saturating_add(s.size())).contains(&vaddr))
    }

    /// The frames at `at`: the functions inlined there (innermost first) and the one they
    /// were inlined into, each with its file and line; the symbol alone without DWARF; an
    /// empty list when nothing names the address.
    pub fn frames(&self, at: StackAddr) -> Vec<SourceFrame> {
        let probe = if at.exact {
            at.addr
        } else {
            at.addr.saturating_sub(1)
        };
        let mut out = Vec::new();
        if let Some(ctx) = &self.dwarf {
            if let Ok(mut frames) = ctx.find_frames(probe).skip_all_loads() {
                while let Ok(Some(f)) = frames.next() {
                    let function = f
                        .function
                        .as_ref()
                        .and_then(|n| n.raw_name().ok())
                        .map(|n| demangle(n.as_bytes()));
                    let (file, line) = f
                        .location
                        .map_or((None, None), |l| (l.file.map(str::to_string), l.line));
                    out.push(SourceFrame {
                        addr: at.addr,
                        function,
                        file,
                        line,
                        inlined: true,
                    });
                }
            }
        }
        if let Some(last) = out.last_mut() {
            last.inlined = false;
            // A frame with a line but no function name takes the symbol's.
            if last.function.is_none() {
                last.function = symbol_in(&self.file, probe, false).map(|(n, _)| n);
            }
            return out;
        }
        symbol_in(&self.file, probe, false)
            .map(|(name, _)| SourceFrame {
                addr: at.addr,
                function: Some(name),
                file: None,
                line: None,
                inlined: false,
            })
            .into_iter()
            .collect()
    }

    /// The line the debug information declares the function whose code starts at `start`
    /// at (`DW_AT_decl_line` of its subprogram, or of the declaration or abstract instance
    /// it refers to): read for this one function, not by walking every unit.
    pub fn declared_line(&self, start: u64) -> Option<u32> {
        let ctx = self.dwarf.as_ref()?;
        let unit = ctx.find_dwarf_and_unit(start).skip_all_loads()?;
        // The subprogram holding `start` is the outermost of the frames there.
        let mut frames = ctx.find_frames(start).skip_all_loads().ok()?;
        let mut subprogram = None;
        while let Ok(Some(f)) = frames.next() {
            subprogram = f.dw_die_offset;
        }
        let line = |e: &gimli::DebuggingInformationEntry<Reader<'a>>| {
            e.attr_value(gimli::DW_AT_decl_line)
                .ok()
                .flatten()
                .and_then(|v| v.udata_value())
                .and_then(|l| u32::try_from(l).ok())
        };
        let entry = unit.entry(subprogram?).ok()?;
        line(&entry).or_else(|| {
            [gimli::DW_AT_specification, gimli::DW_AT_abstract_origin]
                .into_iter()
                .find_map(|via| match entry.attr_value(via) {
                    Ok(Some(gimli::AttributeValue::UnitRef(o))) => {
                        unit.entry(o).ok().as_ref().and_then(line)
                    }
                    _ => None,
                })
        })
    }

    /// Every frame of a call stack, innermost first.
    pub fn stack(&self, addrs: &[StackAddr]) -> Vec<SourceFrame> {
        addrs.iter().flat_map(|&a| self.frames(a)).collect()
    }
}

/// The images of one address space (an Xtensa core's op image and its board), each
/// address named from the image that holds it.
pub struct ImageSet<'a>(Vec<Symbolizer<'a>>);

impl<'a> ImageSet<'a> {
    /// The images this build reads among `images` (ELF files' bytes).
    pub fn new(images: &[&'a [u8]]) -> ImageSet<'a> {
        ImageSet(images.iter().filter_map(|b| Symbolizer::new(b)).collect())
    }

    /// The frames at `at`, from the image whose loaded segments hold it (none: empty).
    pub fn frames(&self, at: StackAddr) -> Vec<SourceFrame> {
        self.0
            .iter()
            .find(|s| s.maps(at.addr))
            .map(|s| s.frames(at))
            .unwrap_or_default()
    }

    /// The frames of a call stack's addresses, the first the instruction a core was at,
    /// the rest return addresses.
    pub fn stack(&self, pcs: &[u64]) -> Vec<SourceFrame> {
        pcs.iter()
            .enumerate()
            .flat_map(|(i, &addr)| {
                self.frames(StackAddr {
                    addr,
                    exact: i == 0,
                })
            })
            .collect()
    }

    /// "function+0xoff" (demangled) for `pc`, from the first image whose symbols cover it
    /// (a symbol without a size only inside `.text`).
    pub fn symbol(&self, pc: u64) -> Option<String> {
        self.0.iter().find_map(|s| {
            let (name, off) = symbol_in(&s.file, pc, false)?;
            Some(format!("{name}+{off:#x}"))
        })
    }
}

/// A debug section's bytes: empty when missing or compressed (the builds here write them
/// uncompressed; a compressed one leaves lines out rather than failing the report).
/// The NUL-terminated string `delta` bytes (wrapping) from the exported symbol `anchor` in
/// an ELF file's bytes (a source file's name the compiler put in the op library), read
/// through its sections; None when the symbol or a section holding it is missing or the
/// string does not end.
/// The address of symbol `name` (dynamic or not) in `file`.
fn symbol_address(file: &object::File<'_>, name: &str) -> Option<u64> {
    file.dynamic_symbols()
        .chain(file.symbols())
        .find(|s| s.name_bytes() == Ok(name.as_bytes()))
        .map(|s| s.address())
}

/// The source place ("k.cpp:12 in f(int)") of the call that returns to `delta` bytes from
/// symbol `anchor` in the ELF `bytes` (a return address the runtime recorded as a distance
/// from `entry_func`): the op author's frame where there is one, else the innermost.
pub fn call_site_near(bytes: &[u8], anchor: &str, delta: u64) -> Option<String> {
    let file = object::File::parse(bytes).ok()?;
    let base = symbol_address(&file, anchor)?;
    let named = Symbolizer::new(bytes)?;
    let frames = named.frames(StackAddr {
        addr: base.wrapping_add(delta),
        exact: false,
    });
    frames
        .iter()
        .find(|f| f.is_op_code())
        .or_else(|| frames.first())
        .map(SourceFrame::describe)
}

pub fn c_string_near(bytes: &[u8], anchor: &str, delta: u64) -> Option<Vec<u8>> {
    let file = object::File::parse(bytes).ok()?;
    let base = symbol_address(&file, anchor)?;
    let vaddr = base.wrapping_add(delta);
    let s = file
        .sections()
        .find(|s| vaddr >= s.address() && vaddr - s.address() < s.size())?;
    let data = s.data().ok()?;
    let rest = data.get(usize::try_from(vaddr - s.address()).ok()?..)?;
    let end = rest.iter().take(4096).position(|&b| b == 0)?;
    Some(rest[..end].to_vec())
}

fn section<'a>(file: &object::File<'a>, name: &str) -> &'a [u8] {
    let Some(s) = file.section_by_name(name) else {
        return &[];
    };
    if let SectionFlags::Elf { sh_flags } = s.flags() {
        if sh_flags & u64::from(object::elf::SHF_COMPRESSED) != 0 {
            return &[];
        }
    }
    match s.uncompressed_data() {
        Ok(Cow::Borrowed(b)) => b,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_function_names_identifier_is_its_last_segment_without_template_arguments() {
        use super::identifier;
        let check = "void torch::TensorTcmAccessor<false>::check<float>(char const*) const";
        assert_eq!(identifier(check), Some("check"));
        assert_eq!(
            identifier("relu_forward(torch::Tensor const&)"),
            Some("relu_forward")
        );
        assert_eq!(identifier("tile_relu"), Some("tile_relu"));
        assert_eq!(identifier("ns::Pair<a::B<c>, d>::get"), Some("get"));
        assert_eq!(identifier("(anonymous)"), None);
    }

    use super::*;

    fn frame(file: &str) -> SourceFrame {
        SourceFrame {
            addr: 0,
            function: None,
            file: Some(file.into()),
            line: Some(1),
            inlined: false,
        }
    }

    #[test]
    fn the_op_authors_code_is_told_from_the_runtimes() {
        assert!(frame("/home/me/ops/relu.cpp").is_op_code());
        assert!(frame("kernels/tile.hpp").is_op_code());
        assert!(!frame("/work/main/include/ATen/core/Tensor.h").is_op_code());
        assert!(!frame("/usr/local/include/torch/torch.h").is_op_code());
        assert!(!frame("/usr/include/c++/12/bits/stl_vector.h").is_op_code());
        assert!(!frame("customop-device/src/runtime/exports.rs").is_op_code());
        assert!(!frame("/tmp/x/nrt_pool_op_wrapper.cpp").is_op_code());
        let mut unknown = frame("x");
        unknown.file = None;
        assert!(!unknown.is_op_code());
    }

    #[test]
    fn a_frame_reads_file_line_and_function() {
        let mut f = frame("/nowhere/relu.cpp");
        f.line = Some(41);
        f.function = Some("relu_forward(at::Tensor const&)".into());
        assert_eq!(
            f.describe(),
            "/nowhere/relu.cpp:41 in relu_forward(at::Tensor const&)"
        );
    }
}

/// Where function `name` (its plain name, "scale", or its demangled signature) lies in the
/// ELF `bytes`, its code, and the address of its body's first line row: the first
/// line-table row after its first byte (where gdb's prologue analysis stops when the line
/// table is all it has).
pub fn function_body<'a>(bytes: &'a [u8], name: &str) -> Option<FunctionBody<'a>> {
    let named = Symbolizer::new(bytes)?;
    let sym = named
        .file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .find(|s| names_function(&demangle(s.name_bytes().unwrap_or_default()), name))?;
    let (start, end) = (sym.address(), sym.address() + sym.size());
    let section = named.file.section_by_index(sym.section_index()?).ok()?;
    let from = usize::try_from(start.checked_sub(section.address())?).ok()?;
    let to = from.checked_add(usize::try_from(sym.size()).ok()?)?;
    let code = section.data().ok()?.get(from..to)?;
    let dwarf = named.dwarf.as_ref()?;
    let body = dwarf
        .find_location_range(start, end)
        .ok()?
        .map(|(addr, _, _)| addr)
        .find(|&addr| addr > start)?;
    Some(FunctionBody { start, code, body })
}

/// Whether a symbol's demangled name `d` is function `name`: the same, or `name` with
/// its parameter list.
/// The identifier a demangled function name ends in: `check` of
/// `void torch::TensorTcmAccessor<false>::check<float>(char const*) const`; None where it
/// has none to search for.
fn identifier(name: &str) -> Option<&str> {
    let head = name.split('(').next()?;
    let mut depth = 0i32;
    let mut end = head.len();
    // The last path segment, template arguments left out (read from the end).
    for (i, c) in head.char_indices().rev() {
        match c {
            '>' => depth += 1,
            '<' => {
                depth -= 1;
                if depth == 0 {
                    end = i;
                }
            }
            ':' | ' ' if depth == 0 => {
                let id = &head[i + 1..end];
                return (!id.is_empty()).then_some(id);
            }
            _ => {}
        }
    }
    let id = &head[..end];
    (!id.is_empty()).then_some(id)
}

fn names_function(d: &str, name: &str) -> bool {
    d == name
        || d.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('('))
}

/// Where an image's functions are defined: its text symbols (demangled) and its
/// subprograms' declaration lines, each read once for any number of lookups.
pub struct FunctionLines<'a> {
    named: Symbolizer<'a>,
    /// Each text symbol's name as the image spells it (mangled) and start address:
    /// demangled only where a lookup may match (thousands in an op library with the
    /// runtime: demangling all took longer than the rest of a flame graph).
    symbols: Vec<(&'a [u8], u64)>,
}

impl<'a> FunctionLines<'a> {
    /// None when `bytes` is not an object file this build reads.
    pub fn new(bytes: &'a [u8]) -> Option<FunctionLines<'a>> {
        let named = Symbolizer::new(bytes)?;
        let symbols = named
            .file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
            .map(|s| (s.name_bytes().unwrap_or_default(), s.address()))
            .collect();
        Some(FunctionLines { named, symbols })
    }

    /// The image's names for addresses, as parsed for these lookups.
    pub fn symbolizer(&self) -> &Symbolizer<'a> {
        &self.named
    }

    /// The source line function `name` (as [`function_body`] names it) is defined at: the
    /// file of its first instruction, and the line its debug information declares it at
    /// (`DW_AT_decl_line`), else its first instruction's line.
    pub fn line(&self, name: &str) -> Option<(String, u32)> {
        // A mangled name holds its function's identifier as written: only those are
        // demangled; an operator's is encoded (`clEv`), so for one every symbol is.
        let ident = identifier(name)?.as_bytes();
        let finder = memchr::memmem::Finder::new(ident);
        let matching = |filtered: bool| {
            self.symbols
                .iter()
                .filter(|(raw, _)| !filtered || finder.find(raw).is_some())
                .find(|(raw, _)| names_function(&demangle(raw), name))
                .map(|s| s.1)
        };
        let operator = ident.starts_with(b"operator");
        let start = matching(!operator)?;
        let frames = self.named.frames(StackAddr {
            addr: start,
            exact: true,
        });
        let outer = frames.last()?;
        let line = self.named.declared_line(start).or(outer.line)?;
        Some((outer.file.clone()?, line))
    }
}

/// A function's place in an image ([`function_body`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionBody<'a> {
    pub start: u64,
    /// Its bytes, from `start`.
    pub code: &'a [u8],
    /// The address of the body's first line row.
    pub body: u64,
}
