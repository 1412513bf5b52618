//! `surge run`: read a scene, simulate every frame, write every output.
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
use crate::checkpoint;
use crate::output::frame::{self, ParticleFrame};
use crate::output::part::{self, NamePattern};
use crate::output::stats::{self, StatsLog};
use crate::output::{RunLayout, atomic_write};
use crate::scene::{self, LoadedScene, Scene};
use crate::sim::{FrameReport, Particles, Simulation};
use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The built-in default shot, `scenes/dam_break.json`.
pub const DEFAULT_SCENE: &str = include_str!("../../scenes/dam_break.json");

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
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub frames: Option<u32>,
    /// Write a checkpoint every N frames (overrides `output.checkpoint_every`; 0: only at the end).
    #[arg(long, value_name = "N")]
    pub checkpoint_every: Option<u32>,
}

/// The error a run ends with when Ctrl-C or SIGTERM stopped it (exit code 130).
#[derive(Debug, thiserror::Error)]
#[error(
    "interrupted after frame {frame}; its checkpoint is written. Continue with: surge resume {}",
    out.display()
)]
pub struct Interrupted {
    pub frame: u32,
    pub out: PathBuf,
}

pub fn run(global: &GlobalArgs, args: RunArgs) -> anyhow::Result<()> {
    let LoadedScene {
        mut scene,
        particles,
        file,
        notes,
        ..
    } = match &args.scene {
        Some(path) => scene::load(path)?,
        None => scene::load_str(
            DEFAULT_SCENE,
            Path::new("scenes/dam_break.json (built in)"),
            Path::new("."),
        )?,
    };
    if let Some(f) = args.frames {
        scene.time.frames = f;
    }
    if let Some(n) = args.checkpoint_every {
        scene.output.checkpoint_every = n;
    }
    scene::validate(&scene, &file)?;
    check_memory(&scene, particles.len(), &file, global.quiet)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&scene.name));
    let _lock = prepare_output_dir(&out, args.overwrite, &scene)?;
    let layout = RunLayout::new(&out);
    write_scene(&layout, &scene)?;
    if !global.quiet {
        for n in &notes {
            eprintln!("surge: note: {}: {n}", file.display());
        }
    }
    if !global.quiet
        && let Some(dt) = scene.solver.fixed_dt
    {
        let frame = scene.frame_time(1);
        let nominal = 1.0 / scene.time.fps;
        if (frame - nominal).abs() > 0.01 * nominal {
            eprintln!(
                "surge: note: with solver.fixed_dt = {dt} s a frame is {} step(s) = {frame:.6} s, not 1/fps = {nominal:.6} s: played at {} fps the motion runs at {:.3}x real speed",
                scene.steps_per_frame(),
                scene.time.fps,
                frame / nominal
            );
        }
    }
    if !global.quiet {
        eprintln!(
            "surge: {} -> {}: {} particles, frames 0..={} at {} fps",
            file.display(),
            out.display(),
            particles.len(),
            scene.time.frames,
            scene.time.fps
        );
    }
    let pipeline = Pipeline::new(layout, scene, global)?;
    pipeline.start_fresh(particles)
}

/// Writes the resolved scene as pretty JSON.
pub(crate) fn write_scene(layout: &RunLayout, scene: &Scene) -> anyhow::Result<()> {
    let text =
        crate::output::pretty_json(&serde_json::to_value(scene).context("serialising the scene")?);
    atomic_write(&layout.scene(), text.as_bytes())
        .with_context(|| format!("writing {}", layout.scene().display()))
}

/// The lock file of a run folder: one surge process writes a folder at a time.
pub(crate) const LOCK_NAME: &str = ".surge.lock";

/// Takes the run folder's lock (released when the returned file is dropped or the process ends,
/// however it ends), or says which folder is busy.
pub(crate) fn lock_run_folder(out: &Path) -> anyhow::Result<std::fs::File> {
    let path = out.join(LOCK_NAME);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| {
            super::fail(
                format!(
                    "cannot create {} (is the output folder writable?): {e}",
                    path.display()
                ),
                "pick a writable output folder",
            )
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(super::fail(
            format!("another surge process is writing {}", out.display()),
            format!(
                "wait for it to finish (or stop it with Ctrl-C, then `surge resume {}`)",
                out.display()
            ),
        )),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(anyhow::Error::new(e).context(format!("locking {}", path.display())))
        }
    }
}

/// Checks the output folder before anything is written: it must be a folder (or not exist) and
/// be empty unless `overwrite`, in which case the previous run's outputs (only those) are
/// removed. Returns the folder's lock, held for the whole run.
fn prepare_output_dir(out: &Path, overwrite: bool, scene: &Scene) -> anyhow::Result<std::fs::File> {
    if out.exists() && !out.is_dir() {
        return Err(super::fail(
            format!("output folder {} exists and is not a folder", out.display()),
            "pick another path with -o",
        ));
    }
    let entries: Vec<String> = match std::fs::read_dir(out) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != LOCK_NAME)
            .collect(),
        Err(_) => Vec::new(),
    };
    if entries.is_empty() {
        std::fs::create_dir_all(out).map_err(|e| {
            super::fail(
                format!("cannot create the output folder {}: {e}", out.display()),
                "pick a writable path with -o",
            )
        })?;
        return lock_run_folder(out);
    }
    if !overwrite {
        let mut shown = entries.clone();
        shown.sort();
        shown.truncate(3);
        return Err(super::fail(
            format!(
                "output folder {} is not empty (it holds {} entries: {}{})",
                out.display(),
                entries.len(),
                shown.join(", "),
                if entries.len() > 3 { ", ..." } else { "" },
            ),
            format!(
                "pass --overwrite to replace a previous run there, pick another folder with -o, or continue an interrupted run with `surge resume {}`",
                out.display()
            ),
        ));
    }
    let lock = lock_run_folder(out)?;
    // Only surge's own outputs are removed, never other files a user keeps there.
    let layout = RunLayout::new(out);
    let mut patterns: Vec<NamePattern> = Vec::new();
    if let Some(p) = &scene.output.part_pattern {
        patterns.extend(NamePattern::parse(p).ok());
    }
    if let Ok(old) = scene::read_resolved(&layout.scene())
        && let Some(p) = &old.output.part_pattern
    {
        patterns.extend(NamePattern::parse(p).ok());
    }
    for dir in [
        layout.particles_dir(),
        layout.meshes_dir(),
        layout.previews_dir(),
        layout.stats_dir(),
        layout.checkpoints_dir(),
    ] {
        if dir.is_dir() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("--overwrite: removing {}", dir.display()))?;
        }
    }
    for name in entries {
        let is_part = patterns.iter().any(|p| p.frame_of(&name).is_some());
        if is_part || name == "scene.json" || name == "stats.jsonl" || is_temp_name(&name) {
            let p = out.join(&name);
            if p.is_file() {
                std::fs::remove_file(&p)
                    .with_context(|| format!("--overwrite: removing {}", p.display()))?;
            }
        }
    }
    Ok(lock)
}

/// Temporary names of `atomic_write` (`.NAME.tmp`), left behind only by a killed process.
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// Memory a run needs per grid cell and per particle, bytes: measured peaks of `surge run`
/// (58 B per cell at 200^3 cells, 196 B per particle at 3-6 M particles, meshes and previews
/// off), rounded up for the mesh and preview stages.
const BYTES_PER_CELL: f64 = 64.0;
const BYTES_PER_PARTICLE: f64 = 256.0;

/// `(MemTotal, MemAvailable)` in bytes from /proc/meminfo (Linux), if readable.
fn machine_memory() -> Option<(f64, f64)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024.0)
    };
    Some((field("MemTotal:")?, field("MemAvailable:")?))
}

/// Refuses a scene that cannot fit in this machine's memory (before anything is written:
/// otherwise the allocation fails mid-run and the process aborts), and warns when it needs
/// more than is free now.
pub(crate) fn check_memory(
    scene: &Scene,
    particles: usize,
    file: &Path,
    quiet: bool,
) -> anyhow::Result<()> {
    let cells: f64 = scene.domain.resolution.iter().map(|&n| n as f64).product();
    let need = cells * BYTES_PER_CELL + particles as f64 * BYTES_PER_PARTICLE;
    let Some((total, available)) = machine_memory() else {
        return Ok(());
    };
    let gb = |b: f64| b / (1u64 << 30) as f64;
    if need > total {
        return Err(super::fail(
            format!(
                "{}: this scene needs about {:.1} GB of memory ({cells:.3e} cells, {particles} particles) and this machine has {:.1} GB",
                file.display(),
                gb(need),
                gb(total)
            ),
            "use fewer cells: a smaller `domain.resolution`, with a larger `domain.cell_size` to keep the box's size (memory falls with the cube of the cell size)",
        ));
    }
    if need > available && !quiet {
        eprintln!(
            "surge: warning: this scene needs about {:.1} GB of memory, {:.1} GB is free now",
            gb(need),
            gb(available)
        );
    }
    Ok(())
}

/// Stops the run when the stepper produced NaN or infinite numbers (an unstable extreme scene or
/// a stepper bug), before any output of that frame is written.
fn check_finite(p: &Particles, frame: u32, layout: &RunLayout) -> anyhow::Result<()> {
    let bad = (0..3)
        .map(|a| {
            p.pos[a]
                .iter()
                .zip(&p.vel[a])
                .filter(|(x, v)| !(x.is_finite() && v.is_finite()))
                .count()
        })
        .max()
        .unwrap_or(0);
    if bad > 0 {
        return Err(super::fail(
            format!(
                "frame {frame}: the simulation became unstable: at least {bad} of {} particles have NaN or infinite positions or velocities. Nothing of frame {frame} was written; the frames before it and their checkpoints are intact",
                p.len()
            ),
            format!(
                "lower `solver.cfl` or raise `solver.max_substeps` (or check `gravity` and source velocities), then start a new run with `--overwrite`; if the scene is ordinary, please report it as a bug with {}",
                layout.scene().display()
            ),
        ));
    }
    Ok(())
}

/// Ctrl-C / SIGTERM count (a second one exits at once).
static SIGNALS: AtomicU32 = AtomicU32::new(0);

fn install_signal_handler() {
    // Fails only if a handler is already set (a second pipeline in the same process): the first
    // one keeps counting, which is all we need.
    let _ = ctrlc::set_handler(|| {
        if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
            // Every output is written atomically; the last checkpoint is intact.
            eprintln!("\nsurge: second interrupt, stopping now");
            std::process::exit(130);
        }
    });
}

fn interrupted() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0
}

/// A simulated frame on its way to the writer thread.
struct FrameJob {
    frame: u32,
    particles: Particles,
    report: FrameReport,
    sim_seconds: f64,
}

/// One run's outputs and settings: what `run` and `resume` share.
pub(crate) struct Pipeline {
    pub layout: RunLayout,
    pub scene: Scene,
    part: Option<NamePattern>,
    quiet: bool,
    verbose: u8,
}

impl Pipeline {
    pub fn new(layout: RunLayout, scene: Scene, global: &GlobalArgs) -> anyhow::Result<Self> {
        let part = match &scene.output.part_pattern {
            Some(p) => Some(NamePattern::parse(p).map_err(anyhow::Error::msg)?),
            None => None,
        };
        Ok(Self {
            layout,
            scene,
            part,
            quiet: global.quiet,
            verbose: global.verbose,
        })
    }

    /// Writes frame 0 (the initial state) and its checkpoint, then simulates to the end.
    pub fn start_fresh(&self, particles: Particles) -> anyhow::Result<()> {
        install_signal_handler();
        let sim = Simulation::new(&self.scene, particles, 0)?;
        let t = Instant::now();
        let first = self
            .write_frame(0, sim.particles(), &FrameReport::default(), 0.0, t)
            .and_then(|()| self.write_checkpoint(0, sim.particles()));
        if let Err(e) = first {
            // Whatever was written of frame 0 stays consistent; stats.jsonl shows it.
            let _ = StatsLog::new(&self.layout).assemble();
            return Err(e);
        }
        self.simulate(sim)
    }

    /// Simulates from `sim.frame()` (whose outputs exist) to the scene's last frame.
    ///
    /// The simulation runs on this thread; a writer thread makes and writes each finished
    /// frame's outputs (mesh, preview, files, stats, checkpoint) in frame order while the next
    /// frame is simulated. At most one frame waits between them. A checkpoint is written only
    /// after its frame's outputs, so the files on disk are always a prefix of the run.
    ///
    /// However it ends (done, interrupted, failed), `stats.jsonl` is then assembled from the
    /// per-frame stats files.
    pub fn simulate(&self, sim: Simulation) -> anyhow::Result<()> {
        let result = self.simulate_frames(sim);
        let assembled = StatsLog::new(&self.layout).assemble();
        match (result, assembled) {
            (Err(e), _) => Err(e),
            (Ok(()), Err(e)) => Err(e.context(format!(
                "every frame is written, but stats.jsonl could not be assembled from stats/; fix the cause, then `surge resume {}` assembles it",
                self.layout.root.display()
            ))),
            (Ok(()), Ok(_)) => Ok(()),
        }
    }

    fn simulate_frames(&self, mut sim: Simulation) -> anyhow::Result<()> {
        install_signal_handler();
        let last = self.scene.time.frames;
        let bar = self.progress_bar(sim.frame(), last, sim.particles().len());
        let stopped = std::thread::scope(|scope| -> anyhow::Result<Option<u32>> {
            let (tx, rx) = std::sync::mpsc::sync_channel::<FrameJob>(1);
            let writer = scope.spawn(|| -> anyhow::Result<()> {
                for job in rx {
                    let f = job.frame;
                    self.finish_frame(job, &bar)
                        .map_err(|e| self.with_recovery_hint(e, f))?;
                }
                Ok(())
            });
            let mut stopped = None;
            while sim.frame() < last {
                if interrupted() {
                    stopped = Some(sim.frame());
                    break;
                }
                let t = Instant::now();
                let report = sim.advance_frame();
                check_finite(sim.particles(), sim.frame(), &self.layout)?;
                let job = FrameJob {
                    frame: sim.frame(),
                    particles: sim.particles().clone(),
                    report,
                    sim_seconds: t.elapsed().as_secs_f64(),
                };
                if tx.send(job).is_err() {
                    break; // the writer failed; its error is returned below
                }
            }
            drop(tx);
            writer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            Ok(stopped)
        })?;
        if let Some(f) = stopped {
            // Ctrl-C or SIGTERM: the state of the last finished frame must be checkpointed
            // (the writer does so once it sees the signal; this covers a signal that came
            // between frames).
            if !checkpoint::path(&self.layout, f).is_file() {
                self.write_checkpoint(f, sim.particles())?;
            }
            bar.abandon();
            return Err(Interrupted {
                frame: f,
                out: self.layout.root.clone(),
            }
            .into());
        }
        bar.finish();
        if !self.quiet {
            eprintln!(
                "surge: done, frames 0..={last} in {}",
                self.layout.root.display()
            );
            let root = self.layout.root.display();
            let o = &self.scene.output;
            if o.meshes {
                eprintln!(
                    "  meshes:   {root}/meshes/ (into Blender: blender -P scripts/blender_import.py -- {root}/meshes)"
                );
            }
            if o.previews {
                eprintln!("  previews: {root}/previews/ (a movie: scripts/make_movie.sh {root})");
            }
        }
        Ok(())
    }

    /// Writes one simulated frame's outputs, its stats line and (when due) its checkpoint.
    fn finish_frame(&self, job: FrameJob, bar: &ProgressBar) -> anyhow::Result<()> {
        let FrameJob {
            frame: f,
            particles,
            report,
            sim_seconds,
        } = job;
        let last = self.scene.time.frames;
        let t = Instant::now();
        self.write_frame(f, &particles, &report, sim_seconds, t)?;
        let every = self.scene.output.checkpoint_every;
        let due = f == last || (every > 0 && f.is_multiple_of(every));
        if due || interrupted() {
            self.write_checkpoint(f, &particles)?;
        }
        bar.set_position(f as u64);
        bar.set_message(format!(
            "{} particles, {} substeps",
            particles.len(),
            report.substeps
        ));
        if bar.is_hidden() && !self.quiet && self.verbose == 0 {
            // No terminal (a log file, a render farm): one plain line per frame instead of the
            // bar.
            eprintln!(
                "surge: frame {f}/{last} done ({} particles, {} substeps, {:.2} s)",
                particles.len(),
                report.substeps,
                sim_seconds + t.elapsed().as_secs_f64()
            );
        }
        if self.verbose > 0 && !self.quiet {
            let line = format!(
                "frame {f}: t = {:.4} s, {} substeps, pressure iterations max {} total {}, residual {:.2e}, max speed {:.3} m/s, simulate {:.3} s, outputs {:.3} s",
                self.scene.frame_time(f),
                report.substeps,
                report.pressure_iterations_max,
                report.pressure_iterations_total,
                report.pressure_residual_max,
                report.max_speed,
                sim_seconds,
                t.elapsed().as_secs_f64()
            );
            if bar.is_hidden() {
                eprintln!("{line}");
            } else {
                bar.println(line);
            }
        }
        Ok(())
    }

    fn progress_bar(&self, pos: u32, last: u32, particles: usize) -> ProgressBar {
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
        bar.set_position(pos as u64);
        bar.set_message(format!("{particles} particles"));
        bar
    }

    /// Adds what is safe and what to do to an output error in the middle of a run.
    fn with_recovery_hint(&self, e: anyhow::Error, frame: u32) -> anyhow::Error {
        let last_ckpt = checkpoint::list(&self.layout).last().map(|c| c.0);
        e.context(format!(
            "frame {frame} could not be written (disk full or folder not writable?). Frames up to {} and the checkpoint of frame {} are intact; free space or fix permissions, then run `surge resume {}`",
            frame.saturating_sub(1),
            last_ckpt.map_or("-".into(), |c| c.to_string()),
            self.layout.root.display()
        ))
    }

    pub fn write_checkpoint(&self, frame: u32, particles: &Particles) -> anyhow::Result<()> {
        checkpoint::write(&self.layout, &self.scene, frame, particles).map(|_| ())
    }

    /// Writes every output of `frame` and its stats line.
    fn write_frame(
        &self,
        frame: u32,
        particles: &Particles,
        report: &FrameReport,
        sim_seconds: f64,
        t_frame: Instant,
    ) -> anyhow::Result<()> {
        let o = &self.scene.output;
        let pf = ParticleFrame {
            frame,
            time: self.scene.frame_time(frame),
            particles: particles.clone(),
        };
        let mut io = 0.0;
        let t = Instant::now();
        if o.particles {
            frame::write(&self.layout.particles(frame), &pf)?;
        }
        if let Some(p) = &self.part {
            let path = self.layout.root.join(p.name(frame));
            atomic_write(&path, part::encode(particles).as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        io += t.elapsed().as_secs_f64();
        // One output stage: its bytes (timed as the stage), then the file (timed as I/O).
        let mut output = |on: bool,
                          make: &dyn Fn() -> anyhow::Result<Vec<u8>>,
                          path: std::path::PathBuf|
         -> anyhow::Result<f64> {
            if !on {
                return Ok(0.0);
            }
            let t = Instant::now();
            let bytes = make()?;
            let secs = t.elapsed().as_secs_f64();
            let t = Instant::now();
            atomic_write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
            io += t.elapsed().as_secs_f64();
            Ok(secs)
        };
        let mesh = output(
            o.meshes,
            &|| {
                crate::surface::frame_ply_bytes(&pf, &self.scene)
                    .with_context(|| format!("meshing frame {frame}"))
            },
            self.layout.mesh(frame),
        )?;
        let preview = output(
            o.previews,
            &|| {
                crate::render::frame_png_bytes(&pf, &self.scene)
                    .with_context(|| format!("rendering the preview of frame {frame}"))
            },
            self.layout.preview(frame),
        )?;
        let line = stats::frame_line(
            frame,
            pf.time,
            particles.len(),
            report,
            &[
                ("simulate", sim_seconds),
                ("mesh", mesh),
                ("preview", preview),
                ("io", io),
                ("total", sim_seconds + t_frame.elapsed().as_secs_f64()),
            ],
        );
        StatsLog::new(&self.layout).record(frame, &line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_particles_stop_the_run_with_a_clear_error() {
        let layout = RunLayout::new("OUT");
        let mut p = Particles::default();
        p.push([0.1, 0.2, 0.3], [0.0, 0.0, -1.0]);
        p.push([0.1, 0.2, 0.3], [0.0, 0.0, -1.0]);
        assert!(check_finite(&p, 4, &layout).is_ok());
        p.vel[2][1] = f32::NAN;
        let e = check_finite(&p, 4, &layout).unwrap_err().to_string();
        assert!(
            e.contains("frame 4") && e.contains("1 of 2 particles"),
            "{e}"
        );
        assert!(e.contains("fix:") && e.contains("solver.cfl"), "{e}");
        p.pos[0][0] = f32::INFINITY;
        let e = check_finite(&p, 4, &layout).unwrap_err().to_string();
        assert!(e.contains("at least 1 of 2"), "{e}");
    }
}
