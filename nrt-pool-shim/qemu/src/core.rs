//! One Pool core: a `qemu-system-xtensa` process running the board with an op image loaded,
//! driven over the board's channel ([`crate::protocol`]).

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use nrt_pool_schema::pool_image;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use object::{Object, ObjectSection, ObjectSymbol};

use crate::fault::{self, CoreFault};
use crate::layout;
use crate::protocol::{self, Boot, RecvError};

/// The emulator binary (`make tools` installs it; Debian's qemu-system-misc).
pub const QEMU: &str = "qemu-system-xtensa";
/// The image symbols the board calls: the start code, the launcher and the kernel roster.
pub const ENTRY_SYMBOL: &str = "entry_func";
pub const CALL_WRAPPER_SYMBOL: &str = "_Z28switch_stack_or_call_wrapperjj";
pub const REGISTER_FUNCS_SYMBOL: &str = "_Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE";
/// The metadata the op build helper adds: a schema (schema flow) or an op list
/// (NEURON_LIBRARY flow), each a `const char *f(void)`.
pub const METADATA_SYMBOLS: [&str; 2] = ["nrt_pool_op_schema", "nrt_pool_op_library"];

#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    #[error("cannot start {QEMU}: {0} (make tools installs it)")]
    Spawn(std::io::Error),
    #[error("{path}: {why}")]
    Image { path: PathBuf, why: String },
    #[error("{0}")]
    Fault(CoreFault),
    #[error("core {core}: the board broke the protocol: {why}")]
    Protocol { core: usize, why: String },
    #[error("core {core}: no kernel number {kernel} (the image registered {count})")]
    NoKernel {
        core: usize,
        kernel: usize,
        count: usize,
    },
    #[error("core {core}: channel: {source}")]
    Io { core: usize, source: std::io::Error },
}

/// Each core's op image (ELF) in a `.pool` file.
pub fn pool_cores(path: &Path) -> Result<Vec<Vec<u8>>, QemuError> {
    let bad = |why: String| QemuError::Image {
        path: path.to_path_buf(),
        why,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let (iram, dram) = pool_image::parse_file(&bytes).map_err(|e| bad(e.to_string()))?;
    let cores = pool_image::parse_pair(iram, dram).map_err(|e| bad(e.to_string()))?;
    Ok(cores.iter().map(|c| c.elf.to_vec()).collect())
}

/// A kernel the image registered, in `register_funcs` order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub name: Vec<u8>,
}

/// A finished kernel: the launcher's status and the bytes it wrote to stdout and stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    pub status: u32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// A running core.
pub struct XtensaCore {
    core: usize,
    child: Child,
    cmd: File,
    rsp: File,
    stderr: File,
    kernels: Vec<Kernel>,
    entry_status: u32,
    /// The image's schema or op list (empty: none).
    metadata: Vec<u8>,
    /// The op image and the board, for naming fault addresses.
    images: [Vec<u8>; 2],
    _file: tempfile::NamedTempFile,
    /// QEMU's monitor socket (human monitor protocol).
    monitor: PathBuf,
    _monitor_dir: tempfile::TempDir,
}

/// A pipe, both ends close-on-exec.
pub(crate) fn pipe() -> std::io::Result<(File, File)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 into a two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors this function owns.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// The address of `name` in an ELF image.
fn symbol(file: &object::File<'_>, name: &str) -> Option<u32> {
    file.symbols()
        .find(|s| s.name_bytes().ok() == Some(name.as_bytes()) && s.is_definition())
        .and_then(|s| u32::try_from(s.address()).ok())
}

impl XtensaCore {
    /// Starts core `core` (its slot and the id the runtime is told) with `image`, an op
    /// image (ELF) linked for this core and named `name` in reports, under `board`; returns
    /// once the image's start code has run.
    pub fn start(
        board: &Path,
        image: &[u8],
        name: &Path,
        core: usize,
        cores: u32,
        deadline: Instant,
    ) -> Result<XtensaCore, QemuError> {
        let bad = |why: String| QemuError::Image {
            path: name.to_path_buf(),
            why,
        };
        let bytes = image.to_vec();
        let board_bytes = std::fs::read(board).map_err(|e| QemuError::Image {
            path: board.to_path_buf(),
            why: format!("{e} (make customop-archives builds the board)"),
        })?;
        let boot = {
            let file = object::File::parse(&*bytes).map_err(|e| bad(e.to_string()))?;
            if file.architecture() != object::Architecture::Xtensa {
                return Err(bad(format!(
                    "not an Xtensa image ({:?})",
                    file.architecture()
                )));
            }
            let org = file.section_by_name(".text").map(|s| s.address());
            if org != Some(u64::from(layout::image_org(core))) {
                return Err(bad(format!(
                    "linked at {:#x}, not core {core}'s {:#x}",
                    org.unwrap_or(0),
                    layout::image_org(core)
                )));
            }
            let need = |name: &str| {
                symbol(&file, name).ok_or_else(|| bad(format!("no {name} (link the archive)")))
            };
            Boot {
                entry_func: need(ENTRY_SYMBOL)?,
                call_wrapper: need(CALL_WRAPPER_SYMBOL)?,
                register_funcs: need(REGISTER_FUNCS_SYMBOL)?,
                data_scratch: layout::DATA_SCRATCH,
                data_scratch_size: layout::DATA_SCRATCH_BYTES,
                hbm_scratch: layout::hbm_scratch(core),
                hbm_scratch_size: layout::HBM_SCRATCH_BYTES as u32,
                cores,
                core: core as u32,
                metadata: METADATA_SYMBOLS
                    .iter()
                    .find_map(|n| symbol(&file, n))
                    .unwrap_or(0),
            }
        };
        let io = |source| QemuError::Io { core, source };
        // QEMU's loader reads the image from a file: a private copy, gone with the core.
        let mut file = tempfile::Builder::new()
            .prefix("pool-core")
            .suffix(".elf")
            .tempfile()
            .map_err(io)?;
        std::io::Write::write_all(&mut file, &bytes).map_err(io)?;
        let (cmd_r, cmd_w) = pipe().map_err(io)?;
        let (rsp_r, rsp_w) = pipe().map_err(io)?;
        let (err_r, err_w) = pipe().map_err(io)?;
        // The monitor, asked for the PC when the core overstays its deadline.
        let monitor_dir = tempfile::tempdir().map_err(io)?;
        let monitor = monitor_dir.path().join("monitor");
        // The virt machine starts `core + 1` cores with PRIDs 0..=core; the board halts all
        // but the one named at CORE_WORD, so the runtime reads its id from PRID.
        let mut qemu = Command::new(QEMU);
        qemu.args(["-M", "virt", "-cpu", "de212", "-nic", "none", "-smp"])
            .arg((core + 1).to_string())
            .arg("-m")
            .arg(format!("{}M", layout::RAM_MIB))
            .arg("-device")
            .arg(format!(
                "loader,addr={:#x},data={core},data-len=4",
                layout::CORE_WORD
            ))
            .args(["-semihosting", "-display", "none", "-monitor"])
            .arg(format!("unix:{},server=on,wait=off", monitor.display()))
            .args(["-serial", "none", "-nodefaults", "-kernel"])
            .arg(board)
            .arg("-device")
            .arg(format!("loader,file={}", file.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err_w));
        let (cr, rw) = (cmd_r.as_raw_fd(), rsp_w.as_raw_fd());
        // SAFETY: only async-signal-safe calls between fork and exec: the channel's ends
        // become the core's fds 3 and 4 (moved above 10 first so neither overwrites the
        // other; dup2 clears close-on-exec on the copies).
        unsafe {
            qemu.pre_exec(move || {
                let a = libc::fcntl(cr, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(rw, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = qemu.spawn().map_err(QemuError::Spawn)?;
        drop((cmd_r, rsp_w));
        let mut c = XtensaCore {
            core,
            child,
            cmd: cmd_w,
            rsp: rsp_r,
            stderr: err_r,
            kernels: Vec::new(),
            entry_status: 0,
            metadata: Vec::new(),
            images: [bytes, board_bytes],
            _file: file,
            monitor,
            _monitor_dir: monitor_dir,
        };
        c.send(protocol::CMD_BOOT, &[&boot.encode()])?;
        let (ready, _) = c.expect(protocol::RSP_READY, deadline)?;
        let (Some(status), Some(count), Some(meta_len)) = (
            protocol::word(&ready, 0),
            protocol::word(&ready, 4),
            protocol::word(&ready, 8),
        ) else {
            return Err(c.protocol(format!("a {}-byte ready report", ready.len())));
        };
        let Some(names_end) = ready
            .len()
            .checked_sub(meta_len as usize)
            .filter(|&e| e >= 12)
        else {
            return Err(c.protocol(format!("{meta_len} bytes of metadata announced")));
        };
        c.entry_status = status;
        c.metadata = ready[names_end..].to_vec();
        c.kernels = ready[12..names_end]
            .split_inclusive(|&b| b == 0)
            .map(|n| Kernel {
                name: n.strip_suffix(&[0]).unwrap_or(n).to_vec(),
            })
            .collect();
        if c.kernels.len() != count as usize {
            return Err(c.protocol(format!(
                "{count} kernels announced, {} named",
                c.kernels.len()
            )));
        }
        Ok(c)
    }

    pub fn core(&self) -> usize {
        self.core
    }

    /// `entry_func`'s status (0: the image started).
    pub fn entry_status(&self) -> u32 {
        self.entry_status
    }

    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// The image's schema or op list text (empty: it carries none).
    pub fn metadata(&self) -> &[u8] {
        &self.metadata
    }

    /// The index of the kernel named `name`.
    pub fn kernel(&self, name: &[u8]) -> Option<usize> {
        self.kernels.iter().position(|k| k.name == name)
    }

    /// Writes `bytes` into the core's memory at `local`.
    pub fn load(&mut self, local: u32, bytes: &[u8]) -> Result<(), QemuError> {
        const CHUNK: usize = 1 << 20;
        for (i, part) in bytes.chunks(CHUNK).enumerate() {
            let at = local + (i * CHUNK) as u32;
            self.send(protocol::CMD_LOAD, &[&at.to_le_bytes(), part])?;
        }
        Ok(())
    }

    /// Reads `n` bytes of the core's memory at `local`.
    pub fn dump(&mut self, local: u32, n: u32, deadline: Instant) -> Result<Vec<u8>, QemuError> {
        let mut cmd = local.to_le_bytes().to_vec();
        cmd.extend_from_slice(&n.to_le_bytes());
        self.send(protocol::CMD_DUMP, &[&cmd])?;
        let (data, _) = self.expect(protocol::RSP_DATA, deadline)?;
        if data.len() != n as usize {
            return Err(self.protocol(format!("{} bytes dumped, {n} asked", data.len())));
        }
        Ok(data)
    }

    /// Runs kernel `kernel` as one of `cores` cores; its stdio comes back with it.
    pub fn run(
        &mut self,
        kernel: usize,
        cores: u32,
        deadline: Instant,
    ) -> Result<Completion, QemuError> {
        self.begin(kernel, cores)?;
        self.finish(deadline)
    }

    /// Starts kernel `kernel` (as one of `cores` cores) without waiting: several cores run
    /// at once, each in its own QEMU process.
    pub fn begin(&mut self, kernel: usize, cores: u32) -> Result<(), QemuError> {
        if kernel >= self.kernels.len() {
            return Err(QemuError::NoKernel {
                core: self.core,
                kernel,
                count: self.kernels.len(),
            });
        }
        let mut cmd = (kernel as u32).to_le_bytes().to_vec();
        cmd.extend_from_slice(&cores.to_le_bytes());
        self.send(protocol::CMD_RUN, &[&cmd])
    }

    /// Waits for the kernel [`XtensaCore::begin`] started.
    pub fn finish(&mut self, deadline: Instant) -> Result<Completion, QemuError> {
        let (status, out) = self.expect(protocol::RSP_DONE, deadline)?;
        Ok(Completion {
            status: protocol::word(&status, 0).unwrap_or(u32::MAX),
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }

    fn send(&mut self, tag: u32, parts: &[&[u8]]) -> Result<(), QemuError> {
        match protocol::send(&mut self.cmd, tag, parts) {
            Ok(()) => Ok(()),
            // The core ended: its report (or exit) says why.
            Err(_) => Err(self.ended(Instant::now() + std::time::Duration::from_secs(2))),
        }
    }

    /// The next reply, which must be `tag`; stdio frames on the way are collected.
    fn expect(&mut self, tag: u32, deadline: Instant) -> Result<(Vec<u8>, Completion), QemuError> {
        let mut out = Completion::default();
        loop {
            match protocol::recv(&mut self.rsp, deadline) {
                Ok((t, body)) if t == tag => return Ok((body, out)),
                Ok((protocol::RSP_OUT, body)) => match protocol::word(&body, 0) {
                    Some(2) => out.stderr.extend_from_slice(&body[4..]),
                    Some(_) => out.stdout.extend_from_slice(&body[4..]),
                    None => return Err(self.protocol("an empty stdio frame".into())),
                },
                Ok((protocol::RSP_FAULT, body)) => {
                    let images = [&self.images[0][..], &self.images[1][..]];
                    let f = fault::decode(self.core, &body, &images);
                    self.reap();
                    return Err(f.map_or_else(
                        || self.protocol("a short fault record".into()),
                        QemuError::Fault,
                    ));
                }
                Ok((protocol::RSP_FATAL, body)) => {
                    self.reap();
                    return Err(QemuError::Fault(CoreFault::Fatal {
                        core: self.core,
                        message: body,
                    }));
                }
                Ok((t, _)) => return Err(self.protocol(format!("reply {t} where {tag} was due"))),
                Err(RecvError::TimedOut) => {
                    let pc = self.pc();
                    self.reap();
                    let images = [&self.images[0][..], &self.images[1][..]];
                    return Err(QemuError::Fault(CoreFault::Timeout {
                        core: self.core,
                        pc,
                        symbol: pc.and_then(|pc| fault::symbolize(&images, pc)),
                    }));
                }
                Err(RecvError::Closed) => return Err(self.ended(deadline)),
                Err(RecvError::TooLarge(n)) => {
                    return Err(self.protocol(format!("a {n}-byte frame")))
                }
                Err(RecvError::Io(source)) => {
                    return Err(QemuError::Io {
                        core: self.core,
                        source,
                    })
                }
            }
        }
    }

    /// The core's PC, from the monitor's `info registers` ("PC=xxxxxxxx").
    fn pc(&self) -> Option<u32> {
        use std::io::Write;
        let mut s = std::os::unix::net::UnixStream::connect(&self.monitor).ok()?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .ok()?;
        s.write_all(format!("cpu {}\ninfo registers\n", self.core).as_bytes())
            .ok()?;
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(at) = text.find("PC=") {
                let hex: String = text[at + 3..]
                    .chars()
                    .take_while(char::is_ascii_hexdigit)
                    .collect();
                if hex.len() == 8 {
                    return u32::from_str_radix(&hex, 16).ok();
                }
            }
        }
        None
    }

    fn protocol(&mut self, why: String) -> QemuError {
        self.reap();
        QemuError::Protocol {
            core: self.core,
            why,
        }
    }

    /// QEMU ended without a report: its status and stderr.
    fn ended(&mut self, deadline: Instant) -> QemuError {
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.code(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                _ => {
                    self.reap();
                    break None;
                }
            }
        };
        let mut stderr = String::new();
        let mut buf = Vec::new();
        // SAFETY: a valid descriptor; non-blocking so a quiet QEMU cannot stall the report.
        unsafe { libc::fcntl(self.stderr.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let _ = self.stderr.read_to_end(&mut buf);
        stderr.push_str(&String::from_utf8_lossy(&buf));
        QemuError::Fault(CoreFault::Exited {
            core: self.core,
            status,
            stderr,
        })
    }

    /// Stops QEMU.
    fn reap(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Ends the core.
    pub fn quit(mut self) {
        let _ = protocol::send(&mut self.cmd, protocol::CMD_QUIT, &[]);
        let deadline = Instant::now() + std::time::Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

impl Drop for XtensaCore {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.reap();
        }
    }
}
