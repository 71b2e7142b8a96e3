//! `extract`: pulls the 13 ext-ISA images and their JSON out of a user's own vendor
//! `libnrtucode_extisa.so` (runtime 2.31.24.0, the analysed build), checks each against the
//! documented offset, size, ELF32 Xtensa header and sha256 prefix, cross-checks them with
//! the library's own tables, adds the base memory images and hwdecode tables those tables
//! reach ([`crate::vendor_tables`]), and writes an `NRTUCODE_EXTISA_IMAGE_DIR`. Nothing is
//! written unless every check holds (or `--allow-unverified` accepts the ones that cannot),
//! and the directory appears whole or not at all.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use nrtucode_extisa::images::{
    ext_isa_file, hwdecode_file, memory_image_file, PROF_CAM_SIZE, PROF_TABLE_SIZE,
};
use object::{Object, ObjectSection};
use sha2::{Digest, Sha256};

use crate::vendor_tables::{Blob, Vendor};
use crate::ToolError;

/// The analysed build's GNU build-id.
pub const ANALYSED_BUILD_ID: &str = "7bb03bc42ce1530924a1797ec9d5e518a7ae5e44";

/// The stub every Cayman-and-later JSON slot holds (32 bytes, no NUL).
pub const CAYMAN_JSON_STUB: &[u8; 32] = br#"{"dummy_message": "hello world"}"#;

/// One embedded ext-ISA image of the analysed build.
#[derive(Clone, Copy, Debug)]
pub struct VendorImage {
    pub coretype: u32,
    pub lib: u32,
    /// File offset of the ELF image; its JSON immediately precedes it.
    pub offset: u64,
    pub size: u64,
    pub json_len: u64,
    /// First 8 bytes of the image's sha256, where the record gives them.
    pub sha256_prefix: Option<&'static str>,
}

const fn img(
    coretype: u32,
    lib: u32,
    offset: u64,
    size: u64,
    sha: Option<&'static str>,
) -> VendorImage {
    let json_len = if coretype == 6 { 0x6c0 } else { 0x20 };
    VendorImage {
        coretype,
        lib,
        offset,
        size,
        json_len,
        sha256_prefix: sha,
    }
}

/// host-nrtucode-extisa.md §8. The v4_plus images (29) are byte-identical to v4 (21).
pub const VENDOR_IMAGES: [VendorImage; 13] = [
    img(6, 0, 0x921660, 0xd308, Some("444497066f5e1738")),
    img(13, 0, 0x5b0cc0, 0xa260, Some("910d41c3ededce67")),
    img(13, 1, 0x5afd40, 0xf5c, Some("469c24137cc5fe08")),
    img(13, 2, 0x5ae820, 0x1500, Some("efd06876f5701b97")),
    img(13, 3, 0x5a7e80, 0x6974, Some("052ac31c4e096212")),
    img(21, 0, 0x2ffee0, 0xa260, Some("9f2ce049608c0a88")),
    img(21, 1, 0x2fef60, 0xf5c, None),
    img(21, 2, 0x2fda40, 0x1500, None),
    img(21, 3, 0x2f70a0, 0x6974, Some("8477ff2690f30cc3")),
    img(29, 0, 0x1ce60, 0xa260, Some("9f2ce049608c0a88")),
    img(29, 1, 0x1bee0, 0xf5c, None),
    img(29, 2, 0x1a9c0, 0x1500, None),
    img(29, 3, 0x14020, 0x6974, Some("8477ff2690f30cc3")),
];

/// `extract VENDOR_FILE -o DIR [--allow-unverified]`.
pub fn run(input: PathBuf, out: PathBuf, allow_unverified: bool) -> Result<(), ToolError> {
    let status = Status::new();
    let report = extract_with(&input, &out, allow_unverified, &status);
    drop(status);
    print!("{}", report?);
    Ok(())
}

/// What extraction is doing, as a spinner on stderr: only when stderr is a terminal and only
/// once the work has taken a second (a large `.deb` takes several).
struct Status(indicatif::ProgressBar);

impl Status {
    fn new() -> Status {
        use std::io::IsTerminal;
        let hidden = indicatif::ProgressDrawTarget::hidden();
        let bar = indicatif::ProgressBar::with_draw_target(None, hidden);
        if std::io::stderr().is_terminal() {
            let late = bar.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_secs(1));
                if !late.is_finished() {
                    late.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    late.enable_steady_tick(std::time::Duration::from_millis(120));
                }
            });
        }
        Status(bar)
    }

    fn doing(&self, what: String) {
        self.0.set_message(what);
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Checks and writes; returns the report.
pub fn extract(input: &Path, out: &Path, allow_unverified: bool) -> Result<String, ToolError> {
    extract_with(
        input,
        out,
        allow_unverified,
        &Status(indicatif::ProgressBar::hidden()),
    )
}

fn extract_with(
    input: &Path,
    out: &Path,
    allow_unverified: bool,
    status: &Status,
) -> Result<String, ToolError> {
    let unpacked;
    let provider = if is_deb(input)? {
        status.doing(format!("unpacking {}", input.display()));
        unpacked = unpack_deb(input)?;
        find_provider(unpacked.path())?
    } else {
        input.to_path_buf()
    };
    status.doing(format!("checking {}", provider.display()));
    let file = std::fs::File::open(&provider).map_err(|e| ToolError::Io(provider.clone(), e))?;
    // SAFETY: the file is only read; a concurrent writer could change bytes under us, which
    // at worst fails the hash checks.
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| ToolError::Io(provider.clone(), e))?;
    let checked = check(&map);
    let report = checked.report;
    if !checked.fatal.is_empty() {
        return Err(ToolError::Invalid(format!(
            "{}: not extracted:\n{report}",
            provider.display()
        )));
    }
    if !checked.unverified.is_empty() && !allow_unverified {
        return Err(ToolError::Invalid(format!(
            "{}: not extracted:\n{report}(rerun with --allow-unverified to accept unverifiable images)",
            provider.display()
        )));
    }
    status.doing(format!("writing {}", out.display()));
    write_dir(out, &checked.files)?;
    Ok(format!(
        "{report}wrote {} ({} files); point NRTUCODE_EXTISA_IMAGE_DIR at it\n",
        out.display(),
        checked.files.len()
    ))
}

type Extracted<'a> = Vec<(VendorImage, &'a [u8], &'a [u8])>;

/// Files to write: path relative to the image directory, and contents.
type Files<'a> = Vec<(PathBuf, &'a [u8])>;

/// What the checks found.
struct Checked<'a> {
    report: String,
    /// Facts that could not be confirmed (identity, hashes, JSON stubs): extraction needs
    /// `--allow-unverified`.
    unverified: Vec<String>,
    /// Images that are not there at all: never extracted.
    fatal: Vec<String>,
    files: Files<'a>,
}

/// Every check, as a report, with what blocks extraction.
fn check(bytes: &[u8]) -> Checked<'_> {
    let mut report = String::new();
    let mut problems = Vec::new();
    let mut fatal = Vec::new();
    match build_id(bytes) {
        Some(id) if id == ANALYSED_BUILD_ID => {
            writeln!(report, "build-id {id}: the analysed build").unwrap()
        }
        Some(id) => problems.push(format!(
            "build-id {id} is not the analysed build {ANALYSED_BUILD_ID}"
        )),
        None => problems.push(format!(
            "no GNU build-id (the analysed build is {ANALYSED_BUILD_ID})"
        )),
    }
    let mut images = Vec::new();
    for v in VENDOR_IMAGES {
        let name = format!("ct{} lib{}", v.coretype, v.lib);
        let range = (v.offset - v.json_len) as usize..(v.offset + v.size) as usize;
        let Some(span) = bytes.get(range) else {
            fatal.push(format!(
                "{name}: 0x{:x}+0x{:x} is past the end of the file",
                v.offset, v.size
            ));
            continue;
        };
        let (json, image) = span.split_at(v.json_len as usize);
        let header_ok = image.starts_with(b"\x7fELF")
            && image[4] == 1
            && image.get(18..20) == Some(&[0x5e, 0][..]);
        let digest = hex(&Sha256::digest(image)[..8]);
        let hash = match v.sha256_prefix {
            Some(want) if want == digest => "sha256 ok".to_string(),
            Some(want) => {
                problems.push(format!(
                    "{name}: sha256 {digest}... is not the documented {want}..."
                ));
                "sha256 MISMATCH".into()
            }
            None => "sha256 not documented".into(),
        };
        if !header_ok {
            fatal.push(format!(
                "{name}: no ELF32 Xtensa header at 0x{:x}",
                v.offset
            ));
        }
        if v.coretype != 6 && json != CAYMAN_JSON_STUB {
            problems.push(format!(
                "{name}: JSON slot is not the documented 32-byte stub"
            ));
        }
        writeln!(
            report,
            "{name}: offset 0x{:x} size 0x{:x} {hash}{}",
            v.offset,
            v.size,
            if header_ok { "" } else { ", bad header" }
        )
        .unwrap();
        images.push((v, image, json));
    }
    // v4_plus ships the v4 images byte for byte.
    for lib in 0..4 {
        let find = |ct| {
            images
                .iter()
                .find(|(v, ..)| v.coretype == ct && v.lib == lib)
                .map(|(_, i, _)| *i)
        };
        if let (Some(a), Some(b)) = (find(21), find(29)) {
            if a != b {
                problems.push(format!(
                    "ct29 lib{lib} differs from ct21 lib{lib} (documented identical)"
                ));
            }
        }
    }
    let mut files: Files<'_> = Vec::new();
    for (v, image, json) in &images {
        files.push((
            ext_isa_file(Path::new(""), v.coretype, u64::from(v.lib), "elf"),
            image,
        ));
        files.push((
            ext_isa_file(Path::new(""), v.coretype, u64::from(v.lib), "json"),
            json,
        ));
    }
    match Vendor::parse(bytes).and_then(|t| tables(bytes, &t, &images, &mut report)) {
        Ok(more) => files.extend(more),
        Err(e) => problems.push(format!(
            "image tables unreadable ({e}): memory images and hwdecode tables not extracted"
        )),
    }
    for p in &fatal {
        writeln!(report, "missing: {p}").unwrap();
    }
    for p in &problems {
        writeln!(report, "unverified: {p}").unwrap();
    }
    Checked {
        report,
        unverified: problems,
        fatal,
        files,
    }
}

/// What the library's own tables reach: the ext-ISA entries must agree with the documented
/// offsets; the memory images and hwdecode tables are returned as files.
fn tables<'a>(
    bytes: &'a [u8],
    t: &Vendor<'_>,
    images: &Extracted<'_>,
    report: &mut String,
) -> Result<Files<'a>, String> {
    let mut listed: Vec<(u32, u32, u64, u64)> = t
        .ext_isa()?
        .into_iter()
        .map(|(ct, lib, so, _)| (ct, lib, so.offset, so.len))
        .collect();
    let mut documented: Vec<(u32, u32, u64, u64)> = images
        .iter()
        .map(|(v, ..)| (v.coretype, v.lib, v.offset, v.size))
        .collect();
    listed.sort();
    documented.sort();
    if listed != documented {
        return Err(format!(
            "the library's ext-ISA tables list {listed:x?}, the record documents {documented:x?}"
        ));
    }
    writeln!(report, "ext-ISA tables agree with the documented offsets").unwrap();
    let blob = |b: Blob| &bytes[b.offset as usize..(b.offset + b.len) as usize];
    let mut files = Vec::new();
    let memory = t.memory_images()?;
    for m in &memory {
        let key = u32::try_from(m.flavor_key)
            .map_err(|_| format!("flavor key {} out of range", m.flavor_key))?;
        let path = memory_image_file(Path::new(""), m.coretype, key, m.region).expect("region 0-3");
        files.push((path, blob(m.blob)));
    }
    let hw = t.hwdecode_tables()?;
    for &(ct, kind, b) in &hw {
        let want = if kind == 0 {
            PROF_CAM_SIZE
        } else {
            PROF_TABLE_SIZE
        };
        if b.len as usize != want {
            return Err(format!(
                "hwdecode ct{ct} kind {kind} is 0x{:x} bytes, not 0x{want:x}",
                b.len
            ));
        }
        files.push((
            hwdecode_file(Path::new(""), ct, kind as i32).expect("kind 0/1"),
            blob(b),
        ));
    }
    writeln!(
        report,
        "{} base memory images, {} hwdecode tables",
        memory.len(),
        hw.len()
    )
    .unwrap();
    Ok(files)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn build_id(bytes: &[u8]) -> Option<String> {
    let file = object::File::parse(bytes).ok()?;
    file.build_id().ok().flatten().map(hex).or_else(|| {
        let sec = file.section_by_name(".note.gnu.build-id")?;
        let data = sec.data().ok()?;
        data.get(16..).map(hex)
    })
}

/// Writes the directory next to its final place, then renames it in.
fn write_dir(out: &Path, files: &Files<'_>) -> Result<(), ToolError> {
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(ToolError::Invalid(format!(
            "{} exists and is not empty",
            out.display()
        )));
    }
    let tmp = out.with_extension("partial");
    let _ = std::fs::remove_dir_all(&tmp);
    let io = |p: &Path, e| ToolError::Io(p.to_path_buf(), e);
    for (rel, bytes) in files {
        let path = tmp.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).map_err(|e| io(&path, e))?;
        std::fs::write(&path, bytes).map_err(|e| io(&path, e))?;
    }
    if out.exists() {
        std::fs::remove_dir(out).map_err(|e| io(out, e))?;
    }
    std::fs::rename(&tmp, out).map_err(|e| io(out, e))
}

fn is_deb(path: &Path) -> Result<bool, ToolError> {
    use std::io::Read;
    let mut magic = [0u8; 8];
    let mut f = std::fs::File::open(path).map_err(|e| ToolError::Io(path.into(), e))?;
    Ok(f.read(&mut magic)
        .map_err(|e| ToolError::Io(path.into(), e))?
        == 8
        && &magic == b"!<arch>\n")
}

/// A Debian package is unpacked with `dpkg-deb` into a temporary directory.
fn unpack_deb(path: &Path) -> Result<tempfile::TempDir, ToolError> {
    let dir = tempfile::tempdir().map_err(|e| ToolError::Io(path.into(), e))?;
    let status = std::process::Command::new("dpkg-deb")
        .arg("-x")
        .arg(path)
        .arg(dir.path())
        .status()
        .map_err(|e| ToolError::Invalid(format!("{}: cannot run dpkg-deb: {e}", path.display())))?;
    if !status.success() {
        return Err(ToolError::Invalid(format!(
            "{}: dpkg-deb could not unpack it",
            path.display()
        )));
    }
    Ok(dir)
}

fn find_provider(root: &Path) -> Result<PathBuf, ToolError> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .map_err(|e| ToolError::Io(d.clone(), e))?
            .flatten()
        {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if name.starts_with("libnrtucode_extisa.so") && !p.is_symlink() {
                return Ok(p);
            }
        }
    }
    Err(ToolError::Invalid(format!(
        "no libnrtucode_extisa.so in the package ({})",
        root.display()
    )))
}
