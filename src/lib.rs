//! # surge: liquid shot description in, mesh sequence out
//!
//! An offline pipeline in four stages, each a plain function over plain data so that later stages
//! can re-run from cached particle frames without re-simulating:
//!
//! 1. **Simulate** ([`sim`]): a PIC/FLIP stepper on a MAC grid, one call per video frame.
//! 2. **Surface** ([`surface`]): particle level set, marching cubes, binary PLY.
//! 3. **Preview** ([`render`]): a CPU sphere render of the particles, PNG.
//! 4. **Resume** ([`checkpoint`]): state-only checkpoints for exact resume.
//!
//! [`scene`] is the only module that knows the JSON input formats (native scenes and the
//! tutorial's `fluid.json`); [`output`] owns the run directory layout and every file format
//! surge writes; [`cli`] is the command line and the only place that touches the process
//! (exit codes, signals, the thread pool, progress bars).

pub mod checkpoint;
pub mod cli;
pub mod geometry;
pub mod mesh;
pub mod output;
pub mod render;
pub mod scene;
pub mod sim;
pub mod sources;
pub mod surface;
