//! `surge mesh`. STUB (skeleton).

use super::GlobalArgs;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MeshArgs {
    /// The run's output folder.
    pub out: PathBuf,
}

pub fn run(_global: &GlobalArgs, _args: MeshArgs) -> anyhow::Result<()> {
    anyhow::bail!("surge mesh is not implemented yet")
}
