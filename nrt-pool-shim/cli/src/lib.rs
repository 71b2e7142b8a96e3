//! `nrt-pool`'s library half: what the command line does besides parsing it. [`npy`] reads
//! and writes NumPy files (tensors in and out of the engine); [`demo`] is `make demo`'s
//! chain (provider bring-up, the examples built, registered through the seam and run).

pub mod demo;
pub mod npy;
