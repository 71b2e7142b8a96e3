//! Where the programs around the cores are: QEMU with the nrt-pool machine, its profile
//! plugin, and the gdb for the cores (each beside the board in a build tree, or under the
//! installed prefix's libexec folder).

use std::path::{Path, PathBuf};

/// The emulator: QEMU built with the nrt-pool machine (`machine/build-qemu.sh`; `make
/// customop-archives` puts it beside the board).
pub const QEMU: &str = "qemu-system-xtensa";
/// Names the emulator where it is not beside the board.
pub const QEMU_ENV: &str = "NRT_POOL_QEMU";

/// The QEMU for cores under `board`: `$NRT_POOL_QEMU`, else the one beside the board (a
/// build tree), else the installed one (`PREFIX/libexec/gpsimd-open/` for a board in
/// `PREFIX/lib/gpsimd-open/xtensa-q7-none-elf/`).
pub fn qemu_for(board: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os(QEMU_ENV) {
        return PathBuf::from(p);
    }
    let beside = board.with_file_name(QEMU);
    let installed = board
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .and_then(Path::parent)
        .map(|prefix| prefix.join("libexec/gpsimd-open").join(QEMU));
    match installed {
        Some(i) if !beside.exists() && i.exists() => i,
        _ => beside,
    }
}

/// The gdb for Xtensa cores (built beside QEMU from Debian's gdb source for the core's
/// configuration, D83).
pub const GDB: &str = "xtensa-elf-gdb";
/// Names that gdb where it is not beside the board.
pub const GDB_ENV: &str = "NRT_POOL_XTENSA_GDB";

/// The gdb for cores under `board`: `$NRT_POOL_XTENSA_GDB`, else the one beside the
/// board's QEMU (a build tree or the installed libexec folder).
pub fn gdb_for(board: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os(GDB_ENV) {
        return PathBuf::from(p);
    }
    let qemu = qemu_for(board);
    let beside = board.with_file_name(GDB);
    match qemu.parent().map(|d| d.join(GDB)) {
        Some(i) if !beside.exists() && i.exists() => i,
        _ => beside,
    }
}

/// The TCG plugin that profiles kernels, beside the QEMU it runs in (build-qemu.sh).
pub const PROFILE_PLUGIN: &str = "libnrt-pool-profile.so";

/// The TCG plugin that records a checked launch's tensor reads and writes (D101), beside
/// the QEMU it runs in.
pub const ACCESS_PLUGIN: &str = "libnrt-pool-access.so";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemu_is_found_beside_the_board_or_under_the_installed_prefix() {
        if std::env::var_os(QEMU_ENV).is_some() {
            eprintln!("{QEMU_ENV} is set; it names the emulator instead");
            return;
        }
        let root = tempfile::tempdir().unwrap();
        // A build tree: the board and QEMU side by side.
        let build = root.path().join("target/customop/xtensa-q7-none-elf");
        std::fs::create_dir_all(&build).unwrap();
        std::fs::write(build.join(QEMU), b"").unwrap();
        assert_eq!(qemu_for(&build.join("pool-board.elf")), build.join(QEMU));
        // An installed prefix: QEMU under libexec.
        let prefix = root.path().join("opt/gpsimd-open");
        let boards = prefix.join("lib/gpsimd-open/xtensa-q7-none-elf");
        let libexec = prefix.join("libexec/gpsimd-open");
        std::fs::create_dir_all(&boards).unwrap();
        std::fs::create_dir_all(&libexec).unwrap();
        std::fs::write(libexec.join(QEMU), b"").unwrap();
        assert_eq!(qemu_for(&boards.join("pool-board.elf")), libexec.join(QEMU));
        // Neither: the path beside the board, which the spawn error then names.
        let bare = root.path().join("elsewhere/pool-board.elf");
        assert_eq!(qemu_for(&bare), root.path().join("elsewhere").join(QEMU));
    }
}
