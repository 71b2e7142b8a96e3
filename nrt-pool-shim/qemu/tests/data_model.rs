//! Host cores compute in the device's data model (D97): ordinary C++ whose bytes
//! depend on `long`'s width, plain `char`'s sign, struct layout, the C and C++ libraries'
//! choices and INT_MIN / -1 gives the same output bytes and stdout on host cores (the i386
//! build in 32-bit core processes) as on Xtensa cores; the host's own data model, still
//! offered, does not.

use std::path::Path;

use nrt_pool_build::{self as opbuild, BuildOptions};
use nrt_pool_engine::adapters::{Completion, KernelLaunch, LaunchVerbs};
use nrt_pool_engine::tensor::{DType, HostTensor};
use nrt_pool_engine::{LaunchArg, PoolEngine, PoolImage};
use nrt_pool_testkit as testkit;

mod common;

const KERNELS: [&str; 5] = [
    "long_counter",
    "plain_char",
    "layouts",
    "library_choices",
    "int_min_by_minus_one",
];

fn source() -> (std::path::PathBuf, std::path::PathBuf) {
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/datamodel");
    (t.join("datamodel.schema"), t.join("datamodel.cpp"))
}

fn input() -> LaunchArg {
    let data = [3i32, 0, 0, 0, 0, 0, 0, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    LaunchArg::hbm(HostTensor::new(DType::I32, vec![8], data).unwrap())
}

fn run(e: &mut PoolEngine, kernel: &str) -> Completion {
    let args = vec![input()];
    let output = e.loaded.output_for(kernel, &args).unwrap();
    e.launch(&KernelLaunch {
        kernel: kernel.into(),
        args,
        output,
        cores: 1,
    })
    .unwrap_or_else(|err| panic!("{kernel}: {err}"))
}

fn words(c: &Completion) -> Vec<i32> {
    c.output
        .data
        .chunks(4)
        .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

#[test]
fn host_cores_give_the_device_builds_bytes_for_data_model_code() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, cpp) = source();
    let (so, pool) = testkit::build_with_image(dir.path(), "datamodel", &schema, &[cpp]);
    // The default build is the device's data model: an i386 shared object.
    let head = std::fs::read(&so).unwrap();
    assert_eq!((head[4], head[18]), (1, 3), "ELFCLASS32, EM_386");
    let mut host = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    host.load(&so).unwrap();
    let mut xt = common::xtensa_engine(64 << 20);
    xt.load(&pool).unwrap();
    for k in KERNELS {
        let (h, d) = (run(&mut host, k), run(&mut xt, k));
        assert_eq!(
            words(&h),
            words(&d),
            "{k}: host cores and Xtensa cores differ"
        );
        assert_eq!(h.stdout, d.stdout, "{k}: stdout");
    }
    // What the device computes, spelled out for the cases.
    let long = words(&run(&mut host, "long_counter"));
    // sum (i + 3) * 100000 over 0..100000 = 500025000000000, modulo 2^32.
    assert_eq!(long[0], 612_432_384, "the 32-bit long's wrapped sum");
    assert_eq!(words(&run(&mut host, "plain_char"))[0], 124_716);
    let l = words(&run(&mut host, "layouts"));
    assert_eq!(&l[..5], &[4, 4, 44, 8, 2]);
    assert_eq!(l[6], 8 * 100 + 16, "double and long long members 8-aligned");
    let q = words(&run(&mut host, "int_min_by_minus_one"));
    assert_eq!(&q[..2], &[i32::MIN, 0]);
    // A misaligned word at a constant offset from a pointer argument faults on both, at
    // the reading line.
    for e in [&mut host, &mut xt] {
        let args = vec![input()];
        let output = e.loaded.output_for("folded_offset", &args).unwrap();
        let err = e
            .launch(&KernelLaunch {
                kernel: "folded_offset".into(),
                args,
                output,
                cores: 1,
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unaligned load/store") && err.contains("in word_after"),
            "{err}"
        );
    }
}

#[test]
fn the_hosts_data_model_stays_available_and_differs() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, cpp) = source();
    let so = testkit::build_host_model_ops(dir.path(), "lp64", &schema, std::slice::from_ref(&cpp));
    let head = std::fs::read(&so).unwrap();
    assert_eq!((head[4], head[18]), (2, 62), "ELFCLASS64, EM_X86_64");
    let mut host = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    host.load(&so).unwrap();
    let l = words(&run(&mut host, "layouts"));
    assert_eq!(&l[..2], &[8, 8], "LP64: 8-byte long and pointers");
    // A build whose compiler is not there, in either data model: its error.
    let without_compiler = |data_model, archive| {
        let (schema, cpp) = source();
        opbuild::build(&BuildOptions {
            schema,
            sources: vec![cpp],
            out: dir.path().join("libnone.so"),
            setup: opbuild::BuildSetup {
                archive,
                data_model,
                include: testkit::root().join("include"),
                device_objects: None,
                device_image: None,
                cxx: dir.path().join("no-such-g++").display().to_string(),
                flags: Default::default(),
                xtensa: Default::default(),
                core_runner: testkit::core_runner(),
                on_compiled: None,
            },
        })
        .unwrap_err()
        .to_string()
    };
    // Without a compiler for i386 it names what to install and the opt-out...
    let err = without_compiler(opbuild::DataModel::Device, testkit::archive());
    assert!(
        err.contains("-m32") && err.contains("--data-model=host"),
        "{err}"
    );
    // ...and in the host's data model, what installs one.
    let err = without_compiler(opbuild::DataModel::Host, testkit::lp64_archive());
    assert!(
        err.contains("does not run") && err.contains("apt-get install g++"),
        "{err}"
    );
}
