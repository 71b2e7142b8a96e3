//! Which Xtensa cross tools a device build runs: those an installation carries (the Python
//! wheel carries GCC and binutils for Xtensa, D114), else those on PATH (Debian's
//! `gcc-xtensa-lx106`, `binutils-xtensa-lx106`). Resolved once by whoever opens the build
//! (`nrt_pool_open::installation::xtensa_tools`) and passed in [`crate::BuildSetup`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The GNU tools for the Xtensa core a device build runs, by folder or from PATH.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XtensaTools {
    /// The folder holding `xtensa-lx106-elf-g++` and the rest; None: PATH.
    bin: Option<PathBuf>,
}

impl XtensaTools {
    pub const CXX: &'static str = "xtensa-lx106-elf-g++";
    pub const AS: &'static str = "xtensa-lx106-elf-as";
    pub const LD: &'static str = "xtensa-lx106-elf-ld";

    /// The tools on PATH.
    pub fn on_path() -> XtensaTools {
        XtensaTools { bin: None }
    }

    /// The tools in `bin` where its g++ is there, else those on PATH.
    pub fn carried_in_or_path(bin: &Path) -> XtensaTools {
        XtensaTools {
            bin: bin.join(Self::CXX).is_file().then(|| bin.to_path_buf()),
        }
    }

    /// The folder they are carried in, if they are.
    pub fn carried(&self) -> Option<&Path> {
        self.bin.as_deref()
    }

    /// The program `name` (one of the consts): its path in the carried folder, or the bare
    /// name for PATH.
    pub fn program(&self, name: &str) -> OsString {
        match &self.bin {
            Some(b) => b.join(name).into_os_string(),
            None => name.into(),
        }
    }

    pub fn cxx(&self) -> Command {
        Command::new(self.program(Self::CXX))
    }

    pub fn assembler(&self) -> Command {
        Command::new(self.program(Self::AS))
    }

    pub fn linker(&self) -> Command {
        Command::new(self.program(Self::LD))
    }

    /// Whether the g++ runs (`--version` answers).
    pub fn installed(&self) -> bool {
        self.cxx()
            .arg("--version")
            .output()
            .is_ok_and(|r| r.status.success())
    }

    /// Tests: PATH's tools, or None after saying loudly that the test cannot run here.
    #[cfg(test)]
    pub(crate) fn on_path_for_test() -> Option<XtensaTools> {
        let tools = XtensaTools::on_path();
        if tools.installed() {
            return Some(tools);
        }
        eprintln!(
            "UNSUPPORTED here: {} is not installed (make tools)",
            Self::CXX
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::XtensaTools;

    #[test]
    fn a_folder_without_the_compiler_falls_back_to_path() {
        let dir = tempfile::tempdir().unwrap();
        let t = XtensaTools::carried_in_or_path(dir.path());
        assert_eq!(t, XtensaTools::on_path());
        assert_eq!(t.program(XtensaTools::AS), "xtensa-lx106-elf-as");
        std::fs::write(dir.path().join(XtensaTools::CXX), b"").unwrap();
        let t = XtensaTools::carried_in_or_path(dir.path());
        assert_eq!(t.carried(), Some(dir.path()));
        assert_eq!(
            t.program(XtensaTools::LD),
            dir.path().join("xtensa-lx106-elf-ld").into_os_string()
        );
    }
}
