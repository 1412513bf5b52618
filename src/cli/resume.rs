//! `surge resume`. (In progress: the checkpoint issue.)

use super::GlobalArgs;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run's output folder.
    pub out: PathBuf,
}

pub fn run(_global: &GlobalArgs, _args: ResumeArgs) -> anyhow::Result<()> {
    anyhow::bail!("surge resume is not implemented yet")
}
