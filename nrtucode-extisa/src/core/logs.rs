//! The device log ring: the host allocates it, publishes its address and size in the
//! control block, and drains records the firmware appends at the head.

use core::ptr;

use super::control_block::{LOG_HEAD, LOG_RING_ADDR, LOG_RING_SIZE, MAX_LOG_LEVEL};
use super::Core;
use crate::error::{Error, Result};
use crate::platform::{Memhandle, PlatformObject, SEV_ERROR, SEV_INFO};

/// Ring size `nrtucode_core_enable_logs` asks for.
pub const DEFAULT_RING_SIZE: u32 = 0x20000;
/// Ring sizes are rounded up to this, and it is the ring's device alignment.
pub const RING_ALIGN: u32 = 0x20;

const FN_ENABLE: &str = "nrtucode_core_enable_logs_with_size_hint";
const FN_DISABLE: &str = "nrtucode_core_disable_logs";
const FN_SET_LEVEL: &str = "nrtucode_core_set_max_loglevel";
const FN_PRINT: &str = "nrtucode_core_print_logs";

/// `core_enable_logs_with_size_hint`.
pub fn enable(core: Core, size_hint: u32) -> Result {
    core.require_booted(FN_ENABLE)?;
    disable(core)?;
    let ctx = core.ctx();
    let size = size_hint.wrapping_add(RING_ALIGN - 1) & !(RING_ALIGN - 1);
    let ring = ctx.device_malloc(size as usize, RING_ALIGN as usize)?;
    core.update(|c| {
        c.log_memhandle = ring.0;
        c.log_buf_size = size;
        c.log_read_cursor = 0;
    });
    let addr = ctx.memhandle_soc_addr(ring);
    let dram = core.dram_base();
    ctx.write_u64(dram + LOG_RING_ADDR, addr)?;
    ctx.write_u32(dram + LOG_RING_SIZE, size)?;
    ctx.write_u32(dram + LOG_HEAD, 0)?;
    let mut level = 4;
    while level > 0 && !ctx.level_enabled(level) {
        level -= 1;
    }
    set_max_loglevel(core, level)?;
    ctx.log(
        SEV_INFO,
        format_args!(
            "{} logs enabled; bufsize={size} max level={level}",
            core.name()
        ),
    );
    Ok(())
}

/// `core_disable_logs`. Without a ring it only reads back the level word (the record shows
/// the read but not its purpose; its result is returned).
pub fn disable(core: Core) -> Result {
    core.require_booted(FN_DISABLE)?;
    let ctx = core.ctx();
    let dram = core.dram_base();
    let ring = Memhandle(core.get(|c| c.log_memhandle));
    if ring.is_none() {
        return ctx.read_u32(dram + MAX_LOG_LEVEL).map(drop);
    }
    ctx.write_u64(dram + LOG_RING_ADDR, 0)?;
    ctx.write_u32(dram + LOG_RING_SIZE, 0)?;
    ctx.device_free(ring);
    core.update(|c| c.log_memhandle = ptr::null_mut());
    Ok(())
}

/// `core_set_max_loglevel`: the firmware drops records above this level.
pub fn set_max_loglevel(core: Core, level: u32) -> Result {
    core.require_booted(FN_SET_LEVEL)?;
    core.ctx()
        .write_u32(core.dram_base() + MAX_LOG_LEVEL, level)
}

/// `core_print_logs`: reads everything between the host tail and the device head and logs
/// each `[u8 sev][NUL-terminated text]` record as "<name>: <text minus its last byte>".
/// The ring does not wrap: the head is compared directly with the ring size.
pub fn print(core: Core) -> Result {
    core.require_booted(FN_PRINT)?;
    let ctx = core.ctx();
    let (ring, size, tail) = core.get(|c| {
        (
            Memhandle(c.log_memhandle),
            c.log_buf_size,
            c.log_read_cursor,
        )
    });
    if ring.is_none() {
        ctx.log(
            SEV_ERROR,
            format_args!(
                "nrtucode: invalid API usage in `{FN_PRINT}`: {}: Logs must be enabled before printing them",
                core.name()
            ),
        );
        return Err(Error::Invalid);
    }
    let head = ctx.read_u32(core.dram_base() + LOG_HEAD)?;
    if head == tail {
        return Ok(());
    }
    // A head behind the tail cannot come from a ring that never wraps; it is reported like
    // a head past the end instead of being read as a 4 GiB span (docs/decisions.md).
    if head > size || head < tail {
        ctx.log(
            SEV_ERROR,
            format_args!(
                "{}: internal error: invalid log buffer tail index {head}",
                core.name()
            ),
        );
        return Err(Error::Io);
    }
    let len = (head - tail) as usize;
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| Error::Allocation)?;
    buf.resize(len, 0);
    ctx.read_memhandle(ring, u64::from(tail), &mut buf)?;
    let name = core.name();
    for (sev, text) in LogRecords::new(&buf) {
        ctx.log(
            u32::from(sev),
            format_args!("{name}: {}", crate::handles::RawBytes(text)),
        );
    }
    core.update(|c| c.log_read_cursor = c.log_read_cursor.wrapping_add(len as u32));
    Ok(())
}

/// Iterates the ring's records: NUL padding is skipped, then `[sev][text][NUL]`. The text
/// is printed without its last byte (the firmware's trailing newline), i.e. `strnlen - 1`.
pub struct LogRecords<'a> {
    rest: &'a [u8],
}

impl<'a> LogRecords<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        LogRecords { rest: bytes }
    }
}

impl<'a> Iterator for LogRecords<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.rest.iter().position(|&b| b != 0)?;
        let (&sev, body) = self.rest[start..].split_first()?;
        let len = body.iter().position(|&b| b == 0).unwrap_or(body.len());
        let text = &body[..len.saturating_sub(1)];
        self.rest = &body[(len + 1).min(body.len())..];
        Some((sev, text))
    }
}

#[cfg(test)]
mod tests {
    use super::LogRecords;

    #[test]
    fn records_skip_padding_and_drop_last_byte() {
        let ring = b"\x01boot ok\n\0\0\0\x04second\n\0\x02x\0\x03\0\x04cut";
        let got: Vec<(u8, &[u8])> = LogRecords::new(ring).collect();
        assert_eq!(
            got,
            vec![
                (1, &b"boot ok"[..]),
                (4, &b"second"[..]),
                (2, &b""[..]),
                (3, &b""[..]),
                (4, &b"cu"[..]),
            ]
        );
        assert_eq!(LogRecords::new(b"\0\0\0").count(), 0);
    }
}
