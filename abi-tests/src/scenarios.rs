//! Calls that end the process (a NULL argument) or write to stderr, run one per child
//! process so a parent can observe how it ends (`nrtucode-probe` and the conformance
//! harness run them). Each scenario states the outcome the contract requires:
//!   `abort <fn> <arg>`  stderr is exactly the null-argument line, then SIGABRT
//!   `segv`              no guard: SIGSEGV with nothing on stderr
//!   `exit <rc>`         returns normally; the probe prints the call's result and exits 0
//!
//! Declarations are the probe's own (from the documented contract), not a provider header.
//! Scenarios that need a library handle expect NRTUCODE_EXTISA_IMAGE_DIR to name a
//! directory with a SUNDA image (ext-isa/ct6/lib0.elf).

use std::ffi::{c_void, CString};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::Arc;

use libloading::Library;
use nrt_sim_device::{tables, SimDevice};

type P = *mut c_void;
const DRAM: u64 = 0x2_0000_0000;

/// (scenario, expected outcome)
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "context_create.rw_impl",
        "abort nrtucode_context_create rw_impl",
    ),
    ("context_create.out", "abort nrtucode_context_create out"),
    ("context_destroy.ctx", "abort nrtucode_context_destroy ctx"),
    (
        "context_set_memhandle_impl.ctx",
        "abort nrtucode_context_set_memhandle_impl ctx",
    ),
    (
        "context_get_userdata.ctx",
        "abort nrtucode_context_get_userdata ctx",
    ),
    (
        "context_set_userdata.ctx",
        "abort nrtucode_context_set_userdata ctx",
    ),
    ("core_create.ctx", "abort nrtucode_core_create ctx"),
    ("core_create.out", "abort nrtucode_core_create out"),
    ("core_destroy.core", "abort nrtucode_core_destroy core"),
    (
        "core_on_ucode_booted.core",
        "abort nrtucode_core_on_ucode_booted core",
    ),
    (
        "core_get_context.core",
        "abort nrtucode_core_get_context core",
    ),
    (
        "core_get_userdata.core",
        "abort nrtucode_core_get_userdata core",
    ),
    (
        "core_set_userdata.core",
        "abort nrtucode_core_set_userdata core",
    ),
    (
        "core_get_coretype.core",
        "abort nrtucode_core_get_coretype core",
    ),
    (
        "core_enable_logs.core",
        "abort nrtucode_core_enable_logs core",
    ),
    (
        "core_enable_logs_with_size_hint.core",
        "abort nrtucode_core_enable_logs_with_size_hint core",
    ),
    (
        "core_disable_logs.core",
        "abort nrtucode_core_disable_logs core",
    ),
    (
        "core_set_max_loglevel.core",
        "abort nrtucode_core_set_max_loglevel core",
    ),
    (
        "core_print_logs.core",
        "abort nrtucode_core_print_logs core",
    ),
    (
        "core_dge_set_priority_class_map.core",
        "abort nrtucode_core_dge_set_priority_class_map core",
    ),
    (
        "core_dge_set_priority_class_map.classes",
        "abort nrtucode_core_dge_set_priority_class_map classes",
    ),
    (
        "core_dge_get_priority_class_map.classes",
        "abort nrtucode_core_dge_get_priority_class_map classes",
    ),
    (
        "core_get_dge_mailbox_addr.core",
        "abort nrtucode_core_get_dge_mailbox_addr core",
    ),
    (
        "core_get_dge_mailbox_addr.addr",
        "abort nrtucode_core_get_dge_mailbox_addr addr",
    ),
    (
        "core_private_get_dge_mailbox_values.out",
        "abort nrtucode_core_private_get_dge_mailbox_values out",
    ),
    (
        "core_enable_pc_bounds_check.core",
        "abort nrtucode_core_enable_pc_bounds_check core",
    ),
    (
        "core_disable_pc_bounds_check.core",
        "abort nrtucode_core_disable_pc_bounds_check core",
    ),
    (
        "core_private_get_pc_bounds.core",
        "abort nrtucode_core_private_get_pc_bounds core",
    ),
    (
        "core_private_get_pc_bounds.lo",
        "abort nrtucode_core_private_get_pc_bounds lo",
    ),
    (
        "core_private_get_pc_bounds.hi",
        "abort nrtucode_core_private_get_pc_bounds hi",
    ),
    (
        "ll_get_libraries_from_opcodes.libs",
        "abort nrtucode_ll_get_libraries_from_opcodes libs",
    ),
    (
        "ll_get_libraries_from_opcodes.num_libs",
        "abort nrtucode_ll_get_libraries_from_opcodes num_libs",
    ),
    ("ll_create.ctx", "abort nrtucode_ll_create ctx"),
    ("ll_create.out_ll", "abort nrtucode_ll_create out_ll"),
    ("ll_destroy.ll", "abort nrtucode_ll_destroy ll"),
    (
        "ll_get_load_sequence_num_instrs.ll",
        "abort nrtucode_ll_get_load_sequence_num_instrs ll",
    ),
    (
        "ll_get_unload_sequence_num_instrs.core",
        "abort nrtucode_ll_get_unload_sequence_num_instrs core",
    ),
    (
        "ll_get_load_sequence.ll",
        "abort nrtucode_ll_get_load_sequence ll",
    ),
    (
        "ll_get_load_sequence.core",
        "abort nrtucode_ll_get_load_sequence core",
    ),
    (
        "ll_get_load_sequence.instr_buf",
        "abort nrtucode_ll_get_load_sequence instr_buf",
    ),
    (
        "ll_get_unload_sequence.num_instrs_pushed",
        "abort nrtucode_ll_get_unload_sequence num_instrs_pushed",
    ),
    ("opset_create.ctx", "abort nrtucode_opset_create ctx"),
    ("opset_create.op_set", "abort nrtucode_opset_create op_set"),
    (
        "opset_destroy.op_set",
        "abort nrtucode_opset_destroy op_set",
    ),
    (
        "opset_add_instruction.op_set",
        "abort nrtucode_opset_add_instruction op_set",
    ),
    (
        "opset_add_instruction.instruction_data",
        "abort nrtucode_opset_add_instruction instruction_data",
    ),
    (
        "opset_get_library_index.op_set",
        "abort nrtucode_opset_get_library_index op_set",
    ),
    (
        "opset_get_library_index.lib_index",
        "abort nrtucode_opset_get_library_index lib_index",
    ),
    ("core_set_friendly_name.core", "segv"),
    ("core_set_friendly_name.name", "segv"),
    ("ll_set_friendly_name.ll", "segv"),
    ("ll_get_library_size.ll", "segv"),
    ("opset_set_friendly_name.op_set", "segv"),
    ("core_private_set_dge_mailbox.core", "segv"),
    ("core_private_get_dge_mailbox_values.core", "segv"),
    ("get_num_ext_isa_libs.num", "segv"),
    ("get_ext_isa.out", "segv"),
    ("core_get_friendly_name.null", "exit 72"),
    ("get_ext_isa.out_unknown_core", "exit 1"),
    ("opset_private_get_num_opcodes.null", "exit 0"),
    ("get_memory_image.mplus", "exit 8"),
];

struct Probe {
    lib: Library,
    dev: Arc<SimDevice>,
}

impl Probe {
    /// A typed entry point by name (the caller states its C signature).
    fn f<T: Copy>(&self, name: &str) -> T {
        // SAFETY: the caller names a documented export with its documented signature.
        unsafe {
            *self
                .lib
                .get::<T>(format!("nrtucode_{name}").as_bytes())
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        }
    }

    fn ctx(&self) -> P {
        let create: unsafe extern "C" fn(u32, *const c_void, *mut P) -> u32 =
            self.f("context_create");
        let set_mh: unsafe extern "C" fn(P, *const c_void) = self.f("context_set_memhandle_impl");
        let set_ud: unsafe extern "C" fn(P, P) = self.f("context_set_userdata");
        let mut ctx = null_mut();
        // SAFETY: valid tables and out pointer; the device outlives the process' calls.
        unsafe {
            assert_eq!(
                create(
                    3,
                    (&tables::RW_TABLE as *const tables::RwTable).cast(),
                    &mut ctx
                ),
                0
            );
            set_mh(
                ctx,
                (&tables::MEMHANDLE_TABLE as *const tables::MemhandleTable).cast(),
            );
            set_ud(ctx, Arc::as_ptr(&self.dev) as P);
        }
        ctx
    }

    /// A claimed core of `ct`.
    fn core(&self, ct: u32) -> P {
        let create: unsafe extern "C" fn(P, u32, u64, u64, u64, *mut P) -> u32 =
            self.f("core_create");
        let booted: unsafe extern "C" fn(P, u32) -> u32 = self.f("core_on_ucode_booted");
        self.dev.map_control_block(DRAM).unwrap();
        let mut core = null_mut();
        // SAFETY: live context, valid out pointer.
        unsafe {
            assert_eq!(create(self.ctx(), ct, 0, DRAM, 0, &mut core), 0);
            assert_eq!(booted(core, 0), 0);
        }
        core
    }

    /// A SUNDA library handle. The parent points NRTUCODE_EXTISA_IMAGE_DIR at a directory
    /// holding a SUNDA image (ext-isa/ct6/lib0.elf).
    fn ll(&self) -> P {
        let create: unsafe extern "C" fn(P, u32, u32, u64, *mut P) -> u32 = self.f("ll_create");
        let mut ll = null_mut();
        // SAFETY: live context, valid out pointer.
        unsafe {
            assert_eq!(
                create(self.ctx(), 6, 0, 0, &mut ll),
                0,
                "ll_create: is the image directory set?"
            )
        };
        ll
    }

    fn opset(&self) -> P {
        let create: unsafe extern "C" fn(P, *mut P) -> u32 = self.f("opset_create");
        let mut op = null_mut();
        // SAFETY: live context, valid out pointer.
        unsafe { assert_eq!(create(self.ctx(), &mut op), 0) };
        op
    }
}

type F1 = unsafe extern "C" fn(P) -> usize;
type F2 = unsafe extern "C" fn(P, P) -> usize;
type F3 = unsafe extern "C" fn(P, P, P) -> usize;
type Seq = unsafe extern "C" fn(P, P, usize, P, P) -> usize;

/// Runs one scenario; returns the call's result when it returns at all.
unsafe fn run(p: &Probe, scenario: &str) -> usize {
    let n = null_mut();
    let mut out_slot = [0u64; 8];
    let out = out_slot.as_mut_ptr().cast::<c_void>();
    let rw = (&tables::RW_TABLE as *const tables::RwTable)
        .cast_mut()
        .cast::<c_void>();
    let name = CString::new("probe").unwrap();
    let name = name.as_ptr().cast_mut().cast::<c_void>();
    let (func, arg) = scenario.split_once('.').unwrap_or((scenario, ""));
    // SAFETY: every call passes the documented argument kinds; the NULL ones are the point.
    unsafe {
        match (func, arg) {
            ("context_create", "rw_impl") => {
                p.f::<unsafe extern "C" fn(u32, P, P) -> usize>(func)(3, n, out)
            }
            ("context_create", "out") => {
                p.f::<unsafe extern "C" fn(u32, P, P) -> usize>(func)(3, rw, n)
            }
            (
                "context_destroy"
                | "context_get_userdata"
                | "core_destroy"
                | "core_get_context"
                | "core_get_userdata"
                | "core_get_coretype"
                | "core_enable_logs"
                | "core_disable_logs"
                | "core_print_logs"
                | "core_disable_pc_bounds_check"
                | "ll_destroy"
                | "opset_destroy"
                | "ll_get_library_size",
                _,
            ) => p.f::<F1>(func)(n),
            (
                "context_set_memhandle_impl"
                | "context_set_userdata"
                | "core_set_userdata"
                | "core_on_ucode_booted"
                | "core_enable_logs_with_size_hint"
                | "core_set_max_loglevel",
                _,
            ) => p.f::<F2>(func)(n, n),
            ("core_create", "ctx") => p
                .f::<unsafe extern "C" fn(P, u32, u64, u64, u64, P) -> usize>(func)(
                n, 6, 0, 0, 0, out,
            ),
            ("core_create", "out") => p
                .f::<unsafe extern "C" fn(P, u32, u64, u64, u64, P) -> usize>(func)(
                p.ctx(),
                6,
                0,
                0,
                0,
                n,
            ),
            ("core_dge_set_priority_class_map" | "core_dge_get_priority_class_map", "core") => {
                p.f::<F3>(func)(n, out, n)
            }
            ("core_dge_set_priority_class_map" | "core_dge_get_priority_class_map", "classes") => {
                p.f::<unsafe extern "C" fn(P, P, usize) -> usize>(func)(p.core(2), n, 4)
            }
            ("core_get_dge_mailbox_addr", "core") => {
                p.f::<unsafe extern "C" fn(P, usize, P) -> usize>(func)(n, 4, out)
            }
            ("core_get_dge_mailbox_addr", "addr") => {
                p.f::<unsafe extern "C" fn(P, usize, P) -> usize>(func)(p.core(2), 4, n)
            }
            ("core_private_get_dge_mailbox_values", "out") => {
                p.f::<unsafe extern "C" fn(P, usize, P) -> usize>(func)(p.core(2), 0, n)
            }
            ("core_private_get_dge_mailbox_values", "core") => {
                p.f::<unsafe extern "C" fn(P, usize, P) -> usize>(func)(n, 0, out)
            }
            ("core_private_set_dge_mailbox", _) => {
                p.f::<unsafe extern "C" fn(P, usize, u32) -> usize>(func)(n, 0, 0)
            }
            ("core_enable_pc_bounds_check", _) => {
                p.f::<unsafe extern "C" fn(P, u64, u64) -> usize>(func)(n, 1, 2)
            }
            ("core_private_get_pc_bounds", "core") => p.f::<F3>(func)(n, out, out),
            ("core_private_get_pc_bounds", "lo") => p.f::<F3>(func)(p.core(2), n, out),
            ("core_private_get_pc_bounds", "hi") => p.f::<F3>(func)(p.core(2), out, n),
            ("ll_get_libraries_from_opcodes", _) => {
                let (libs, num) = if arg == "libs" { (n, out) } else { (out, n) };
                p.f::<unsafe extern "C" fn(u32, P, usize, P, usize, P, P) -> usize>(func)(
                    6, n, 1, n, 0, libs, num,
                )
            }
            ("ll_create", "ctx") => {
                p.f::<unsafe extern "C" fn(P, u32, u32, u64, P) -> usize>(func)(n, 6, 0, 0, out)
            }
            ("ll_create", "out_ll") => {
                p.f::<unsafe extern "C" fn(P, u32, u32, u64, P) -> usize>(func)(p.ctx(), 6, 0, 0, n)
            }
            ("ll_get_load_sequence_num_instrs", _) => p.f::<F2>(func)(n, p.core(6)),
            ("ll_get_unload_sequence_num_instrs", _) => p.f::<F2>(func)(p.ll(), n),
            ("ll_get_load_sequence" | "ll_get_unload_sequence", _) => {
                let (ll, core) = match arg {
                    "ll" => (n, p.core(6)),
                    "core" => (p.ll(), n),
                    _ => (p.ll(), p.core(6)),
                };
                let buf = if arg == "instr_buf" { n } else { out };
                let pushed = if arg == "num_instrs_pushed" { n } else { out };
                p.f::<Seq>(func)(ll, core, 1, buf, pushed)
            }
            ("opset_create", "ctx") => p.f::<F2>(func)(n, out),
            ("opset_create", "op_set") => p.f::<F2>(func)(p.ctx(), n),
            ("opset_add_instruction", "op_set") => p.f::<F2>(func)(n, out),
            ("opset_add_instruction", "instruction_data") => p.f::<F2>(func)(p.opset(), n),
            ("opset_get_library_index", "op_set") => {
                p.f::<unsafe extern "C" fn(P, u32, P) -> usize>(func)(n, 6, out)
            }
            ("opset_get_library_index", "lib_index") => {
                p.f::<unsafe extern "C" fn(P, u32, P) -> usize>(func)(p.opset(), 6, n)
            }
            ("core_set_friendly_name", "core") => p.f::<F2>(func)(n, name),
            ("core_set_friendly_name", "name") => p.f::<F2>(func)(p.core(2), n),
            ("ll_set_friendly_name" | "opset_set_friendly_name", _) => p.f::<F2>(func)(n, name),
            ("get_num_ext_isa_libs", _) => {
                p.f::<unsafe extern "C" fn(u32, P) -> usize>(func)(13, n)
            }
            ("get_ext_isa", "out") => {
                p.f::<unsafe extern "C" fn(u32, u32, P) -> usize>(func)(6, 0, n)
            }
            ("get_ext_isa", "out_unknown_core") => {
                p.f::<unsafe extern "C" fn(u32, u32, P) -> usize>("get_ext_isa")(5, 0, n)
            }
            ("core_get_friendly_name", _) => p.f::<F1>(func)(n),
            ("opset_private_get_num_opcodes", _) => p.f::<F1>(func)(n),
            ("get_memory_image", "mplus") => {
                std::env::set_var("NRTUCODE_MPLUS_ON_MARIANA", "1");
                p.f::<unsafe extern "C" fn(u32, u32, u32, P, P) -> usize>(func)(2, 0, 1, out, out)
            }
            _ => panic!("unknown scenario {scenario}"),
        }
    }
}

/// Runs `scenario` against the provider at `lib` and prints the call's result (if it
/// returns). Meant to be the whole life of a child process.
pub fn run_scenario(lib: &Path, scenario: &str) {
    // SAFETY: loading the provider under test is the purpose of the child.
    let lib = unsafe { Library::new(lib) }.expect("load provider");
    let probe = Probe {
        lib,
        dev: SimDevice::new(),
    };
    let getter: unsafe extern "C" fn(P) -> P = probe.f("context_get_userdata");
    tables::bind_userdata_getter(getter);
    // SAFETY: see `run`.
    let rc = unsafe { run(&probe, scenario) };
    println!("{rc}");
}
