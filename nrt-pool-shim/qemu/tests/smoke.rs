use std::path::Path;
use std::time::Duration;

#[test]
fn scale_add_smoke() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let board = root.join("target/customop/xtensa-q7-none-elf/pool-board.elf");
    let image = Path::new("/tmp/qx/ops/core0.elf");
    let x: Vec<f32> = (0..10).map(|i| i as f32 - 3.0).collect();
    let f = |v: f32| v.to_le_bytes().to_vec();
    let args = vec![
        nrt_pool_qemu::ArgIn { dtype: 10, shape: vec![10], data: x.iter().flat_map(|v| v.to_le_bytes()).collect() },
        nrt_pool_qemu::ArgIn { dtype: 10, shape: vec![1], data: f(2.0) },
        nrt_pool_qemu::ArgIn { dtype: 10, shape: vec![1], data: f(0.5) },
    ];
    let r = nrt_pool_qemu::run_kernel(&board, image, b"scale_add", &args, (10, &[10]), Duration::from_secs(20));
    match r {
        Ok(o) => eprintln!("{:?} {:?}", o.completion, o.output.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>()),
        Err(e) => panic!("{e}"),
    }
}
