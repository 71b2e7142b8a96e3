//! One Pool core: a `qemu-system-xtensa` process running the board with an op image loaded,
//! driven over the board's channel ([`crate::protocol`]).

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use nrt_pool_schema::pool_image;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use nrt_pool_engine::deadline::Deadline;
use nrt_pool_engine::memory::DeviceMemory;
use nrt_pool_engine::spawner;
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};

use crate::fault::{self, CoreFault};
use crate::layout;
use crate::protocol::{self, Boot, RecvError};
use crate::tools::QEMU_ENV;
use nrt_pool_engine::symbolize::ImageSet;

/// What a core runs on: the emulator, the board, and the engine's device memory, which the
/// core maps (shared, not copied: docs/decisions.md D63).
#[derive(Clone, Copy)]
pub struct Platform<'a> {
    pub qemu: &'a Path,
    pub board: &'a Path,
    pub memory: &'a DeviceMemory,
    /// QEMU's gdb stub listens on this port of 127.0.0.1 (a debug launch's core).
    pub gdb_port: Option<u16>,
    /// `-plugin` argument: the profile plugin and its arguments (a profiled launch).
    pub plugin: Option<&'a str>,
}

/// The machine's `regions` property: where each SoC range lies in the memory file.
fn regions_property(memory: &DeviceMemory) -> String {
    memory
        .regions()
        .map(|r| format!("{:x}+{:x}@{:x}", r.soc, r.size, r.offset))
        .collect::<Vec<_>>()
        .join(";")
}

/// What no window of core `core` shows (the machine's `hidden` property): the other cores'
/// op images, hbm_scratch slices and data scratch areas, so that no store of this core
/// reaches them (#25).
fn hidden_property(memory: &DeviceMemory, core: usize) -> String {
    (0..layout::CORES)
        .filter(|&other| other != core)
        .flat_map(|other| {
            let (scratch, size) = memory.hbm_scratch(other);
            let data = memory.scratch[other];
            [
                (layout::image_soc(other), layout::IMAGE_BYTES),
                (scratch, size),
                (data.soc, data.size),
            ]
        })
        .map(|(soc, size)| format!("{soc:x}+{size:x}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// Copies the image's loadable segments into device memory, where core `core`'s pinned
/// hbm_scratch window shows them (its 2 MiB slot, cleared first).
fn place_image(memory: &DeviceMemory, file: &object::File<'_>, core: usize) -> Result<(), String> {
    let org = u64::from(layout::image_org(core));
    let slot = memory
        .host(layout::image_soc(core), layout::IMAGE_BYTES)
        .ok_or("device memory has no room for the op images")?;
    // SAFETY: `slot` spans IMAGE_BYTES of the shared mapping (host() checked the range); no
    // core runs this slot's image while it is placed.
    unsafe { std::ptr::write_bytes(slot, 0, layout::IMAGE_BYTES as usize) };
    for seg in file.segments() {
        let data = seg.data().map_err(|e| e.to_string())?;
        let (at, size) = (seg.address(), seg.size());
        if size == 0 {
            continue;
        }
        let off = at
            .checked_sub(org)
            .filter(|o| {
                o.checked_add(size)
                    .is_some_and(|e| e <= layout::IMAGE_BYTES)
            })
            .ok_or_else(|| {
                format!(
                    "a segment at {at:#x} (+{size:#x}) lies outside core {core}'s 2 MiB image slot"
                )
            })?;
        let n = data.len().min(size as usize);
        // SAFETY: off + n <= IMAGE_BYTES (checked above), inside the slot.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), slot.add(off as usize), n) };
    }
    Ok(())
}

/// The image symbols the board calls: the start code, the launcher and the kernel roster.
pub use customop_abi::handoff::{CALL_WRAPPER_SYMBOL, ENTRY_SYMBOL, REGISTER_FUNCS_SYMBOL};
/// The metadata the op build helper adds: a schema (schema flow) or an op list
/// (NEURON_LIBRARY flow), each a `const char *f(void)`.
pub const METADATA_SYMBOLS: [&str; 2] = ["nrt_pool_op_schema", "nrt_pool_op_library"];

#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    #[error("cannot start {}: {source} (make customop-archives builds QEMU with the nrt-pool machine; ${QEMU_ENV} names another)", path.display())]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
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
pub struct Finished {
    pub status: u32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// The core's descriptor for the device memory file.
const MEMORY_FD: i32 = 5;
/// The core's descriptor for its end of the monitor's socket pair.
const MONITOR_FD: i32 = 6;

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
    /// What its start code printed.
    start_output: Finished,
    /// The op image and the board, for naming fault addresses.
    images: [Vec<u8>; 2],
    /// Our end of QEMU's monitor (human monitor protocol), a socket pair: no path in the
    /// file system, so nothing is left behind when this process ends without dropping the
    /// core (a Python interpreter's exit, a killed process).
    monitor: UnixStream,
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
    /// Starts core `core` (its slot and PRID) with `image`, an op image (ELF) linked for
    /// this core and named `name` in reports, on `platform`; returns once the image's start
    /// code has run.
    pub fn start(
        platform: Platform<'_>,
        image: &[u8],
        name: &Path,
        core: usize,
        cores: u32,
        deadline: &Deadline,
    ) -> Result<XtensaCore, QemuError> {
        let bad = |why: String| QemuError::Image {
            path: name.to_path_buf(),
            why,
        };
        let Platform {
            qemu: qemu_path,
            board,
            memory,
            ..
        } = platform;
        let bytes = image.to_vec();
        let board_bytes = std::fs::read(board).map_err(|e| QemuError::Image {
            path: board.to_path_buf(),
            why: format!("{e} (make customop-archives builds the board)"),
        })?;
        let boot = boot_record(memory, &bytes, core, cores).map_err(bad)?;
        let io = |source| QemuError::Io { core, source };
        let (cmd_r, cmd_w) = pipe().map_err(io)?;
        let (rsp_r, rsp_w) = pipe().map_err(io)?;
        let (err_r, err_w) = pipe().map_err(io)?;
        // The monitor, asked for the PC when the core overstays its deadline (both ends
        // close-on-exec: the core's end is duplicated to its fd 6 below).
        let (monitor, monitor_core) = UnixStream::pair().map_err(io)?;
        let mut qemu = qemu_command(&platform, core);
        qemu.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err_w));
        let (cr, rw, mem, mon) = (
            cmd_r.as_raw_fd(),
            rsp_w.as_raw_fd(),
            memory.file().as_raw_fd(),
            monitor_core.as_raw_fd(),
        );
        // SAFETY: only async-signal-safe calls between fork and exec: the channel's ends
        // become the core's fds 3 and 4, the memory file its fd 5 and the monitor's end its
        // fd 6 (moved above 10 first so none overwrites another; dup2 clears close-on-exec
        // on the copies).
        unsafe {
            qemu.pre_exec(move || {
                let a = libc::fcntl(cr, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(rw, libc::F_DUPFD_CLOEXEC, 10);
                let m = libc::fcntl(mem, libc::F_DUPFD_CLOEXEC, 10);
                let n = libc::fcntl(mon, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0
                    || b < 0
                    || m < 0
                    || n < 0
                    || libc::dup2(a, 3) < 0
                    || libc::dup2(b, 4) < 0
                    || libc::dup2(m, MEMORY_FD) < 0
                    || libc::dup2(n, MONITOR_FD) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // Spawned on the engine's spawner thread, where host cores are forked too: a plain
        // fork on another thread while this spawn waits for exec would copy the spawn's
        // status pipe into a long-lived core process, and the spawn would wait forever.
        let child = spawner::run(|| qemu.spawn()).map_err(|source| QemuError::Spawn {
            path: qemu_path.to_path_buf(),
            source,
        })?;
        drop((cmd_r, rsp_w, monitor_core));
        let mut c = XtensaCore {
            core,
            child,
            cmd: cmd_w,
            rsp: rsp_r,
            stderr: err_r,
            kernels: Vec::new(),
            entry_status: 0,
            metadata: Vec::new(),
            start_output: Finished::default(),
            images: [bytes, board_bytes],
            monitor,
        };
        c.send(protocol::CMD_BOOT, &[&boot.encode()])?;
        c.ready(deadline)?;
        Ok(c)
    }

    /// The core's ready report after its start code ran: the entry status, the kernels it
    /// registered, the library's metadata.
    fn ready(&mut self, deadline: &Deadline) -> Result<(), QemuError> {
        let c = self;
        let (ready, printed) = c.expect(protocol::RSP_READY, deadline)?;
        c.start_output = printed;
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
        Ok(())
    }

    pub fn core(&self) -> usize {
        self.core
    }

    /// What the image's start code (its global constructors, entry_func) printed.
    pub fn start_output(&self) -> &Finished {
        &self.start_output
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

    /// Sets the pages no window shows (the engine's guard pages after tensors): a core that
    /// touches one faults there, naming the address.
    pub fn guard(&mut self, pages: &[u64]) -> Result<(), QemuError> {
        if pages.len() > protocol::MAX_GUARDS {
            return Err(QemuError::Protocol {
                core: self.core,
                why: format!(
                    "{} guard pages; the machine holds {}",
                    pages.len(),
                    protocol::MAX_GUARDS
                ),
            });
        }
        self.send(protocol::CMD_GUARDS, &[&protocol::encode_guards(pages)])
    }

    /// Runs kernel `kernel` as one of `cores` cores; its stdio comes back with it.
    pub fn run(
        &mut self,
        kernel: usize,
        cores: u32,
        deadline: &Deadline,
    ) -> Result<Finished, QemuError> {
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
    pub fn finish(&mut self, deadline: &Deadline) -> Result<Finished, QemuError> {
        let (status, out) = self.expect(protocol::RSP_DONE, deadline)?;
        Ok(Finished {
            status: protocol::word(&status, 0).unwrap_or(u32::MAX),
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }

    fn send(&mut self, tag: u32, parts: &[&[u8]]) -> Result<(), QemuError> {
        match protocol::send(&mut self.cmd, tag, parts) {
            Ok(()) => Ok(()),
            // The core ended: its report (or exit) says why.
            Err(_) => Err(self.ended(&Deadline::after(std::time::Duration::from_secs(2)))),
        }
    }

    /// The next reply, which must be `tag`; stdio frames on the way are collected.
    fn expect(&mut self, tag: u32, deadline: &Deadline) -> Result<(Vec<u8>, Finished), QemuError> {
        let mut out = Finished::default();
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
                Ok((protocol::RSP_FATAL, message)) => {
                    // The board follows the message with a fault record carrying the call
                    // stack that reached the runtime's check.
                    let stack = match protocol::recv(&mut self.rsp, deadline) {
                        Ok((protocol::RSP_FAULT, body)) => fault::stack(&body, &self.named()),
                        _ => Vec::new(),
                    };
                    self.reap();
                    return Err(QemuError::Fault(CoreFault::Fatal {
                        core: self.core,
                        message,
                        stack,
                    }));
                }
                Ok((t, _)) => return Err(self.protocol(format!("reply {t} where {tag} was due"))),
                Err(RecvError::TimedOut) => {
                    let pc = self.pc();
                    self.reap();
                    let named = self.named();
                    return Err(QemuError::Fault(CoreFault::Timeout {
                        core: self.core,
                        pc,
                        symbol: pc.and_then(|pc| named.symbol(u64::from(pc))),
                        stack: pc.map_or_else(Vec::new, |pc| named.stack(&[u64::from(pc)])),
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

    /// Makes the board hold the next kernel until a debugger lets it go (it clears the
    /// board's `board_debug_wait`): the core then spins where a debugger attached through
    /// QEMU's gdb stub can stop it, never blocked in a read the stub cannot interrupt.
    pub fn hold_next_run(&mut self) -> Result<(), QemuError> {
        self.send(protocol::CMD_DEBUG, &[])
    }

    /// The core's op image and the board, for naming addresses.
    fn named(&self) -> ImageSet<'_> {
        ImageSet::new(&[&self.images[0], &self.images[1]])
    }

    /// The QEMU process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The core's op image (ELF).
    pub fn image(&self) -> &[u8] {
        &self.images[0]
    }

    /// The core's PC, from the monitor's `info registers` ("PC=xxxxxxxx").
    fn pc(&self) -> Option<u32> {
        use std::io::Write;
        let mut s = &self.monitor;
        // What the monitor said before (its greeting, an earlier answer's tail) is not
        // this answer: drained first.
        s.set_nonblocking(true).ok()?;
        let mut buf = [0u8; 4096];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        s.set_nonblocking(false).ok()?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .ok()?;
        s.write_all(b"info registers\n").ok()?;
        let mut seen = Vec::new();
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
    fn ended(&mut self, deadline: &Deadline) -> QemuError {
        use std::os::unix::process::ExitStatusExt;
        let (status, signal) = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break (s.code(), s.signal()),
                Ok(None) if !deadline.passed() => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                _ => {
                    self.reap();
                    break (None, None);
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
            signal,
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

/// The boot record of core `core` (of `cores`) for an op image, the image placed in the
/// core's memory: checked to be an Xtensa image linked for this core.
fn boot_record(
    memory: &DeviceMemory,
    bytes: &[u8],
    core: usize,
    cores: u32,
) -> Result<Boot, String> {
    let file = object::File::parse(bytes).map_err(|e| e.to_string())?;
    if file.architecture() != object::Architecture::Xtensa {
        return Err(format!("not an Xtensa image ({:?})", file.architecture()));
    }
    let org = file.section_by_name(".text").map(|s| s.address());
    if org != Some(u64::from(layout::image_org(core))) {
        return Err(format!(
            "linked at {:#x}, not core {core}'s {:#x}",
            org.unwrap_or(0),
            layout::image_org(core)
        ));
    }
    let need =
        |name: &str| symbol(&file, name).ok_or_else(|| format!("no {name} (link the archive)"));
    let (hbm_scratch, hbm_scratch_size) = memory.hbm_scratch(core);
    if layout::local_of(hbm_scratch + hbm_scratch_size - 1).is_none() {
        return Err(format!(
            "core {core}'s hbm_scratch at SoC {hbm_scratch:#x} lies outside its pinned window"
        ));
    }
    let boot = Boot {
        entry_func: need(ENTRY_SYMBOL)?,
        call_wrapper: need(CALL_WRAPPER_SYMBOL)?,
        register_funcs: need(REGISTER_FUNCS_SYMBOL)?,
        data_scratch: memory.scratch[core].soc,
        data_scratch_size: memory.scratch[core].size as u32,
        hbm_scratch,
        hbm_scratch_size: hbm_scratch_size as u32,
        sbuf_pin: layout::SBUF_SOC,
        hbm_pin: layout::HBM_SOC,
        cores,
        core: core as u32,
        metadata: METADATA_SYMBOLS
            .iter()
            .find_map(|n| symbol(&file, n))
            .unwrap_or(0),
    };
    place_image(memory, &file, core)?;
    Ok(boot)
}

/// QEMU for one core (PRID = `core`) whose RAM is the engine's memory file, at the core's
/// fd 5, its monitor on the connected socket at fd 6 (asked for the PC when the core
/// overstays its deadline).
fn qemu_command(platform: &Platform<'_>, core: usize) -> Command {
    let (board, memory) = (platform.board, platform.memory);
    let mut qemu = Command::new(platform.qemu);
    qemu.arg("-M")
        .arg(format!(
            "nrt-pool,core={core},memory-backend=device,regions={},hidden={}",
            regions_property(memory),
            hidden_property(memory, core)
        ))
        .args(["-cpu", "de233_fpu", "-object"])
        .arg(format!(
            "memory-backend-file,id=device,mem-path=/dev/fd/{MEMORY_FD},share=on,size={}",
            memory.file_len()
        ))
        .args(["-semihosting", "-display", "none", "-chardev"])
        .arg(format!("socket,id=monitor,fd={MONITOR_FD}"))
        .args(["-mon", "chardev=monitor,mode=readline"])
        .args(["-serial", "none", "-nodefaults", "-kernel"])
        .arg(board);
    if let Some(port) = platform.gdb_port {
        qemu.arg("-gdb").arg(format!("tcp:127.0.0.1:{port}"));
    }
    if let Some(plugin) = platform.plugin {
        qemu.arg("-plugin").arg(plugin);
    }
    qemu
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_emulator_is_named_with_how_to_build_it() {
        let e = QemuError::Spawn {
            path: PathBuf::from("/nowhere/qemu-system-xtensa"),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let text = e.to_string();
        assert!(
            text.starts_with("cannot start /nowhere/qemu-system-xtensa: "),
            "{text}"
        );
        assert!(text.contains("make customop-archives"), "{text}");
        assert!(text.contains("NRT_POOL_QEMU"), "{text}");
    }
}
