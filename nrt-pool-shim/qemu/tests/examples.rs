//! Each example op built as a Pool image (`--device-image`: windowed objects linked for the
//! 8 cores) runs on one emulated Xtensa core under QEMU, and its output bytes and stdout
//! equal the host build's on the host engine.

use std::path::Path;

use nrt_pool_engine::adapters::{KernelLaunch, LaunchVerbs};
use nrt_pool_engine::tensor::{DType, HostTensor};
use nrt_pool_engine::{LaunchArg, PoolImage};
use nrt_pool_qemu::pool_cores;
use nrt_pool_testkit as testkit;

mod common;

fn f32s(shape: &[u64], f: impl Fn(usize) -> f32) -> HostTensor {
    let n: u64 = shape.iter().product();
    let data = (0..n as usize).flat_map(|i| f(i).to_le_bytes()).collect();
    HostTensor::new(DType::F32, shape.to_vec(), data).unwrap()
}

/// tests/`name`/`name`.schema and .cpp built into `dir`: the host library and Pool image.
fn test_op(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let t = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name);
    testkit::build_with_image(
        dir,
        name,
        &t.join(format!("{name}.schema")),
        &[t.join(format!("{name}.cpp"))],
    )
}

/// Schema kernel `kernel` of Pool image `pool` on `cores` fresh QEMU cores, with one
/// argument.
fn on_qemu(
    pool: &Path,
    kernel: &str,
    arg: LaunchArg,
    cores: usize,
) -> Result<nrt_pool_engine::adapters::Completion, nrt_pool_engine::EmuError> {
    let mut xt = common::xtensa_engine(64 << 20);
    xt.load(pool)?;
    let output = xt.loaded.output_for(kernel, std::slice::from_ref(&arg))?;
    xt.launch(&KernelLaunch {
        kernel: kernel.into(),
        args: vec![arg],
        output,
        cores,
    })
}

/// Runs `kernel` on the host engine (1 core) and on QEMU core 0; both must agree.
fn same_on_both(lib: &Path, pool: &Path, kernel: &str, args: Vec<LaunchArg>) -> Vec<u8> {
    let mut e = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    e.load(lib).unwrap();
    // A schema's result rule, else the op's shape function (AWS-style libraries, whose op
    // and kernel names are the examples' same).
    let output = match e.loaded.output_for(kernel, &args) {
        Ok(o) => o,
        Err(_) => {
            let op = e
                .loaded
                .neuron_library()
                .and_then(|l| {
                    let short = kernel.rsplit("::").next().unwrap_or(kernel);
                    l.ops.iter().find(|o| o.kernel == kernel || o.name == short)
                })
                .map(|o| o.name.clone())
                .unwrap_or_else(|| panic!("no op runs kernel {kernel}"));
            e.op_output(&op, &args).unwrap()
        }
    };
    let host = e
        .launch(&KernelLaunch {
            kernel: kernel.into(),
            args: args.clone(),
            output: output.clone(),
            cores: 1,
        })
        .unwrap_or_else(|err| panic!("{kernel} on the host: {err}"));
    assert_eq!(pool_cores(pool).unwrap().len(), 8);
    let mut xt = common::xtensa_engine(64 << 20);
    xt.load(pool).unwrap();
    let dev = xt
        .launch(&KernelLaunch {
            kernel: kernel.into(),
            args,
            output,
            cores: 1,
        })
        .unwrap_or_else(|err| panic!("{kernel} on QEMU: {err}"));
    assert_eq!(dev.results, [0], "{kernel}");
    assert_eq!(
        dev.output.data, host.output.data,
        "{kernel}: the Xtensa build's output differs from the host build's"
    );
    assert_eq!(
        String::from_utf8_lossy(&dev.stdout),
        String::from_utf8_lossy(&host.stdout),
        "{kernel}: stdout"
    );
    assert_eq!(
        String::from_utf8_lossy(&dev.stderr),
        String::from_utf8_lossy(&host.stderr),
        "{kernel}: stderr"
    );
    dev.stdout
}

#[test]
fn schema_examples_give_the_host_builds_bytes_on_an_xtensa_core() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = testkit::examples_with_image(dir.path());
    let x = f32s(&[37], |i| (i as f32 - 18.0) * 0.37);
    same_on_both(
        &so,
        &pool,
        "scale_add",
        vec![
            LaunchArg::hbm(x.clone()),
            LaunchArg::f32(1.5),
            LaunchArg::f32(-2.0),
        ],
    );
    let big = f32s(&[1000], |i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0);
    same_on_both(
        &so,
        &pool,
        "scale_add_mc",
        vec![
            LaunchArg::hbm(big),
            LaunchArg::f32(0.5),
            LaunchArg::f32(3.0),
        ],
    );
    let ints = HostTensor::new(
        DType::I32,
        vec![16],
        (0..16i32).flat_map(|i| (i * 3 - 7).to_le_bytes()).collect(),
    )
    .unwrap();
    let out = same_on_both(&so, &pool, "hello", vec![LaunchArg::hbm(ints)]);
    assert!(
        String::from_utf8_lossy(&out).starts_with("hello from core 0 of 1: 16 elements"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn aws_style_examples_give_the_host_builds_bytes_on_an_xtensa_core() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = testkit::build_example_with_image(dir.path(), "mlp", "mlp", "relu.cpp", false);
    let x = f32s(&[8, 5], |i| ((i * 37) % 17) as f32 - 8.5);
    let g = f32s(&[8, 5], |i| (i as f32) * 0.25 - 3.0);
    same_on_both(&so, &pool, "relu_forward", vec![LaunchArg::hbm(x.clone())]);
    same_on_both(
        &so,
        &pool,
        "relu_backward",
        vec![LaunchArg::hbm(g), LaunchArg::hbm(x.clone())],
    );
    same_on_both(
        &so,
        &pool,
        "axpb",
        vec![
            LaunchArg::hbm(x.clone()),
            LaunchArg::f32(2.5),
            LaunchArg::f32(-1.0),
        ],
    );
    let out = same_on_both(&so, &pool, "describe", vec![LaunchArg::hbm(x)]);
    assert!(
        String::from_utf8_lossy(&out).starts_with("describe: 40 elements, sum "),
        "{}",
        String::from_utf8_lossy(&out)
    );

    let (so, pool) =
        testkit::build_example_with_image(dir.path(), "tiles", "multicore", "relu_tiles.cpp", true);
    let x = f32s(&[3, 700], |i| ((i * 13) % 29) as f32 - 14.0);
    same_on_both(&so, &pool, "relu", vec![LaunchArg::hbm(x)]);
}

/// No call0 code in an op image: every function symbol of every core's image starts with
/// the windowed ABI's `entry` (BRI12 opcode byte 0x36), and each image is linked at its
/// core's org.
#[test]
fn pool_images_hold_windowed_code_only() {
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
    let dir = tempfile::tempdir().unwrap();
    let (_, pool) = testkit::build_example_with_image(dir.path(), "mlp", "mlp", "relu.cpp", false);
    let cores = pool_cores(&pool).unwrap();
    for (i, elf) in cores.iter().enumerate() {
        let f = object::File::parse(&elf[..]).unwrap();
        let text = f.section_by_name(".text").unwrap();
        assert_eq!(
            text.address(),
            0x8400_0000 + i as u64 * 0x20_0000,
            "core {i}"
        );
        let data = text.data().unwrap();
        let mut checked = 0;
        for s in f.symbols() {
            if s.kind() != SymbolKind::Text || s.size() == 0 {
                continue;
            }
            let off = (s.address() - text.address()) as usize;
            assert_eq!(
                data.get(off),
                Some(&0x36),
                "core {i}: {} does not start with entry (call0 code?)",
                s.name().unwrap_or("?")
            );
            checked += 1;
        }
        assert!(checked > 100, "core {i}: only {checked} functions");
    }
}

/// Single-precision add, subtract and multiply run on the cores' FPU (the device build
/// turns the soft-float calls into FPU instructions, D86): every result is IEEE's (Rust's
/// own arithmetic here) bit for bit, denormals, infinities, signed zeros and rounding at
/// overflow and underflow included; a NaN result is a NaN (its payload is the FPU's, as the
/// host build's is SSE's). The host build is held to the same.
#[test]
fn float_arithmetic_on_the_fpu_is_ieee_single_precision() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = test_op(dir.path(), "fpu");
    let special = [
        0u32,
        0x8000_0000,
        1,
        0x8000_0001,
        3,
        0x0040_0000,
        0x007f_ffff,
        0x0080_0000,
        0x0080_0001,
        0x0c00_0000,
        0x1f80_0000,
        0x3380_0000,
        0x3400_0000,
        0x3f80_0000,
        0xbf80_0000,
        0x3f80_0001,
        0x3fff_ffff,
        0x5f80_0000,
        0x7f7f_ffff,
        0xff7f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x7f80_0001,
    ];
    let mut state = 0x2545_f491u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let words: Vec<u32> = special
        .iter()
        .copied()
        .chain((0..3000).map(|i| {
            let w = next();
            // A third of the draws near 1.0 (cancellation in subtraction, ties in
            // rounding), the rest over every exponent.
            if i % 3 == 0 {
                (w & 0x807f_ffff) | ((0x7c + (w >> 23) % 8) << 23)
            } else {
                w
            }
        }))
        .collect();
    let n = words.len();
    let x = HostTensor::new(
        DType::U32,
        vec![n as u64],
        words.iter().flat_map(|w| w.to_le_bytes()).collect(),
    )
    .unwrap();
    type Op = fn(f32, f32) -> f32;
    let ops: [(&str, Op); 3] = [
        ("fpu_add", |p, q| p + q),
        ("fpu_sub", |p, q| p - q),
        ("fpu_mul", |p, q| p * q),
    ];
    let mut host = nrt_pool_host::host_engine(64 << 20, PoolImage::default()).unwrap();
    host.load(&so).unwrap();
    for (kernel, op) in ops {
        let device = on_qemu(&pool, kernel, LaunchArg::hbm(x.clone()), 1)
            .unwrap_or_else(|e| panic!("{kernel} on QEMU: {e}"));
        let output = host
            .loaded
            .output_for(kernel, &[LaunchArg::hbm(x.clone())])
            .unwrap();
        let on_host = host
            .launch(&KernelLaunch {
                kernel: kernel.into(),
                args: vec![LaunchArg::hbm(x.clone())],
                output,
                cores: 1,
            })
            .unwrap();
        for (build, got) in [
            ("device", &device.output.data),
            ("host", &on_host.output.data),
        ] {
            for (i, chunk) in got.chunks_exact(4).enumerate() {
                let (p, q) = (words[i], words[(7 * i + 1) % n]);
                let want = op(f32::from_bits(p), f32::from_bits(q));
                let g = u32::from_le_bytes(chunk.try_into().unwrap());
                if want.is_nan() {
                    assert!(
                        f32::from_bits(g).is_nan(),
                        "{build} {kernel}({p:#010x}, {q:#010x}) = {g:#010x}, not a NaN"
                    );
                } else {
                    assert_eq!(g, want.to_bits(), "{build} {kernel}({p:#010x}, {q:#010x})");
                }
            }
        }
    }
    // The comparisons, NaN pairs included, as Rust (IEEE) answers them, on both builds.
    let output = host
        .loaded
        .output_for("fpu_cmp", &[LaunchArg::hbm(x.clone())])
        .unwrap();
    let on_host = host
        .launch(&KernelLaunch {
            kernel: "fpu_cmp".into(),
            args: vec![LaunchArg::hbm(x.clone())],
            output,
            cores: 1,
        })
        .unwrap();
    let device = on_qemu(&pool, "fpu_cmp", LaunchArg::hbm(x.clone()), 1).unwrap();
    let want: Vec<u8> = (0..n)
        .flat_map(|i| {
            let (p, q) = (
                f32::from_bits(words[i]),
                f32::from_bits(words[(7 * i + 1) % n]),
            );
            let bits = [
                p < q,
                p <= q,
                p > q,
                p >= q,
                p == q,
                p != q,
                p.is_nan() || q.is_nan(),
            ]
            .iter()
            .enumerate()
            .fold(0u32, |m, (k, &b)| m | u32::from(b) << k);
            bits.to_le_bytes()
        })
        .collect();
    assert_eq!(on_host.output.data, want, "host build's comparisons");
    assert_eq!(device.output.data, want, "device build's comparisons");
    // The kernels' arithmetic is the FPU's: no soft-float routine is linked for them.
    let image = &pool_cores(&pool).unwrap()[0];
    use object::{Object, ObjectSymbol};
    let file = object::File::parse(&**image).unwrap();
    let soft: Vec<&str> = file
        .symbols()
        .filter_map(|s| s.name().ok())
        .filter(|n| {
            [
                "__addsf3",
                "__subsf3",
                "__mulsf3",
                "__ltsf2",
                "__lesf2",
                "__gtsf2",
                "__gesf2",
                "__eqsf2",
                "__nesf2",
                "__unordsf2",
            ]
            .contains(n)
        })
        .collect();
    assert!(
        soft.is_empty(),
        "soft-float routines in the image: {soft:?}"
    );
}

/// math.h on the device (the archive's libm) gives the host build's (glibc's) bytes on these
/// inputs, in float and through double.
#[test]
fn device_math_matches_the_host_build() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = test_op(dir.path(), "math");
    let x = f32s(&[257], |i| (i as f32 - 128.0) * 0.173);
    same_on_both(&so, &pool, "math_mix", vec![LaunchArg::hbm(x)]);
    // The host build takes none of its math from the system libm (GCC's sinf+cosf ->
    // sincosf included).
    use object::{Object, ObjectSymbol};
    let bytes = std::fs::read(&so).unwrap();
    let lib = object::File::parse(&*bytes).unwrap();
    let from_libm: Vec<String> = lib
        .dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().map(String::from))
        .filter(|n| {
            let base = n.split('@').next().unwrap_or(n);
            [
                "sin", "cos", "sincos", "exp", "log", "pow", "tanh", "sqrt", "floor",
            ]
            .iter()
            .any(|f| base == *f || base == format!("{f}f"))
        })
        .collect();
    assert!(from_libm.is_empty(), "{from_libm:?}");
}

/// An image's global constructors (a C++ object's, constructor functions, one with a
/// priority) run once per core before its kernels, as the host build's run when it loads:
/// the same bytes, and what they print reaches stdout once, ahead of the first launch's.
#[test]
fn global_constructors_run_on_the_device_as_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = test_op(dir.path(), "ctors");
    let x = f32s(&[9], |i| i as f32);
    let out = same_on_both(&so, &pool, "ctor_affine", vec![LaunchArg::hbm(x.clone())]);
    assert_eq!(
        String::from_utf8_lossy(&out),
        "constructors run before kernels\n"
    );
    // x * 3 + 7 + 12 on QEMU core 0 (same_on_both compared it with the host build's).
    let run = on_qemu(&pool, "ctor_affine", LaunchArg::hbm(x), 8).unwrap();
    let want: Vec<u8> = (0..9)
        .flat_map(|i| (i as f32 * 3.0 + 19.0).to_le_bytes())
        .collect();
    assert_eq!(run.output.data, want);
    // Eight cores started, their constructors ran, and said so once (the load's).
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "constructors run before kernels\n"
    );
}

/// A kernel with a stack frame beyond `entry`'s reach (GCC's `movsp`) builds for the device
/// and, given the stack it needs (`-DSTACK_SIZE`: an HBM stack, D79), gives the host
/// build's bytes.
#[test]
fn large_stack_frames_build_and_run_on_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bigframe");
    let (so, pool) = testkit::build_with_image_flags(
        dir.path(),
        "bigframe",
        &t.join("bigframe.schema"),
        &[t.join("bigframe.cpp")],
        &["-DSTACK_SIZE=81920"],
    );
    let x = f32s(&[300], |i| i as f32 * 0.25);
    same_on_both(&so, &pool, "big_frame", vec![LaunchArg::hbm(x)]);
}

/// Kernels using the C++ library headers build for the device (libc++ configured by
/// include/device, D72) and give the host build's (libstdc++'s) bytes; a failed assert is
/// a device fault that names the expression.
#[test]
fn cxx_library_headers_build_for_the_device_and_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = test_op(dir.path(), "stdcxx");
    let x = f32s(&[64], |i| (i as f32 - 30.0) * 0.37);
    let out = same_on_both(&so, &pool, "std_mix", vec![LaunchArg::hbm(x.clone())]);
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("std_mix: "), "{text}");
    assert!(
        text.ends_with(&format!("fputs to stdout\n{:>1500}|\n", 7)),
        "{text}"
    );
    same_on_both(&so, &pool, "libc_mix", vec![LaunchArg::hbm(x.clone())]);
    // The bit built-ins (libgcc helpers on the device), against Rust's own answers.
    let words: Vec<u32> = (0..97u32)
        .map(|i| i.wrapping_mul(0x0101_0405) ^ (i << 27) ^ (u32::from(i % 5 == 0) * 0x8000_0000))
        .chain([0, 1, u32::MAX, 0x8000_0000, 0x7fff_ffff])
        .collect();
    let u = HostTensor::new(
        DType::U32,
        vec![words.len() as u64],
        words.iter().flat_map(|w| w.to_le_bytes()).collect(),
    )
    .unwrap();
    let got = on_qemu(&pool, "bit_mix", LaunchArg::hbm(u.clone()), 1).unwrap();
    same_on_both(&so, &pool, "bit_mix", vec![LaunchArg::hbm(u)]);
    let ffs32 = |v: u32| if v == 0 { 0 } else { v.trailing_zeros() + 1 };
    let ffs64 = |v: u64| if v == 0 { 0 } else { v.trailing_zeros() + 1 };
    let clrsb32 = |v: i32| (if v < 0 { !v } else { v }).leading_zeros() - 1;
    let clrsb64 = |v: i64| (if v < 0 { !v } else { v }).leading_zeros() - 1;
    let want: Vec<u8> = words
        .iter()
        .flat_map(|&v| {
            let w = (u64::from(v) << 29) ^ u64::from(v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let neg = ((w >> 3) as i64).wrapping_neg();
            let r = v.count_ones()
                + w.count_ones() * 3
                + ffs32(v) * 7
                + ffs64(w) * 11
                + (v.count_ones() & 1) * 13
                + (w.count_ones() & 1) * 17
                + clrsb32(v as i32) * 19
                + clrsb64(w as i64) * 23
                + ((neg as u64) >> 40) as u32;
            r.to_le_bytes()
        })
        .collect();
    assert_eq!(got.output.data, want);

    let err = on_qemu(&pool, "assert_positive", LaunchArg::hbm(x), 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Assertion `v > 0.0f' failed.") && err.contains("stdcxx.cpp:"),
        "{err}"
    );
}

/// The C++ standard library's containers, strings, smart pointers and function objects on
/// the device (libc++ headers, the archive's support functions), and C's string, ctype and
/// stdlib functions beyond the basics, including `rand` drawing glibc's numbers: the host
/// build's bytes and output on a QEMU core.
#[test]
fn the_cxx_standard_library_builds_for_the_device_and_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let (so, pool) = test_op(dir.path(), "stdlibxx");
    let x = f32s(&[200], |i| ((i * 37) % 101) as f32 * 0.61 - 20.0);
    let out = same_on_both(&so, &pool, "containers", vec![LaunchArg::hbm(x.clone())]);
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with(
            "wide: 1717986918400 200 19000000abc -123456789/-12 7\n\
             containers: key:three | -2,-1,0,1,2,3,4,5 | first negative 0 |"
        ) && text.ends_with("| order 199..184 | 2.500000 8\n"),
        "{text}"
    );
    let out = same_on_both(&so, &pool, "text_mix", vec![LaunchArg::hbm(x)]);
    let text = String::from_utf8_lossy(&out);
    // srand(1) draws glibc's first number; the rest of the line is the host's.
    assert!(text.contains(" 1804289383 aligned 0 1\n"), "{text}");
    let x = f32s(&[4], |i| i as f32);
    let err = on_qemu(&pool, "bad_stoi", LaunchArg::hbm(x), 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("stoi: no conversion or out of range"), "{err}");
    let x = f32s(&[64], |i| i as f32);
    let err = on_qemu(&pool, "too_big", LaunchArg::hbm(x), 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("out of memory for 256000 bytes: the core's libc heap has")
            && err.contains("docs/decisions.md D17"),
        "{err}"
    );
}
