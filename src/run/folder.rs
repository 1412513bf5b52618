//! The run folder: its lock, the checks before a run writes into it (empty, or `--overwrite`
//! removing only surge's own outputs), the resolved scene file, the memory check, and the
//! clean-up a resume does (outputs after a checkpoint, temporary files, old checkpoints).
//!
//! Layer 5 (run): imports scene, checkpoint, output and error.

use super::Observer;
use crate::checkpoint;
pub(crate) use crate::error::fail;
use crate::output::part::NamePattern;
use crate::output::{RunLayout, atomic_write};
use crate::scene::{self, Scene};
use anyhow::Context;
use std::path::Path;

/// Writes the resolved scene as pretty JSON.
pub(crate) fn write_scene(layout: &RunLayout, scene: &Scene) -> anyhow::Result<()> {
    let text =
        crate::output::pretty_json(&serde_json::to_value(scene).context("serialising the scene")?);
    atomic_write(&layout.scene(), text.as_bytes())
        .with_context(|| format!("writing {}", layout.scene().display()))
}

/// Test hook (documented in README.md, "Test hooks"): with `SURGE_TEST_KILL_AT=POINT` the
/// process aborts (as a `kill -9` would stop it) at `POINT` of a run's start-up:
/// `before-scene` (folder and lock made, nothing written), `during-scene` (half of
/// `.scene.json.tmp` written), `after-scene` (scene.json in place, no frame yet).
pub(crate) fn test_kill_point(point: &str, layout: &RunLayout) {
    let Ok(want) = std::env::var("SURGE_TEST_KILL_AT") else {
        return;
    };
    if point == "before-scene" && want == "during-scene" {
        let tmp = layout.root.join(".scene.json.tmp");
        let _ = std::fs::write(&tmp, b"{\n  \"name\": \"half");
        std::process::abort();
    }
    if want == point {
        std::process::abort();
    }
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
            fail(
                format!(
                    "cannot create {} (is the output folder writable?): {e}",
                    path.display()
                ),
                "pick a writable output folder",
            )
        })?;
    // A lock seen busy is tried again for up to half a second: a process that starts a child
    // (any thread of it) while it releases a lock leaves the lock's file description open in
    // the child between fork and exec, which looks like another writer for a moment.
    let mut result = file.try_lock();
    for _ in 0..10 {
        if !matches!(result, Err(std::fs::TryLockError::WouldBlock)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        result = file.try_lock();
    }
    match result {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(fail(
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

/// Takes the run folder's lock shared, as `surge mesh` and `surge preview` do: any number of
/// them may work on a folder at once (each output file is written atomically under a name of
/// its own process, so two writing one frame leave one whole file), but not beside a
/// `surge run` or `surge resume`, which hold the lock exclusively. A folder where the lock file
/// cannot be created (read-only) is worked on without it.
pub(crate) fn lock_run_folder_shared(
    out: &Path,
    observer: &dyn Observer,
) -> anyhow::Result<Option<std::fs::File>> {
    let path = out.join(LOCK_NAME);
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => {
            observer.say(&format!(
                "warning: cannot create {} ({e}); going on without the folder's lock",
                path.display()
            ));
            return Ok(None);
        }
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(fail(
            format!(
                "a `surge run` or `surge resume` is writing {}",
                out.display()
            ),
            "wait for it to finish, then run this again (the frames it writes get their meshes and previews as it goes)",
        )),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(anyhow::Error::new(e).context(format!("locking {}", path.display())))
        }
    }
}

/// Checks the output folder before anything is written: it must be a folder (or not exist) and
/// be empty unless `overwrite`, in which case the previous run's outputs (only those) are
/// removed. Returns the folder's lock, held for the whole run.
pub(crate) fn prepare_output_dir(
    out: &Path,
    overwrite: bool,
    scene: &Scene,
) -> anyhow::Result<std::fs::File> {
    if out.exists() && !out.is_dir() {
        return Err(fail(
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
    // A folder holding only surge's own temporary files (a run killed while it wrote
    // scene.json) is empty: the temporaries are removed under the lock.
    if entries.iter().all(|n| is_temp_name(n)) {
        std::fs::create_dir_all(out).map_err(|e| {
            fail(
                format!("cannot create the output folder {}: {e}", out.display()),
                "pick a writable path with -o",
            )
        })?;
        let lock = lock_run_folder(out)?;
        for name in &entries {
            let p = out.join(name);
            if p.is_file() {
                std::fs::remove_file(&p)
                    .with_context(|| format!("removing the leftover {}", p.display()))?;
            }
        }
        return Ok(lock);
    }
    if !overwrite {
        let mut shown = entries.clone();
        shown.sort();
        shown.truncate(3);
        let resumable = out.join("scene.json").is_file();
        return Err(fail(
            format!(
                "output folder {} is not empty (it holds {}: {}{})",
                out.display(),
                crate::error::count(entries.len(), "entry", "entries"),
                shown
                    .iter()
                    .map(|n| crate::error::quote(n))
                    .collect::<Vec<_>>()
                    .join(", "),
                if entries.len() > 3 { ", ..." } else { "" },
            ),
            if resumable {
                format!(
                    "pass --overwrite to replace a previous run there, pick another folder with -o, or continue an interrupted run with `surge resume {}`",
                    out.display()
                )
            } else {
                "pick another (empty or new) folder with -o, or pass --overwrite (only surge's own outputs there are replaced)".to_string()
            },
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
        layout.obstacles_dir(),
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

use crate::particles::{BYTES_PER_CELL, BYTES_PER_PARTICLE, machine_memory};

/// Refuses a scene that cannot fit in this machine's memory (before anything is written:
/// otherwise the allocation fails mid-run and the process aborts), and warns when it needs
/// more than is free now.
pub(crate) fn check_memory(
    scene: &Scene,
    particles: usize,
    file: &Path,
    observer: &dyn Observer,
) -> anyhow::Result<()> {
    let cells: f64 = scene.domain.resolution.iter().map(|&n| n as f64).product();
    let need = cells * BYTES_PER_CELL + particles as f64 * BYTES_PER_PARTICLE;
    let Some((total, available)) = machine_memory() else {
        return Ok(());
    };
    let gb = |b: f64| b / (1u64 << 30) as f64;
    if need > total {
        return Err(fail(
            format!(
                "{}: this scene needs about {:.1} GB of memory ({cells:.3e} cells, {particles} particles) and this machine has {:.1} GB",
                file.display(),
                gb(need),
                gb(total)
            ),
            "use fewer cells: a smaller `domain.resolution`, with a larger `domain.cell_size` to keep the box's size (memory falls with the cube of the cell size)",
        ));
    }
    // The particle cap: emitters may fill the shot up to it, so it must fit too.
    let grid = cells * BYTES_PER_CELL;
    let fit = ((total - grid) / BYTES_PER_PARTICLE).max(0.0) as u64;
    match scene.limits.max_particles {
        Some(cap) if grid + cap as f64 * BYTES_PER_PARTICLE > total => {
            return Err(fail(
                format!(
                    "{}: field `limits.max_particles`: {cap} particles would need about {:.1} GB of memory (with the {cells:.3e}-cell grid) and this machine has {:.1} GB",
                    file.display(),
                    gb(grid + cap as f64 * BYTES_PER_PARTICLE),
                    gb(total)
                ),
                format!(
                    "lower limits.max_particles to at most {fit} (what fits in this machine's memory at about {BYTES_PER_PARTICLE} bytes per particle), or use larger cells"
                ),
            ));
        }
        None if !scene.emitters.is_empty() && fit < crate::particles::MAX_PARTICLES as u64 => {
            observer.say(&format!(
                "note: the emitters add particles with no limits.max_particles set; about {fit} fit in this machine's memory (set limits.max_particles to stop emission there)"
            ));
        }
        _ => {}
    }
    if need > available {
        observer.say(&format!(
            "warning: this scene needs about {:.1} GB of memory, {:.1} GB is free now",
            gb(need),
            gb(available)
        ));
    }
    Ok(())
}

pub(crate) fn part_patterns(scene: &Scene) -> Vec<NamePattern> {
    scene
        .output
        .part_pattern
        .as_deref()
        .and_then(|p| NamePattern::parse(p).ok())
        .into_iter()
        .collect()
}

/// `frame_0012.ext` -> 12 (the per-frame outputs of `dir`, whose files end in `.ext`).
pub(crate) fn frame_file_index(name: &str, ext: &str) -> Option<u32> {
    crate::output::frame_of_name(name, ext)
}

/// Removes every frame output (and checkpoint) after frame `after` (all of them for `None`).
/// Returns how many files were removed.
pub(crate) fn remove_outputs_after(
    layout: &RunLayout,
    patterns: &[NamePattern],
    after: Option<u32>,
) -> anyhow::Result<usize> {
    let later = |f: u32| after.is_none_or(|c| f > c);
    let mut removed = 0;
    let mut remove = |p: &Path| -> anyhow::Result<()> {
        std::fs::remove_file(p).map_err(|e| {
            fail(
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
        (layout.obstacles_dir(), "ply"),
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
pub(crate) fn prune_checkpoints(layout: &RunLayout, keep: u32) -> anyhow::Result<()> {
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
pub(crate) fn remove_temp_files(layout: &RunLayout) -> anyhow::Result<()> {
    for dir in [
        layout.root.clone(),
        layout.particles_dir(),
        layout.meshes_dir(),
        layout.previews_dir(),
        layout.obstacles_dir(),
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
