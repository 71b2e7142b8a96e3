//! The Pool image of an op library (`libNAME.pool`, docs/decisions.md D57): its windowed
//! device objects linked with the Xtensa libneuroncustomop.a once per core, at
//! 0x84000000 + i * 0x200000 as the vendor's link line places them (pool-core.ld), and
//! packed with [`nrt_pool_schema::pool_image`].

use std::path::{Path, PathBuf};

use nrt_pool_schema::pool_image;

use crate::{io, run, BuildError, XtensaTools};

/// The symbols the board (or the vendor's firmware) calls in an image besides its entry:
/// the kernel roster, the launcher and the op metadata the host reads (the schema or the
/// op list: whichever the library defines). Everything else the link keeps only if used.
pub const KEEP_SYMBOLS: [&str; 4] = [
    customop_abi::handoff::REGISTER_FUNCS_SYMBOL,
    customop_abi::handoff::CALL_WRAPPER_SYMBOL,
    "nrt_pool_op_schema",
    "nrt_pool_op_library",
];

/// Where a Pool image goes and what it is linked with.
#[derive(Clone, Debug)]
pub struct DeviceImage {
    /// The `.pool` file to write.
    pub out: PathBuf,
    /// The Xtensa (windowed) libneuroncustomop.a.
    pub archive: PathBuf,
    /// customop-device/xtensa/pool-core.ld.
    pub link_script: PathBuf,
}

impl DeviceImage {
    pub(crate) fn check(&self) -> Result<(), BuildError> {
        for (what, path, hint) in [
            (
                "the Xtensa libneuroncustomop.a",
                &self.archive,
                "run `make customop-archives`",
            ),
            (
                "the Pool core link script",
                &self.link_script,
                "pass --device-link-script",
            ),
        ] {
            if !path.is_file() {
                return Err(BuildError::Missing {
                    what,
                    path: path.clone(),
                    hint,
                });
            }
        }
        crate::reuse::verify_installed("the Xtensa libneuroncustomop.a", &self.archive)
    }
}

/// Symbols a use of thread-local storage leaves undefined (i386's TLS entry points, GCC's
/// emulated TLS on Xtensa).
const TLS_SYMBOLS: [&str; 4] = [
    "`___tls_get_addr'",
    "`__tls_get_addr'",
    "`__emutls_get_address'",
    "`__emutls_v.",
];

/// The linker's words, first with a line per source line that used a construct the
/// device lacks (thread-local storage), and with a line saying what an undefined
/// libc++ symbol means: a part of the C++ library outside its headers that the device
/// archive does not define (D72).
fn explain_undefined(stderr: String) -> String {
    let mut named = String::new();
    for line in stderr.lines() {
        let Some((at, rest)) = line.split_once(": undefined reference to ") else {
            continue;
        };
        if TLS_SYMBOLS.iter().any(|s| rest.starts_with(s)) {
            let said = format!(
                "{at}: error: thread_local (or __thread) storage is not on the device: a Pool \
                 core runs one thread and its runtime keeps no thread-local storage (a static is \
                 already one per core)\n"
            );
            if !named.contains(&said) {
                named.push_str(&said);
            }
        }
    }
    let stderr = format!("{named}{stderr}");
    if stderr.contains("undefined reference to `std::__1::") {
        format!(
            "{stderr}note: the undefined std:: functions are compiled parts of libc++ that the \
             device runtime does not provide (clocks, random_device, floating-point to_chars, \
             ...; docs/decisions.md D72)\n"
        )
    } else {
        stderr
    }
}

/// A link error with [`explain_undefined`]'s note (the device-model host link too).
pub(crate) fn explain_undefined_error(e: BuildError) -> BuildError {
    match e {
        BuildError::Compile { tool, stderr } => BuildError::Compile {
            tool,
            stderr: explain_undefined(stderr),
        },
        e => e,
    }
}

/// Links `objs` for each core and writes the Pool image into `work`; its path there.
pub(crate) fn stage(
    tools: &XtensaTools,
    objs: &[PathBuf],
    d: &DeviceImage,
    work: &Path,
) -> Result<PathBuf, BuildError> {
    let dir = work.join("pool");
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let mut images = Vec::with_capacity(pool_image::MAX_CORES as usize);
    for core in 0..pool_image::MAX_CORES {
        let org = pool_image::ORG + core * pool_image::CORE_STRIDE;
        let elf = dir.join(format!("core{core}.elf"));
        let mut ld = tools.linker();
        ld.arg("-T")
            .arg(&d.link_script)
            .arg(format!("--section-start=.text={org:#x}"))
            .args([
                "--gc-sections",
                "--no-warn-rwx-segments",
                "-z",
                "noexecstack",
            ]);
        for s in KEEP_SYMBOLS {
            ld.args(["-u", s]);
        }
        ld.args(objs).arg(&d.archive).arg("-o").arg(&elf);
        run(&mut ld).map_err(|e| match e {
            BuildError::Compile { stderr, .. } => BuildError::Compile {
                tool: format!("{} (the Pool image for core {core})", XtensaTools::LD),
                stderr: explain_undefined(stderr),
            },
            e => e,
        })?;
        images.push(std::fs::read(&elf).map_err(io(&elf))?);
    }
    let pool = dir.join("lib.pool");
    std::fs::write(&pool, pool_image::write_file(&images)).map_err(io(&pool))?;
    Ok(pool)
}

/// What a core's image loads into device memory (its allocated sections).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadedSize {
    pub core: u32,
    /// Code and read-only data (literal pools included).
    pub text: u64,
    /// Initialised data.
    pub data: u64,
    /// Zeroed data.
    pub bss: u64,
}

impl LoadedSize {
    pub fn total(&self) -> u64 {
        self.text + self.data + self.bss
    }
}

/// The vendor's loader refuses a staged library above 64 KiB (host digest, `ll_create`
/// code 7): an image above it would not load on the device (D79).
pub const VENDOR_STAGED_LIMIT: u64 = 64 << 10;

/// Each core image's loaded bytes, from a built `libNAME.pool`.
pub fn loaded_sizes(pool: &[u8]) -> Result<Vec<LoadedSize>, String> {
    use object::{Object, ObjectSection, SectionFlags, SectionKind};
    let (iram, dram) = pool_image::parse_file(pool).map_err(|e| e.to_string())?;
    let cores = pool_image::parse_pair(iram, dram).map_err(|e| e.to_string())?;
    cores
        .iter()
        .map(|c| {
            let file = object::File::parse(c.elf).map_err(|e| format!("core {}: {e}", c.core))?;
            let mut s = LoadedSize {
                core: c.core,
                ..Default::default()
            };
            for sec in file.sections() {
                // SHF_ALLOC (2): what the loader places.
                let alloc =
                    matches!(sec.flags(), SectionFlags::Elf { sh_flags } if sh_flags & 2 != 0);
                if !alloc || sec.size() == 0 {
                    continue;
                }
                match sec.kind() {
                    SectionKind::UninitializedData | SectionKind::UninitializedTls => {
                        s.bss += sec.size()
                    }
                    SectionKind::Text | SectionKind::ReadOnlyData | SectionKind::ReadOnlyString => {
                        s.text += sec.size()
                    }
                    _ => s.data += sec.size(),
                }
            }
            Ok(s)
        })
        .collect()
}

/// Lines for `nrt-pool build`: each core image's loaded size (one line when all agree),
/// and a warning when one is above the vendor's staged-library limit.
pub fn size_report(sizes: &[LoadedSize]) -> (Vec<String>, Option<String>) {
    let mut lines = Vec::new();
    let same = sizes.windows(2).all(|w| w[0].total() == w[1].total());
    let describe = |s: &LoadedSize| {
        format!(
            "{} bytes loaded (text {}, data {}, bss {})",
            s.total(),
            s.text,
            s.data,
            s.bss
        )
    };
    match (same, sizes.first()) {
        (true, Some(s)) => lines.push(format!("core images: {} each", describe(s))),
        _ => {
            for s in sizes {
                lines.push(format!("core {} image: {}", s.core, describe(s)));
            }
        }
    }
    let largest = sizes.iter().map(LoadedSize::total).max().unwrap_or(0);
    let warning = (largest > VENDOR_STAGED_LIMIT).then(|| {
        format!(
            "warning: a core image loads {largest} bytes, above the 65536 (64 KiB) the vendor's \
             loader accepts for a staged library (ll_create refuses it with code 7): it runs \
             here, but would not load on the device (D79)"
        )
    });
    (lines, warning)
}
