//! `surge run`. STUB (skeleton).

use super::GlobalArgs;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scene file: a native scene (`scenes/*.json`) or the tutorial's `fluid.json`.
    /// (default: the built-in dam break)
    pub scene: Option<PathBuf>,
    /// Output folder. (default: `out/<scene name>/`)
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Write into a non-empty output folder, replacing what is there.
    #[arg(long)]
    pub overwrite: bool,
}

pub fn run(_global: &GlobalArgs, _args: RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("surge run is not implemented yet")
}
