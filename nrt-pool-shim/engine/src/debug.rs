//! A launch with one core stopped for a debugger (`nrt-pool run --gdb`): the
//! backend opens a gdb remote stub on that core before the launch (gdbserver attached to a
//! host core's process; QEMU's gdb stub for an Xtensa core, the CPU stopped), the engine
//! writes a session file saying how to reach it, and the launch waits for the core without
//! a deadline while someone debugs it. `nrt-pool gdb LIB [CORE]` reads the session file
//! and starts gdb attached, with breakpoints at the kernel and where it returns.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Arc;

/// Where the debugger can reach a stopped core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebugSession {
    pub core: usize,
    /// The backend: "host" or "xtensa" (which gdb to run).
    pub isa: String,
    /// The stub's TCP port on 127.0.0.1.
    pub port: u16,
    /// The core's process (host cores: the one gdbserver attached to; QEMU's for Xtensa).
    pub pid: u32,
    /// The op library the launch runs.
    pub library: PathBuf,
    /// The kernel, as a breakpoint location.
    pub kernel: String,
    /// Where the core goes when the kernel has returned (a breakpoint there ends a
    /// `continue`: the core's process lives on for the next launch).
    pub returned: String,
    /// A gdb command that lets the stopped core go on to the kernel (Xtensa: the board
    /// holds the launch until it runs).
    pub release: Option<String>,
    /// Files gdb reads symbols from (Xtensa: the core's image and the board; host cores'
    /// libraries come from the process itself).
    pub symbols: Vec<PathBuf>,
    /// How the `nrt-data` command finds a tensor's bytes.
    pub data: DataAccess,
}

/// How a debugger reads device memory by SoC address without disturbing the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataAccess {
    /// Where the core's process maps each device memory region: (SoC address, bytes, the
    /// process's address). Host cores: plain arithmetic in gdb, no call into the process
    /// (gdbserver 13 can restore a vector register wrongly after one on some CPUs).
    Mapped(Vec<(u64, u64, u64)>),
    /// A function of the core to call as `void *f(unsigned long long soc, unsigned n)`: it
    /// copies the bytes into the core's `char f_copy[]` and says how many in
    /// `unsigned f_len` (0: no memory there), which the debugger reads rather than the
    /// call's return value (the Xtensa board reads through its own window; gdb's calls on
    /// windowed cores can read a result from the wrong register window).
    Call(String),
}

/// What asks for a debug launch: the core to stop, and who to tell where it waits (the
/// CLI prints how to attach; Python prints it too).
#[derive(Clone)]
pub struct DebugRequest {
    pub core: usize,
    pub notify: Arc<dyn Fn(&DebugSession) + Send + Sync>,
}

impl std::fmt::Debug for DebugRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebugRequest")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

/// What `nrt-data` says it does (gdb's `help nrt-data`).
const DATA_HELP: &str = "\
document nrt-data
Usage: nrt-data TENSOR (a tensor or an accessor of one)
Sets $data to the tensor's first bytes as this core holds them (on host cores the device
memory itself; on Xtensa cores a copy of 256 bytes the board reads through its own
window), without touching the translation windows the kernel uses: then, say,
print ((float *)$data)[0]@4.
end
";

/// What a debug launch tells its user: where the core waits and how to attach.
pub fn attach_hint(s: &DebugSession) -> String {
    format!(
        "core {} ({} cores) is stopped before kernel '{}', waiting for gdb on 127.0.0.1:{}; \
         attach with: nrt-pool gdb {} {}",
        s.core,
        s.isa,
        s.kernel,
        s.port,
        s.library.display(),
        s.core
    )
}

/// A request to stop core `core` that prints [`attach_hint`] on stderr, prefixed `who: `.
pub fn printing_request(core: usize, who: &'static str) -> DebugRequest {
    DebugRequest {
        core,
        notify: Arc::new(move |s| eprintln!("{who}: {}", attach_hint(s))),
    }
}

/// The folder of session files: `$XDG_RUNTIME_DIR/nrt-pool-gdb`, else
/// `/tmp/nrt-pool-gdb-UID` (one session per core at a time for a user).
pub fn session_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("nrt-pool-gdb"),
        // SAFETY: getuid cannot fail.
        _ => PathBuf::from(format!("/tmp/nrt-pool-gdb-{}", unsafe { libc::getuid() })),
    }
}

/// The session file of core `core`.
pub fn session_file(core: usize) -> PathBuf {
    session_dir().join(format!("core{core}"))
}

impl DebugSession {
    /// The file's text: `key value` lines; paths as their bytes (never altered).
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut line = |k: &str, v: &[u8]| {
            out.extend_from_slice(k.as_bytes());
            out.push(b' ');
            out.extend_from_slice(v);
            out.push(b'\n');
        };
        line("core", self.core.to_string().as_bytes());
        line("isa", self.isa.as_bytes());
        line("port", self.port.to_string().as_bytes());
        line("pid", self.pid.to_string().as_bytes());
        line("library", self.library.as_os_str().as_bytes());
        line("kernel", self.kernel.as_bytes());
        line("returned", self.returned.as_bytes());
        if let Some(r) = &self.release {
            line("release", r.as_bytes());
        }
        for s in &self.symbols {
            line("symbols", s.as_os_str().as_bytes());
        }
        match &self.data {
            DataAccess::Mapped(regions) => {
                for (soc, len, at) in regions {
                    line("region", format!("{soc:#x} {len:#x} {at:#x}").as_bytes());
                }
            }
            DataAccess::Call(f) => line("read", f.as_bytes()),
        }
        out
    }

    fn from_bytes(bytes: &[u8]) -> Option<DebugSession> {
        let mut s = DebugSession {
            core: usize::MAX,
            isa: String::new(),
            port: 0,
            pid: 0,
            library: PathBuf::new(),
            kernel: String::new(),
            returned: String::new(),
            release: None,
            symbols: Vec::new(),
            data: DataAccess::Mapped(Vec::new()),
        };
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let at = line.iter().position(|&b| b == b' ')?;
            let (k, v) = (&line[..at], &line[at + 1..]);
            let text = || std::str::from_utf8(v).ok().map(str::to_string);
            let path = || PathBuf::from(OsString::from_vec(v.to_vec()));
            match k {
                b"core" => s.core = text()?.parse().ok()?,
                b"isa" => s.isa = text()?,
                b"port" => s.port = text()?.parse().ok()?,
                b"pid" => s.pid = text()?.parse().ok()?,
                b"library" => s.library = path(),
                b"kernel" => s.kernel = text()?,
                b"returned" => s.returned = text()?,
                b"release" => s.release = Some(text()?),
                b"symbols" => s.symbols.push(path()),
                b"read" => s.data = DataAccess::Call(text()?),
                b"region" => {
                    let t = text()?;
                    let n: Vec<u64> = t
                        .split(' ')
                        .map(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
                        .collect::<Option<_>>()?;
                    let [soc, len, at] = n[..] else { return None };
                    match &mut s.data {
                        DataAccess::Mapped(r) => r.push((soc, len, at)),
                        DataAccess::Call(_) => return None,
                    }
                }
                _ => {}
            }
        }
        (s.core != usize::MAX && s.port != 0).then_some(s)
    }

    /// Writes the session file (replacing one a finished session left), and the gdb
    /// commands sessions share.
    pub fn write(&self) -> io::Result<PathBuf> {
        let dir = session_dir();
        std::fs::create_dir_all(&dir)?;
        std::fs::write(self.commands_file(), self.commands())?;
        let file = session_file(self.core);
        let partial = dir.join(format!(".core{}.{}", self.core, std::process::id()));
        std::fs::write(&partial, self.to_bytes())?;
        std::fs::rename(&partial, &file)?;
        Ok(file)
    }

    /// The session of core `core` a debug launch wrote, if its stub still listens.
    pub fn read(core: usize) -> io::Result<DebugSession> {
        let file = session_file(core);
        let bytes = std::fs::read(&file).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "no debug session for core {core} ({}: {e}); start one with `nrt-pool run ... --gdb={core}`",
                    file.display()
                ),
            )
        })?;
        DebugSession::from_bytes(&bytes).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a debug session file", file.display()),
            )
        })
    }

    /// The gdb commands file of this session (`nrt-data`).
    fn commands_file(&self) -> PathBuf {
        session_dir().join(format!("core{}.gdb", self.core))
    }

    /// gdb commands for op authors: `nrt-data TENSOR`.
    fn commands(&self) -> String {
        let soc = "(unsigned long long)(($arg0).soc_)";
        let mut body = String::from("define nrt-data\n  dont-repeat\n  set $data = (char *)0\n");
        match &self.data {
            DataAccess::Mapped(regions) => {
                for (soc_lo, len, at) in regions {
                    body.push_str(&format!(
                        "  if {soc} >= {soc_lo:#x} && {soc} < {:#x}\n    set $data = (char *)({at:#x} + ({soc} - {soc_lo:#x}))\n  end\n",
                        soc_lo + len
                    ));
                }
            }
            DataAccess::Call(f) => body.push_str(&format!(
                "  call (void)((void *(*)(unsigned long long, unsigned int)){f})({soc}, 256)\n  if *(unsigned int *)&{f}_len != 0\n    set $data = (char *)&{f}_copy\n  end\n"
            )),
        }
        // printf with no string arguments: gdb's printf copies a string argument into the
        // process by calling its malloc.
        body.push_str(
            "  if $data == 0\n    printf \"$arg0: no device memory there\\n\"\n  else\n    printf \"$data = %p (the data of $arg0)\\n\", $data\n  end\nend\n",
        );
        body + DATA_HELP
    }

    /// Removes the session file (the launch ended), if it is still this session's.
    pub fn remove(&self) {
        let file = session_file(self.core);
        if std::fs::read(&file).ok().as_deref() == Some(&self.to_bytes()[..]) {
            let _ = std::fs::remove_file(file);
            let _ = std::fs::remove_file(self.commands_file());
        }
    }

    /// gdb's arguments for this session before the user's own: attach, stop at the kernel
    /// and where it returns, and run to the kernel.
    pub fn gdb_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["-q".into(), "-nx".into()];
        let mut ex = |c: &dyn AsRef<OsStr>| {
            args.push("-ex".into());
            args.push(c.as_ref().to_os_string());
        };
        ex(&"set pagination off");
        ex(&"set confirm off");
        // The core runs on this machine: its files are read here, not through the stub.
        ex(&"set sysroot /");
        ex(&"set debuginfod enabled off");
        let mut source = OsString::from("source ");
        source.push(self.commands_file());
        ex(&source);
        let mut first = true;
        for s in &self.symbols {
            let mut c = OsString::from(if first { "file " } else { "add-symbol-file " });
            c.push(s);
            ex(&c);
            first = false;
        }
        ex(&format!("target remote 127.0.0.1:{}", self.port));
        ex(&"set breakpoint pending on");
        ex(&format!("break {}", self.kernel));
        ex(&format!("break {}", self.returned));
        if let Some(r) = &self.release {
            ex(r);
        }
        ex(&"continue");
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_file_reads_back_byte_for_byte() {
        let s = DebugSession {
            core: 3,
            isa: "xtensa".into(),
            port: 40123,
            pid: 77,
            library: PathBuf::from(OsString::from_vec(b"/tmp/l\xffb.pool".to_vec())),
            kernel: "ns::relu".into(),
            returned: "board_kernel_returned".into(),
            release: Some("set var *(unsigned int *)&board_debug_wait = 0".into()),
            symbols: vec![PathBuf::from("/a/core3.elf"), PathBuf::from("/b/board.elf")],
            data: DataAccess::Call("nrt_pool_debug_read".into()),
        };
        assert_eq!(DebugSession::from_bytes(&s.to_bytes()), Some(s.clone()));
        assert_eq!(DebugSession::from_bytes(b"core 1\n"), None, "no port");
        let host = DebugSession {
            data: DataAccess::Mapped(vec![(0x40_0000_0000, 0x1000, 0x7f00_0000_0000)]),
            ..s.clone()
        };
        assert_eq!(
            DebugSession::from_bytes(&host.to_bytes()),
            Some(host.clone())
        );
        assert!(host
            .commands()
            .contains("set $data = (char *)(0x7f0000000000 + ((unsigned long long)(($arg0).soc_) - 0x4000000000))"));
        assert!(s
            .commands()
            .contains("nrt_pool_debug_read)((unsigned long long)(($arg0).soc_), 256)"));
        let args: Vec<String> = s
            .gdb_args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |what: &str| args.iter().position(|a| a == what).unwrap();
        assert!(at("file /a/core3.elf") < at("add-symbol-file /b/board.elf"));
        assert!(at("add-symbol-file /b/board.elf") < at("target remote 127.0.0.1:40123"));
        assert!(at("break ns::relu") < at("continue"));
        assert!(at("break board_kernel_returned") < at("continue"));
    }
}
