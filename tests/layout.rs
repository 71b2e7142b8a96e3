//! The dependency arrows of the workspace run one way: the engine knows
//! nothing of the CLI, `.npy` files or the build flow, nor of the device runtime (it shares
//! only the wire layouts of `customop-abi`, a leaf); nothing depends on the CLI; no package
//! reaches itself through its dev-dependencies; the conformance harnesses and the
//! provider's tests reach the simulated device without the Pool shim. Inside the device
//! runtime, the libc may use the runtime and not the reverse. Every method of a type sits in
//! the file that defines it, and no function passes 120 lines (these replaced a
//! 700-line file limit that invited squeezing). The engine's files form no circle, no
//! module imports its parent's names wholesale (`use super::*`, tests aside), the backends
//! are crates of their own that the engine does not name, and no front end reads the
//! environment or names the engine: it opens a `Pool`.

use std::process::Command;

/// The workspace packages `package` depends on (normal dependencies, transitively).
fn deps(package: &str, invert: bool) -> Vec<String> {
    deps_over(package, invert, "normal")
}

/// The workspace packages `package` reaches over `edges` ("normal", "normal,dev", ...).
fn deps_over(package: &str, invert: bool, edges: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-e",
            edges,
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .args([if invert { "-i" } else { "-p" }, package])
        .output()
        .expect("cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("(/"))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|n| n != package)
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn dependency_arrows_run_one_way() {
    assert_eq!(
        deps("customop-abi", false),
        Vec::<String>::new(),
        "the wire layouts are a leaf"
    );
    assert_eq!(
        deps("customop-device", false),
        ["customop-abi"],
        "the device runtime's arrows"
    );
    let engine = deps("nrt-pool-engine", false);
    assert_eq!(
        engine,
        ["customop-abi", "nrt-pool-schema"],
        "the engine's arrows: the wire layouts, not the device runtime"
    );
    let build = deps("nrt-pool-build", false);
    assert_eq!(
        build,
        ["customop-abi", "nrt-pool-schema"],
        "the build flow's arrows"
    );
    let qemu = deps("nrt-pool-qemu", false);
    assert_eq!(
        qemu,
        ["customop-abi", "nrt-pool-engine", "nrt-pool-schema"],
        "the Xtensa backend's arrows: the engine's interface, nothing of the CLI or build flow"
    );
    assert_eq!(
        deps("nrt-pool-host", false),
        ["customop-abi", "nrt-pool-engine", "nrt-pool-schema"],
        "the host backend's arrows: the engine's interface, the Xtensa backend's peer"
    );
    assert_eq!(
        deps("nrt-pool-open", false),
        [
            "customop-abi",
            "nrt-pool-engine",
            "nrt-pool-host",
            "nrt-pool-qemu",
            "nrt-pool-schema"
        ],
        "the one way in: above the engine and both backends, below every front end"
    );
    for front_end in ["nrt-pool-cli", "nrt-pool-shim"] {
        assert!(
            deps(front_end, false).contains(&"nrt-pool-open".to_string()),
            "{front_end} opens its engines through nrt-pool-open"
        );
    }
    let shim = deps("nrt-pool-shim", false);
    assert!(
        !shim
            .iter()
            .any(|d| d == "nrt-pool-cli" || d == "nrt-pool-build"),
        "libnrt_pool_shim.so holds the seam and launch FFI only: {shim:?}"
    );
    assert_eq!(
        deps("nrt-pool-cli", true),
        Vec::<String>::new(),
        "nothing uses the CLI"
    );
    let abi = deps("abi-tests", false);
    assert!(
        abi.iter().all(|d| !d.starts_with("nrt-pool-")),
        "abi-tests reaches the simulated device without the Pool shim: {abi:?}"
    );
    assert!(abi.contains(&"nrt-sim-device".to_string()));
}

/// No package reaches itself through a dev-dependency (customop-device's bench once pulled
/// in the testkit, which depended back on the runtime).
#[test]
fn no_dev_dependency_cycle() {
    for package in [
        "customop-abi",
        "customop-device",
        "nrt-pool-schema",
        "nrt-pool-engine",
        "nrt-pool-build",
        "nrt-pool-host",
        "nrt-pool-qemu",
        "nrt-pool-open",
        "nrt-pool-shim",
        "nrt-pool-testkit",
    ] {
        let mut reached = Vec::new();
        for dev in deps_over(package, false, "dev") {
            reached.extend(deps(&dev, false));
            reached.push(dev);
        }
        assert!(
            !reached.iter().any(|d| d == package),
            "{package} reaches itself through its dev-dependencies: {reached:?}"
        );
    }
}

/// Rust sources under `dir` (recursively).
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every front end opens its engines through `nrt-pool-open`: none builds an
/// engine or a backend itself, or looks for the board or the runtime archives on its own.
#[test]
fn front_ends_open_engines_one_way() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["cli/src", "ffi/src", "python/src"] {
        rust_files(&root.join("nrt-pool-shim").join(dir), &mut files);
    }
    assert!(files.len() > 10, "the front ends' sources: {files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for own_way in [
            // The engine is reached through the opened Pool only.
            "PoolEngine",
            "HostBackend",
            "XtensaBackend::new(",
            "pool-board.elf",
            "libneuroncustomop.a\"",
            // The first API's verbs are test adapters: front ends make calls.
            "LaunchVerbs",
            "adapters::",
        ] {
            assert!(
                !text.contains(own_way),
                "{} opens or finds on its own ({own_way}): use nrt_pool_open",
                f.display()
            );
        }
    }
}

/// Inside the device runtime crate, the runtime never names the libc (the libc may use the
/// runtime's services).
#[test]
fn the_runtime_does_not_use_the_libc() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("customop-device/src/runtime"), &mut files);
    assert!(files.len() > 5, "the runtime's modules: {files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("crate::libc"),
            "{} uses the libc: the arrow runs libc -> runtime only",
            f.display()
        );
    }
}

/// Backends report typed outcomes: the Xtensa backend never writes the host
/// cores' control block, and the engine's launch, load and shape paths never read it (the
/// host backend decodes its own).
#[test]
fn only_the_host_backend_reads_the_control_block() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("nrt-pool-shim/qemu/src"), &mut files);
    for f in [
        "launch.rs",
        "load.rs",
        "shape.rs",
        "lib.rs",
        "call.rs",
        "derive.rs",
        "fault.rs",
        "target.rs",
        "backend.rs",
    ] {
        files.push(root.join("nrt-pool-shim/engine/src").join(f));
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for word in ["ControlBlock", "set_fault", "stdio_append", "CORE_DONE"] {
            assert!(
                !text.contains(word),
                "{} names {word}: backends return typed outcomes instead",
                f.display()
            );
        }
    }
}

/// One file of a crate, parsed.
struct Source {
    path: std::path::PathBuf,
    file: syn::File,
}

/// The Rust sources of the engine side, the device runtime and the provider, per crate.
fn crates() -> Vec<(String, Vec<Source>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![
        "customop-device/src".to_string(),
        "customop-device/abi/src".to_string(),
        "nrtucode-extisa/src".to_string(),
    ];
    for krate in [
        "engine", "host", "qemu", "ffi", "cli", "op-build", "schema", "python", "testkit", "open",
        "benchkit",
    ] {
        dirs.push(format!("nrt-pool-shim/{krate}/src"));
    }
    dirs.into_iter()
        .map(|dir| {
            let mut files = Vec::new();
            rust_files(&root.join(&dir), &mut files);
            files.sort();
            let sources = files
                .into_iter()
                .map(|path| {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let file = syn::parse_file(&text)
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    Source { path, file }
                })
                .collect();
            (dir, sources)
        })
        .collect()
}

/// The name a type path ends in (`crate::a::Foo<T>` -> `Foo`).
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Types defined in a file (structs, enums, unions, aliases), nested modules included.
#[derive(Default)]
struct Defined(std::collections::BTreeSet<String>);

impl<'a> syn::visit::Visit<'a> for Defined {
    fn visit_item_struct(&mut self, i: &'a syn::ItemStruct) {
        self.0.insert(i.ident.to_string());
    }
    fn visit_item_enum(&mut self, i: &'a syn::ItemEnum) {
        self.0.insert(i.ident.to_string());
    }
    fn visit_item_union(&mut self, i: &'a syn::ItemUnion) {
        self.0.insert(i.ident.to_string());
    }
    fn visit_item_type(&mut self, i: &'a syn::ItemType) {
        self.0.insert(i.ident.to_string());
    }
}

/// Inherent `impl` blocks of a file: (type, line).
#[derive(Default)]
struct Impls(Vec<(String, usize)>);

impl<'a> syn::visit::Visit<'a> for Impls {
    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        if i.trait_.is_none() {
            if let Some(name) = type_name(&i.self_ty) {
                self.0.push((name, i.impl_token.span.start().line));
            }
        }
        syn::visit::visit_item_impl(self, i);
    }
}

/// A newcomer finds every method of a type in one file: no inherent `impl` of a type sits
/// outside the file that defines it.
#[test]
fn no_impl_of_a_type_outside_its_own_module() {
    use syn::visit::Visit;
    let mut strays = Vec::new();
    for (krate, sources) in crates() {
        assert!(!sources.is_empty(), "{krate} has sources");
        for s in &sources {
            let mut impls = Impls::default();
            impls.visit_file(&s.file);
            let mut here = Defined::default();
            here.visit_file(&s.file);
            for (ty, line) in impls.0 {
                if !here.0.contains(&ty) {
                    strays.push(format!("{}:{line}: impl {ty}", s.path.display()));
                }
            }
        }
    }
    assert!(
        strays.is_empty(),
        "move these into the type's module, or make the part its own type:\n{}",
        strays.join("\n")
    );
}

/// Function bodies of a file: (name, first line, lines).
#[derive(Default)]
struct Functions(Vec<(String, usize, usize)>);

impl Functions {
    /// From the `fn` keyword to the closing brace (doc comments and attributes aside).
    fn add(&mut self, sig: &syn::Signature, body: &syn::Block) {
        let start = sig.fn_token.span.start().line;
        let end = body.brace_token.span.close().end().line;
        self.0.push((sig.ident.to_string(), start, end + 1 - start));
    }
}

impl<'a> syn::visit::Visit<'a> for Functions {
    fn visit_item_fn(&mut self, i: &'a syn::ItemFn) {
        self.add(&i.sig, &i.block);
        syn::visit::visit_item_fn(self, i);
    }
    fn visit_impl_item_fn(&mut self, i: &'a syn::ImplItemFn) {
        self.add(&i.sig, &i.block);
        syn::visit::visit_impl_item_fn(self, i);
    }
    fn visit_trait_item_fn(&mut self, i: &'a syn::TraitItemFn) {
        if let Some(body) = &i.default {
            self.add(&i.sig, body);
        }
        syn::visit::visit_trait_item_fn(self, i);
    }
}

/// The longest a function may be: long ones are split by meaning (steps with names), not
/// squeezed (replaced a 700-line file limit that invited squeezing).
const FUNCTION_LINES: usize = 120;

#[test]
fn no_function_over_120_lines() {
    use syn::visit::Visit;
    let mut long = Vec::new();
    for (_, sources) in crates() {
        for s in &sources {
            let mut fns = Functions::default();
            fns.visit_file(&s.file);
            for (name, line, n) in fns.0 {
                if n > FUNCTION_LINES {
                    long.push(format!("{}:{line}: {name} ({n} lines)", s.path.display()));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these into named steps:\n{}",
        long.join("\n")
    );
}

/// Each backend is a room of its own: the host backend's internals
/// (`nrt_pool_host::` modules: control block, cores, doorbells, pool) and the Xtensa
/// backend's (`nrt_pool_qemu::` modules) are reached by no other crate but through what
/// its crate root exports, and the backend-neutral engine names neither backend.
#[test]
fn no_crate_reaches_into_another_backends_internals() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut outside = Vec::new();
    for krate in [
        "engine", "host", "qemu", "cli", "ffi", "python", "open", "op-build", "schema",
    ] {
        rust_files(
            &root.join("nrt-pool-shim").join(krate).join("src"),
            &mut outside,
        );
    }
    assert!(
        outside.len() > 30,
        "the crates around the engine: {outside:?}"
    );
    let mut strays = Vec::new();
    for f in &outside {
        let text = std::fs::read_to_string(f).unwrap();
        let rooms = [
            (
                "nrt-pool-shim/host",
                &[
                    "nrt_pool_host::control",
                    "nrt_pool_host::core",
                    "nrt_pool_host::doorbell",
                    "nrt_pool_host::pool",
                ][..],
            ),
            (
                "nrt-pool-shim/qemu",
                &[
                    "nrt_pool_qemu::core::",
                    "nrt_pool_qemu::backend::",
                    "nrt_pool_qemu::protocol::",
                    "nrt_pool_qemu::layout::",
                    "nrt_pool_qemu::fault::",
                ][..],
            ),
        ];
        for (room, insides) in rooms {
            if f.starts_with(root.join(room)) {
                continue;
            }
            for inside in insides {
                if text.contains(inside) {
                    strays.push(format!("{} uses {inside}", f.display()));
                }
            }
        }
        if f.starts_with(root.join("nrt-pool-shim/engine")) {
            for backend in [
                "nrt_pool_host",
                "nrt_pool_qemu",
                "HostBackend",
                "XtensaBackend",
            ] {
                if text.contains(backend) {
                    strays.push(format!("{} names a backend: {backend}", f.display()));
                }
            }
        }
    }
    assert!(
        strays.is_empty(),
        "backend internals reached from outside:\n{}",
        strays.join("\n")
    );
}

/// Whether an item carries `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// The `use` trees of a file's items outside its test modules, nested modules included.
fn non_test_uses<'a>(items: &'a [syn::Item], out: &mut Vec<&'a syn::UseTree>) {
    for item in items {
        match item {
            syn::Item::Use(u) if !is_test_only(&u.attrs) => out.push(&u.tree),
            syn::Item::Mod(m) if !is_test_only(&m.attrs) => {
                if let Some((_, inner)) = &m.content {
                    non_test_uses(inner, out);
                }
            }
            _ => {}
        }
    }
}

/// Whether a use tree imports `super::*` (a parent's names wholesale).
fn is_super_glob(tree: &syn::UseTree) -> bool {
    match tree {
        syn::UseTree::Path(p) if p.ident == "super" => matches!(*p.tree, syn::UseTree::Glob(_)),
        syn::UseTree::Group(g) => g.items.iter().any(is_super_glob),
        _ => false,
    }
}

/// A file says where its names come from: no `use super::*` outside test modules (a
/// prelude hides which parts a module reaches).
#[test]
fn no_super_glob_imports_outside_tests() {
    let mut strays = Vec::new();
    for (krate, sources) in crates() {
        if !krate.starts_with("nrt-pool-shim/") {
            continue;
        }
        for s in &sources {
            let mut uses = Vec::new();
            non_test_uses(&s.file.items, &mut uses);
            if uses.iter().any(|u| is_super_glob(u)) {
                strays.push(s.path.display().to_string());
            }
        }
    }
    assert!(
        strays.is_empty(),
        "name what these files use instead of `use super::*`:\n{}",
        strays.join("\n")
    );
}

/// The module path of an engine source file (`check/notes.rs` -> `check::notes`).
fn module_of(src: &std::path::Path, file: &std::path::Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The modules a file's paths name (`crate::a::b`, `super::c`), outside its test modules,
/// resolved against `known` modules.
struct Reaches<'k> {
    here: Vec<String>,
    known: &'k std::collections::BTreeSet<Vec<String>>,
    found: std::collections::BTreeSet<Vec<String>>,
}

impl Reaches<'_> {
    fn add(&mut self, segments: Vec<String>) {
        let mut path: Vec<String> = match segments.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            Some("super") => {
                let mut p = self.here.clone();
                p.pop();
                p
            }
            _ => return,
        };
        let mut rest = segments[1..].iter().peekable();
        while let Some(s) = rest.peek() {
            if s.as_str() == "super" {
                path.pop();
                rest.next();
            } else {
                break;
            }
        }
        // The longest known module the path names.
        let mut best = None;
        for s in rest {
            path.push(s.clone());
            if self.known.contains(&path) {
                best = Some(path.clone());
            }
        }
        if let Some(m) = best {
            if m != self.here && !m.is_empty() {
                self.found.insert(m);
            }
        }
    }
}

/// Every path of a use tree, as segments.
fn use_paths(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            use_paths(&p.tree, next, out);
        }
        syn::UseTree::Name(n) => {
            let mut next = prefix;
            next.push(n.ident.to_string());
            out.push(next);
        }
        syn::UseTree::Rename(r) => {
            let mut next = prefix;
            next.push(r.ident.to_string());
            out.push(next);
        }
        syn::UseTree::Glob(_) => out.push(prefix),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix.clone(), out);
            }
        }
    }
}

impl<'a> syn::visit::Visit<'a> for Reaches<'_> {
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, Vec::new(), &mut paths);
        for p in paths {
            self.add(p);
        }
    }
    fn visit_path(&mut self, p: &'a syn::Path) {
        self.add(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// The engine's files form no circle (the call path once reached the checks and
/// the checks the call path; the profile the estimate and the estimate the profile): the
/// crate root (`lib.rs`, the engine's API, which names every part) aside, no file reaches
/// a file that reaches it back.
#[test]
fn no_circle_between_engine_files() {
    use syn::visit::Visit;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("nrt-pool-shim/engine/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let known: std::collections::BTreeSet<Vec<String>> =
        files.iter().map(|f| module_of(&src, f)).collect();
    let mut edges = std::collections::BTreeMap::new();
    for f in &files {
        let here = module_of(&src, f);
        if here.is_empty() || f.ends_with("bin") {
            continue;
        }
        let file = syn::parse_file(&std::fs::read_to_string(f).unwrap()).unwrap();
        let mut r = Reaches {
            here: here.clone(),
            known: &known,
            found: Default::default(),
        };
        r.visit_file(&file);
        edges.insert(here, r.found);
    }
    assert!(edges.len() > 20, "the engine's files: {}", edges.len());
    // Each pair that reaches both ways (directly or through others).
    let reach = |from: &Vec<String>| {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let mut circles = Vec::new();
    for (m, direct) in &edges {
        for n in direct {
            if reach(n).contains(m) {
                circles.push(format!("{} <-> {}", m.join("::"), n.join("::")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "files that reach each other (a part for both, or one way only):\n{}",
        circles.join("\n")
    );
}

/// No front end reads the environment: `nrt-pool-open` is its one reader, so
/// the FFI, the CLI, the Python binding and the Python package take the same variables the
/// same way. (The compiler a build runs, `$CXX`, is the build's, and the FFI sequence
/// fuzzer's own tool paths are a test program's.)
#[test]
fn no_front_end_reads_the_environment() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["cli/src", "ffi/src", "python/src"] {
        rust_files(&root.join("nrt-pool-shim").join(dir), &mut files);
    }
    let mut strays = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let reads = line.contains("env::var(") || line.contains("env::var_os(");
            let allowed = line.contains("\"CXX\"") || f.ends_with("sequence.rs");
            if reads && !allowed {
                strays.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    let package = root.join("nrt-pool-shim/python/python/gpsimd_open");
    for e in std::fs::read_dir(&package).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "py") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, line) in text.lines().enumerate() {
            let reads = ["os.environ.get(", "os.getenv(", "environ.get("]
                .iter()
                .any(|r| line.contains(r));
            if reads {
                strays.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        strays.is_empty(),
        "read these through nrt_pool_open::Environment (Python: _native.environment()):\n{}",
        strays.join("\n")
    );
}
