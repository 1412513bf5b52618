//! `surge verify OUT`: check a whole run folder (particle frames with their checksums, meshes,
//! previews, checkpoints) and say what to re-run ([`crate::run::verify`]).

use super::GlobalArgs;
use super::run::Terminal;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The run's output folder.
    pub out: PathBuf,
}

pub fn run(global: &GlobalArgs, args: VerifyArgs) -> anyhow::Result<()> {
    crate::run::verify::verify(&args.out, &Terminal::new(global)).map(|_| ())
}
