//! `surge run`: the command-line face of [`crate::run::run`] (read a scene, simulate every
//! frame, write every output), and the terminal [`Observer`] shared by every command: messages,
//! the progress bar, per-frame lines, and Ctrl-C / SIGTERM, which raise the run's stop flag.
//!
//! The simulation runs on the main thread; a writer thread turns each finished frame into its
//! outputs while the next frame is simulated. Per frame, in this order: particle frame `.bin`,
//! tutorial `.part` (if asked for), mesh `.ply`, preview `.png`, the stats line
//! (`stats/frame_NNNN.json`), then the checkpoint when one is due. `stats.jsonl` is assembled
//! from the per-frame stats files when the run ends, however it ends (see `output::stats`). Every file is written atomically, so a kill at any moment leaves
//! whole files only, and the files on disk are always a prefix of the run; `surge resume`
//! continues from the newest checkpoint and rewrites whatever came after it, byte-identically.
//! The whole scene is validated before the output folder is touched, and the folder is locked
//! (`OUT/.surge.lock`) while a process writes it.

use super::GlobalArgs;
use crate::output::OutputSettings;
use crate::run::{FrameDone, Observer, RunOptions};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

pub use crate::run::{DEFAULT_SCENE, Interrupted};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scene file: a native scene (`scenes/*.json`) or the tutorial's `fluid.json`.
    /// (default: the built-in dam break, `scenes/dam_break.json`)
    pub scene: Option<PathBuf>,
    /// Output folder. (default: `out/<scene name>/`)
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Write into a non-empty output folder, replacing the previous run's outputs there.
    #[arg(long)]
    pub overwrite: bool,
    /// Index of the last frame to simulate (overrides the scene's `time.frames`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::sim::settings::MAX_FRAMES as i64))]
    pub frames: Option<u32>,
    /// Write a checkpoint every N frames (overrides `output.checkpoint_every`; 0: only at the end).
    #[arg(long, value_name = "N")]
    pub checkpoint_every: Option<u32>,
    /// Start even when the estimated disk use exceeds the output folder's free space.
    #[arg(long)]
    pub ignore_disk_check: bool,
}

pub fn run(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<()> {
    let options = RunOptions {
        out: args.out,
        overwrite: args.overwrite,
        frames: args.frames,
        checkpoint_every: args.checkpoint_every,
        ignore_disk_check: args.ignore_disk_check,
    };
    let terminal = Terminal::new(global);
    crate::run::run(args.scene.as_deref(), &options, &STOP, &terminal).map(|_| ())
}

/// Signals received so far (SIGINT, SIGTERM, SIGHUP), and the first one.
static SIGNALS: AtomicU32 = AtomicU32::new(0);
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The stop flag every run of this process is handed: raised by the first Ctrl-C / SIGTERM.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);

/// What stopped a run early: Ctrl-C (SIGINT) or a hang-up (SIGHUP), or SIGTERM, which is how a
/// batch scheduler (SLURM's preemption, `scontrol requeue`, `--signal=TERM@T` before the time
/// limit) asks a job to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
}

/// The signal that stopped the run (the first one received).
pub fn stop_signal() -> StopSignal {
    if FIRST_SIGNAL.load(Ordering::SeqCst) == signal_hook::consts::SIGTERM {
        StopSignal::Terminate
    } else {
        StopSignal::Interrupt
    }
}

/// Counts SIGINT, SIGTERM and SIGHUP on a watcher thread and raises [`STOP`]: the run finishes
/// its frame, writes the checkpoint and stops. A second Ctrl-C (or hang-up) exits at once;
/// repeated SIGTERMs do not (a scheduler may send one to the job script, which forwards it, and
/// one to every process of the job; it sends SIGKILL itself when its grace time is over).
fn install_signal_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return; // signals keep their default action
        };
        std::thread::spawn(move || {
            for sig in signals.forever() {
                let _ = FIRST_SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
                if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 && sig != SIGTERM {
                    // Every output is written atomically; the last checkpoint is intact.
                    super::say!("\nsurge: second interrupt, stopping now");
                    std::process::exit(super::EXIT_INTERRUPTED);
                }
                STOP.store(true, Ordering::SeqCst);
            }
        });
    });
}

/// `, ETA 1:23` from the seconds spent on `done` frames and the `left` frames to go.
fn eta_text(elapsed: f64, done: u32, left: u32) -> String {
    if done == 0 {
        return String::new();
    }
    let s = (elapsed / done as f64 * left as f64).round() as u64;
    if s >= 3600 {
        format!(", ETA {}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!(", ETA {}:{:02}", s / 60, s % 60)
    }
}

/// The terminal: what every command prints (nothing but errors with `--quiet`).
pub(crate) struct Terminal {
    quiet: bool,
    verbose: u8,
    bar: Mutex<ProgressBar>,
    /// Plain per-frame lines instead of the batch progress bar (stderr is not a terminal).
    plain: AtomicBool,
    /// When the frame loop began, and its first frame: the ETA of the plain lines.
    started: Mutex<Option<(std::time::Instant, u32)>>,
}

impl Terminal {
    pub fn new(global: &GlobalArgs) -> Self {
        Self {
            quiet: global.quiet,
            verbose: global.verbose,
            bar: Mutex::new(ProgressBar::hidden()),
            plain: AtomicBool::new(false),
            started: Mutex::new(None),
        }
    }

    fn bar(&self) -> ProgressBar {
        self.bar.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Observer for Terminal {
    fn say(&self, text: &str) {
        if !self.quiet {
            super::say!("surge: {text}");
        }
    }

    fn simulating(&self) {
        install_signal_handler();
    }

    fn begin(&self, first: u32, last: u32, particles: usize) {
        let target = if self.quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(Some(last as u64), target);
        bar.set_style(
            ProgressStyle::with_template(
                "frame {pos}/{len} {elapsed_precise} ETA {eta} {msg} [{wide_bar}]",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_position(first as u64);
        *self.started.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((std::time::Instant::now(), first));
        bar.set_message(format!("{particles} particles"));
        *self.bar.lock().unwrap_or_else(|e| e.into_inner()) = bar;
    }

    fn frame(&self, d: &FrameDone) {
        let bar = self.bar();
        let f = d.frame;
        let report = d.report;
        bar.set_position(f as u64);
        bar.set_message(format!(
            "{} particles, {}",
            d.particles,
            crate::error::count(report.substeps as usize, "substep", "substeps")
        ));
        if bar.is_hidden() && !self.quiet && self.verbose == 0 {
            // No terminal (a log file, a render farm): one plain line per frame instead of the
            // bar.
            let eta = self
                .started
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .map(|(t0, first)| eta_text(t0.elapsed().as_secs_f64(), f - first, d.last - f))
                .unwrap_or_default();
            super::say!(
                "surge: frame {f}/{} done ({} particles, {}, {:.2} s){eta}",
                d.last,
                d.particles,
                crate::error::count(report.substeps as usize, "substep", "substeps"),
                d.sim_seconds + d.output_seconds
            );
        }
        if self.verbose > 0 && !self.quiet {
            let line = format!(
                "frame {f}: t = {:.4} s, {}, pressure iterations max {} total {}, residual {:.2e}, max speed {:.3} m/s, simulate {:.3} s, outputs {:.3} s",
                d.time,
                crate::error::count(report.substeps as usize, "substep", "substeps"),
                report.pressure_iterations_max,
                report.pressure_iterations_total,
                report.pressure_residual_max,
                report.max_speed,
                d.sim_seconds,
                d.output_seconds
            );
            if bar.is_hidden() {
                super::say!("{line}");
            } else {
                bar.println(line);
            }
        }
    }

    fn end(&self, finished: bool) {
        let bar = self.bar();
        if finished {
            // Cleared, so that the "surge: done" line that follows starts a line of its own.
            bar.finish_and_clear();
        } else {
            bar.abandon();
        }
    }

    fn done(&self, out: &Path, last: u32, o: &OutputSettings) {
        if self.quiet {
            return;
        }
        super::say!("surge: done, frames 0..={last} in {}", out.display());
        let root = out.display();
        // Absolute paths, so the hints work from any folder.
        let abs = std::fs::canonicalize(out);
        let run = abs.as_deref().unwrap_or(out).display();
        let scripts = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts");
        if o.meshes {
            super::say!(
                "  meshes:   {root}/meshes/ (into Blender: blender -b -P {scripts}/blender_import.py -- {run} --save {run}.blend)"
            );
        }
        if o.previews {
            super::say!("  previews: {root}/previews/ (a movie: {scripts}/make_movie.sh {run})");
        }
    }

    fn log(&self, text: &str) {
        if !self.quiet {
            super::say!("{text}");
        }
    }

    fn batch_begin(&self, total: usize, header: &str) {
        // A progress bar on a terminal; elsewhere (a log file, a render farm's job output) one
        // plain line per frame with the task's frame range, and no escape codes.
        let plain = !self.quiet && !std::io::stderr().is_terminal();
        self.plain.store(plain, Ordering::SeqCst);
        let bar = if self.quiet || plain {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(total as u64).with_style(
                ProgressStyle::with_template(
                    "preview {bar:30} {pos}/{len} frames, {per_sec}, eta {eta}",
                )
                .expect("valid template"),
            )
        };
        if plain {
            super::say!("{header}");
        }
        *self.bar.lock().unwrap_or_else(|e| e.into_inner()) = bar;
    }

    fn batch_tick(&self, line: &str) {
        self.bar().inc(1);
        if self.plain.load(Ordering::SeqCst) {
            super::say!("{line}");
        }
    }

    fn batch_end(&self) {
        self.bar().finish_and_clear();
    }
}
