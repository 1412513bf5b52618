//! The command line. The only module that touches the process: exit codes, signals, the thread
//! pool, progress bars and logging.
//!
//! Layer 6: imports everything below; each command turns its flags into the options of a
//! `run` entry point and hands it the terminal observer and the Ctrl-C/SIGTERM stop flag.

/// `eprintln!` that never panics: when stderr is a closed pipe (`surge run 2>&1 | head -1`)
/// the line is dropped and the run goes on (its outputs are what matters).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}
pub(crate) use say;

pub mod alloc;
pub mod mesh;
pub mod preview;
pub mod resume;
pub mod run;
pub mod verify;

use crate::error::InputError;
use clap::{Args, Parser, Subcommand};

/// surge: liquid shot description in, mesh sequence out.
#[derive(Debug, Parser)]
#[command(name = "surge", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every subcommand takes.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// No progress bar, no messages (errors still go to stderr).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// More detail: one line per frame with its figures (substeps, pressure iterations and
    /// residual, max speed, simulate and output timings).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate a scene (default: the built-in dam break) and write every frame's outputs.
    Run(run::RunArgs),
    /// Re-mesh a run's particle frames without re-simulating.
    Mesh(mesh::MeshArgs),
    /// Re-render a run's sphere previews without re-simulating.
    Preview(preview::PreviewArgs),
    /// Continue a killed or finished run from its newest valid checkpoint.
    Resume(resume::ResumeArgs),
    /// Check a run folder (frames, meshes, previews, checkpoints) and say what to re-run.
    Verify(verify::VerifyArgs),
}

/// Exit status of a run that failed: bad input, a busy or full output folder, a corrupt file.
pub const EXIT_FAILURE: i32 = 1;
/// Exit status of a usage error (an unknown flag, a malformed value such as `--frames 0-4`):
/// clap's convention, the same for every subcommand.
pub const EXIT_USAGE: i32 = 2;

/// Exit status after Ctrl-C (SIGINT) or SIGHUP stopped a run (checkpoint written).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit status after SIGTERM stopped a run, its checkpoint written: "resume me". 75 is
/// `EX_TEMPFAIL` of sysexits.h (a temporary failure, retry later), which a batch scheduler's job
/// script can tell from a crash (143 = killed by SIGTERM before it could checkpoint) and from an
/// error (1); `scripts/slurm/bake.sbatch` requeues the job on it.
pub const EXIT_TERMINATED: i32 = 75;

/// Parses the command line, runs it, prints any error chain, returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => 0,
        Err(e) => match e.downcast_ref::<run::Interrupted>() {
            Some(i) if run::stop_signal() == run::StopSignal::Terminate => {
                say!(
                    "error: stopped by SIGTERM after frame {}; its checkpoint is written (exit status {EXIT_TERMINATED}: resume me). Continue with: surge resume {}",
                    i.frame,
                    i.out.display()
                );
                EXIT_TERMINATED
            }
            Some(_) => {
                say!("{}", error_text(&e));
                EXIT_INTERRUPTED
            }
            None => {
                say!("{}", error_text(&e));
                EXIT_FAILURE
            }
        },
    }
}

/// The error chain as `error: A: B: C`, then the fix of every [`InputError`] in the chain, so
/// that the fix comes last even when a plain context wraps a typed cause. The fix is read from
/// the error's field, never parsed out of text.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut problems: Vec<String> = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    for cause in e.chain() {
        let (problem, fix) = match cause.downcast_ref::<InputError>() {
            Some(ie) => (ie.headline(), Some(ie.fix.clone())),
            None => (cause.to_string(), None),
        };
        if !problem.is_empty() && problems.last() != Some(&problem) {
            problems.push(problem);
        }
        fixes.extend(fix);
    }
    let mut out = format!("error: {}", problems.join(": "));
    for f in fixes {
        out.push_str("\n  fix: ");
        out.push_str(&f);
    }
    out
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(a) => run::run(&cli.global, a),
        Command::Mesh(a) => mesh::run(&cli.global, a),
        Command::Preview(a) => preview::run(&cli.global, a),
        Command::Resume(a) => resume::run(&cli.global, a),
        Command::Verify(a) => verify::run(&cli.global, a),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fix_lines_come_after_the_whole_chain() {
        // A typed cause (problem and fix as fields) wrapped by a plain context.
        let e =
            crate::error::fail("No such file", "pick a writable path").context("cannot create OUT");
        assert_eq!(
            super::error_text(&e),
            "error: cannot create OUT: No such file\n  fix: pick a writable path"
        );
        let e = anyhow::anyhow!("plain");
        assert_eq!(super::error_text(&e), "error: plain");
    }

    #[test]
    fn clap_definition_is_valid() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
