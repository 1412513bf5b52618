//! `surge preview`. STUB (skeleton).

use super::GlobalArgs;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PreviewArgs {
    /// The run's output folder.
    pub out: PathBuf,
}

pub fn run(_global: &GlobalArgs, _args: PreviewArgs) -> anyhow::Result<()> {
    anyhow::bail!("surge preview is not implemented yet")
}
