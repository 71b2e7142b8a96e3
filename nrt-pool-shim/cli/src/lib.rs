//! `nrt-pool`, the command line op authors use: build, list and run ops on the emulated
//! engine with `.npy` files, and `make demo`'s chain.
//!
//! This library half holds what the command line does besides parsing it: [`npy`] reads
//! and writes NumPy files; [`demo`] brings up the provider, builds the examples, registers
//! them through the seam and runs them against a reference; [`progress`] shows long work
//! on a terminal.

pub mod demo;
pub mod npy;
pub mod progress;
