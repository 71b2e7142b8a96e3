//! libnrt's microcode sequence on the simulated device: init -> bring-up -> load ->
//! query -> teardown, for one Trn1-class (SUNDA) NeuronCore's Pool engine: its NX POOL core
//! and its Q7 POOL core, each with its own context, as libnrt gives every core its own.

use std::ffi::{c_void, CString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::facade::{CoreHandle, Ctx, LlHandle, UcodeFacade};
use crate::{tables, SimDevice, CLAIM_CLAIMED, CLAIM_UNCLAIMED};

/// The SUNDA coretypes libnrt uses for the Pool engine.
pub const SUNDA_NX_POOL: u32 = 2;
pub const SUNDA_Q7_POOL: u32 = 6;
/// The Cayman Q7 POOL coretype, whose libraries are prelinked and staged.
pub const CAYMAN_Q7_POOL: u32 = 13;
/// Control-block bases of the simulated cores.
pub const NX_POOL_DRAM: u64 = 0x0002_0000_0000;
pub const Q7_POOL_DRAM: u64 = 0x0002_0010_0000;
pub const CAYMAN_Q7_POOL_DRAM: u64 = 0x0002_0020_0000;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The provider to bind (ours or the vendor's).
    pub provider: PathBuf,
    /// An Xtensa split-load library to stage on a Cayman Q7 POOL core through ll_create
    /// (served as Cayman library 0 when no image directory is configured).
    pub cayman_library: Option<PathBuf>,
}
/// Push records a caller's buffer holds (one per Pool core).
pub const RECORD_CAPACITY: usize = 8;
pub const RECORD_LEN: usize = 0x40;

#[derive(Debug, thiserror::Error)]
pub enum BringupError {
    #[error(transparent)]
    Facade(#[from] crate::facade::FacadeError),
    #[error("{step} returned {rc}")]
    Call { step: String, rc: u32 },
    #[error("{0}")]
    Check(String),
    #[error("image directory: {0}")]
    Images(#[from] std::io::Error),
}

/// One step libnrt took, and what it observed.
#[derive(Clone, Debug)]
pub struct Step {
    pub phase: &'static str,
    pub what: String,
}

/// What the sequence produced.
#[derive(Debug, Default)]
pub struct Report {
    pub steps: Vec<Step>,
    pub load_records: Vec<[u8; RECORD_LEN]>,
    pub unload_records: Vec<[u8; RECORD_LEN]>,
    pub drained_logs: Vec<String>,
    /// The Cayman library's records, when one was staged.
    pub cayman_load_records: Vec<[u8; RECORD_LEN]>,
    pub cayman_unload_records: Vec<[u8; RECORD_LEN]>,
    pub provider_log_lines: usize,
    pub live_memhandles_after: usize,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut phase = "";
        for s in &self.steps {
            if s.phase != phase {
                writeln!(f, "{}", s.phase)?;
                phase = s.phase;
            }
            writeln!(f, "  {}", s.what)?;
        }
        Ok(())
    }
}

/// Where the provider finds its ext-ISA images. With none configured, a directory holding
/// a synthetic SUNDA library is made for the run: SUNDA libraries are pushed whole by the
/// firmware and never parsed on the host, so its bytes only need to exist.
pub struct ImageDir {
    pub path: PathBuf,
    pub synthetic: bool,
}

pub const IMAGE_DIR_ENV: &str = "NRTUCODE_EXTISA_IMAGE_DIR";

impl ImageDir {
    /// The configured directory, or a temporary one holding a synthetic SUNDA library and,
    /// if given, `cayman_library` as Cayman library 0.
    pub fn from_env_or_synthetic(cayman_library: Option<&Path>) -> std::io::Result<ImageDir> {
        if let Some(dir) = std::env::var_os(IMAGE_DIR_ENV).filter(|d| !d.is_empty()) {
            return Ok(ImageDir {
                path: dir.into(),
                synthetic: false,
            });
        }
        let path = std::env::temp_dir().join(format!("nrt-pool-images-{}", std::process::id()));
        let lib = path.join("ext-isa/ct6");
        std::fs::create_dir_all(&lib)?;
        std::fs::write(
            lib.join("lib0.elf"),
            b"synthetic SUNDA ext-ISA library (not parsed)\n",
        )?;
        if let Some(cayman) = cayman_library {
            let dir = path.join(format!("ext-isa/ct{CAYMAN_Q7_POOL}"));
            std::fs::create_dir_all(&dir)?;
            std::fs::copy(cayman, dir.join("lib0.elf"))?;
        }
        Ok(ImageDir {
            path,
            synthetic: true,
        })
    }
}

impl Drop for ImageDir {
    fn drop(&mut self) {
        if self.synthetic {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

struct Run<'a> {
    api: &'a crate::facade::Bound,
    report: Report,
}

impl Run<'_> {
    fn step(&mut self, phase: &'static str, what: impl Into<String>) {
        self.report.steps.push(Step {
            phase,
            what: what.into(),
        });
    }

    /// A provider call that must succeed.
    fn ok(&mut self, phase: &'static str, step: &str, rc: u32) -> Result<(), BringupError> {
        if rc != 0 {
            return Err(BringupError::Call {
                step: step.into(),
                rc,
            });
        }
        self.step(phase, format!("{step} -> 0"));
        Ok(())
    }
}

fn check(cond: bool, what: impl FnOnce() -> String) -> Result<(), BringupError> {
    if cond {
        Ok(())
    } else {
        Err(BringupError::Check(what()))
    }
}

/// Runs the sequence, asserting every step.
pub fn run(opts: &Options) -> Result<Report, BringupError> {
    let provider = opts.provider.as_path();
    let images = ImageDir::from_env_or_synthetic(opts.cayman_library.as_deref())?;
    std::env::set_var(IMAGE_DIR_ENV, &images.path);
    let facade = UcodeFacade::open(provider)?;
    let api = &facade.api;
    // The simulated callbacks reach the device through the provider's userdata getter.
    tables::bind_userdata_getter(api.context_get_userdata);
    let dev = SimDevice::new();
    let mut run = Run {
        api,
        report: Report::default(),
    };
    init(&mut run, &facade, provider, &images);
    // SAFETY (whole sequence): every call passes live handles the sequence created and
    // buffers sized per the documented contract.
    unsafe {
        let nx = bring_up(&mut run, &dev, SUNDA_NX_POOL, NX_POOL_DRAM, "NX_POOL")?;
        let q7 = bring_up(&mut run, &dev, SUNDA_Q7_POOL, Q7_POOL_DRAM, "Q7_POOL")?;
        let ll = load(&mut run, &q7)?;
        if opts.cayman_library.is_some() {
            stage_cayman_library(&mut run, &dev)?;
        }
        configure(&mut run, &nx)?;
        firmware_logs(&dev, [&nx, &q7])?;
        teardown(&mut run, &dev, ll, nx, q7)?;
    }
    run.report.live_memhandles_after = dev.live_memhandles();
    check(run.report.live_memhandles_after == 0, || {
        "device memory leaked".into()
    })?;
    run.report.provider_log_lines = dev.host_logs().len();
    Ok(run.report)
}

/// INIT: what was bound and where the images come from.
fn init(run: &mut Run<'_>, facade: &UcodeFacade, provider: &Path, images: &ImageDir) {
    run.step(
        "init",
        format!(
            "dlopen {} and bind 30 symbols in libnrt's order",
            provider.display()
        ),
    );
    run.step(
        "init",
        format!(
            "api level 3; build {}; git {}",
            facade.build_version, facade.git_version
        ),
    );
    if images.synthetic {
        run.step(
            "init",
            format!(
                "images: synthetic SUNDA library in {}",
                images.path.display()
            ),
        );
    } else {
        run.step("init", format!("images: {}", images.path.display()));
    }
}

/// LOAD: the SUNDA ext-ISA library for the Q7 POOL core, and its load record.
///
/// # Safety
/// `q7` holds live handles of the provider `run.api` binds.
unsafe fn load(run: &mut Run<'_>, q7: &BroughtUp) -> Result<LlHandle, BringupError> {
    let api = run.api;
    let mut nlibs = 0usize;
    run.ok(
        "load",
        "get_num_ext_isa_libs(SUNDA_Q7_POOL)",
        (api.get_num_ext_isa_libs)(SUNDA_Q7_POOL, &mut nlibs),
    )?;
    check(nlibs == 1, || {
        format!("SUNDA has one ext-ISA library, provider says {nlibs}")
    })?;
    let mut libs = [usize::MAX; 1];
    let mut nl = 0usize;
    let opcodes = [0xF0u8, 0x41];
    run.ok(
        "load",
        "ll_get_libraries_from_opcodes",
        (api.ll_get_libraries_from_opcodes)(
            SUNDA_Q7_POOL,
            opcodes.as_ptr(),
            2,
            std::ptr::null(),
            0,
            libs.as_mut_ptr(),
            &mut nl,
        ),
    )?;
    check(nl == 1 && libs[0] == 0, || {
        format!("libraries {:?} (n={nl})", libs)
    })?;
    let mut ll: LlHandle = std::ptr::null_mut();
    run.ok(
        "load",
        "ll_create(q7 ctx, SUNDA_Q7_POOL, DEFAULT, 0)",
        (api.ll_create)(q7.ctx, SUNDA_Q7_POOL, 0, 0, &mut ll),
    )?;
    let name = CString::new("ND[0]NC[0].loadable_library[0]").expect("no NUL");
    (api.ll_set_friendly_name)(ll, name.as_ptr());
    run.report.load_records = sequence(
        run,
        "load",
        "ll_get_load_sequence",
        api.ll_get_load_sequence,
        ll,
        q7.core,
    )?;
    let r = run.report.load_records[0];
    check(
        u16::from_le_bytes([r[0], r[1]]) == 0x1095 && r[0x0c] == 1 && r[0x0d] == 0xFF,
        || format!("load record header {:02x?}", &r[..0x10]),
    )?;
    Ok(ll)
}

/// QUERY / CONFIG: the DGE priority map, mailboxes and PC bounds (NX POOL core).
///
/// # Safety
/// `nx` holds live handles of the provider `run.api` binds.
unsafe fn configure(run: &mut Run<'_>, nx: &BroughtUp) -> Result<(), BringupError> {
    let api = run.api;
    let classes = [64u32, 128, 256, 512];
    run.ok(
        "query",
        "dge_set_priority_class_map(nx, [64,128,256,512])",
        (api.core_dge_set_priority_class_map)(nx.core, classes.as_ptr(), 4),
    )?;
    let mut mailboxes = 0u64;
    run.ok(
        "query",
        "get_dge_mailbox_addr(nx, 2)",
        (api.core_get_dge_mailbox_addr)(nx.core, 2, &mut mailboxes),
    )?;
    check(mailboxes == NX_POOL_DRAM + 0x28, || {
        format!("mailbox address 0x{mailboxes:x}")
    })?;
    run.step(
        "query",
        format!("  mailboxes at 0x{mailboxes:x}; mailboxes 2 and 3 reset to 0xFFFFFF00"),
    );
    run.ok(
        "query",
        "enable_pc_bounds_check(nx, 0x1000000, 0x1020000)",
        (api.core_enable_pc_bounds_check)(nx.core, 0x0100_0000, 0x0102_0000),
    )?;
    run.ok(
        "query",
        "disable_pc_bounds_check(nx)",
        (api.core_disable_pc_bounds_check)(nx.core),
    )
}

/// The firmware of each core writes a log record (the host drains them at teardown).
fn firmware_logs(dev: &SimDevice, cores: [&BroughtUp; 2]) -> Result<(), BringupError> {
    for core in cores {
        let kept = dev
            .firmware_log(
                core.dram,
                1,
                &format!("{} firmware: custom-op library loaded\n", core.label),
            )
            .map_err(|e| BringupError::Check(e.to_string()))?;
        check(kept, || "firmware log record dropped".into())?;
    }
    dev.clear_host_logs();
    Ok(())
}

/// TEARDOWN: drain the logs, unload, destroy, and check each claim was released.
///
/// # Safety
/// `ll`, `nx` and `q7` are live handles of the provider `run.api` binds; they are destroyed.
unsafe fn teardown(
    run: &mut Run<'_>,
    dev: &SimDevice,
    ll: LlHandle,
    nx: BroughtUp,
    q7: BroughtUp,
) -> Result<(), BringupError> {
    let api = run.api;
    for core in [&nx, &q7] {
        run.ok(
            "teardown",
            &format!("core_print_logs({})", core.label),
            (api.core_print_logs)(core.core),
        )?;
    }
    run.report.drained_logs = dev
        .host_logs()
        .into_iter()
        .filter(|l| l.text().contains("firmware:"))
        .map(|l| l.text().into_owned())
        .collect();
    for l in run.report.drained_logs.clone() {
        run.step("teardown", format!("  device log: {l}"));
    }
    check(run.report.drained_logs.len() == 2, || {
        format!("drained {:?}", run.report.drained_logs)
    })?;
    run.report.unload_records = sequence(
        run,
        "teardown",
        "ll_get_unload_sequence",
        api.ll_get_unload_sequence,
        ll,
        q7.core,
    )?;
    run.ok("teardown", "ll_destroy", (api.ll_destroy)(ll))?;
    for core in [nx, q7] {
        let ctx = (api.core_get_context)(core.core);
        check(ctx == core.ctx, || {
            "core_get_context returned another context".into()
        })?;
        run.ok(
            "teardown",
            &format!("core_destroy({})", core.label),
            (api.core_destroy)(core.core),
        )?;
        let word = dev
            .peek_u32(core.dram)
            .map_err(|e| BringupError::Check(e.to_string()))?;
        check(word == CLAIM_UNCLAIMED, || {
            format!("claim word 0x{word:08x} after release")
        })?;
        run.step("teardown", format!("  claim word released: 0x{word:08X}"));
        run.ok(
            "teardown",
            &format!("context_destroy({})", core.label),
            (api.context_destroy)(ctx),
        )?;
    }
    Ok(())
}

/// A Cayman Q7 POOL core of its own: ll_create prelinks the library and stages it in
/// device memory; the load record points at it, the unload record does not.
unsafe fn stage_cayman_library(
    run: &mut Run<'_>,
    dev: &Arc<SimDevice>,
) -> Result<(), BringupError> {
    let api = run.api;
    // SAFETY: the function's contract (see `run`).
    unsafe {
        let core = bring_up(
            run,
            dev,
            CAYMAN_Q7_POOL,
            CAYMAN_Q7_POOL_DRAM,
            "CAYMAN_Q7_POOL",
        )?;
        let mut ll: LlHandle = std::ptr::null_mut();
        run.ok(
            "load",
            "ll_create(cayman ctx, CAYMAN_Q7_POOL, DEFAULT, 0)",
            (api.ll_create)(core.ctx, CAYMAN_Q7_POOL, 0, 0, &mut ll),
        )?;
        run.report.cayman_load_records = sequence(
            run,
            "load",
            "ll_get_load_sequence",
            api.ll_get_load_sequence,
            ll,
            core.core,
        )?;
        let r = run.report.cayman_load_records[0];
        let addr = u64::from_le_bytes(r[0x10..0x18].try_into().unwrap());
        let size = u32::from_le_bytes(r[0x1c..0x20].try_into().unwrap());
        let mut header = [0u8; 0x20];
        dev.peek(addr, &mut header)
            .map_err(|e| BringupError::Check(format!("staged image: {e}")))?;
        check(&header[..8] == b"UCPL \0\0\0" && size > 0x20, || {
            format!("staged header {header:02x?}")
        })?;
        let code = u32::from_le_bytes(header[8..12].try_into().unwrap());
        let data = u32::from_le_bytes(header[0x10..0x14].try_into().unwrap());
        run.step(
            "load",
            format!(
                "  staged at 0x{addr:x}: UCPL header, code 0x{code:x} bytes, data 0x{data:x} bytes"
            ),
        );
        run.report.cayman_unload_records = sequence(
            run,
            "load",
            "ll_get_unload_sequence",
            api.ll_get_unload_sequence,
            ll,
            core.core,
        )?;
        run.ok("load", "ll_destroy(cayman library)", (api.ll_destroy)(ll))?;
        run.ok(
            "load",
            "core_destroy(CAYMAN_Q7_POOL)",
            (api.core_destroy)(core.core),
        )?;
        run.ok(
            "load",
            "context_destroy(CAYMAN_Q7_POOL)",
            (api.context_destroy)(core.ctx),
        )?;
    }
    Ok(())
}

struct BroughtUp {
    ctx: Ctx,
    core: CoreHandle,
    dram: u64,
    label: &'static str,
}

/// libnrt's per-core bring-up, in its order.
unsafe fn bring_up(
    run: &mut Run<'_>,
    dev: &Arc<SimDevice>,
    ct: u32,
    dram: u64,
    label: &'static str,
) -> Result<BroughtUp, BringupError> {
    let api = run.api;
    dev.map_control_block(dram)
        .map_err(|e| BringupError::Check(e.to_string()))?;
    let mut ctx: Ctx = std::ptr::null_mut();
    // SAFETY: the function's contract (see `run`).
    unsafe {
        run.ok(
            "bring-up",
            &format!("context_create(3) for {label}"),
            (api.context_create)(3, tables_rw(), &mut ctx),
        )?;
        (api.context_set_memhandle_impl)(ctx, tables_memhandle());
        let mut core: CoreHandle = std::ptr::null_mut();
        run.ok(
            "bring-up",
            &format!("core_create(ct {ct}, dram 0x{dram:x})"),
            (api.core_create)(ctx, ct, dram - 0x10_0000, dram, dram + 0x10_0000, &mut core),
        )?;
        (api.context_set_userdata)(ctx, Arc::as_ptr(dev) as *mut c_void);
        let name = CString::new(format!("ND[0]NC[0].{label}[0]")).unwrap();
        (api.core_set_friendly_name)(core, name.as_ptr());
        run.ok(
            "bring-up",
            &format!("core_on_ucode_booted({label})"),
            (api.core_on_ucode_booted)(core, 0),
        )?;
        let word = dev
            .peek_u32(dram)
            .map_err(|e| BringupError::Check(e.to_string()))?;
        check(word == CLAIM_CLAIMED, || {
            format!("claim word 0x{word:08x} after claim")
        })?;
        run.step(
            "bring-up",
            format!("  claim word 0x{CLAIM_UNCLAIMED:08X} -> 0x{word:08X}"),
        );
        run.ok(
            "bring-up",
            &format!("core_enable_logs({label})"),
            (api.core_enable_logs)(core),
        )?;
        Ok(BroughtUp {
            ctx,
            core,
            dram,
            label,
        })
    }
}

type SequenceFn =
    unsafe extern "C" fn(LlHandle, CoreHandle, usize, *mut std::ffi::c_char, *mut usize) -> u32;

#[repr(C, align(8))]
struct RecordBuffer([u8; RECORD_LEN * RECORD_CAPACITY]);

unsafe fn sequence(
    run: &mut Run<'_>,
    phase: &'static str,
    name: &str,
    f: SequenceFn,
    ll: LlHandle,
    core: CoreHandle,
) -> Result<Vec<[u8; RECORD_LEN]>, BringupError> {
    let mut buf = RecordBuffer([0; RECORD_LEN * RECORD_CAPACITY]);
    let mut n = 0usize;
    // SAFETY: an 8-byte aligned buffer of RECORD_CAPACITY records.
    let rc = unsafe { f(ll, core, RECORD_CAPACITY, buf.0.as_mut_ptr().cast(), &mut n) };
    run.ok(phase, &format!("{name} -> {n} record(s)"), rc)?;
    check((1..=RECORD_CAPACITY).contains(&n), || {
        format!("{n} records")
    })?;
    let records: Vec<[u8; RECORD_LEN]> = buf
        .0
        .chunks(RECORD_LEN)
        .take(n)
        .map(|c| c.try_into().expect("record"))
        .collect();
    for r in &records {
        run.step(phase, format!("  {}", describe_record(r)));
    }
    Ok(records)
}

/// A push record in words.
pub fn describe_record(r: &[u8; RECORD_LEN]) -> String {
    let u32_at = |o: usize| u32::from_le_bytes(r[o..o + 4].try_into().unwrap());
    format!(
        "record tag 0x{:04x} dir {} flag 0x{:02x} addr 0x{:x} selector {} size {}",
        u16::from_le_bytes([r[0], r[1]]),
        r[0x0c],
        r[0x0d],
        u64::from_le_bytes(r[0x10..0x18].try_into().unwrap()),
        u32_at(0x18),
        u32_at(0x1c)
    )
}

fn tables_rw() -> *const c_void {
    (&tables::RW_TABLE as *const tables::RwTable).cast()
}

fn tables_memhandle() -> *const c_void {
    (&tables::MEMHANDLE_TABLE as *const tables::MemhandleTable).cast()
}
