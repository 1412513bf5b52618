//! `surge resume OUT`: continue a killed, interrupted or finished run from its newest valid
//! checkpoint, byte-identically to an uninterrupted run ([`crate::run::resume()`]).
//!
//! 1. Read the scene: `OUT/scene.json` (or `--scene FILE`), with `--frames` /
//!    `--checkpoint-every` applied.
//! 2. Pick the newest checkpoint that reads back with valid checksums (at or before
//!    `--from-frame`); unusable ones are reported, skipped and removed.
//! 3. Compare the checkpoint's scene with the current one: physics changes are refused, naming
//!    the fields; output-only changes ([`crate::checkpoint::OUTPUT_ONLY_FIELDS`]) are reported.
//! 4. Remove every output after the checkpoint's frame (frames, meshes, previews, per-frame
//!    stats, `.part` files, later checkpoints, leftover temporary files) and assemble
//!    `stats.jsonl` from the per-frame stats up to it.
//! 5. Continue with the same pipeline and progress bar as `surge run`.
//!
//! Without any valid checkpoint (a run killed before its first one) the run starts over from
//! frame 0, seeded from the resolved scene (or, if its particle file is gone, from
//! `OUT/particles/frame_0000.bin`).

use super::GlobalArgs;
use super::run::{STOP, Terminal};
use crate::run::ResumeOptions;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run's output folder.
    pub out: PathBuf,
    /// Resume from the newest valid checkpoint at or before this frame (rewind).
    #[arg(long, value_name = "F")]
    pub from_frame: Option<u32>,
    /// Index of the last frame: extend (or shorten) the run. An output-only change.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::sim::settings::MAX_FRAMES as i64))]
    pub frames: Option<u32>,
    /// Write a checkpoint every N frames from now on (0: only at the end).
    #[arg(long, value_name = "N")]
    pub checkpoint_every: Option<u32>,
    /// Take the scene from this file (native or tutorial) instead of OUT/scene.json; changes
    /// to its physics are refused, output-only changes are applied.
    #[arg(long, value_name = "FILE")]
    pub scene: Option<PathBuf>,
    /// Continue even when the estimated disk use exceeds the output folder's free space.
    #[arg(long)]
    pub ignore_disk_check: bool,
}

pub fn run(global: &GlobalArgs, args: ResumeArgs) -> anyhow::Result<()> {
    let options = ResumeOptions {
        from_frame: args.from_frame,
        frames: args.frames,
        checkpoint_every: args.checkpoint_every,
        scene: args.scene,
        ignore_disk_check: args.ignore_disk_check,
    };
    crate::run::resume(&args.out, &options, &STOP, &Terminal::new(global))
}
