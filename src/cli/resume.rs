//! `surge resume OUT`: continue a killed, interrupted or finished run from its newest valid
//! checkpoint, byte-identically to an uninterrupted run.
//!
//! 1. Read the scene: `OUT/scene.json` (or `--scene FILE`), with `--frames` /
//!    `--checkpoint-every` applied.
//! 2. Pick the newest checkpoint that reads back with valid checksums (at or before
//!    `--from-frame`); unusable ones are reported, skipped and removed.
//! 3. Compare the checkpoint's scene with the current one: physics changes are refused, naming
//!    the fields; output-only changes ([`crate::checkpoint::OUTPUT_ONLY_FIELDS`]) are reported.
//! 4. Remove every output after the checkpoint's frame (frames, meshes, previews, per-frame
//!    stats, `.part` files, later checkpoints, leftover temporary files) and assemble
//!    `stats.jsonl` from the per-frame stats up to it.
//! 5. Continue with the same pipeline and progress bar as `surge run`.
//!
//! Without any valid checkpoint (a run killed before its first one) the run starts over from
//! frame 0, seeded from the resolved scene (or, if its particle file is gone, from
//! `OUT/particles/frame_0000.bin`).

use super::GlobalArgs;
use super::run::{Pipeline, is_temp_name, write_scene};
use crate::checkpoint::{self, Checkpoint};
use crate::output::RunLayout;
use crate::output::part::NamePattern;
use crate::output::stats::StatsLog;
use crate::scene::{self, Scene};
use crate::sim::Simulation;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run's output folder.
    pub out: PathBuf,
    /// Resume from the newest valid checkpoint at or before this frame (rewind).
    #[arg(long, value_name = "F")]
    pub from_frame: Option<u32>,
    /// Index of the last frame: extend (or shorten) the run. An output-only change.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub frames: Option<u32>,
    /// Write a checkpoint every N frames from now on (0: only at the end).
    #[arg(long, value_name = "N")]
    pub checkpoint_every: Option<u32>,
    /// Take the scene from this file (native or tutorial) instead of OUT/scene.json; changes
    /// to its physics are refused, output-only changes are applied.
    #[arg(long, value_name = "FILE")]
    pub scene: Option<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: ResumeArgs) -> anyhow::Result<()> {
    let say = |msg: String| {
        if !global.quiet {
            eprintln!("surge: {msg}");
        }
    };
    let layout = RunLayout::new(&args.out);
    if !layout.scene().is_file() {
        let p = args.out.display();
        if args.out.is_file() {
            return Err(super::fail(
                format!("{p} is a file; `surge resume` takes the output folder of a run"),
                format!(
                    "to start a run of this scene: `surge run {p} -o OUT`; to continue one: `surge resume OUT`"
                ),
            ));
        }
        if !args.out.exists() {
            return Err(super::fail(
                format!("{p} does not exist"),
                format!(
                    "give the output folder of a `surge run` (the default is out/<scene name>), or start a run with `surge run SCENE -o {p}`"
                ),
            ));
        }
        return Err(super::fail(
            format!("{p} is not a surge run folder (no scene.json)"),
            format!(
                "give the output folder of a `surge run`, or start a run with `surge run SCENE -o {p}`"
            ),
        ));
    }
    let _lock = super::run::lock_run_folder(&args.out)?;
    let (mut scene, scene_file) = match &args.scene {
        Some(p) => (scene::load(p)?.scene, p.clone()),
        None => (scene::read_resolved(&layout.scene())?, layout.scene()),
    };
    if let Some(f) = args.frames {
        scene.time.frames = f;
    }
    if let Some(n) = args.checkpoint_every {
        scene.output.checkpoint_every = n;
    }
    scene::validate(&scene, &scene_file)?;
    let last = scene.time.frames;

    // The newest usable checkpoint at or before --from-frame and the last frame.
    let limit = args.from_frame.unwrap_or(u32::MAX).min(last);
    let mut chosen: Option<Checkpoint> = None;
    let mut unusable: Vec<PathBuf> = Vec::new();
    for (frame, path) in checkpoint::list(&layout).into_iter().rev() {
        if frame > limit {
            continue;
        }
        match checkpoint::read(&path) {
            Ok(c) => {
                chosen = Some(c);
                break;
            }
            Err(why) => {
                say(format!(
                    "checkpoint {} is unusable ({why}); skipping it",
                    path.display()
                ));
                unusable.push(path);
            }
        }
    }
    let later_exist = checkpoint::list(&layout).iter().any(|(f, _)| *f > limit);
    let scene_now = serde_json::to_value(&scene)?;
    let pipeline_scene = scene.clone();
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
        return start_over(global, layout, pipeline_scene, &why, &say);
    };

    let c = ckpt.meta.frame;
    super::run::check_memory(&scene, ckpt.particles.len(), &scene_file, global.quiet)?;
    let physics_changes = checkpoint::diff(
        &checkpoint::physics_view(&ckpt.meta.scene),
        &checkpoint::physics_view(&scene_now),
    );
    if !physics_changes.is_empty() {
        return Err(super::fail(
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
        say(format!(
            "output-only changes since the checkpoint of frame {c} (frames up to {c} keep their outputs as they were):\n    {}",
            all_changes.join("\n    ")
        ));
    }

    // Remove what came after the checkpoint (and what a kill left); it is recomputed identically.
    remove_temp_files(&layout)?;
    for p in &unusable {
        std::fs::remove_file(p).ok();
    }
    let mut patterns = part_patterns(&scene);
    if let Ok(old) = serde_json::from_value::<Scene>(ckpt.meta.scene.clone()) {
        patterns.extend(part_patterns(&old));
    }
    if let Ok(old) = scene::read_resolved(&layout.scene()) {
        patterns.extend(part_patterns(&old));
    }
    let removed = remove_outputs_after(&layout, &patterns, Some(c))?;
    prune_checkpoints(&layout, scene.output.keep_checkpoints)?;
    let stats = StatsLog::new(&layout);
    stats.split_legacy(c)?;
    let assembled = stats.assemble()?;
    if assembled.lines != c as usize + 1 {
        say(format!(
            "stats.jsonl holds {} of the {} lines of frames 0..={c}; the missing ones are not recomputed",
            assembled.lines,
            c + 1
        ));
    }
    write_scene(&layout, &scene)?;
    if c >= last {
        say(format!(
            "the run is complete at frame {last}; nothing to do (extend it with --frames N)"
        ));
        return Ok(());
    }
    say(format!(
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
    let pipeline = Pipeline::new(layout, pipeline_scene, global)?;
    let sim = Simulation::new(&pipeline.scene, ckpt.particles, c)?;
    pipeline.simulate(sim)
}

/// No usable checkpoint: start over from frame 0 with the resolved scene.
fn start_over(
    global: &GlobalArgs,
    layout: RunLayout,
    scene: Scene,
    why: &str,
    say: &dyn Fn(String),
) -> anyhow::Result<()> {
    let particles = match scene::initial_particles(&scene, &layout.scene()) {
        Ok(p) => p,
        Err(seed_err) => {
            // The scene's particle file may be gone; frame 0's particle frame is the same state.
            match crate::output::frame::read(&layout.particles(0)) {
                Ok(f) if f.frame == 0 => f.particles,
                _ => {
                    return Err(super::fail(
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
    say(format!(
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
    Pipeline::new(layout, scene, global)?.start_fresh(particles)
}

fn part_patterns(scene: &Scene) -> Vec<NamePattern> {
    scene
        .output
        .part_pattern
        .as_deref()
        .and_then(|p| NamePattern::parse(p).ok())
        .into_iter()
        .collect()
}

/// `frame_0012.ext` -> 12 (the per-frame outputs of `dir`, whose files end in `.ext`).
fn frame_file_index(name: &str, ext: &str) -> Option<u32> {
    crate::output::frame_of_name(name, ext)
}

/// Removes every frame output (and checkpoint) after frame `after` (all of them for `None`).
/// Returns how many files were removed.
fn remove_outputs_after(
    layout: &RunLayout,
    patterns: &[NamePattern],
    after: Option<u32>,
) -> anyhow::Result<usize> {
    let later = |f: u32| after.is_none_or(|c| f > c);
    let mut removed = 0;
    let mut remove = |p: &Path| -> anyhow::Result<()> {
        std::fs::remove_file(p).map_err(|e| {
            super::fail(
                format!("cannot remove {}: {e}", p.display()),
                "make the output folder writable",
            )
        })?;
        removed += 1;
        Ok(())
    };
    for (dir, ext) in [
        (layout.particles_dir(), "bin"),
        (layout.meshes_dir(), "ply"),
        (layout.previews_dir(), "png"),
        (layout.stats_dir(), "json"),
    ] {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if frame_file_index(&name, ext).is_some_and(later) {
                remove(&e.path())?;
            }
        }
    }
    for e in std::fs::read_dir(&layout.root)
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if patterns
            .iter()
            .any(|p| p.frame_of(&name).is_some_and(later))
            && e.path().is_file()
        {
            remove(&e.path())?;
        }
    }
    for (f, p) in checkpoint::list(layout) {
        if later(f) {
            remove(&p)?;
        }
    }
    Ok(removed)
}

/// Keeps the newest `keep` checkpoints (a kill between writing one and pruning leaves one more).
fn prune_checkpoints(layout: &RunLayout, keep: u32) -> anyhow::Result<()> {
    let all = checkpoint::list(layout);
    let keep = keep.max(1) as usize;
    if all.len() > keep {
        for (_, p) in &all[..all.len() - keep] {
            std::fs::remove_file(p)?;
        }
    }
    Ok(())
}

/// Removes temporary files a killed process left (`.NAME.tmp`, never renamed into place).
fn remove_temp_files(layout: &RunLayout) -> anyhow::Result<()> {
    for dir in [
        layout.root.clone(),
        layout.particles_dir(),
        layout.meshes_dir(),
        layout.previews_dir(),
        layout.stats_dir(),
        layout.checkpoints_dir(),
    ] {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if is_temp_name(&name) && e.path().is_file() {
                std::fs::remove_file(e.path())?;
            }
        }
    }
    Ok(())
}
