//! A launch's tensor accesses, as the device runtime counts them on each core:
//! what the device-time estimate prices beyond instructions. The runtime keeps one
//! [`AccessCounts`] under the symbol [`ACCESS_COUNTS_SYMBOL`], zeroed when a launch starts;
//! the engine reads it from a core's image after a profiled launch on Xtensa cores (the
//! image lies in device memory at its SoC address).

/// The runtime's functions that serve an access (demangled names, or their prefixes): the
/// device-time estimate leaves their instructions out and prices the access by the counts
/// instead. The runtime's own tests check that each names a function of its Xtensa
/// archive (`customop-device/tests/access_path.rs`): a rename fails there.
pub const ACCESS_PATH: &[&str] = &[
    "<neuroncustomop::runtime::translate::",
    "neuron_translate(",
    "neuron_translate_ctx(",
    "neuron_memcpy(",
    "customop_copy_mark",
    "customop_hbm_stack_mark",
    "<customop_abi::access::CopyLog>::",
    "neuroncustomop::runtime::mem::aligned::copy",
    "neuroncustomop::runtime::state::transfer",
    "neuroncustomop::runtime::state::check_tcm_copy",
    "<neuroncustomop::runtime::global::Global<neuroncustomop::runtime::state::State>>::with::<bool, neuroncustomop::runtime::state::check_tcm_copy",
];

/// The runtime's exported symbol holding a core's counts.
pub const ACCESS_COUNTS_SYMBOL: &str = "customop_access_counts";

/// One core's accesses in a launch (32 bytes, little-endian on every target).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessCounts {
    /// Element-wise accessor accesses (`neuron_translate` calls: one per element read or
    /// written through `accessor<T, N>()`).
    pub element: u32,
    /// Copies from a tensor into core memory (`neuron_memcpy` in: `tensor_to_tcm`, stream
    /// reads' refills).
    pub copies_in: u32,
    /// Copies from core memory into a tensor (`tcm_to_tensor`, stream writes' flushes).
    pub copies_out: u32,
    /// The kernel's STACK_SIZE when its stack was an HBM block (it did not fit the core's
    /// local stack: every local variable then lives in HBM); 0 on the local stack.
    pub hbm_stack: u32,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

pub const ACCESS_COUNTS_BYTES: usize = 32;

const _: () = {
    assert!(core::mem::size_of::<AccessCounts>() == ACCESS_COUNTS_BYTES);
    assert!(core::mem::offset_of!(AccessCounts, hbm_stack) == 12);
    assert!(core::mem::offset_of!(AccessCounts, bytes_in) == 16);
    assert!(core::mem::offset_of!(AccessCounts, bytes_out) == 24);
};

impl AccessCounts {
    /// The counts from their 32 bytes as a core holds them.
    pub fn from_le_bytes(b: &[u8; ACCESS_COUNTS_BYTES]) -> AccessCounts {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        AccessCounts {
            element: u32_at(0),
            copies_in: u32_at(4),
            copies_out: u32_at(8),
            hbm_stack: u32_at(12),
            bytes_in: u64_at(16),
            bytes_out: u64_at(24),
        }
    }
}

/// The runtime's log of a launch's copies in order (`customop_copy_log`, which the link
/// script places at the end of the core's image slot, past the image's loaded bytes): each
/// run of like copies (same direction and size, no element-wise access between) as one
/// entry with its count, and how many element-wise accesses came before it, so the trace
/// can place each on the estimate's time axis (D120).
pub const COPY_LOG_SYMBOL: &str = "customop_copy_log";

/// The runtime's function that starts a log entry: the profile plugin stamps each entry to
/// it with the instructions executed since the kernel began.
pub const COPY_MARK_SYMBOL: &str = "customop_copy_mark";

/// The runtime's function that shows the profile plugin where a kernel's HBM stack lies
/// (its first two accesses load the stack's lowest and highest byte: D121).
pub const HBM_STACK_MARK_SYMBOL: &str = "customop_hbm_stack_mark";

/// How many entries a launch logs; copies after the log fills are only counted.
pub const COPY_LOG_ENTRIES: usize = 1024;

/// One logged run of copies (16 bytes, little-endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyEntry {
    /// Bytes each copy of the run moved.
    pub bytes: u32,
    /// [`COPY_OUT`] for copies from core memory into a tensor; 0 for copies into core memory.
    pub flags: u32,
    /// Element-wise accesses the launch made before the run.
    pub elements_before: u32,
    /// Copies in the run (1 or more).
    pub copies: u32,
}

/// [`CopyEntry::flags`]: the copy went from core memory into a tensor.
pub const COPY_OUT: u32 = 1;

/// A launch's copy log: how many copies it made (all, logged or not), how many entries
/// hold them, and the entries.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyLog {
    pub copies: u32,
    pub used: u32,
    pub entries: [CopyEntry; COPY_LOG_ENTRIES],
}

pub const COPY_ENTRY_BYTES: usize = 16;
/// 0x4008: the bytes pool-core.ld keeps for the log at the end of each core's image slot.
pub const COPY_LOG_BYTES: usize = 8 + COPY_LOG_ENTRIES * COPY_ENTRY_BYTES;

const _: () = {
    assert!(core::mem::size_of::<CopyEntry>() == COPY_ENTRY_BYTES);
    assert!(core::mem::size_of::<CopyLog>() == COPY_LOG_BYTES);
    assert!(core::mem::offset_of!(CopyLog, entries) == 8);
    assert!(core::mem::offset_of!(CopyEntry, elements_before) == 8);
    assert!(COPY_LOG_BYTES == 0x4008);
};

/// What [`CopyLog::extend`] did with a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logged {
    /// It continued the last entry's run.
    Run,
    /// It needs an entry of its own ([`CopyLog::start`]).
    New,
    /// The log is full: counted only.
    Full,
}

impl CopyLog {
    pub const EMPTY: CopyLog = CopyLog {
        copies: 0,
        used: 0,
        entries: [CopyEntry {
            bytes: 0,
            flags: 0,
            elements_before: 0,
            copies: 0,
        }; COPY_LOG_ENTRIES],
    };

    /// Counts a copy of `bytes` and adds it to the last entry's run where it is like it.
    /// (Inline: the runtime's copy path compiles it in, with no call into this crate's
    /// objects, which a device image would then link whole.)
    #[inline]
    pub fn extend(&mut self, bytes: u32, flags: u32, elements_before: u32) -> Logged {
        self.copies = self.copies.saturating_add(1);
        let used = (self.used as usize).min(COPY_LOG_ENTRIES);
        // A full log takes nothing more, not even into its last run: unlogged copies of
        // another kind may lie between, which the run would hide.
        if used == COPY_LOG_ENTRIES {
            return Logged::Full;
        }
        if let Some(last) = used.checked_sub(1).and_then(|i| self.entries.get_mut(i)) {
            let like = (last.bytes, last.flags, last.elements_before);
            if like == (bytes, flags, elements_before) && last.copies < u32::MAX {
                last.copies += 1;
                return Logged::Run;
            }
        }
        Logged::New
    }

    /// Starts an entry with one copy (after [`CopyLog::extend`] said [`Logged::New`]).
    #[inline]
    pub fn start(&mut self, bytes: u32, flags: u32, elements_before: u32) {
        if let Some(e) = self.entries.get_mut(self.used as usize) {
            *e = CopyEntry {
                bytes,
                flags,
                elements_before,
                copies: 1,
            };
            self.used += 1;
        }
    }

    /// The entries in use.
    pub fn logged(&self) -> &[CopyEntry] {
        &self.entries[..(self.used as usize).min(COPY_LOG_ENTRIES)]
    }

    /// Copies made after the log filled.
    pub fn unlogged(&self) -> u32 {
        let logged = self
            .logged()
            .iter()
            .fold(0u32, |n, e| n.saturating_add(e.copies));
        self.copies.saturating_sub(logged)
    }

    /// The log from its bytes as a core holds them: None when `b` is not a whole log.
    pub fn from_le_bytes(b: &[u8]) -> Option<CopyLog> {
        let b: &[u8; COPY_LOG_BYTES] = b.try_into().ok()?;
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let mut log = CopyLog::EMPTY;
        log.copies = u32_at(0);
        log.used = u32_at(4);
        for (i, e) in log.entries.iter_mut().enumerate() {
            let o = 8 + i * COPY_ENTRY_BYTES;
            *e = CopyEntry {
                bytes: u32_at(o),
                flags: u32_at(o + 4),
                elements_before: u32_at(o + 8),
                copies: u32_at(o + 12),
            };
        }
        Some(log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_back_from_their_bytes() {
        let mut b = [0u8; ACCESS_COUNTS_BYTES];
        b[0] = 7;
        b[4] = 2;
        b[8] = 3;
        b[12..16].copy_from_slice(&32768u32.to_le_bytes());
        b[16..24].copy_from_slice(&(5u64 << 33).to_le_bytes());
        b[24..32].copy_from_slice(&9u64.to_le_bytes());
        let c = AccessCounts::from_le_bytes(&b);
        assert_eq!((c.element, c.copies_in, c.copies_out), (7, 2, 3));
        assert_eq!(c.hbm_stack, 32768);
        assert_eq!((c.bytes_in, c.bytes_out), (5 << 33, 9));
    }

    #[test]
    fn like_copies_make_one_entry_and_a_full_log_counts_the_rest() {
        let mut log = CopyLog::EMPTY;
        let add = |log: &mut CopyLog, bytes, flags, elements| {
            let l = log.extend(bytes, flags, elements);
            if l == Logged::New {
                log.start(bytes, flags, elements);
            }
            l
        };
        assert_eq!(add(&mut log, 512, COPY_OUT, 0), Logged::New);
        assert_eq!(add(&mut log, 512, COPY_OUT, 0), Logged::Run);
        // Another size, direction or an element-wise access between: a new entry.
        assert_eq!(add(&mut log, 256, COPY_OUT, 0), Logged::New);
        assert_eq!(add(&mut log, 256, 0, 0), Logged::New);
        assert_eq!(add(&mut log, 256, 0, 1), Logged::New);
        assert_eq!(log.logged().len(), 4);
        assert_eq!(log.logged()[0].copies, 2);
        for i in 0..COPY_LOG_ENTRIES as u32 {
            add(&mut log, 8 + i, 0, 1);
        }
        assert_eq!(log.logged().len(), COPY_LOG_ENTRIES);
        assert_eq!(log.unlogged(), 4);
        assert!(log.logged().iter().all(|e| e.copies >= 1));
        // A full log takes no more copies, not even into its last run: an unlogged copy
        // of another kind may lie between (out, in, out must not read as two outs).
        let last = log.logged()[COPY_LOG_ENTRIES - 1];
        assert_eq!(add(&mut log, 3, 0, 1), Logged::Full);
        assert_eq!(add(&mut log, last.bytes, last.flags, 1), Logged::Full);
        assert_eq!(log.logged()[COPY_LOG_ENTRIES - 1], last);
        assert_eq!(
            (log.copies, log.unlogged()),
            (COPY_LOG_ENTRIES as u32 + 7, 6)
        );
        let mut b = [0u8; COPY_LOG_BYTES];
        b[0..4].copy_from_slice(&log.copies.to_le_bytes());
        b[4..8].copy_from_slice(&log.used.to_le_bytes());
        for (i, e) in log.logged().iter().enumerate() {
            let o = 8 + i * COPY_ENTRY_BYTES;
            for (k, v) in [e.bytes, e.flags, e.elements_before, e.copies]
                .iter()
                .enumerate()
            {
                b[o + 4 * k..o + 4 * k + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        assert_eq!(CopyLog::from_le_bytes(&b), Some(log));
        assert_eq!(CopyLog::from_le_bytes(&b[1..]), None);
    }
}
