//! The frame loop shared by `run` and `resume`: the simulation on the calling thread, a writer
//! thread turning each finished frame into its outputs while the next is simulated. Per frame,
//! in this order: particle frame `.bin`, tutorial `.part` (if asked for), mesh `.ply`, preview
//! `.png`, the stats line (`stats/frame_NNNN.json`), then the checkpoint when one is due.
//! `stats.jsonl` is assembled from the per-frame stats files when the run ends, however it ends
//! (see `output::stats`). Every file is written atomically, so a kill at any moment leaves
//! whole files only, and the files on disk are always a prefix of the run.
//!
//! Layer 5 (run): imports every stage, checkpoint and scene. The stages are called with their
//! own settings (checked once, with the scene), and their results are encoded by `output`.

use super::folder::fail;
use super::{FrameDone, Interrupted, Observer};
use crate::checkpoint::{self, SceneRecord};
use crate::output::frame::{self, ParticleFrame};
use crate::output::part::{self, NamePattern};
use crate::output::stats::{self, StatsLog};
use crate::output::{RunLayout, atomic_write};
use crate::particles::Particles;
use crate::render::View;
use crate::scene::Scene;
use crate::sim::{FrameReport, Simulation};
use anyhow::Context;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A simulated frame on its way to the writer thread.
struct FrameJob {
    frame: u32,
    particles: Particles,
    /// The frame's last substep length, s (checkpoints carry it).
    last_substep: f64,
    report: FrameReport,
    sim_seconds: f64,
}

/// One run's outputs and settings: what `run` and `resume` share. Everything derived from the
/// scene is worked out here, once per run: the `.part` name pattern, the preview's view, the
/// checkpoint's scene record.
pub(crate) struct Pipeline<'a> {
    pub layout: RunLayout,
    pub scene: Scene,
    part: Option<NamePattern>,
    /// The preview's view, resolved once (an error is reported at the first preview, as a
    /// per-frame render would).
    view: Result<View, crate::render::SettingError>,
    record: SceneRecord,
    stop: &'a AtomicBool,
    observer: &'a dyn Observer,
}

impl<'a> Pipeline<'a> {
    /// The pipeline of a validated scene.
    pub fn new(
        layout: RunLayout,
        scene: Scene,
        stop: &'a AtomicBool,
        observer: &'a dyn Observer,
    ) -> anyhow::Result<Self> {
        let part = match &scene.output.part_pattern {
            Some(p) => Some(NamePattern::parse(p).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let view = View::from_scene(&scene);
        let json = serde_json::to_value(&scene).context("serialising the scene")?;
        let record = SceneRecord::new(json, scene.seed, scene.output.keep_checkpoints);
        Ok(Self {
            layout,
            scene,
            part,
            view,
            record,
            stop,
            observer,
        })
    }

    fn interrupted(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Writes frame 0 (the initial state) and its checkpoint, then simulates to the end.
    pub fn start_fresh(&self, particles: Particles) -> anyhow::Result<()> {
        self.observer.simulating();
        let sim = Simulation::new(&self.scene, particles, 0)?;
        let t = Instant::now();
        let first = self
            .write_frame(0, sim.particles(), &FrameReport::default(), 0.0, t)
            .and_then(|()| self.write_checkpoint(0, sim.particles(), sim.last_substep()));
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
        self.observer.simulating();
        let last = self.scene.time.frames;
        self.observer
            .begin(sim.frame(), last, sim.particles().len());
        let stopped = std::thread::scope(|scope| -> anyhow::Result<Option<u32>> {
            let (tx, rx) = std::sync::mpsc::sync_channel::<FrameJob>(1);
            let writer = scope.spawn(|| -> anyhow::Result<()> {
                for job in rx {
                    let f = job.frame;
                    self.finish_frame(job)
                        .map_err(|e| self.with_recovery_hint(e, f))?;
                }
                Ok(())
            });
            let mut stopped = None;
            while sim.frame() < last {
                if self.interrupted() {
                    stopped = Some(sim.frame());
                    break;
                }
                let t = Instant::now();
                let report = sim.advance_frame();
                check_finite(sim.particles(), sim.frame(), &self.layout)?;
                if report.particle_cap_reached {
                    self.observer.say(&format!(
                        "warning: frame {}: {} particles reached limits.max_particles; the emitters stop adding until particles leave (reported once; stats: particle_cap_reached)",
                        sim.frame(),
                        sim.particles().len()
                    ));
                }
                let job = FrameJob {
                    frame: sim.frame(),
                    particles: sim.particles().clone(),
                    last_substep: sim.last_substep(),
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
                self.write_checkpoint(f, sim.particles(), sim.last_substep())?;
            }
            self.observer.end(false);
            return Err(Interrupted {
                frame: f,
                out: self.layout.root.clone(),
            }
            .into());
        }
        self.observer.end(true);
        self.observer
            .done(&self.layout.root, last, &self.scene.output);
        Ok(())
    }

    /// Writes one simulated frame's outputs, its stats line and (when due) its checkpoint.
    fn finish_frame(&self, job: FrameJob) -> anyhow::Result<()> {
        let FrameJob {
            frame: f,
            particles,
            last_substep,
            report,
            sim_seconds,
        } = job;
        let last = self.scene.time.frames;
        let t = Instant::now();
        self.write_frame(f, &particles, &report, sim_seconds, t)?;
        let every = self.scene.output.checkpoint_every;
        let due = f == last || (every > 0 && f.is_multiple_of(every));
        if due || self.interrupted() {
            self.write_checkpoint(f, &particles, last_substep)?;
        }
        self.observer.frame(&FrameDone {
            frame: f,
            last,
            time: self.scene.frame_time(f),
            particles: particles.len(),
            report: &report,
            sim_seconds,
            output_seconds: t.elapsed().as_secs_f64(),
        });
        Ok(())
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

    /// Writes the checkpoint of `frame`, whose last substep lasted `last_substep` s.
    pub fn write_checkpoint(
        &self,
        frame: u32,
        particles: &Particles,
        last_substep: f64,
    ) -> anyhow::Result<()> {
        let time = [self.scene.frame_time(frame), last_substep];
        checkpoint::write(&self.layout, &self.record, frame, time, particles).map(|_| ())
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
                // The surface settings were checked once, with the scene.
                let s = &self.scene;
                let mesh = super::frame_mesh(&pf.particles, s, pf.time);
                Ok(crate::output::ply::encode(&mesh, pf.frame, pf.time))
            },
            self.layout.mesh(frame),
        )?;
        let solids = &self.scene.built_obstacles.solids;
        let obstacles = output(
            o.obstacle_meshes.unwrap_or(true) && !solids.is_empty(),
            &|| {
                let mesh = crate::geometry::solid_mesh::solids_mesh(solids, pf.time);
                Ok(crate::output::ply::encode(&mesh, pf.frame, pf.time))
            },
            self.layout.obstacle_mesh(frame),
        )?;
        let preview = output(
            o.previews,
            &|| {
                // The view was resolved once, with the pipeline.
                let view = self
                    .view
                    .as_ref()
                    .map_err(|e| anyhow::Error::new(e.clone()));
                view.and_then(|v| {
                    // Moving emitters and sinks are outlined where they are at the frame's time.
                    let moved;
                    let v = if let Some(o) = crate::scene::outlines_at(&self.scene, pf.time) {
                        let mut m = v.clone();
                        m.outlines = o;
                        moved = m;
                        &moved
                    } else {
                        v
                    };
                    let mut img = crate::render::render(&pf.particles, v);
                    crate::render::stamp(&mut img, v, pf.frame, pf.time);
                    let boxes: Vec<_> = solids.iter().map(|s| s.bounds(pf.time)).collect();
                    crate::render::outline::draw_boxes(&mut img, v, &boxes);
                    img.to_png()
                })
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
                ("mesh", mesh + obstacles),
                ("preview", preview),
                ("io", io),
                ("total", sim_seconds + t_frame.elapsed().as_secs_f64()),
            ],
        );
        StatsLog::new(&self.layout).record(frame, &line)
    }
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
        return Err(fail(
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
