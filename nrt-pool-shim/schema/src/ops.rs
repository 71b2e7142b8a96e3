//! Op libraries in the Custom C++ Operators style (`NEURON_LIBRARY(ns, m)`): the namespace,
//! each op with its kernel function and argument kinds, and whether the library runs on
//! all cores. The build flow learns this by running the shape sources' registration and
//! embeds it in the library (`nrt_pool_op_library()`); outputs come from the shape
//! functions at launch time, so there is no result type here.
//!
//! ```text
//! library my_ops multicore=0
//! op relu_forward kernel=relu_forward args=T
//! op relu_backward kernel=relu_backward args=TT
//! ```

use crate::signature::is_ident;
use crate::SchemaError;

/// An op argument's kind (the guide's four types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// `torch::Tensor`
    Tensor,
    /// `torch::Scalar`
    Scalar,
    /// `double`
    Double,
    /// `int64_t`
    Long,
}

impl ArgKind {
    pub fn code(self) -> char {
        match self {
            ArgKind::Tensor => 'T',
            ArgKind::Scalar => 'S',
            ArgKind::Double => 'D',
            ArgKind::Long => 'L',
        }
    }

    pub fn from_code(c: char) -> Option<ArgKind> {
        [
            ArgKind::Tensor,
            ArgKind::Scalar,
            ArgKind::Double,
            ArgKind::Long,
        ]
        .into_iter()
        .find(|k| k.code() == c)
    }

    /// The C++ type a kernel takes it as.
    pub fn cxx(self) -> &'static str {
        match self {
            ArgKind::Tensor => "torch::Tensor",
            ArgKind::Scalar => "torch::Scalar",
            ArgKind::Double => "double",
            ArgKind::Long => "int64_t",
        }
    }
}

impl std::fmt::Display for ArgKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.cxx())
    }
}

/// One op: `torch.ops.NS.NAME(...)` runs kernel function `kernel`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpSig {
    pub name: String,
    pub kernel: String,
    pub args: Vec<ArgKind>,
}

/// A library of ops under one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeuronLibrary {
    pub namespace: String,
    pub multicore: bool,
    pub ops: Vec<OpSig>,
    /// The compiler flags the library was built with beyond the build's own
    /// (`extra_include_paths` as `-IDIR`, then `extra_cflags`), in order.
    pub cflags: Vec<String>,
}

/// Most ops one library registers: "the library can have 10 functions registered"
/// (developer guide, "Building and executing operators").
pub const MAX_OPS: usize = 10;

/// Op names are shorter than this: the vendor's build flow refuses longer ones
/// (device-customop.md 9.2: "the name must be < 32 characters, else the build raises").
pub const MAX_OP_NAME: usize = 32;

/// A flag as one word of the text form: bytes outside a safe set as %XX (so the text also
/// sits in a C string literal unchanged).
fn encode_flag(f: &str) -> String {
    let mut out = String::new();
    for b in f.bytes() {
        if b.is_ascii_alphanumeric() || b"_.,=/+:-".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The inverse of [`encode_flag`] (None: a broken escape or bytes that are not UTF-8).
fn decode_flag(w: &str) -> Option<String> {
    let b = w.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl NeuronLibrary {
    /// The op `NS::OP` or `OP` names (None: not in this library).
    pub fn op(&self, name: &str) -> Option<&OpSig> {
        let bare = match name.split_once("::") {
            Some((ns, op)) if ns == self.namespace => op,
            Some(_) => return None,
            None => name,
        };
        self.ops.iter().find(|o| o.name == bare)
    }

    /// The embedded text form.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "library {} multicore={}\n",
            self.namespace,
            u8::from(self.multicore)
        );
        for o in &self.ops {
            let args: String = o.args.iter().map(|a| a.code()).collect();
            s.push_str(&format!(
                "op {} kernel={} args={}\n",
                o.name,
                o.kernel,
                if args.is_empty() { "-" } else { &args }
            ));
        }
        for f in &self.cflags {
            s.push_str(&format!("cflag {}\n", encode_flag(f)));
        }
        s
    }

    /// Parses the embedded text form (or the build flow's registration dump).
    pub fn parse(text: &str) -> Result<NeuronLibrary, SchemaError> {
        let mut lib: Option<NeuronLibrary> = None;
        for (i, raw) in text.lines().enumerate() {
            let err = |why: String| SchemaError { line: i + 1, why };
            let words: Vec<&str> = raw.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                ["library", ns, rest @ ..] => {
                    if lib.is_some() {
                        return Err(err("more than one library".into()));
                    }
                    if !is_ident(ns) {
                        return Err(err(format!(
                            "library namespace '{ns}' is not an identifier"
                        )));
                    }
                    let multicore = match rest {
                        [] | ["multicore=0"] => false,
                        ["multicore=1"] => true,
                        _ => return Err(err(format!("unexpected '{}'", rest.join(" ")))),
                    };
                    lib = Some(NeuronLibrary {
                        namespace: ns.to_string(),
                        multicore,
                        ops: Vec::new(),
                        cflags: Vec::new(),
                    });
                }
                ["op", name, kernel, args] => {
                    let l = lib
                        .as_mut()
                        .ok_or_else(|| err("'op' before 'library'".into()))?;
                    let kernel = kernel.strip_prefix("kernel=").unwrap_or(kernel);
                    let args = args.strip_prefix("args=").unwrap_or(args);
                    for (what, n) in [("op", *name), ("kernel", kernel)] {
                        if !is_ident(n) {
                            return Err(err(format!("{what} name '{n}' is not a C++ identifier")));
                        }
                    }
                    if name.len() >= MAX_OP_NAME {
                        return Err(err(format!(
                            "op name '{name}' has {} characters; the vendor's build refuses names of {MAX_OP_NAME} or more (docs/decisions.md D74)",
                            name.len()
                        )));
                    }
                    if l.ops.iter().any(|o| o.name == *name) {
                        return Err(err(format!("op '{name}' is registered twice")));
                    }
                    let kinds: Option<Vec<ArgKind>> = if args == "-" {
                        Some(Vec::new())
                    } else {
                        args.chars().map(ArgKind::from_code).collect()
                    };
                    let args = kinds.ok_or_else(|| err(format!("argument kinds '{args}'")))?;
                    if args.len() > crate::MAX_ARGS {
                        return Err(err(format!(
                            "op '{name}' takes {} arguments; at most {}",
                            args.len(),
                            crate::MAX_ARGS
                        )));
                    }
                    l.ops.push(OpSig {
                        name: name.to_string(),
                        kernel: kernel.to_string(),
                        args,
                    });
                    if l.ops.len() > MAX_OPS {
                        return Err(err(format!("more than {MAX_OPS} ops in one library (developer guide, 'Building and executing operators': the library can have {MAX_OPS} functions registered)")));
                    }
                }
                ["cflag", flag] => {
                    let l = lib
                        .as_mut()
                        .ok_or_else(|| err("'cflag' before 'library'".into()))?;
                    l.cflags
                        .push(decode_flag(flag).ok_or_else(|| err(format!("cflag '{flag}'")))?);
                }
                _ => return Err(err(format!("unexpected line '{}'", raw.trim()))),
            }
        }
        let lib = lib.ok_or(SchemaError {
            line: 1,
            why: "no 'library' line (no NEURON_LIBRARY registration)".into(),
        })?;
        if lib.ops.is_empty() {
            return Err(SchemaError {
                line: 1,
                why: format!("library '{}' registers no op", lib.namespace),
            });
        }
        Ok(lib)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_finds_ops_by_qualified_name() {
        let text = "library my_ops multicore=1\nop relu_forward kernel=relu_forward args=T\nop f kernel=g args=TSDL\nop h kernel=h args=-\n";
        let lib = NeuronLibrary::parse(text).unwrap();
        assert_eq!(lib.to_text(), text);
        assert!(lib.multicore);
        assert_eq!(lib.op("my_ops::f").unwrap().kernel, "g");
        assert_eq!(lib.op("f").unwrap().args.len(), 4);
        assert!(lib.op("other::f").is_none());
        assert!(lib.op("h").unwrap().args.is_empty());
        assert!(lib.cflags.is_empty());
    }

    #[test]
    fn build_flags_round_trip_byte_for_byte() {
        let mut lib = NeuronLibrary::parse("library a\nop f kernel=f args=T\n").unwrap();
        lib.cflags = vec![
            "-DSTACK_SIZE=20000".into(),
            "-I/x y/\"q\"".into(),
            "-DMSG=\"a b%\"".into(),
        ];
        let text = lib.to_text();
        assert!(!text.contains('"') && !text.contains('\\'), "{text}");
        assert_eq!(NeuronLibrary::parse(&text).unwrap(), lib);
    }

    #[test]
    fn op_names_of_32_characters_are_refused() {
        let ok = format!("library a\nop {} kernel=k args=T\n", "n".repeat(31));
        assert!(NeuronLibrary::parse(&ok).is_ok());
        let long = format!("library a\nop {} kernel=k args=T\n", "n".repeat(32));
        let e = NeuronLibrary::parse(&long).unwrap_err().to_string();
        assert!(
            e.contains("32 characters") && e.contains("32 or more"),
            "{e}"
        );
    }

    #[test]
    fn bad_registrations_are_named() {
        let e = |t: &str| NeuronLibrary::parse(t).unwrap_err().to_string();
        assert!(e("op f kernel=f args=T").contains("'op' before 'library'"));
        assert!(e("library a\nop f kernel=f args=X").contains("argument kinds 'X'"));
        assert!(e("library a\nop f kernel=f args=T\nop f kernel=g args=T").contains("twice"));
        assert!(e("library a").contains("registers no op"));
        assert!(e("").contains("no 'library' line"));
        assert!(e("library 1a\nop f kernel=f args=T").contains("not an identifier"));
        let many: String = (0..11)
            .map(|i| format!("op f{i} kernel=k{i} args=T\n"))
            .collect();
        assert!(e(&format!("library a\n{many}")).contains("more than 10 ops"));
    }
}
