//! Kernel signatures: what the op build flow reads, embeds in the library it builds
//! (`nrt_pool_op_schema()`), and what the engine and CLI check launches against.
//!
//! One kernel per line; `#` starts a comment:
//!
//! ```text
//! add_scalar(tensor<f32> x, f32 alpha) -> tensor<f32> like x
//! matmul_t(tensor<f32> a, tensor<f32> b like a) -> tensor<f32>[4, 3]
//! ```
//!
//! Parameters are tensors (`tensor<DTYPE>`, optionally `like OTHER`: same shape) or scalars
//! (`DTYPE`, passed as a 1-element tensor). The result is one tensor, shaped like a tensor
//! parameter or given explicitly.

use crate::DType;

#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    Tensor { dtype: DType, like: Option<String> },
    Scalar(DType),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ResultShape {
    Like(String),
    Fixed(Vec<u64>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct KernelSig {
    pub name: String,
    pub params: Vec<Param>,
    pub result: DType,
    pub result_shape: ResultShape,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("schema line {line}: {why}")]
pub struct SchemaError {
    pub line: usize,
    pub why: String,
}

/// C++ keywords (C++20) and the alternative tokens (`and`, `xor`, ...): no name in a
/// schema may be one, since kernels and parameters are C++ identifiers.
const CXX_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
];

/// Names the generated wrapper's translation unit already gives another meaning (types,
/// namespaces, macros of the C headers it includes, the runtime's entry points): a kernel
/// of that name could not be declared there.
const WRAPPER_NAMES: &[&str] = &[
    "entry_func",
    "register_funcs",
    "main",
    "printf",
    "vprintf",
    "vsnprintf",
    "puts",
    "putchar",
    "wrapper_fn",
    "size_t",
    "ptrdiff_t",
    "va_list",
    "FILE",
    "std",
    "neuron",
    "int8_t",
    "uint8_t",
    "int16_t",
    "uint16_t",
    "int32_t",
    "uint32_t",
    "int64_t",
    "uint64_t",
    "intptr_t",
    "uintptr_t",
    "NULL",
    "EOF",
    "BUFSIZ",
    "stdin",
    "stdout",
    "stderr",
    "EXIT_SUCCESS",
    "EXIT_FAILURE",
    "RAND_MAX",
    "MB_CUR_MAX",
    "SEEK_SET",
    "SEEK_CUR",
    "SEEK_END",
    "FILENAME_MAX",
    "FOPEN_MAX",
    "TMP_MAX",
    "L_tmpnam",
    "va_start",
    "va_end",
    "va_arg",
    "va_copy",
    "offsetof",
    "assert",
    "errno",
    "SUNDA_UCODE_LIB",
    "SUNDA_UCODE_LIB_STATUS",
    "NeuronArgTensor",
    "NeuronArgBlob",
];

/// Prefixes of the runtime's and the generated code's own names.
const RESERVED_PREFIXES: &[&str] = &[
    "customop_",
    "neuron_",
    "get_func_",
    "nrt_pool_",
    "NEURON_",
    "SUNDA_",
];

/// Why `name` cannot name a kernel or parameter, if it cannot.
fn reserved(name: &str, kernel: bool) -> Option<&'static str> {
    if CXX_KEYWORDS.contains(&name) {
        return Some("a C++ keyword");
    }
    // [lex.name]: names with a double underscore, or an underscore and a capital first.
    let b = name.as_bytes();
    if name.contains("__") || (b[0] == b'_' && b.get(1).is_some_and(u8::is_ascii_uppercase)) {
        return Some("reserved to the C++ implementation");
    }
    if kernel
        && (WRAPPER_NAMES.contains(&name) || RESERVED_PREFIXES.iter().any(|p| name.starts_with(p)))
    {
        return Some("a name the runtime, the generated wrapper or its C headers define");
    }
    None
}

pub(crate) fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn tensor_type(s: &str) -> Option<DType> {
    DType::from_name(s.strip_prefix("tensor<")?.strip_suffix('>')?.trim())
}

/// Parses a schema text.
pub fn parse(text: &str) -> Result<Vec<KernelSig>, SchemaError> {
    let mut out: Vec<KernelSig> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |why: String| SchemaError { line: i + 1, why };
        let sig = parse_line(line).map_err(err)?;
        if out.iter().any(|k| k.name == sig.name) {
            return Err(err(format!("kernel '{}' is declared twice", sig.name)));
        }
        out.push(sig);
    }
    Ok(out)
}

fn parse_line(line: &str) -> Result<KernelSig, String> {
    let (head, ret) = line
        .split_once("->")
        .ok_or("expected 'name(params) -> tensor<dtype> ...'")?;
    let (name, params) = head
        .trim()
        .strip_suffix(')')
        .and_then(|h| h.split_once('('))
        .ok_or("expected 'name(params)' before '->'")?;
    let name = name.trim();
    if !is_ident(name) {
        return Err(format!("'{name}' is not a kernel name"));
    }
    if let Some(why) = reserved(name, true) {
        return Err(format!("kernel name '{name}' is reserved: {why}"));
    }
    let mut ps: Vec<Param> = Vec::new();
    for p in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let words: Vec<&str> = p.split_whitespace().collect();
        let (ty, pname, like) = match words.as_slice() {
            [ty, n] => (*ty, *n, None),
            [ty, n, "like", other] => (*ty, *n, Some(other.to_string())),
            _ => {
                return Err(format!(
                    "parameter '{p}': expected 'TYPE NAME [like OTHER]'"
                ))
            }
        };
        if !is_ident(pname) || ps.iter().any(|q| q.name == pname) {
            return Err(format!("parameter name '{pname}' is invalid or repeated"));
        }
        if let Some(why) = reserved(pname, false) {
            return Err(format!("parameter name '{pname}' is reserved: {why}"));
        }
        let kind = if let Some(dt) = tensor_type(ty) {
            if let Some(o) = &like {
                if !ps
                    .iter()
                    .any(|q| &q.name == o && matches!(q.kind, ParamKind::Tensor { .. }))
                {
                    return Err(format!("'{pname} like {o}': {o} is not an earlier tensor"));
                }
            }
            ParamKind::Tensor { dtype: dt, like }
        } else if let (Some(dt), None) = (DType::from_name(ty), &like) {
            ParamKind::Scalar(dt)
        } else {
            return Err(format!(
                "parameter '{pname}': unknown type '{ty}' (tensor<DTYPE> or DTYPE; DTYPE one of {})",
                DType::ALL.map(DType::name).join(" ")
            ));
        };
        ps.push(Param {
            name: pname.into(),
            kind,
        });
    }
    if ps.len() > crate::MAX_ARGS {
        return Err(format!(
            "{} parameters; a kernel takes at most {}",
            ps.len(),
            crate::MAX_ARGS
        ));
    }
    let ret = ret.trim();
    let (ty, shape) = match ret.split_once(" like ") {
        Some((t, other)) => {
            let other = other.trim();
            if !ps
                .iter()
                .any(|q| q.name == other && matches!(q.kind, ParamKind::Tensor { .. }))
            {
                return Err(format!(
                    "result 'like {other}': no tensor parameter {other}"
                ));
            }
            (t.trim(), ResultShape::Like(other.into()))
        }
        None => {
            let (t, dims) = ret
                .split_once('[')
                .ok_or("the result needs a shape: 'like PARAM' or '[d0, d1, ...]'")?;
            let dims = dims
                .strip_suffix(']')
                .ok_or("unclosed '[' in the result shape")?;
            let parsed: Result<Vec<u64>, _> =
                dims.split(',').map(|d| d.trim().parse::<u64>()).collect();
            let dims = parsed.map_err(|_| format!("bad result shape [{dims}]"))?;
            if dims.is_empty() || dims.contains(&0) {
                return Err("the result shape needs positive dimensions".into());
            }
            (t.trim(), ResultShape::Fixed(dims))
        }
    };
    let result = tensor_type(ty).ok_or(format!("result type '{ty}': expected tensor<DTYPE>"))?;
    Ok(KernelSig {
        name: name.into(),
        params: ps,
        result,
        result_shape: shape,
    })
}

impl std::fmt::Display for ParamKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamKind::Tensor { dtype, .. } => write!(f, "tensor<{dtype}>"),
            ParamKind::Scalar(dt) => write!(f, "{dt}"),
        }
    }
}

impl std::fmt::Display for KernelSig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}(", self.name)?;
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match &p.kind {
                ParamKind::Tensor { dtype, like } => {
                    write!(f, "tensor<{dtype}> {}", p.name)?;
                    if let Some(o) = like {
                        write!(f, " like {o}")?;
                    }
                }
                ParamKind::Scalar(dt) => write!(f, "{dt} {}", p.name)?,
            }
        }
        write!(f, ") -> tensor<{}>", self.result)?;
        match &self.result_shape {
            ResultShape::Like(o) => write!(f, " like {o}"),
            ResultShape::Fixed(d) => write!(
                f,
                "[{}]",
                d.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// The fuzz target's property, shared with the seed-corpus test: any text parses without
/// a panic, and a parsed schema prints back to text that parses to the same kernels.
#[doc(hidden)]
pub fn fuzz_one(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(kernels) = parse(text) {
        let printed: Vec<String> = kernels.iter().map(ToString::to_string).collect();
        assert_eq!(parse(&printed.join("\n")).as_ref(), Ok(&kernels));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_back() {
        let text = "# ops\naxpb(tensor<f32> x, f32 a, i32 b) -> tensor<f32> like x\n\
                    t(tensor<f32> x, tensor<f32> s like x) -> tensor<f32>[4, 3]  # c\n";
        let k = parse(text).unwrap();
        assert_eq!(k.len(), 2);
        assert_eq!(k[0].params[1].kind, ParamKind::Scalar(DType::F32));
        assert_eq!(parse(&format!("{}\n{}", k[0], k[1])).unwrap(), k);
    }

    #[test]
    fn errors_name_the_line_and_problem() {
        let e = |t: &str| parse(t).unwrap_err().to_string();
        assert!(e("\nk(tensor<f64> x) -> tensor<f32> like x").contains("line 2"));
        assert!(e("k(tensor<f32> x) -> tensor<f32> like y").contains("no tensor parameter y"));
        assert!(e("k(f32 a) -> tensor<f32>").contains("needs a shape"));
        assert!(e("k(f32 a, f32 a) -> tensor<f32>[1]").contains("repeated"));
        assert!(e("k() -> tensor<f32>[1]\nk() -> tensor<f32>[1]").contains("twice"));
        let many = (0..11)
            .map(|i| format!("f32 a{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(e(&format!("k({many}) -> tensor<f32>[1]")).contains("at most 10"));
        assert!(e("k(tensor<f32> y like x) -> tensor<f32>[1]").contains("not an earlier tensor"));
        assert!(e("k(i32 new) -> tensor<f32>[1]").contains("'new' is reserved: a C++ keyword"));
        for word in [
            "xor", "and_eq", "bitor", "compl", "not_eq", "co_await", "char8_t",
        ] {
            assert!(
                e(&format!("k(f32 {word}) -> tensor<f32>[1]")).contains(&format!(
                    "parameter name '{word}' is reserved: a C++ keyword"
                )),
                "{word}"
            );
            assert!(e(&format!("{word}(f32 a) -> tensor<f32>[1]")).contains("is reserved"));
        }
        assert!(e("get_func_cnt() -> tensor<f32>[1]")
            .contains("kernel name 'get_func_cnt' is reserved"));
        assert!(e("delete(f32 a) -> tensor<f32>[1]").contains("is reserved"));
        for name in [
            "size_t",
            "EOF",
            "neuron",
            "__k",
            "_Kernel",
            "nrt_pool_wrapper_0",
        ] {
            assert!(
                e(&format!("{name}(f32 a) -> tensor<f32>[1]")).contains("is reserved"),
                "{name}"
            );
        }
        assert!(e("k(f32 __a) -> tensor<f32>[1]").contains("reserved to the C++ implementation"));
        // Names the wrapper no longer uses are ordinary parameters, the kernel's own too.
        for ok in [
            "k(f32 out) -> tensor<f32>[1]",
            "k(f32 k) -> tensor<f32>[1]",
            "k(f32 size_t, tensor<f32> customop_setup) -> tensor<f32>[1]",
        ] {
            assert!(parse(ok).is_ok(), "{ok}");
        }
    }
}
