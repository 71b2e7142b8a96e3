//! The 32-bit core runner (D97): the process a host core of an i386 op library runs in,
//! started by the Pool engine (see `nrt_pool_host::core::runner`), never by hand.

fn main() {
    nrt_pool_host::core::runner::runner_main()
}
