//! `make bench` rows for the Pool emulator, as ratios measured in one run (median of
//! repeats, spread, issue #14's goals; JSON in target/bench/emulator.json):
//! - an elementwise op (examples/ops scale_add_mc) over 64 MiB of f32 on 8 emulated cores
//!   on device tensors (`launch_into`, no host copies) vs `memcpy` of the same 64 MiB
//!   (goal >= 0.9), and through `PoolEngine::launch` (inputs copied in, output out; goal
//!   >= 0.3);
//! - the 64 MiB rows again with device memory in 4 KiB pages (`NRT_POOL_HUGE_PAGES=0`);
//! - an empty-kernel launch on 1 core vs a direct call of the same function (goal <= 3
//!   us), after 50 ms idle (the cores asleep on their futex; goal <= 100 us), and on 8
//!   cores vs one task switch of this machine (goal <= 10 us): where the
//!   8 core processes outnumber the CPUs each CPU runs its share of them in turns, so the
//!   row also prints that floor, the turns times the switch measured in this run.
//!
//! Needs the host libneuroncustomop.a (`make customop-archives`; `make bench` builds it).

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use nrt_pool_engine::adapters::{KernelLaunch, LaunchVerbs};
use nrt_pool_engine::check::Checks;
use nrt_pool_host::doorbell;

use nrt_pool_benchkit::{Goal, Report, Sample};
use nrt_pool_engine::tensor::{DType, HostTensor, Location};
use nrt_pool_engine::{LaunchArg, OutputSpec, PoolEngine, PoolImage};
use nrt_pool_testkit::{build_ops, examples, root};

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ops = examples(dir.path());
    let mut e = nrt_pool_host::host_engine(512 << 20, PoolImage::default()).unwrap();
    e.load(&ops).unwrap();

    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "host CPUs: {cpus} (8-core rows run 8 emulated cores on them); device memory: {:?}",
        e.tensors.backing()
    );
    let mut report = Report::new("emulator");
    if report.wants("elementwise 64 MiB") {
        elementwise_rows(&mut report, &mut e, "");
    }
    if report.wants("4 KiB pages") || report.wants("elementwise 64 MiB") {
        // The same rows where device memory is a memfd in 4 KiB pages (where the huge-page
        // mount is refused, as in many containers; D66).
        std::env::set_var(nrt_pool_engine::backing::HUGE_PAGES_ENV, "0");
        let mut small = nrt_pool_host::host_engine(512 << 20, PoolImage::default()).unwrap();
        std::env::remove_var(nrt_pool_engine::backing::HUGE_PAGES_ENV);
        println!(
            "device memory for the 4 KiB rows: {:?}",
            small.tensors.backing()
        );
        small.load(&ops).unwrap();
        elementwise_rows(&mut report, &mut small, ", 4 KiB pages");
    }
    if report.wants("empty-kernel launch") {
        empty_rows(&mut report, &mut e, dir.path(), cpus);
    }
}

/// The 64 MiB elementwise rows on engine `e` (`pages`: the rows' suffix naming the page
/// size when it is not the default).
fn elementwise_rows(report: &mut Report, e: &mut PoolEngine, pages: &str) {
    // 64 MiB elementwise vs memcpy.
    let n = 16 << 20;
    let x = HostTensor::from_f32(vec![n as u64], &vec![1.5f32; n]).unwrap();
    let launch = KernelLaunch {
        kernel: "scale_add_mc".into(),
        args: vec![
            LaunchArg::Tensor(x.clone(), Location::Hbm),
            LaunchArg::f32(2.0),
            LaunchArg::f32(1.0),
        ],
        output: OutputSpec {
            dtype: DType::F32,
            shape: vec![n as u64],
            location: Location::Hbm,
        },
        cores: 8,
    };
    let src = vec![1u8; n * 4];
    let mut dst = vec![0u8; n * 4];
    // The same op on device-resident tensors (what a runtime chaining ops does): no host copies.
    let dx = e.tensors.upload(&x).unwrap();
    let dout = e.tensors.alloc_device(DType::F32, vec![n as u64]).unwrap();
    let args = [
        LaunchArg::Device(dx),
        LaunchArg::f32(2.0),
        LaunchArg::f32(1.0),
    ];
    // In turns, so a slow spell of this shared machine (the hypervisor reclaiming memory)
    // lands on the launches and the memcpy baseline alike.
    let engine = std::cell::RefCell::new(&mut *e);
    let [emu, copy, resident] = Sample::interleaved(
        15,
        1,
        [
            &mut || {
                let done = engine.borrow_mut().launch(&launch).unwrap();
                black_box(done.output.data.len());
            },
            &mut || {
                dst.copy_from_slice(black_box(&src));
                black_box(&dst);
            },
            &mut || {
                engine
                    .borrow_mut()
                    .launch_into("scale_add_mc", &args, &dout, 8)
                    .unwrap();
            },
        ],
    );
    report.row(
        &format!("elementwise 64 MiB f32, 8 cores, device tensors, vs memcpy{pages}"),
        resident,
        copy,
        Goal::RatioAtLeast(0.9),
    );
    report.row(
        &format!("elementwise 64 MiB f32, 8 cores, host copies, vs memcpy{pages}"),
        emu,
        copy,
        Goal::RatioAtLeast(0.3),
    );
    // Checked launches: the op from host arrays (as nrt-pool run and Python
    // call it) with the default checks (init, race) and with every check (cores too: one
    // more launch on 7 cores), vs the unchecked launch, goal at most 5x; and the cost on
    // device tensors (which copy nothing, so the checks' scans weigh more).
    let checked = |checks: Checks, resident: bool| {
        let mut e = engine.borrow_mut();
        e.defaults.checks = checks;
        if resident {
            e.launch_into("scale_add_mc", &args, &dout, 8).unwrap();
        } else {
            black_box(e.launch(&launch).unwrap().output.data.len());
        }
        e.defaults.checks = Checks::NONE;
    };
    let [plain, default, all, plain_d, default_d] = Sample::interleaved(
        7,
        1,
        [
            &mut || checked(Checks::NONE, false),
            &mut || checked(Checks::DEFAULT, false),
            &mut || checked(Checks::ALL, false),
            &mut || checked(Checks::NONE, true),
            &mut || checked(Checks::DEFAULT, true),
        ],
    );
    report.row(
        &format!("elementwise 64 MiB f32, 8 cores, host arrays, --check vs unchecked{pages}"),
        default,
        plain,
        Goal::RatioAtLeast(0.2),
    );
    report.row(
        &format!("elementwise 64 MiB f32, 8 cores, host arrays, --check=all vs unchecked{pages}"),
        all,
        plain,
        Goal::RatioAtLeast(0.2),
    );
    report.row(
        &format!("elementwise 64 MiB f32, 8 cores, device tensors, --check vs unchecked{pages}"),
        default_d,
        plain_d,
        Goal::None,
    );
    e.tensors.free_device_tensors();
}

/// An empty kernel: a launch vs a direct call of the same function, on 1 and 8 cores, and
/// a launch after the cores went to sleep (the futex path) vs one right after another.
fn empty_rows(report: &mut Report, e: &mut PoolEngine, dir: &std::path::Path, cpus: usize) {
    // Empty kernel: a launch vs a direct call of the same function.
    std::fs::write(dir.join("empty.schema"), "empty(f32 s) -> tensor<f32>[1]\n").unwrap();
    let src = dir.join("empty.cpp");
    std::fs::write(
        &src,
        "#include \"neuron_customop.hpp\"\n\
         extern \"C\" __attribute__((visibility(\"default\"))) void empty_direct(float, const NeuronArgTensor *) {}\n\
         void empty(float s, neuron::Tensor &out) { empty_direct(s, out.descriptor()); }\n",
    )
    .unwrap();
    let empty = build_ops(
        dir,
        "empty",
        &dir.join("empty.schema"),
        std::slice::from_ref(&src),
    );
    e.load(&empty).unwrap();
    let launch = KernelLaunch {
        kernel: "empty".into(),
        args: vec![LaunchArg::f32(1.0)],
        output: OutputSpec {
            dtype: DType::F32,
            shape: vec![1],
            location: Location::Hbm,
        },
        cores: 1,
    };
    let launch_1 = Sample::measure(101, 1, || {
        e.launch(&launch).unwrap();
    });
    // After idle: cores spin briefly after a launch, then sleep on a futex (D61); a call
    // after a pause (a user's think time) wakes them first.
    let mut after_idle = Vec::new();
    for _ in 0..21 {
        std::thread::sleep(Duration::from_millis(50));
        let t = std::time::Instant::now();
        e.launch(&launch).unwrap();
        after_idle.push(t.elapsed().as_secs_f64());
    }
    report.row(
        "empty-kernel launch after 50 ms idle, 1 core, vs one right after another",
        Sample::from_runs(after_idle),
        launch_1,
        Goal::AtMost(Duration::from_micros(100)),
    );
    let launch_8 = Sample::measure(101, 1, || {
        e.launch(&KernelLaunch {
            cores: 8,
            ..launch.clone()
        })
        .unwrap();
    });
    // The same function, called directly (a plain shared object exporting it).
    let direct_so = dir.join("libdirect.so");
    let ok = std::process::Command::new("g++")
        .args(["-O2", "-shared", "-fPIC", "-I"])
        .arg(root().join("include"))
        .arg(&src)
        .arg("-Wl,--unresolved-symbols=ignore-all")
        .arg("-o")
        .arg(&direct_so)
        .status()
        .unwrap();
    assert!(ok.success());
    // SAFETY: our own freshly built library; the symbol has this signature.
    let direct = unsafe {
        let l = libloading::Library::new(&direct_so).unwrap();
        let f: unsafe extern "C" fn(f32, *const u8) = *l.get(b"empty_direct").unwrap();
        std::mem::forget(l);
        f
    };
    let calls = 1_000_000u32;
    let call_t = Sample::measure(5, calls, || {
        for i in 0..calls {
            // SAFETY: an empty function.
            unsafe { direct(black_box(i as f32), std::ptr::null()) };
        }
    });
    report.row(
        "empty-kernel launch, 1 core, vs a direct call",
        launch_1,
        call_t,
        Goal::AtMost(Duration::from_micros(3)),
    );
    let switch = task_switch();
    report.row(
        "empty-kernel launch, 8 cores, vs one task switch",
        launch_8,
        switch,
        Goal::AtMost(Duration::from_micros(10)),
    );
    let turns = 8usize.div_ceil(cpus);
    if turns > 1 {
        println!(
            "  (8 core processes on {cpus} CPUs: {turns} turns per CPU in series, at least \
             {:.2}us of task switches alone here)",
            turns as f64 * switch.median * 1e6
        );
    }
}

/// One task switch between two processes on one CPU, handing a futex word back and forth
/// (the time of a round trip over two): what each of a launch's core turns costs at least
/// where cores take turns on a CPU.
fn task_switch() -> Sample {
    const ROUNDS: u32 = 2000;
    // SAFETY: a fresh shared anonymous page, unmapped at the end; only atomics touch it.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED, "mmap for the task-switch baseline");
    // SAFETY: the page is mapped, aligned and zeroed; it outlives both users.
    let word = unsafe { &*(page as *const AtomicU32) };
    // Both sides on the CPU we are on, so each hand-over is a switch, not a cross-CPU wake.
    // SAFETY: cpu_set_t is plain bits; setting this process's affinity to one CPU we run on.
    let (old, pinned) = unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, size, &mut old);
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(libc::sched_getcpu().max(0) as usize, &mut one);
        (old, libc::sched_setaffinity(0, size, &one) == 0)
    };
    // Odd values: the child's turn; even: ours.
    let pass = |want: u32| {
        while word.load(Ordering::Acquire) != want {
            doorbell::wait(word, want.wrapping_sub(1), Duration::from_millis(100));
        }
        word.store(want.wrapping_add(1), Ordering::Release);
        doorbell::wake(word);
    };
    // SAFETY: the child only runs `pass` on the shared page and leaves with _exit.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork for the task-switch baseline");
    if child == 0 {
        let mut turn = 1u32;
        loop {
            pass(turn);
            turn = turn.wrapping_add(2);
        }
    }
    let mut turn = 0u32;
    let sample = Sample::measure(11, 2 * ROUNDS, || {
        for _ in 0..ROUNDS {
            pass(turn);
            turn = turn.wrapping_add(2);
        }
        // Wait for the child's last hand-back so the next run starts on our turn.
        while word.load(Ordering::Acquire) != turn {
            doorbell::wait(word, turn.wrapping_sub(1), Duration::from_millis(100));
        }
    });
    // SAFETY: our own child; the mapping is ours; the old affinity came from the kernel.
    unsafe {
        libc::kill(child, libc::SIGKILL);
        libc::waitpid(child, std::ptr::null_mut(), 0);
        libc::munmap(page, 4096);
        if pinned {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &old);
        }
    }
    sample
}
