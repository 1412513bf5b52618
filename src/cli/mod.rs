//! The command line. The only module that touches the process: exit codes, signals, the thread
//! pool, progress bars and logging.

pub mod mesh;
pub mod preview;
pub mod resume;
pub mod run;

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
    /// More detail: per-frame figures (solver iterations, timings, mesh sizes).
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
}

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
        Err(e) => {
            eprintln!("{}", error_text(&e));
            match e.downcast_ref::<run::Interrupted>() {
                Some(i) if i.signal == run::StopSignal::Terminate => EXIT_TERMINATED,
                Some(_) => EXIT_INTERRUPTED,
                None => 1,
            }
        }
    }
}

/// The error chain as `error: A: B: C`, then every `fix:` line of the chain, so that the fix
/// comes last even when a context that carries it wraps a lower-level cause.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut problems: Vec<String> = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        let (problem, fix) = match text.split_once("\n  fix: ") {
            Some((p, f)) => (p.to_string(), Some(f.to_string())),
            None => (text, None),
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

/// An error displayed as `PROBLEM` then `  fix: FIX` on a second line, the form [`error_text`]
/// (and [`crate::scene::InputError`]) use, so that the fix is printed last.
pub(crate) fn fail(problem: impl std::fmt::Display, fix: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{problem}\n  fix: {fix}")
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(a) => run::run(&cli.global, a),
        Command::Mesh(a) => mesh::run(&cli.global, a),
        Command::Preview(a) => preview::run(&cli.global, a),
        Command::Resume(a) => resume::run(&cli.global, a),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fix_lines_come_after_the_whole_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = anyhow::Error::new(io).context("cannot create OUT\n  fix: pick a writable path");
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
