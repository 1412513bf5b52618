//! [`resume`]: continue a killed, interrupted or finished run from its newest valid
//! checkpoint, byte-identically to an uninterrupted run.
//!
//! 1. Read the scene: `OUT/scene.json` (or another scene file), with the frame count and
//!    checkpoint interval overrides applied.
//! 2. Pick the newest checkpoint that reads back with valid checksums (at or before
//!    `from_frame`); unusable ones are reported, skipped and removed.
//! 3. Compare the checkpoint's scene with the current one: physics changes are refused, naming
//!    the fields; output-only changes ([`crate::checkpoint::OUTPUT_ONLY_FIELDS`]) are reported.
//! 4. Remove every output after the checkpoint's frame (frames, meshes, previews, per-frame
//!    stats, `.part` files, later checkpoints, leftover temporary files) and assemble
//!    `stats.jsonl` from the per-frame stats up to it.
//! 5. Continue with the same pipeline as [`super::run()`].
//!
//! Without any valid checkpoint (a run killed before its first one) the run starts over from
//! frame 0, seeded from the resolved scene (or, if its particle file is gone, from
//! `OUT/particles/frame_0000.bin`).
//!
//! Layer 5 (run): imports scene, checkpoint, sim, output.

use super::Observer;
use super::folder::{
    check_memory, fail, is_temp_name, lock_run_folder, part_patterns, prune_checkpoints,
    remove_outputs_after, remove_temp_files, write_scene,
};
use super::pipeline::Pipeline;
use crate::checkpoint::{self, Checkpoint};
use crate::output::RunLayout;
use crate::output::stats::StatsLog;
use crate::scene::{self, Scene};
use crate::sim::Simulation;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// How to resume (the command line's `surge resume` flags).
#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    /// Resume from the newest valid checkpoint at or before this frame (rewind).
    pub from_frame: Option<u32>,
    /// Index of the last frame: extend (or shorten) the run. An output-only change.
    pub frames: Option<u32>,
    /// Write a checkpoint every N frames from now on (0: only at the end).
    pub checkpoint_every: Option<u32>,
    /// Take the scene from this file instead of OUT/scene.json.
    pub scene: Option<PathBuf>,
    /// Continue even when the estimated disk use exceeds the output folder's free space.
    pub ignore_disk_check: bool,
}

/// Continues the run in `out` (see the module docs).
pub fn resume(
    out: &Path,
    options: &ResumeOptions,
    stop: &AtomicBool,
    observer: &dyn Observer,
) -> anyhow::Result<()> {
    let layout = RunLayout::new(out);
    if let Some(file) = &options.scene
        && !layout.scene().is_file()
        && only_temporaries(out)
    {
        // A run stopped while it started (before scene.json was in place): start it over.
        let _lock = lock_run_folder(out)?;
        let (scene, scene_file) = read_scene(&layout, options)?;
        remove_temp_files(&layout)?;
        observer.say(&format!(
            "{}: no run started there yet; running {}",
            out.display(),
            file.display()
        ));
        let over = StartOver {
            why: "no scene.json yet",
            scene_file: &scene_file,
            ignore_disk_check: options.ignore_disk_check,
        };
        return start_over(layout, scene, over, stop, observer);
    }
    check_run_folder(out, &layout)?;
    let _lock = lock_run_folder(out)?;
    let (scene, scene_file) = read_scene(&layout, options)?;
    let last = scene.time.frames;

    // The newest usable checkpoint at or before --from-frame and the last frame.
    let limit = options.from_frame.unwrap_or(u32::MAX).min(last);
    let scene_value = serde_json::to_value(&scene)?;
    let (chosen, unusable) = newest_checkpoint(&layout, limit, &scene_value, observer);
    let later_exist = checkpoint::list(&layout).iter().any(|(f, _)| *f > limit);
    let Some(ckpt) = chosen else {
        let why = if !unusable.is_empty() {
            format!("no valid checkpoint ({} unusable, removed)", unusable.len())
        } else if later_exist {
            format!("no checkpoint at or before frame {limit}")
        } else {
            "no checkpoint yet (the run stopped before its first one)".to_string()
        };
        remove_temp_files(&layout)?;
        for p in &unusable {
            std::fs::remove_file(p).ok();
        }
        let over = StartOver {
            why: &why,
            scene_file: &scene_file,
            ignore_disk_check: options.ignore_disk_check,
        };
        return start_over(layout, scene, over, stop, observer);
    };

    let c = ckpt.meta.frame;
    check_memory(&scene, ckpt.particles.len(), &scene_file, observer)?;
    compare_scenes(&ckpt, &scene, &scene_file, observer)?;
    if c < last {
        // (A finished run writes nothing: no disk to check.)
        super::disk::check_disk(
            &scene,
            ckpt.particles.len(),
            Some(c),
            out,
            options.ignore_disk_check,
            &|t| observer.say(t),
        )?;
    }

    // Remove what came after the checkpoint (and what a kill left); it is recomputed identically.
    remove_temp_files(&layout)?;
    for p in &unusable {
        std::fs::remove_file(p).ok();
    }
    let removed = clean_after(&layout, &scene, &ckpt, observer)?;
    write_scene(&layout, &scene)?;
    if c >= last {
        observer.say(&format!(
            "the run is complete at frame {last}; nothing to do (extend it with --frames N)"
        ));
        return Ok(());
    }
    observer.say(&format!(
        "resuming {} from the checkpoint of frame {c} (t = {:.4} s, {} particles){}; frames {}..={last} to go",
        layout.root.display(),
        ckpt.meta.time,
        ckpt.particles.len(),
        if removed > 0 {
            format!(", {removed} later output files removed")
        } else {
            String::new()
        },
        c + 1
    ));
    let pipeline = Pipeline::new(layout, scene, stop, observer)?;
    let sim = Simulation::new(&pipeline.scene, ckpt.particles, c)?
        .with_last_substep(ckpt.meta.last_substep)?;
    pipeline.simulate(sim)
}

/// Refuses a path that is not a run folder, saying what to give instead.
fn check_run_folder(out: &Path, layout: &RunLayout) -> anyhow::Result<()> {
    if layout.scene().is_file() {
        return Ok(());
    }
    let p = out.display();
    if out.is_file() {
        return Err(fail(
            format!("{p} is a file; `surge resume` takes the output folder of a run"),
            format!(
                "to start a run of this scene: `surge run {p} -o OUT`; to continue one: `surge resume OUT`"
            ),
        ));
    }
    if !out.exists() {
        return Err(fail(
            format!("{p} does not exist"),
            format!(
                "give the output folder of a `surge run` (the default is out/<scene name>), or start a run with `surge run SCENE -o {p}`"
            ),
        ));
    }
    if only_temporaries(out) {
        return Err(fail(
            format!(
                "{p} holds no run yet: a `surge run` was stopped while it started (only surge's temporary files are there)"
            ),
            format!(
                "start it again with `surge run SCENE -o {p}` (the leftovers are removed), or `surge resume {p} --scene SCENE`"
            ),
        ));
    }
    Err(fail(
        format!("{p} is not a surge run folder (no scene.json)"),
        format!(
            "give the output folder of a `surge run`, or start a run with `surge run SCENE -o {p}`"
        ),
    ))
}

/// True when `out` is a folder holding surge's lock or temporary files and nothing else (what
/// a run stopped during its start-up leaves).
fn only_temporaries(out: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(out) else {
        return false;
    };
    let names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    !names.is_empty()
        && names
            .iter()
            .all(|n| n == super::folder::LOCK_NAME || is_temp_name(n))
}

/// The scene to continue with and the file it came from, overrides applied.
fn read_scene(layout: &RunLayout, options: &ResumeOptions) -> anyhow::Result<(Scene, PathBuf)> {
    let (mut scene, scene_file) = match &options.scene {
        Some(p) => (scene::load(p)?.scene, p.clone()),
        None => (scene::read_resolved(&layout.scene())?, layout.scene()),
    };
    if let Some(f) = options.frames {
        scene.time.frames = f;
    }
    if let Some(n) = options.checkpoint_every {
        scene.output.checkpoint_every = n;
    }
    // Validated when read; only the overridden section is checked again.
    scene.time.check().map_err(|e| e.in_file(&scene_file))?;
    Ok((scene, scene_file))
}

/// The newest checkpoint at or before `limit` that reads back and whose physics match `scene`
/// (a valid checkpoint of another scene, copied into the folder, is skipped with a warning),
/// and the unusable ones skipped. When no checkpoint matches, the newest readable one is
/// returned, so that the scene comparison names the changed fields.
fn newest_checkpoint(
    layout: &RunLayout,
    limit: u32,
    scene: &serde_json::Value,
    observer: &dyn Observer,
) -> (Option<Checkpoint>, Vec<PathBuf>) {
    let mut unusable: Vec<PathBuf> = Vec::new();
    let mut first_other: Option<Checkpoint> = None;
    let physics = checkpoint::physics_view(scene);
    let mut skipped: Vec<PathBuf> = Vec::new();
    for (frame, path) in checkpoint::list(layout).into_iter().rev() {
        if frame > limit {
            continue;
        }
        match checkpoint::read(&path) {
            Ok(c)
                if checkpoint::diff(&checkpoint::physics_view(&c.meta.scene), &physics)
                    .is_empty() =>
            {
                for p in &skipped {
                    observer.say(&format!(
                        "warning: checkpoint {} is of another scene (its physics differ from scene.json); skipping it",
                        p.display()
                    ));
                }
                return (Some(c), unusable);
            }
            Ok(c) => {
                skipped.push(path);
                first_other.get_or_insert(c);
            }
            Err(why) => {
                observer.say(&format!(
                    "checkpoint {} is unusable ({why}); skipping it",
                    path.display()
                ));
                unusable.push(path);
            }
        }
    }
    (first_other, unusable)
}

/// Refuses physics changes since the checkpoint; reports output-only ones.
fn compare_scenes(
    ckpt: &Checkpoint,
    scene: &Scene,
    scene_file: &Path,
    observer: &dyn Observer,
) -> anyhow::Result<()> {
    let c = ckpt.meta.frame;
    let scene_now = serde_json::to_value(scene)?;
    let physics_changes = checkpoint::diff(
        &checkpoint::physics_view(&ckpt.meta.scene),
        &checkpoint::physics_view(&scene_now),
    );
    if !physics_changes.is_empty() {
        return Err(fail(
            format!(
                "{}: the scene changed since the checkpoint of frame {c} in ways that change the physics:\n    {}",
                scene_file.display(),
                physics_changes.join("\n    ")
            ),
            "undo these changes to resume (a resumed run must match an uninterrupted one), or start a new run with `surge run SCENE -o NEW_FOLDER` (or `--overwrite`)",
        ));
    }
    let all_changes = checkpoint::diff(&ckpt.meta.scene, &scene_now);
    if !all_changes.is_empty() {
        observer.say(&format!(
            "output-only changes since the checkpoint of frame {c} (frames up to {c} keep their outputs as they were):\n    {}",
            all_changes.join("\n    ")
        ));
    }
    Ok(())
}

/// Removes the outputs after the checkpoint's frame, prunes checkpoints and reassembles
/// `stats.jsonl` up to it. Returns how many output files were removed.
fn clean_after(
    layout: &RunLayout,
    scene: &Scene,
    ckpt: &Checkpoint,
    observer: &dyn Observer,
) -> anyhow::Result<usize> {
    let c = ckpt.meta.frame;
    let mut patterns = part_patterns(scene);
    if let Ok(old) = serde_json::from_value::<Scene>(ckpt.meta.scene.clone()) {
        patterns.extend(part_patterns(&old));
    }
    if let Ok(old) = scene::read_resolved(&layout.scene()) {
        patterns.extend(part_patterns(&old));
    }
    let removed = remove_outputs_after(layout, &patterns, Some(c))?;
    prune_checkpoints(layout, scene.output.keep_checkpoints)?;
    let stats = StatsLog::new(layout);
    stats.split_legacy(c)?;
    let assembled = stats.assemble()?;
    if assembled.lines != c as usize + 1 {
        observer.say(&format!(
            "stats.jsonl holds {} of the {} lines of frames 0..={c}; the missing ones are not recomputed",
            assembled.lines,
            c + 1
        ));
    }
    Ok(removed)
}

/// Why a resume starts over, and what its checks need.
struct StartOver<'a> {
    why: &'a str,
    /// The scene's file, for the memory check's message.
    scene_file: &'a Path,
    ignore_disk_check: bool,
}

/// No usable checkpoint: start over from frame 0 with the resolved scene, after the memory
/// and disk checks a `surge run` makes.
fn start_over(
    layout: RunLayout,
    scene: Scene,
    over: StartOver<'_>,
    stop: &AtomicBool,
    observer: &dyn Observer,
) -> anyhow::Result<()> {
    let why = over.why;
    let particles = match scene::initial_particles(&scene, &layout.scene()) {
        Ok(p) => p,
        Err(seed_err) => {
            // The scene's particle file may be gone; frame 0's particle frame is the same state.
            match crate::output::frame::read(&layout.particles(0)) {
                Ok(f) if f.frame == 0 => f.particles,
                _ => {
                    return Err(fail(
                        format!(
                            "{why}, and the initial state cannot be rebuilt: {}",
                            seed_err.headline()
                        ),
                        format!(
                            "{}\n  fix: restore the particle file, or start over with `surge run SCENE -o {} --overwrite`",
                            seed_err.fix,
                            layout.root.display()
                        ),
                    ));
                }
            }
        }
    };
    check_memory(&scene, particles.len(), over.scene_file, observer)?;
    super::disk::check_disk(
        &scene,
        particles.len(),
        None,
        &layout.root,
        over.ignore_disk_check,
        &|t| observer.say(t),
    )?;
    observer.say(&format!(
        "{why}: starting {} over from frame 0 ({} particles)",
        layout.root.display(),
        particles.len()
    ));
    let mut patterns = part_patterns(&scene);
    if let Ok(old) = scene::read_resolved(&layout.scene()) {
        patterns.extend(part_patterns(&old));
    }
    remove_outputs_after(&layout, &patterns, None)?;
    for (_, p) in checkpoint::list(&layout) {
        std::fs::remove_file(&p).ok();
    }
    // No stats are left: an empty stats.jsonl rather than the stale lines of the removed frames.
    StatsLog::new(&layout).assemble()?;
    write_scene(&layout, &scene)?;
    Pipeline::new(layout, scene, stop, observer)?.start_fresh(particles)
}
