//! The device build's stack frames, read from its Xtensa assembly: what each function's
//! `entry` reserves and which functions it calls directly. Host builds in the device's data
//! model are given this table so host cores judge a kernel's stack by the device's frames,
//! not x86's (the GCC plugin's `device_stack` pass, D118).
//!
//! GCC for Xtensa (windowed ABI) opens every function with `entry sp, N`; a frame of
//! 32 KiB or more opens with `entry sp, 32` and then moves the stack pointer by the rest
//! (`movi aX, K` [`slli aX, aX, S`] or `l32r aX, .LCn`, `sub aY, sp, aX`, `movsp sp, aY`).
//! A variable-length array's `movsp` later in the body is not a frame: it is not counted.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Functions' frames and direct calls of one translation unit's device build.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceFrames {
    /// Assembler name -> bytes its frame takes on a Pool core.
    pub frames: BTreeMap<String, u32>,
    /// (caller, callee) pairs of direct calls (`call4/8/12 NAME`).
    pub calls: BTreeSet<(String, String)>,
    /// Functions other objects can call (`.global`).
    pub globals: BTreeSet<String>,
    /// The lowest offset from its stack pointer a function's code reaches (a load or
    /// store, or an address taken there); none: it touches no byte of its frame. A Pool
    /// core's stack overflows on the first access below the stack, so a frame counts
    /// down to here.
    pub floors: BTreeMap<String, u32>,
    /// Functions with a return instruction (one without never returns: it ends the kernel).
    pub returning: BTreeSet<String>,
    /// Weak definitions (`.weak`): another unit's strong one replaces them at link time.
    pub weak: BTreeSet<String>,
}

/// The runtime's functions whose stack a host build charges when a call takes them, not
/// at every call that could (D122): each begins a deep path most calls do not take
/// ([`customop_abi::stack::CHARGED_PATHS`]: printf's float conversion, checking mode's note
/// writer, libm's reductions by pi/2). The runtime checks the path's slot of
/// `__customop_stack_charged` on entry to each (`stack::charged_path`; for libm's, in the
/// runtime's math function before it calls libm, under libm's own conditions).
fn charged_slot(name: &str) -> Option<usize> {
    customop_abi::stack::charged_path_of(name).map(|p| p.slot)
}

fn is_charged(name: &str) -> bool {
    charged_slot(name).is_some()
}

/// Visits each function of `roots` and what it calls (`callees`), every one once, after
/// its callees: depth first with an explicit stack; a callee already on the path (a
/// cycle) is not followed, so a recursion counts its frames once.
fn post_order<'a>(
    roots: impl Iterator<Item = &'a String>,
    callees: &BTreeMap<&'a str, Vec<&'a str>>,
    mut visit: impl FnMut(&'a str),
) {
    let mut done: BTreeSet<&str> = BTreeSet::new();
    for root in roots {
        if done.contains(root.as_str()) {
            continue;
        }
        let mut on_path: BTreeSet<&str> = BTreeSet::new();
        let mut stack: Vec<(&str, usize)> = vec![(root.as_str(), 0)];
        on_path.insert(root.as_str());
        while let Some((f, i)) = stack.pop() {
            match callees.get(f).and_then(|c| c.get(i)).copied() {
                Some(g) if !done.contains(g) && !on_path.contains(g) => {
                    stack.push((f, i + 1));
                    stack.push((g, 0));
                    on_path.insert(g);
                }
                Some(_) => stack.push((f, i + 1)),
                None => {
                    visit(f);
                    done.insert(f);
                    on_path.remove(f);
                }
            }
        }
    }
}

/// The stack pointer (GCC writes `sp`, rustc `a1`).
fn is_sp(r: &str) -> bool {
    r == "sp" || r == "a1"
}

impl DeviceFrames {
    /// Reads GCC's Xtensa assembly (`-S -mabi=windowed`).
    pub fn from_assembly(text: &str) -> DeviceFrames {
        let mut out = DeviceFrames::default();
        let mut literals: HashMap<&str, u32> = HashMap::new();
        // Literals naming a symbol, and which register last loaded one (rustc calls
        // through them: `l32r a8, .LCPI0_1` then `callx8 a8`).
        let mut symbols: HashMap<&str, &str> = HashMap::new();
        let mut loaded: HashMap<&str, &str> = HashMap::new();
        // Stack slots of the current function holding such a symbol: where registers run
        // short, rustc spills the address once and reloads it before each call
        // (`s32i a8, a1, 4` ... `l32i a8, a1, 4`, `callx8 a8`: printf's digit loop
        // calling `__udivdi3`, D128).
        let mut spilled: HashMap<&str, &str> = HashMap::new();
        let mut functions: BTreeSet<&str> = BTreeSet::new();
        let mut current: Option<&str> = None;
        // The current function's prologue while it may still be moving the stack pointer.
        let mut prologue: Option<Prologue> = None;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix(".literal ") {
                if let Some((name, value)) = rest.split_once(',') {
                    let value = value.trim();
                    match parse_number(value) {
                        Some(v) => {
                            literals.insert(name.trim(), v);
                        }
                        None => {
                            symbols.insert(name.trim(), value);
                        }
                    }
                }
                continue;
            }
            if let Some(name) = line
                .strip_prefix(".globl")
                .or_else(|| line.strip_prefix(".global"))
            {
                out.globals.insert(name.trim().to_string());
                continue;
            }
            if let Some(name) = line.strip_prefix(".weak") {
                out.weak.insert(name.trim().to_string());
                continue;
            }
            if let Some(rest) = line.strip_prefix(".type") {
                if let Some((name, kind)) = rest.trim().split_once(',') {
                    if kind.trim() == "@function" {
                        functions.insert(name.trim());
                    }
                }
                continue;
            }
            if let Some(label) = line.strip_suffix(':') {
                if functions.contains(label) {
                    current = Some(label);
                    prologue = None;
                    loaded.clear();
                    spilled.clear();
                }
                continue;
            }
            if line.starts_with('.') {
                continue;
            }
            let Some(function) = current else { continue };
            let (op, args) = match line.split_once(char::is_whitespace) {
                Some((op, args)) => (op, args.trim()),
                None => (line, ""),
            };
            let args: Vec<&str> = args.split(',').map(str::trim).collect();
            if op == "entry" {
                if let Some(n) = args.get(1).and_then(|a| parse_number(a)) {
                    out.frames.insert(function.to_string(), n);
                    prologue = Some(Prologue {
                        entry: n,
                        values: HashMap::new(),
                        steps: 0,
                    });
                }
                continue;
            }
            let reached = frame_offset(op, &args);
            if matches!(op, "retw" | "retw.n" | "ret" | "ret.n") {
                out.returning.insert(function.to_string());
            }
            if let Some(off) = reached {
                let floor = out.floors.entry(function.to_string()).or_insert(off);
                *floor = (*floor).min(off);
            }
            if let Some(callee) = direct_callee(op, &args, &loaded) {
                out.calls.insert((function.to_string(), callee.to_string()));
            }
            follow_symbols(op, &args, &symbols, &mut loaded, &mut spilled);
            prologue = prologue.and_then(|p| {
                p.step(op, &args, &literals, |n| {
                    out.frames.insert(function.to_string(), n);
                })
            });
        }
        out
    }

    /// Adds another unit's functions (an archive's members). A strong definition replaces
    /// a weak one of the same name, as the linker chooses.
    pub fn merge(&mut self, mut other: DeviceFrames) {
        let strong = |f: &DeviceFrames, n: &str| f.frames.contains_key(n) && !f.weak.contains(n);
        let theirs_lose: Vec<String> = other
            .weak
            .iter()
            .filter(|n| strong(self, n))
            .cloned()
            .collect();
        let mine_lose: Vec<String> = self
            .weak
            .iter()
            .filter(|n| strong(&other, n))
            .cloned()
            .collect();
        for n in theirs_lose {
            other.forget(&n);
        }
        for n in mine_lose {
            self.forget(&n);
        }
        for (name, n) in other.frames {
            let have = self.frames.entry(name).or_insert(0);
            *have = (*have).max(n);
        }
        for (name, floor) in other.floors {
            let have = self.floors.entry(name).or_insert(floor);
            *have = (*have).min(floor);
        }
        self.calls.extend(other.calls);
        self.globals.extend(other.globals);
        self.returning.extend(other.returning);
        self.weak.extend(other.weak);
    }

    /// Drops what this unit says of the function `name`.
    fn forget(&mut self, name: &str) {
        self.frames.remove(name);
        self.floors.remove(name);
        self.returning.remove(name);
        self.weak.remove(name);
        self.calls.retain(|(a, _)| a != name);
    }

    /// How far below its caller's stack pointer `function`'s own code reaches: its frame
    /// down to its floor (0: it touches none of it).
    pub fn touch(&self, function: &str) -> u32 {
        let frame = self.frames.get(function).copied().unwrap_or(0);
        self.floors
            .get(function)
            .map_or(0, |floor| frame.saturating_sub(*floor))
    }

    /// How deep a call of each function reaches: its own touch, or its frame and its
    /// deepest direct callee's reach (a callee that touches nothing adds nothing) (a function on a cycle counts its frame once; indirect
    /// calls are not seen).
    /// A call that ends the kernel (of a function that never returns: a broken rule's
    /// report, a panic) is not a path a running kernel takes: it does not count; nor does
    /// the runtime's rule check (`customop_abi::rule::require`), which touches its frame
    /// only to report a broken rule.
    /// A call of a function that begins a path the runtime charges when taken
    /// ([`customop_abi::stack::CHARGED_PATHS`]) is left out too: its depth is
    /// [`DeviceFrames::charged`]'s.
    pub fn reach(&self) -> BTreeMap<String, u32> {
        let ends = |name: &str| {
            (self.frames.contains_key(name) && !self.returning.contains(name))
                || ["fatal", "panic", "abort", "4rule7require"]
                    .iter()
                    .any(|w| name.contains(w))
                || is_charged(name)
        };
        let mut callees: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (a, b) in self.calls.iter().filter(|(_, b)| !ends(b)) {
            callees.entry(a.as_str()).or_default().push(b.as_str());
        }
        let mut reach: BTreeMap<String, u32> = BTreeMap::new();
        post_order(self.frames.keys(), &callees, |f| {
            let own = self.frames.get(f).copied().unwrap_or(0);
            let deepest = callees
                .get(f)
                .into_iter()
                .flatten()
                .filter_map(|g| reach.get(*g).filter(|r| **r > 0))
                .max()
                .map_or(0, |r| own.saturating_add(*r));
            reach.insert(f.to_string(), self.touch(f).max(deepest));
        });
        reach
    }

    /// How deep a call of each function reaches on the device when it takes a path the
    /// runtime charges when taken, per path ([`customop_abi::stack::CHARGED_PATHS`], by
    /// slot): the deepest path of frames down to a call of a function that begins it, and
    /// that function's reach. A path to one charged function may pass through another (the
    /// large reduction lies below the medium one: a call taking it takes both). Functions
    /// no such path leaves out (D122, D132).
    pub fn charged(&self) -> BTreeMap<(String, usize), u32> {
        let reach = self.reach();
        let mut callees: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (a, b) in &self.calls {
            callees.entry(a.as_str()).or_default().push(b.as_str());
        }
        let mut all = BTreeMap::new();
        for slot in 0..customop_abi::stack::CHARGED_SLOTS {
            let mut charged: BTreeMap<String, Option<u32>> = BTreeMap::new();
            // A function that begins this path ends it: its own reach is what it adds.
            let begins = |g: &str| charged_slot(g) == Some(slot);
            let followed: BTreeMap<&str, Vec<&str>> = callees
                .iter()
                .map(|(f, c)| (*f, c.iter().copied().filter(|g| !begins(g)).collect()))
                .collect();
            post_order(self.frames.keys(), &followed, |f| {
                let own = self.frames.get(f).copied().unwrap_or(0);
                let deepest = callees
                    .get(f)
                    .into_iter()
                    .flatten()
                    .filter_map(|g| match begins(g) {
                        true => Some(reach.get(*g).copied().unwrap_or(0)),
                        false => charged.get(*g).copied().flatten(),
                    })
                    .max();
                charged.insert(f.to_string(), deepest.map(|d| own.saturating_add(d)));
            });
            all.extend(
                charged
                    .into_iter()
                    .filter_map(|(f, d)| Some(((f, slot), d?))),
            );
        }
        all
    }

    /// A runtime's table for host builds: `D NAME BYTES`, how deep a call of each global
    /// function reaches on the device, and `R NAME SLOT BYTES` for each path the runtime
    /// charges when taken that a call of it can take, how deep that path reaches (D122,
    /// D132).
    pub fn to_runtime_text(&self) -> String {
        let reach = self.reach();
        let charged = self.charged();
        let mut s = String::new();
        // (Rust's own symbols are global across its codegen units; op code calls none.)
        for name in self.globals.iter().filter(|n| !n.starts_with("_R")) {
            if let Some(n) = reach.get(name) {
                s.push_str(&format!("D {name} {n}\n"));
            }
            for slot in 0..customop_abi::stack::CHARGED_SLOTS {
                if let Some(n) = charged.get(&(name.clone(), slot)) {
                    s.push_str(&format!("R {name} {slot} {n}\n"));
                }
            }
        }
        s
    }

    /// The table the plugin reads: `F NAME BYTES TOUCH` per function (its frame, and how
    /// much of it its code reaches), `C CALLER CALLEE` per call.
    pub fn to_plugin_text(&self) -> String {
        let mut s = String::new();
        for (name, n) in &self.frames {
            s.push_str(&format!("F {name} {n} {}\n", self.touch(name)));
        }
        for (a, b) in &self.calls {
            s.push_str(&format!("C {a} {b}\n"));
        }
        s
    }
}

/// The offset from the stack pointer an instruction reaches into its function's frame (a
/// load or store there, or the address of a byte there taken).
fn frame_offset(op: &str, args: &[&str]) -> Option<u32> {
    match (op, args) {
        (
            "l8ui" | "l16ui" | "l16si" | "l32i" | "l32i.n" | "s8i" | "s16i" | "s32i" | "s32i.n"
            | "lsi" | "ssi" | "lsip" | "ssip" | "addi" | "addi.n" | "addmi",
            [_, base, off],
        ) if is_sp(base) => parse_number(off),
        ("mov" | "mov.n", [_, from]) if is_sp(from) => Some(0),
        ("or", [_, a, b]) if is_sp(a) && is_sp(b) => Some(0),
        _ => None,
    }
}

/// Follows one instruction's effect on which registers (`loaded`) and stack slots
/// (`spilled`, by offset from the stack pointer) hold a literal's symbol: a load of the
/// literal, a register copy, a spill and its reload; anything else written forgets it.
fn follow_symbols<'a>(
    op: &str,
    args: &[&'a str],
    symbols: &HashMap<&str, &'a str>,
    loaded: &mut HashMap<&'a str, &'a str>,
    spilled: &mut HashMap<&'a str, &'a str>,
) {
    let held = |loaded: &HashMap<&'a str, &'a str>, r: &str| loaded.get(r).copied();
    let value = match (op, args) {
        ("l32r", [_, lit]) => symbols.get(lit).copied(),
        ("mov" | "mov.n", [_, r]) => held(loaded, r),
        ("or", [_, r, q]) if r == q => held(loaded, r),
        ("l32i" | "l32i.n", [_, sp, off]) if is_sp(sp) => spilled.get(off).copied(),
        ("s32i" | "s32i.n", [r, sp, off]) if is_sp(sp) => {
            match held(loaded, r) {
                Some(sym) => spilled.insert(off, sym),
                None => spilled.remove(off),
            };
            return;
        }
        // Other stores write no register.
        ("s8i" | "s16i" | "s32i" | "s32i.n", _) => return,
        _ => None,
    };
    if let Some(dest) = args.first() {
        match value {
            Some(sym) => loaded.insert(dest, sym),
            None => loaded.remove(dest),
        };
    }
}

/// The function a call instruction names: `callN f`, or `callxN aR` where `aR` was last
/// loaded from a literal naming `f` (`loaded`).
fn direct_callee<'a>(
    op: &str,
    args: &[&'a str],
    loaded: &HashMap<&str, &'a str>,
) -> Option<&'a str> {
    match op.strip_prefix("call")? {
        "0" | "4" | "8" | "12" => args.first().copied(),
        "x0" | "x4" | "x8" | "x12" => args.first().and_then(|r| loaded.get(r).copied()),
        _ => None,
    }
}

/// A large frame's prologue after `entry sp, 32`: the rest of the frame is a constant
/// (`movi` [`slli`] or `l32r` of a literal) subtracted from the stack pointer and moved into
/// it (`sub aY, sp, aX`, `movsp sp, aY`), with other instructions scheduled between.
struct Prologue {
    entry: u32,
    /// Registers holding a known constant (or, after `sub`, the bytes below sp).
    values: HashMap<String, u32>,
    steps: u32,
}

impl Prologue {
    /// How many instructions after `entry` the stack pointer may still move.
    const WINDOW: u32 = 12;

    /// Follows one instruction; calls `frame` with the whole frame at its `movsp`. None:
    /// the prologue is over.
    fn step(
        mut self,
        op: &str,
        args: &[&str],
        literals: &HashMap<&str, u32>,
        frame: impl FnOnce(u32),
    ) -> Option<Prologue> {
        self.steps += 1;
        if self.steps > Self::WINDOW
            || op.starts_with('b')
            || op.starts_with('j')
            || op.starts_with("call")
            || op.starts_with("ret")
        {
            return None;
        }
        let known = |v: &HashMap<String, u32>, r: &str| v.get(r).copied();
        let value = match (op, args) {
            ("movi" | "movi.n", [_, v]) => parse_number(v),
            ("l32r", [_, lit]) => literals.get(lit).copied(),
            ("slli", [_, src, by]) => known(&self.values, src)
                .zip(parse_number(by))
                .map(|(v, by)| v.checked_shl(by).unwrap_or(0)),
            ("sub", [_, sp, x]) if is_sp(sp) => known(&self.values, x),
            ("movsp", [sp, r]) if is_sp(sp) => {
                if let Some(more) = known(&self.values, r) {
                    frame(self.entry.saturating_add(more));
                }
                return None;
            }
            _ => None,
        };
        // Whatever the instruction writes (its first operand) now holds `value`, if known.
        if let Some(dest) = args.first() {
            match value {
                Some(v) => {
                    self.values.insert(dest.to_string(), v);
                }
                None => {
                    self.values.remove(*dest);
                }
            }
        }
        Some(self)
    }
}

fn parse_number(s: &str) -> Option<u32> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASM: &str = "\t.section\t.text._ZL4deepiPVi,\"ax\",@progbits
\t.align\t4
\t.type\t_ZL4deepiPVi, @function
_ZL4deepiPVi:
.LFB3095:
\tentry\tsp, 48
\tmemw
\ts32i.n\ta2, sp, 0
\tcall8\t_ZL4deepiPVi
\tretw.n
\t.literal_position
\t.literal .LC0, 400000
\t.type\tbig, @function
big:
\tentry\tsp, 32
\tl32r\ta8, .LC0
\tsub\ta8, sp, a8
\tmovsp\tsp, a8
\tcall8\tg
\tretw.n
\t.type\tmid, @function
mid:
\tentry\tsp, 32
\tmovi\ta8, 0x271
\tslli\ta8, a8, 6
\tsub\ta8, sp, a8
\tmovsp\tsp, a8
\tretw.n
\t.literal .LC5, 98304
\t.type\tmixed, @function
mixed:
\tentry\tsp, 32
\tl32r\ta8, .LC5
\tmovi.n\ta11, 1
\tsub\ta8, sp, a8
\tmovsp\tsp, a8
\tretw.n
\t.type\tvla, @function
vla:
\tentry\tsp, 32
\taddi.n\ta2, a2, 15
\tsub\ta2, sp, a2
\tmov.n\ta7, sp
\tmovsp\tsp, a2
\tcallx8\ta8
\tretw.n
\t.literal .LCPI1_0, leaf
\t.type\tviax, @function
viax:
\tentry\ta1, 32
\tl32r\ta8, .LCPI1_0
\tcallx8\ta8
\tretw.n
\t.type\tdata, @object
data:
\t.word 1
";

    #[test]
    fn frames_and_calls_come_from_entry_and_the_prologue() {
        let f = DeviceFrames::from_assembly(ASM);
        assert_eq!(f.frames["_ZL4deepiPVi"], 48);
        assert_eq!(f.frames["big"], 400_032, "l32r of a literal");
        assert_eq!(f.frames["mid"], 40_032, "movi and slli");
        assert_eq!(f.frames["mixed"], 98_336, "other instructions between");
        assert_eq!(
            f.frames["vla"], 32,
            "a variable-length array is not the frame"
        );
        assert!(!f.frames.contains_key("data"));
        assert!(f
            .calls
            .contains(&("_ZL4deepiPVi".to_string(), "_ZL4deepiPVi".to_string())));
        assert!(f.calls.contains(&("big".to_string(), "g".to_string())));
        assert!(
            f.calls.contains(&("viax".to_string(), "leaf".to_string())),
            "a call through a literal naming its callee"
        );
        assert_eq!(f.calls.len(), 3, "an indirect call names no callee");
        let text = f.to_plugin_text();
        assert!(
            text.contains("F big 400032 0\n") && text.contains("C big g\n"),
            "{text}"
        );
        assert!(text.contains("F _ZL4deepiPVi 48 48\n"), "{text}");
    }

    #[test]
    fn a_callee_whose_address_was_spilled_and_reloaded_is_followed() {
        // rustc's digit loop: the divide routine's address spilled once (through a copy),
        // reloaded before each call; a slot overwritten by another value names nothing.
        let asm = "\t.literal .LCPI9_4, __udivdi3\n\t.literal .LCPI9_5, __muldi3\n\
                   \t.type digits,@function\ndigits:\n\tentry a1, 80\n\
                   \tl32r a8, .LCPI9_4\n\tor a9, a8, a8\n\ts32i a9, a1, 4\n\
                   \tl32r a8, .LCPI9_5\n\ts32i a8, a1, 0\n\tmovi a8, 3\n\ts32i a8, a1, 0\n\
                   .LBB9_4:\n\tl32i a8, a1, 4\n\tcallx8 a8\n\tl32i a8, a1, 0\n\tcallx8 a8\n\
                   \tretw.n\n";
        let f = DeviceFrames::from_assembly(asm);
        let callees: Vec<&str> = f.calls.iter().map(|(_, b)| b.as_str()).collect();
        assert_eq!(callees, ["__udivdi3"], "{:?}", f.calls);
    }

    #[test]
    fn a_charged_path_is_left_out_of_the_reach_and_given_its_own_depth() {
        let float = "_RNvNtNtCs1_14neuroncustomop4libc6printf5float";
        let f = DeviceFrames::from_assembly(&format!(
            "\t.globl printf\n\t.type printf, @function\nprintf:\n\tentry sp, 32\n\
             \ts32i a2, sp, 0\n\tcall8 format\n\tretw.n\n\
             \t.type format, @function\nformat:\n\tentry sp, 336\n\ts32i a2, sp, 0\n\
             \tcall8 {float}\n\tcall8 digits\n\tretw.n\n\
             \t.type {float}, @function\n{float}:\n\tentry sp, 848\n\ts32i a2, sp, 0\n\
             \tcall8 digits\n\tretw.n\n\
             \t.type digits, @function\ndigits:\n\tentry sp, 64\n\ts32i a2, sp, 0\n\tretw.n\n\
             \t.globl puts\n\t.type puts, @function\nputs:\n\tentry sp, 48\n\
             \ts32i a2, sp, 0\n\tretw.n\n"
        ));
        let reach = f.reach();
        // printf's own path: its frame, format's and digits' (the float path left out).
        assert_eq!(reach["printf"], 32 + 336 + 64);
        assert_eq!(reach[float], 848 + 64);
        // Taking the float path: the frames down to its call, then its own reach.
        let charged = f.charged();
        let slot = customop_abi::stack::PRINTF_FLOAT.slot;
        assert_eq!(charged[&("printf".into(), slot)], 32 + 336 + 848 + 64);
        assert_eq!(charged.len(), 2, "printf and format: {charged:?}");
        assert_eq!(
            f.to_runtime_text(),
            format!("D printf 432\nR printf {slot} 1280\nD puts 48\n")
        );
    }

    #[test]
    fn a_charged_path_below_another_is_charged_through_it() {
        // sinf reduces inline (k_sinf), through rem_pio2f (the medium reduction), and
        // rem_pio2f through rem_pio2_large (the large one) for huge arguments.
        let medium = "_RNvNtNtCs1_4libm4math9rem_pio2f9rem_pio2f";
        let large = "_RNvNtNtCs1_4libm4math14rem_pio2_large14rem_pio2_large";
        let f = DeviceFrames::from_assembly(&format!(
            "\t.globl sinf\n\t.type sinf, @function\nsinf:\n\tentry sp, 48\n\
             \ts32i a2, sp, 0\n\tcall8 k_sinf\n\tcall8 {medium}\n\tretw.n\n\
             \t.type k_sinf, @function\nk_sinf:\n\tentry sp, 32\n\ts32i a2, sp, 0\n\tretw.n\n\
             \t.type {medium}, @function\n{medium}:\n\tentry sp, 64\n\ts32i a2, sp, 0\n\
             \tcall8 {large}\n\tretw.n\n\
             \t.type {large}, @function\n{large}:\n\tentry sp, 800\n\ts32i a2, sp, 0\n\tretw.n\n"
        ));
        let (m, l) = (
            customop_abi::stack::MEDIUM_REDUCTION.slot,
            customop_abi::stack::LARGE_REDUCTION.slot,
        );
        // A small argument's path; the medium reduction's (without the large one below
        // it); the large reduction's, through the medium one.
        assert_eq!(
            f.to_runtime_text(),
            format!(
                "D sinf {}\nR sinf {l} {}\nR sinf {m} {}\n",
                48 + 32,
                48 + 64 + 800,
                48 + 64
            )
        );
    }

    #[test]
    fn a_runtime_table_gives_each_global_function_its_deepest_reach() {
        let unit = |s: &str| DeviceFrames::from_assembly(s);
        let mut all = unit(
            "\t.globl top\n\t.type top, @function\ntop:\n\tentry sp, 32\n\tcall8 mid\n\tcall8 leaf\n\
             \tretw.n\n\t.type mid, @function\nmid:\n\tentry sp, 64\n\ts32i a2, sp, 0\n\tcall8 leaf\n\
             \tcall8 mid\n\tcall8 stop\n\tretw.n\n\t.type stop, @function\nstop:\n\tentry sp, 4000\n\
             \tmov.n a10, sp\n\tcall8 stop\n",
        );
        all.merge(unit(
            "\t.global leaf\n\t.type leaf, @function\nleaf:\n\tentry a1, 48\n\ts32i.n a2, a1, 8\n\
             \tcallx8 a2\n\tretw\n",
        ));
        assert_eq!(all.touch("leaf"), 40, "its frame down to its lowest store");
        assert_eq!(all.touch("top"), 0, "no byte of its frame touched");
        assert_eq!(all.touch("stop"), 4000, "its frame's address taken");
        let reach = all.reach();
        assert_eq!(reach["leaf"], 40);
        assert_eq!(
            reach["mid"],
            64 + 40,
            "its recursion counted once, the path that never returns not"
        );
        assert_eq!(reach["top"], 32 + 64 + 40);
        assert_eq!(
            all.to_runtime_text(),
            "D leaf 40\nD top 136\n",
            "globals only"
        );
        // A weak definition gives way to a strong one, whichever comes first.
        let weak =
            "\t.weak leaf\n\t.type leaf, @function\nleaf:\n\tentry sp, 900\n\tmov a2, sp\n\tretw\n";
        let mut first = unit(weak);
        first.merge(all.clone());
        assert_eq!(first.reach()["leaf"], 40);
        let mut last = all.clone();
        last.merge(unit(weak));
        assert_eq!(last.reach()["leaf"], 40);
    }
}
