//! Pool cores on `qemu-system-xtensa`: an op image linked for a core (windowed ABI,
//! `customop-device/xtensa/pool-core.ld`) runs under the open board
//! (`nrt-pool-shim/qemu/board/`, docs/decisions.md D56), one QEMU process per core, on
//! QEMU's `nrt-pool` machine (`machine/nrt-pool.c`, D63), which maps the engine's device
//! memory into the core through translation windows.
//!
//! The board is the firmware's counterpart: it calls the image's `entry_func` with a handoff
//! block, collects the kernels `register_funcs` gives, then runs kernels on command. Host and core talk over two pipes the core reaches through
//! semihosting ([`protocol`]); stdio and faults come back the same way ([`fault`]).
//!
//! The core's address space ([`layout`]) follows the device: the data scratch area at
//! 0x80000, the dynamic windows from 0x04000000, the pinned SBUF window at 0x80000000 and
//! the pinned HBM scratch window at 0x84000000, which holds the op images (core i's at
//! 0x84000000 + i * 0x200000).

mod access;
pub mod backend;
pub mod core;
mod entry;
pub mod fault;
pub mod layout;
mod profile;
pub mod protocol;
mod scratch;
pub mod tools;

pub use self::backend::XtensaBackend;

/// The variable that names the board, before any search.
pub const BOARD_ENV: &str = "NRT_POOL_XTENSA_BOARD";

pub use self::core::{pool_cores, Finished, Kernel, QemuError, XtensaCore};
pub use self::fault::{CoreFault, FaultCause};
pub use self::tools::{gdb_for, qemu_for};
