//! `strict_alignment`: the target's word loads and stores must be aligned (the device's
//! Xtensa cores; the 32-bit RISC-V build), so the runtime's copies align first (D85).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(strict_alignment)");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if !matches!(arch.as_str(), "x86_64" | "x86" | "aarch64") {
        println!("cargo::rustc-cfg=strict_alignment");
    }
}
