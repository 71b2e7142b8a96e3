//! One way into the emulated Pool engine. Every front end (the launch FFI, the `nrt-pool`
//! CLI, the Python package, the demo) opens a [`Pool`] here, the one handle that owns
//! everything before a call, so each finds the same things the same way:
//! - the backend by the file: a Pool image (`libNAME.pool`) runs on Xtensa cores under QEMU,
//!   a host library (`libNAME.so`) on host cores; asking for the other ISA takes the build
//!   beside it (`nrt-pool build --device-image` writes both);
//! - the QEMU board ([`installation`]), relative to the program or library this code is
//!   linked into (an installed prefix, a build tree, a Python package), once;
//! - the environment's defaults for every call ([`Environment`]), read in one place: no
//!   front end and no other crate of the shim reads a `GPSIMD_OPEN_*` variable;
//! - the parity check's pair: the engine runs one backend; the [`Pool`] holds the other
//!   build's engine and compares the two (`parity.rs`).

use std::path::{Path, PathBuf};

use nrt_pool_engine::{EmuError, DEFAULT_HBM_BYTES};
use nrt_pool_schema::pool_image;

pub mod environment;
pub mod flame;
pub mod installation;
mod parity;
mod pool;
pub mod sarif;
pub mod trace;
pub mod views;

pub use environment::Environment;
pub use pool::Pool;

/// The cores an engine runs: host processes, or Xtensa cores under QEMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Host,
    Xtensa,
}

impl Isa {
    /// The ISA a library file runs on: Xtensa for a Pool image (by its first bytes).
    pub fn of(path: &Path) -> Isa {
        if pool_image::is_pool_path(path) {
            Isa::Xtensa
        } else {
            Isa::Host
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Isa::Host => "host",
            Isa::Xtensa => "xtensa",
        }
    }

    /// The other backend's ISA.
    pub fn other(self) -> Isa {
        match self {
            Isa::Host => Isa::Xtensa,
            Isa::Xtensa => Isa::Host,
        }
    }

    /// The file extension of a library built for this ISA.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Isa::Host => "so",
            Isa::Xtensa => "pool",
        }
    }
}

/// How to open an engine.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The cores to run on; `None`: by the file ([`Isa::of`]).
    pub isa: Option<Isa>,
    /// The QEMU board for Xtensa cores; `None`: [`installation::board`].
    pub board: Option<PathBuf>,
    /// HBM the engine offers tensors.
    pub hbm_bytes: u64,
    /// The calls' defaults (checks, all-core stdio, a core stopped for gdb).
    pub environment: Environment,
}

impl OpenOptions {
    /// The defaults, with the environment's settings read for front end `who` (its name in
    /// debug notes: "nrt-pool", "gpsimd_open", "nrt_pool").
    pub fn from_env(who: &'static str) -> Result<OpenOptions, OpenError> {
        Ok(OpenOptions {
            environment: Environment::read(who)?,
            ..OpenOptions::default()
        })
    }

    pub fn with_isa(mut self, isa: Option<Isa>) -> OpenOptions {
        self.isa = isa;
        self
    }

    pub fn with_board(mut self, board: Option<PathBuf>) -> OpenOptions {
        self.board = board;
        self
    }
}

impl Default for OpenOptions {
    /// By the file, the board found, 1 GiB of HBM, and no environment defaults.
    fn default() -> OpenOptions {
        OpenOptions {
            isa: None,
            board: None,
            hbm_bytes: DEFAULT_HBM_BYTES,
            environment: Environment::default(),
        }
    }
}

/// Why an engine could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The other ISA was asked for and its build is not beside the library.
    #[error("--isa {isa}: no {} beside {} (nrt-pool build --device-image writes both)", .wanted.display(), .library.display(), isa = .isa.name())]
    NoSibling {
        isa: Isa,
        wanted: PathBuf,
        library: PathBuf,
    },
    /// A variable of the environment that cannot be used.
    #[error("{0}")]
    Environment(String),
    #[error(transparent)]
    Engine(#[from] EmuError),
}

/// The build of `library` for `isa`: the file itself if it is one, else the one beside it
/// with the other extension (whether or not it exists).
pub fn build_for(library: &Path, isa: Isa) -> PathBuf {
    if Isa::of(library) == isa {
        library.to_path_buf()
    } else {
        library.with_extension(isa.extension())
    }
}

/// The build of `library` for the other ISA, if it is beside it.
pub fn sibling(library: &Path) -> Option<PathBuf> {
    let other = build_for(library, Isa::of(library).other());
    other.is_file().then_some(other)
}

/// Whether an image is an ELF shared object host cores can run: one for this host, or
/// (on x86-64) an i386 one built in the device's data model (D97).
pub fn is_host_library(b: &[u8]) -> bool {
    b.len() > 20
        && nrt_pool_engine::elf_ident::ElfIdent::parse(b).is_some_and(|i| i.is_host_library())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_isa_is_told_by_the_file_and_the_other_build_sits_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let so = dir.path().join("libop.so");
        let pool = dir.path().join("libop.pool");
        std::fs::write(&so, b"\x7fELF...").unwrap();
        std::fs::write(&pool, pool_image::FILE_MAGIC).unwrap();
        assert_eq!(Isa::of(&so), Isa::Host);
        assert_eq!(Isa::of(&pool), Isa::Xtensa, "by its first bytes");
        assert_eq!(build_for(&so, Isa::Xtensa), pool);
        assert_eq!(build_for(&pool, Isa::Host), so);
        assert_eq!(build_for(&so, Isa::Host), so);
        assert_eq!(sibling(&so), Some(pool.clone()));
        assert_eq!(sibling(&pool), Some(so));
    }

    #[test]
    fn a_missing_other_build_is_named_with_the_way_to_make_it() {
        let dir = tempfile::tempdir().unwrap();
        let so = dir.path().join("libop.so");
        std::fs::write(&so, b"not a library").unwrap();
        assert_eq!(sibling(&so), None);
        let o = OpenOptions::default().with_isa(Some(Isa::Xtensa));
        let e = Pool::open(&so, &o).expect_err("no Pool image beside");
        let msg = e.to_string();
        assert!(
            matches!(
                e,
                OpenError::NoSibling {
                    isa: Isa::Xtensa,
                    ..
                }
            ),
            "{msg}"
        );
        assert!(
            msg.contains("libop.pool") && msg.contains("--device-image"),
            "{msg}"
        );
        std::fs::write(dir.path().join("libop.pool"), b"").unwrap();
        assert_eq!(sibling(&so), Some(dir.path().join("libop.pool")));
    }

    #[test]
    fn only_an_elf_shared_object_of_this_host_is_a_host_library() {
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1; // little-endian, as every x86 and aarch64 library
        elf[16] = 3;
        elf[18..20].copy_from_slice(
            &(if cfg!(target_arch = "aarch64") {
                183u16
            } else {
                62
            })
            .to_le_bytes(),
        );
        assert!(is_host_library(&elf));
        elf[16] = 2;
        assert!(!is_host_library(&elf), "an executable");
        assert!(!is_host_library(b"\x7fELF"));
        // An i386 shared object (a library in the device's data model, D97) runs on x86-64.
        elf[16] = 3;
        elf[4] = 1;
        elf[18..20].copy_from_slice(&3u16.to_le_bytes());
        assert_eq!(is_host_library(&elf), cfg!(target_arch = "x86_64"));
        // An Xtensa ELF (machine 94) does not.
        elf[18..20].copy_from_slice(&94u16.to_le_bytes());
        assert!(!is_host_library(&elf));
    }
}
