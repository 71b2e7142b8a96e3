//! Where the parts a front end needs besides itself are found: the op author's headers,
//! the runtime archives, the Pool core link script and the QEMU board. All are looked for
//! relative to the program or library this code is linked into (the `nrt-pool`
//! executable, `libnrt_pool_shim.so`, the Python extension), so an installed prefix, a
//! Python package and a build tree each find their own; then in the build tree this crate
//! was compiled in; then where the Debian packages put them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The variable that names the board, before any search.
pub use nrt_pool_qemu::BOARD_ENV;

/// The device runtime's target folders.
pub const HOST_TARGET: &str = "x86_64-unknown-linux-gnu";
pub const XTENSA_TARGET: &str = "xtensa-q7-none-elf";
/// The device-model runtime's and the 32-bit core runner's folder (D97).
pub const DEVICE_MODEL_TARGET: &str = "i386-device";

/// Where the Debian packages install (`make deb`, D50).
const PACKAGED_PREFIX: &str = "/opt/gpsimd-open";

/// One place the parts may be, and how they are laid out there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root {
    /// `make install`'s layout under a prefix (also a Python package's data folder, which
    /// copies it): `lib/gpsimd-open/<target>/...`, `include/gpsimd-open`.
    Prefix(PathBuf),
    /// A build tree: `target` (what `make` builds) and the source checkout (headers, link
    /// script).
    Build { target: PathBuf, source: PathBuf },
}

/// A part of the installation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The op author's headers (`torch/torch.h`, `neuron/`, ...).
    Include,
    /// `libneuroncustomop.a` for host op libraries in the host's data model (x86-64).
    HostArchive,
    /// `libneuroncustomop.a` for host op libraries in the device's data model (i386, D97).
    DeviceModelArchive,
    /// The 32-bit core runner host cores of device-model libraries run in (D97).
    CoreRunner,
    /// `libneuroncustomop.a` for Xtensa Pool images.
    XtensaArchive,
    /// The Pool core link script.
    LinkScript,
    /// The QEMU board that runs Pool images.
    Board,
    /// The `nrt-pool` CLI (the Python package's console script runs it).
    Cli,
    /// The folder of the Xtensa GCC and binutils an installation carries (D114; the build
    /// flow's `XtensaTools::carried_in_or_path` takes it, PATH's where it is not there).
    XtensaTools,
}

impl Part {
    pub const ALL: [Part; 9] = [
        Part::Include,
        Part::HostArchive,
        Part::DeviceModelArchive,
        Part::CoreRunner,
        Part::XtensaArchive,
        Part::LinkScript,
        Part::Board,
        Part::Cli,
        Part::XtensaTools,
    ];

    /// Its name for front ends ("include", "host-archive", "xtensa-archive", "link-script",
    /// "board", "nrt-pool", ...).
    pub fn name(self) -> &'static str {
        match self {
            Part::Include => "include",
            Part::HostArchive => "host-archive",
            Part::DeviceModelArchive => "device-model-archive",
            Part::CoreRunner => "core-runner",
            Part::XtensaArchive => "xtensa-archive",
            Part::LinkScript => "link-script",
            Part::Board => "board",
            Part::Cli => "nrt-pool",
            Part::XtensaTools => "xtensa-tools",
        }
    }

    pub fn from_name(name: &str) -> Option<Part> {
        Part::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl Root {
    /// Where `part` lies under this root (whether or not it exists).
    pub fn path(&self, part: Part) -> PathBuf {
        match self {
            Root::Prefix(p) => {
                let lib = p.join("lib/gpsimd-open");
                match part {
                    Part::Include => p.join("include/gpsimd-open"),
                    Part::HostArchive => lib.join(HOST_TARGET).join("libneuroncustomop.a"),
                    Part::DeviceModelArchive => {
                        lib.join(DEVICE_MODEL_TARGET).join("libneuroncustomop.a")
                    }
                    Part::CoreRunner => p.join("libexec/gpsimd-open/nrt-pool-core"),
                    Part::XtensaArchive => lib.join(XTENSA_TARGET).join("libneuroncustomop.a"),
                    Part::LinkScript => lib.join(XTENSA_TARGET).join("pool-core.ld"),
                    Part::Board => lib.join(XTENSA_TARGET).join("pool-board.elf"),
                    Part::Cli => p.join("bin/nrt-pool"),
                    Part::XtensaTools => p.join("libexec/gpsimd-open/xtensa/bin"),
                }
            }
            Root::Build { target, source } => {
                let out = target.join("customop");
                match part {
                    Part::Include => source.join("include"),
                    Part::HostArchive => out.join(HOST_TARGET).join("release/libneuroncustomop.a"),
                    Part::DeviceModelArchive => {
                        out.join(DEVICE_MODEL_TARGET).join("libneuroncustomop.a")
                    }
                    Part::CoreRunner => out.join(DEVICE_MODEL_TARGET).join("nrt-pool-core"),
                    Part::XtensaArchive => {
                        out.join(XTENSA_TARGET).join("release/libneuroncustomop.a")
                    }
                    Part::LinkScript => source.join("customop-device/xtensa/pool-core.ld"),
                    Part::Board => out.join(XTENSA_TARGET).join("pool-board.elf"),
                    Part::Cli => target.join("release/nrt-pool"),
                    // What `make wheel` stages to carry (a build tree otherwise uses PATH's).
                    Part::XtensaTools => target.join("xtensa-tools/bin"),
                }
            }
        }
    }

    /// Whether `part` is here (the headers: their `torch/torch.h`).
    fn has(&self, part: Part) -> bool {
        let p = self.path(part);
        match part {
            Part::Include => p.join("torch/torch.h").is_file(),
            Part::XtensaTools => p.is_dir(),
            _ => p.is_file(),
        }
    }
}

/// Where an op library `name` is built when its loader names no folder (Python's
/// `custom_op.load`): `$XDG_CACHE_HOME/gpsimd_open/NAME`, else `~/.cache/gpsimd_open/NAME`.
pub fn default_build_directory(name: &str) -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("gpsimd_open").join(name)
}

/// The folder of the file (executable or shared library) this code is linked into.
pub fn home() -> Option<PathBuf> {
    // SAFETY: Dl_info is plain data (pointers and integers); all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr on a function of this crate fills `info` or returns 0.
    let found = unsafe { libc::dladdr(home as *const libc::c_void, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr's file name is a NUL-terminated string owned by the loader.
    let me = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let me = PathBuf::from(OsStr::from_bytes(me.to_bytes()));
    // A bare name is the main program found on PATH: /proc tells where it is.
    let me = if me.components().count() <= 1 {
        std::fs::read_link("/proc/self/exe").ok()?
    } else {
        me
    };
    std::fs::canonicalize(&me)
        .ok()?
        .parent()
        .map(Path::to_path_buf)
}

/// The build tree this crate was compiled in.
fn compiled_in() -> Root {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Root::Build {
        target: source.join("target"),
        source,
    }
}

/// The roots looked at from folder `dir` (a program's or library's), in order: the prefix
/// it is installed in (from `PREFIX/bin` or `PREFIX/lib`), a Python package's `data`
/// folder, the build tree it was built in (from `target/<profile>`).
pub fn roots_from(dir: &Path) -> Vec<Root> {
    let up = dir.join("..");
    vec![
        Root::Prefix(up.clone()),
        Root::Prefix(dir.join("data")),
        Root::Build {
            target: up.clone(),
            source: up.join(".."),
        },
    ]
}

/// A build tree that overrides every other place (the checkout a developer works in).
pub const HOME_ENV: &str = "GPSIMD_OPEN_HOME";

/// Every root, in the order they are searched: `$GPSIMD_OPEN_HOME`'s build tree, those
/// from [`home`], the build tree this crate was compiled in, the Debian packages' prefix.
pub fn roots() -> Vec<Root> {
    let mut r: Vec<Root> = std::env::var_os(HOME_ENV)
        .map(PathBuf::from)
        .map(|h| Root::Build {
            target: h.join("target"),
            source: h,
        })
        .into_iter()
        .collect();
    r.extend(home().map(|d| roots_from(&d)).unwrap_or_default());
    r.push(compiled_in());
    r.push(Root::Prefix(PACKAGED_PREFIX.into()));
    r
}

/// Where `part` is: the first root that has it, else where the Debian packages put it
/// (named in the error a missing file gives).
pub fn find(part: Part) -> PathBuf {
    find_in(&roots(), part)
}

fn find_in(roots: &[Root], part: Part) -> PathBuf {
    roots
        .iter()
        .find(|r| r.has(part))
        .map(|r| r.path(part))
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .unwrap_or_else(|| Root::Prefix(PACKAGED_PREFIX.into()).path(part))
}

/// The variable that names the 32-bit core runner, before any search.
pub use nrt_pool_host::CORE_RUNNER_ENV;

/// The 32-bit core runner: `$NRT_POOL_CORE_RUNNER`, else [`find`].
pub fn core_runner() -> PathBuf {
    match std::env::var_os(CORE_RUNNER_ENV) {
        Some(p) => p.into(),
        None => find(Part::CoreRunner),
    }
}

/// The QEMU board: `$NRT_POOL_XTENSA_BOARD`, else [`find`].
pub fn board() -> PathBuf {
    match std::env::var_os(BOARD_ENV) {
        Some(p) => p.into(),
        None => find(Part::Board),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    #[test]
    fn an_installed_prefix_is_found_from_its_bin_and_lib_folders() {
        let root = tempfile::tempdir().unwrap();
        let prefix = Root::Prefix(root.path().to_path_buf());
        for part in [
            Part::HostArchive,
            Part::DeviceModelArchive,
            Part::CoreRunner,
            Part::XtensaArchive,
            Part::LinkScript,
            Part::Board,
        ] {
            touch(&prefix.path(part));
        }
        touch(&prefix.path(Part::Include).join("torch/torch.h"));
        for dir in ["bin", "lib"] {
            let d = root.path().join(dir);
            std::fs::create_dir_all(&d).unwrap();
            for part in [
                Part::Include,
                Part::HostArchive,
                Part::DeviceModelArchive,
                Part::CoreRunner,
                Part::Board,
                Part::LinkScript,
            ] {
                let found = find_in(&roots_from(&d), part);
                assert_eq!(
                    found,
                    std::fs::canonicalize(prefix.path(part)).unwrap(),
                    "{dir} {part:?}"
                );
            }
        }
    }

    #[test]
    fn a_build_tree_is_found_from_target_release() {
        let root = tempfile::tempdir().unwrap();
        let tree = Root::Build {
            target: root.path().join("target"),
            source: root.path().to_path_buf(),
        };
        touch(&tree.path(Part::Board));
        touch(&tree.path(Part::Include).join("torch/torch.h"));
        let release = root.path().join("target/release");
        std::fs::create_dir_all(&release).unwrap();
        let roots = roots_from(&release);
        assert_eq!(
            find_in(&roots, Part::Board),
            std::fs::canonicalize(tree.path(Part::Board)).unwrap()
        );
        assert_eq!(
            find_in(&roots, Part::Include),
            std::fs::canonicalize(tree.path(Part::Include)).unwrap()
        );
        touch(&tree.path(Part::CoreRunner));
        assert_eq!(
            find_in(&roots, Part::CoreRunner),
            std::fs::canonicalize(tree.path(Part::CoreRunner)).unwrap()
        );
        assert!(tree
            .path(Part::CoreRunner)
            .ends_with("target/customop/i386-device/nrt-pool-core"));
        // Missing everywhere: the packaged path, which the error of its use names.
        assert_eq!(
            find_in(&roots, Part::XtensaArchive),
            Path::new("/opt/gpsimd-open/lib/gpsimd-open/xtensa-q7-none-elf/libneuroncustomop.a")
        );
    }

    #[test]
    fn this_code_knows_the_file_it_is_linked_into() {
        let home = home().expect("dladdr names the test executable");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(std::fs::canonicalize(exe).unwrap().parent().unwrap(), home);
    }
}
