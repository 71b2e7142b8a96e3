//! The launch FFI misused: a sequence of the header's calls (init, register,
//! parameter metadata, output, launch v1/v2, checks, profile, close), valid and invalid
//! handles, names and tensors, from several threads at once, decoded from fuzzer bytes.
//!
//! The property: every call returns a code the header documents, with a message where it
//! fails; nothing crashes, hangs or is left running; the engine still works after (a valid
//! launch gives exact bytes), or, once closed, says so; and closing it leaves no file
//! descriptor open that the sequence opened. The runtime's lifecycle is
//! the process's (a closed runtime stays closed), so each sequence runs in a fresh process,
//! `nrt-pool-ffi-sequence`, through the shared library as a C runtime loads it
//! (`libnrt_pool_shim.so`, dlopen); [`fuzz_one`] starts it and judges its end. Inputs stay
//! within the C contract the header states (argument slots point at whole tensors whose
//! data holds their shape at the largest element size; argv has a slot for every
//! parameter, NULL past the fuzzer's): what is fuzzed is what a runtime may legally pass.

use std::ffi::{c_char, c_void, CStr, CString};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::launch::nrt_pool_tensor;

/// The calls, resolved from the shared library.
pub struct Shim {
    _lib: libloading::Library,
    init: unsafe extern "C" fn() -> i32,
    close: unsafe extern "C" fn() -> i32,
    registered: unsafe extern "C" fn() -> i32,
    abi: unsafe extern "C" fn() -> i32,
    last_error: unsafe extern "C" fn() -> *const c_char,
    devices: unsafe extern "C" fn() -> i32,
    register: unsafe extern "C" fn(*const c_char) -> i32,
    params: unsafe extern "C" fn(*const c_char, i32, *const u8, *const u8) -> i32,
    launch_v1: unsafe extern "C" fn(*const c_char, u32, *const *mut c_void, i64, i32) -> i32,
    output_v2: unsafe extern "C" fn(*const c_char, *const *mut c_void, *mut nrt_pool_tensor) -> i32,
    launch_v2: unsafe extern "C" fn(*const c_char, u32, *const *mut c_void, i64, i32) -> i32,
    checks: unsafe extern "C" fn(*const c_char) -> i32,
    profile: unsafe extern "C" fn(i32) -> i32,
    last_profile: unsafe extern "C" fn(*mut c_char, usize) -> i64,
}

impl Shim {
    /// `libnrt_pool_shim.so` at `path`, its calls resolved.
    pub fn open(path: &Path) -> Result<Shim, String> {
        // SAFETY: loading the shim runs no constructor with preconditions.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("{}: {e}", path.display()))?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: each symbol has the signature include/nrt_pool.h declares.
                *unsafe { lib.get($name) }
                    .map_err(|e| format!("{}: {e}", String::from_utf8_lossy($name)))?
            };
        }
        Ok(Shim {
            init: sym!(b"nrt_pool_init"),
            close: sym!(b"nrt_pool_close"),
            registered: sym!(b"nrt_pool_image_is_registered"),
            abi: sym!(b"nrt_pool_abi_version"),
            last_error: sym!(b"nrt_pool_last_error"),
            devices: sym!(b"nrt_pool_device_count"),
            register: sym!(b"nrt_pool_register_library"),
            params: sym!(b"nrt_pool_register_kernel_params"),
            launch_v1: sym!(b"nrt_pool_launch_v1"),
            output_v2: sym!(b"nrt_pool_op_output_v2"),
            launch_v2: sym!(b"nrt_pool_launch_v2"),
            checks: sym!(b"nrt_pool_set_checks"),
            profile: sym!(b"nrt_pool_set_profile"),
            last_profile: sym!(b"nrt_pool_last_profile"),
            _lib: lib,
        })
    }

    /// The calling thread's last error message.
    fn error(&self) -> String {
        // SAFETY: the shim returns a NUL-terminated string valid until this thread's next call.
        let p = unsafe { (self.last_error)() };
        if p.is_null() {
            return "<NULL>".into();
        }
        // SAFETY: as above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// The fuzzer's bytes, read front to back (zero once they run out).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[usize::from(self.u8()) % from.len()]
    }
}

/// Kernel and op names: the library's, qualified or not, and names it lacks.
const NAMES: &[&str] = &[
    "relu_forward",
    "mlp_ops::relu_forward",
    "relu_backward",
    "mlp_ops::axpb",
    "describe",
    "nope",
    "mlp_ops::",
    "::relu_forward",
    "",
    "NULL",
];
const CHECK_LISTS: &[&str] = &[
    "none",
    "default",
    "all",
    "init,race",
    "bogus",
    "",
    "warn",
    "NULL",
    "parity,memory",
];

/// A name as the C caller passes it ("NULL": a NULL pointer).
fn c_name(name: &str) -> Option<CString> {
    (name != "NULL").then(|| CString::new(name).expect("no NUL in the names"))
}

fn ptr(name: &Option<CString>) -> *const c_char {
    name.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
}

/// One argument slot, valid for every kind a launch may read it as: a whole tensor whose
/// data holds its shape at 8 bytes an element (also read as a double, an int64_t or a
/// `nrt_pool_scalar`).
struct Slot {
    tensor: Box<nrt_pool_tensor>,
    _data: Vec<u64>,
}

/// Elements a fuzzed tensor may claim.
const MAX_ELEMENTS: u64 = 4096;

impl Slot {
    fn fuzzed(b: &mut Bytes<'_>) -> Slot {
        let mut rank = u32::from(b.u8() % 10);
        let mut shape = [0u64; 8];
        for d in shape.iter_mut().take(rank.min(8) as usize) {
            *d = u64::from(b.u8() % 9);
        }
        let numel = |s: &[u64; 8], r: u32| s.iter().take(r.min(8) as usize).product::<u64>();
        while rank > 0 && numel(&shape, rank) > MAX_ELEMENTS {
            rank -= 1;
        }
        const DTYPES: [u8; 12] = [10, 8, 2, 3, 4, 5, 6, 7, 9, 11, 12, 0];
        let dtype = match b.u8() {
            x if x < 200 => DTYPES[usize::from(x) % DTYPES.len()],
            x => x,
        };
        let location = b.u8() % 3;
        let null = b.u8() == 0xFF;
        Self::new(&shape, rank, dtype, location, null)
    }

    fn new(shape: &[u64; 8], rank: u32, dtype: u8, location: u8, null: bool) -> Slot {
        let n = shape
            .iter()
            .take(rank.min(8) as usize)
            .product::<u64>()
            .max(3) as usize;
        let mut data = vec![0x3F80_0000_3F80_0000u64; n];
        let tensor = Box::new(nrt_pool_tensor {
            data: if null {
                std::ptr::null_mut()
            } else {
                data.as_mut_ptr().cast()
            },
            shape: *shape,
            rank,
            dtype,
            location,
            reserved: [0; 2],
        });
        Slot {
            tensor,
            _data: data,
        }
    }

    fn f32s(shape: &[u64], values: &[f32]) -> (Slot, Vec<f32>) {
        let mut dims = [0u64; 8];
        dims[..shape.len()].copy_from_slice(shape);
        let mut s = Slot::new(&dims, shape.len() as u32, 10, 0, false);
        let p = s.tensor.data.cast::<f32>();
        for (i, v) in values.iter().enumerate() {
            // SAFETY: the slot's data holds at least `values.len()` f32s (8 bytes an element).
            unsafe { p.add(i).write(*v) };
        }
        let read = (0..values.len())
            // SAFETY: as above.
            .map(|i| unsafe { p.add(i).read() })
            .collect();
        s.tensor.location = 0;
        (s, read)
    }

    fn ptr(&mut self) -> *mut c_void {
        (&mut *self.tensor as *mut nrt_pool_tensor).cast()
    }
}

/// An argv: the given slots, then NULL for every other parameter a kernel may have.
struct Argv {
    slots: Vec<Slot>,
    ptrs: Vec<*mut c_void>,
}

impl Argv {
    fn new(mut slots: Vec<Slot>) -> Argv {
        let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(Slot::ptr).collect();
        ptrs.resize(nrt_pool_engine::MAX_ARGS + 2, std::ptr::null_mut());
        Argv { slots, ptrs }
    }

    fn fuzzed(b: &mut Bytes<'_>) -> Argv {
        let n = usize::from(b.u8() % 6);
        Argv::new((0..n).map(|_| Slot::fuzzed(b)).collect())
    }
}

/// What went wrong in a sequence.
type Violation = String;

/// A result must be one of the header's codes, with a message where it is not OK.
fn code(
    shim: &Shim,
    what: &str,
    r: i32,
    allowed: std::ops::RangeInclusive<i32>,
) -> Result<i32, Violation> {
    if !allowed.contains(&r) {
        return Err(format!(
            "{what} returned {r}, which the header does not document"
        ));
    }
    if r != 0 && shim.error().is_empty() {
        return Err(format!(
            "{what} returned {r} with no message in nrt_pool_last_error"
        ));
    }
    Ok(r)
}

/// All codes a call of the launch FFI may return (NRT_POOL_OK to NRT_POOL_ERR_ENGINE).
const CODES: std::ops::RangeInclusive<i32> = 0..=8;

/// Runs one fuzzed call on this thread.
/// (`closed` is set when a close succeeded.)
fn step(
    shim: &Shim,
    b: &mut Bytes<'_>,
    library: &CString,
    closed: &std::sync::atomic::AtomicBool,
) -> Result<(), Violation> {
    // SAFETY (every call below): arguments as the header's contract states them (see the
    // module's note): valid or NULL strings, argv with a valid slot or NULL per parameter.
    unsafe {
        match b.u8() % 16 {
            0 => {
                code(shim, "nrt_pool_init", (shim.init)(), 0..=1)?;
            }
            1 => {
                // Rare: a closed runtime stays closed for the rest of the sequence.
                if b.u8() == 0xC1 && code(shim, "nrt_pool_close", (shim.close)(), CODES)? == 0 {
                    closed.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            2 => {
                let paths = [
                    Some(library.clone()),
                    Some(library.clone()),
                    c_name("/nonexistent/libx.so"),
                    c_name("/dev/null"),
                    c_name("/"),
                    c_name(""),
                    None,
                ];
                let p = &paths[usize::from(b.u8()) % paths.len()];
                code(
                    shim,
                    "nrt_pool_register_library",
                    (shim.register)(ptr(p)),
                    CODES,
                )?;
            }
            3 => {
                let name = c_name(b.pick(NAMES));
                let count = i32::from(b.u8() as i8);
                let kinds: Vec<u8> = (0..40).map(|_| b.u8() % 4).collect();
                let dtypes: Vec<u8> = (0..40).map(|_| b.u8() % 14).collect();
                let (k, d) = match b.u8() % 3 {
                    0 => (std::ptr::null(), dtypes.as_ptr()),
                    _ => (kinds.as_ptr(), dtypes.as_ptr()),
                };
                let count = count.clamp(-2, 40);
                code(
                    shim,
                    "nrt_pool_register_kernel_params",
                    (shim.params)(ptr(&name), count, k, d),
                    CODES,
                )?;
            }
            4 => {
                let name = c_name(b.pick(NAMES));
                let cores = u32::from(b.u8() % 10);
                let argv = Argv::fuzzed(b);
                let device = i32::from(b.u8() % 4) - 1;
                let r = (shim.launch_v1)(ptr(&name), cores, argv.ptrs.as_ptr(), 0, device);
                code(shim, "nrt_pool_launch_v1", r, CODES)?;
            }
            5 | 6 => {
                let name = c_name(b.pick(NAMES));
                let argv = Argv::fuzzed(b);
                if b.u8().is_multiple_of(2) {
                    let mut out = Slot::fuzzed(b);
                    let r = (shim.output_v2)(ptr(&name), argv.ptrs.as_ptr(), &mut *out.tensor);
                    code(shim, "nrt_pool_op_output_v2", r, CODES)?;
                } else {
                    let cores = u32::from(b.u8() % 10);
                    let r = (shim.launch_v2)(ptr(&name), cores, argv.ptrs.as_ptr(), 0, -1);
                    code(shim, "nrt_pool_launch_v2", r, CODES)?;
                }
                drop(argv.slots);
            }
            7 => {
                let list = c_name(b.pick(CHECK_LISTS));
                code(
                    shim,
                    "nrt_pool_set_checks",
                    (shim.checks)(ptr(&list)),
                    CODES,
                )?;
            }
            8 => {
                code(shim, "nrt_pool_set_profile", (shim.profile)(b.i32()), CODES)?;
            }
            9 => {
                let cap = [0usize, 1, 16, 4096][usize::from(b.u8() % 4)];
                let mut buf = vec![0 as c_char; cap.max(1)];
                let null = b.u8().is_multiple_of(4);
                let p = if null {
                    std::ptr::null_mut()
                } else {
                    buf.as_mut_ptr()
                };
                let r = (shim.last_profile)(p, cap);
                if r < -2 || (r >= 0 && cap > 0 && !null && buf[..cap].iter().all(|c| *c != 0)) {
                    return Err(format!(
                        "nrt_pool_last_profile(cap {cap}) returned {r} or left no NUL"
                    ));
                }
            }
            10 => {
                let _ = shim.error();
            }
            11 => {
                let (a, d, r) = ((shim.abi)(), (shim.devices)(), (shim.registered)());
                if a != crate::launch::NRT_POOL_ABI_VERSION || d != 1 || !(-1..=1).contains(&r) {
                    return Err(format!("abi {a}, devices {d}, image registered {r}"));
                }
            }
            _ => valid_relu(shim, b.u8().is_multiple_of(2), false)?,
        }
    }
    Ok(())
}

/// A valid relu_forward of a 2x3 tensor (through an output + launch pair when `paired`):
/// OK with exact bytes, or a documented failure (not initialised, no library, checks);
/// with `must_work`, OK only.
fn valid_relu(shim: &Shim, paired: bool, must_work: bool) -> Result<(), Violation> {
    let values = [-1.5f32, 0.0, 2.5, -0.0, 7.25, -3.0];
    let (mut input, _) = Slot::f32s(&[2, 3], &values);
    let (mut output, _) = Slot::f32s(&[2, 3], &[9.0; 6]);
    let argv = [input.ptr(), output.ptr()];
    let name = c_name("mlp_ops::relu_forward");
    // SAFETY: a valid name, two valid tensors (the input and the output).
    let r = unsafe {
        if paired {
            let r = (shim.output_v2)(ptr(&name), argv.as_ptr(), &mut *output.tensor);
            if r != 0 {
                r
            } else {
                (shim.launch_v2)(ptr(&name), 0, argv.as_ptr(), 0, -1)
            }
        } else {
            (shim.launch_v2)(ptr(&name), 0, argv.as_ptr(), 0, -1)
        }
    };
    let r = code(shim, "a valid relu_forward", r, CODES)?;
    if must_work && r != 0 {
        return Err(format!(
            "a valid launch after the sequence returned {r}: {}",
            shim.error()
        ));
    }
    if r == 0 || r == 7 {
        let p = output.tensor.data.cast::<f32>();
        // SAFETY: the output slot holds six f32s.
        let got: Vec<u32> = (0..6)
            .map(|i| unsafe { p.add(i).read() }.to_bits())
            .collect();
        let want: Vec<u32> = values.iter().map(|v| v.max(0.0).to_bits()).collect();
        // relu of -0.0 keeps the kernel's own answer (v > 0 ? v : 0).
        let want: Vec<u32> = want
            .iter()
            .map(|w| if *w == 0x8000_0000 { 0 } else { *w })
            .collect();
        if got != want {
            return Err(format!("a valid relu_forward gave {got:x?}, not {want:x?}"));
        }
    }
    Ok(())
}

/// Runs the sequence `data` describes in this process (the runtime's lifecycle is the
/// process's), its threads at once, then checks the engine still works, or says it is
/// closed. `Err`: the property broken.
pub fn run_in_this_process(data: &[u8], shim: &Path, library: &Path) -> Result<(), Violation> {
    let shim = Shim::open(shim)?;
    let descriptors = open_descriptors();
    let lib = CString::new(library.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    let mut b = Bytes(data);
    let threads = 1 + usize::from(b.u8() % 4);
    // Each thread's calls: every `threads`-th step of the input.
    let mut parts: Vec<Vec<u8>> = vec![Vec::new(); threads];
    for (i, chunk) in b.0.chunks(12).enumerate() {
        parts[i % threads].extend_from_slice(chunk);
    }
    let closed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|part| {
                let (shim, lib, closed) = (&shim, &lib, &closed);
                s.spawn(move || {
                    let mut b = Bytes(part);
                    while !b.0.is_empty() {
                        let before = b.0.len();
                        step(shim, &mut b, lib, closed)?;
                        if b.0.len() == before {
                            break;
                        }
                    }
                    Ok::<(), Violation>(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a thread panicked".to_string())?)
            .collect::<Result<Vec<()>, Violation>>()
    })?;
    // After: usable, or closed and saying so.
    // SAFETY: the header's calls with valid arguments.
    unsafe {
        let init = (shim.init)();
        if closed.load(std::sync::atomic::Ordering::SeqCst) {
            let r = (shim.launch_v2)(
                c"mlp_ops::relu_forward".as_ptr(),
                0,
                [std::ptr::null_mut(); 2].as_ptr(),
                0,
                -1,
            );
            if init != 1 || r != 1 {
                return Err(format!(
                    "after close: init {init}, launch {r} (want 1 and 1)"
                ));
            }
            return Ok(());
        }
        code(&shim, "nrt_pool_init after", init, 0..=1)?;
        code(
            &shim,
            "nrt_pool_set_checks(none)",
            (shim.checks)(c"none".as_ptr()),
            0..=0,
        )?;
        code(
            &shim,
            "nrt_pool_register_library",
            (shim.register)(lib.as_ptr()),
            0..=0,
        )?;
    }
    valid_relu(&shim, true, true)?;
    valid_relu(&shim, false, true)?;
    // SAFETY: closing the runtime with no call in flight.
    let r = unsafe { (shim.close)() };
    code(&shim, "nrt_pool_close", r, 0..=0)?;
    // What the sequence opened, its failures included, is closed with the runtime.
    let left = open_descriptors();
    if left > descriptors {
        return Err(format!(
            "{} file descriptors left open after close ({descriptors} before the sequence)",
            left - descriptors
        ));
    }
    Ok(())
}

/// This process's open file descriptors.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Where the sequence helper, the shim and the op library are: `$NRT_POOL_FFI_SEQUENCE`,
/// `$NRT_POOL_SHIM`, `$NRT_POOL_FUZZ_LIBRARY`, else in this checkout's `target/`.
pub struct Setup {
    pub helper: PathBuf,
    pub shim: PathBuf,
    pub library: PathBuf,
}

impl Setup {
    pub fn from_env() -> Setup {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let var = |name: &str, default: PathBuf| {
            std::env::var_os(name).map(PathBuf::from).unwrap_or(default)
        };
        Setup {
            helper: var(
                "NRT_POOL_FFI_SEQUENCE",
                root.join("target/release/nrt-pool-ffi-sequence"),
            ),
            shim: var(
                "NRT_POOL_SHIM",
                root.join("target/release/libnrt_pool_shim.so"),
            ),
            library: var(
                "NRT_POOL_FUZZ_LIBRARY",
                root.join("target/tmp/ffi-sequence/libmlp_ops.so"),
            ),
        }
    }
}

/// How long one sequence may take before it counts as a hang.
const SEQUENCE_TIME: Duration = Duration::from_secs(120);

/// The fuzz target's property: the sequence `data` describes runs in a fresh process to a
/// clean end (see the module's note), within [`SEQUENCE_TIME`], leaving no process of its
/// own running. Panics with what went wrong.
pub fn fuzz_one(data: &[u8]) {
    if let Err(e) = judge(data, &Setup::from_env()) {
        panic!("{e}");
    }
}

/// [`fuzz_one`]'s verdict.
pub fn judge(data: &[u8], setup: &Setup) -> Result<(), Violation> {
    static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mark = format!(
        "{}-{}",
        std::process::id(),
        RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut child = Command::new(&setup.helper)
        .arg(&setup.shim)
        .arg(&setup.library)
        .env("NRT_POOL_FUZZ_MARK", &mark)
        .env_remove("GPSIMD_OPEN_CHECK")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "{}: {e} (cargo build --release -p nrt-pool-shim)",
                setup.helper.display()
            )
        })?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(data)
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if start.elapsed() > SEQUENCE_TIME {
            let _ = child.kill();
            let _ = child.wait();
            kill_marked(&mark);
            return Err(format!(
                "the sequence did not end within {SEQUENCE_TIME:?} (a deadlock?)"
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    // Core processes end with their engine; give them a moment.
    let left = (0..100)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(10));
            marked(&mark)
        })
        .find(|l| l.is_empty())
        .unwrap_or_else(|| marked(&mark));
    if !left.is_empty() {
        kill_marked(&mark);
        return Err(format!(
            "processes of the sequence were left running: {left:?}"
        ));
    }
    match status.code() {
        Some(0) => Ok(()),
        Some(c) => Err(format!("the sequence's process exited {c}: {stderr}")),
        None => Err(format!(
            "the sequence's process was killed by a signal ({status}): {stderr}"
        )),
    }
}

/// The processes whose environment carries `mark`.
fn marked(mark: &str) -> Vec<u32> {
    let needle = format!("NRT_POOL_FUZZ_MARK={mark}\0");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
        .collect()
}

fn kill_marked(mark: &str) {
    for pid in marked(mark) {
        // SAFETY: a signal to a process this sequence started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}
