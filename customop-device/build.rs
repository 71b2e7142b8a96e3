//! `strict_alignment`: the target's word loads and stores must be aligned (the device's
//! Xtensa cores; the 32-bit RISC-V build), so the runtime's copies align first (D85).
//!
//! `device_libc`: the archive carries the device's whole C library under C names (ctype,
//! string, stdio, strtol, errno, the C++ runtime): device targets, and i386, where host
//! cores run op code in the device's data model against the device's libraries (D97).
//! x86-64 host builds link the system's C library for those instead.
//!
//! `alloc_sites`: the archive's C unit `xtensa/alloc.c` defines `malloc`, `calloc`,
//! `realloc`, `new` and `new[]`, each passing its caller to the runtime (the device-model
//! archives: Xtensa and i386), so a leaked block names the line that made it (D104).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(strict_alignment)");
    println!("cargo::rustc-check-cfg=cfg(alloc_sites)");
    println!("cargo::rustc-check-cfg=cfg(device_libc)");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !matches!(arch.as_str(), "x86_64" | "x86" | "aarch64") {
        println!("cargo::rustc-cfg=strict_alignment");
    }
    if matches!(arch.as_str(), "x86" | "xtensa") {
        println!("cargo::rustc-cfg=alloc_sites");
    }
    if os == "none" || arch == "x86" {
        println!("cargo::rustc-cfg=device_libc");
    }
}
