//! What the QEMU tests share.

use nrt_pool_engine::{PoolEngine, PoolImage};
use nrt_pool_qemu::XtensaBackend;
use nrt_pool_testkit as testkit;

/// An engine with `hbm` bytes of HBM whose cores are QEMU Xtensa cores under the
/// repository's board.
pub fn xtensa_engine(hbm: u64) -> PoolEngine {
    PoolEngine::with_backend(
        hbm,
        PoolImage::default(),
        Box::new(
            XtensaBackend::new(testkit::xtensa_board())
                .with_shape_cores(Box::new(nrt_pool_host::HostBackend::default())),
        ),
    )
    .unwrap()
}
