//! [`remesh`] and [`repreview`]: re-make a run's meshes or previews from its particle frames,
//! without re-simulating (`surge mesh`, `surge preview`).
//!
//! Both read `OUT/scene.json` (validated once), apply the caller's setting overrides, check
//! the overridden section once, then make each frame from `OUT/particles/frame_NNNN.bin` and
//! write it atomically. Frames are independent and a frame's output depends only on its
//! particle frame and the settings, so any split of the frames across machines gives the same
//! bytes, and re-running a frame is idempotent. `OUT/scene.json` is not changed.
//!
//! Layer 5 (run): imports scene, surface, render and output.

use super::Observer;
use super::folder::fail;
use crate::output::{self, RunLayout, atomic_write, frame};
use crate::render::{self, RenderSettings, View};
use crate::surface::SurfaceSettings;
use anyhow::{Context, bail};
use std::path::Path;
use std::time::Instant;

/// What `surge mesh` asks for.
pub struct MeshOptions<'a> {
    /// Frames, inclusive: `A..B`, `A..` or `N` (see [`parse_mesh_frames`]); all when `None`.
    pub frames: Option<String>,
    /// The scene's surface settings with this invocation's overrides applied.
    pub surface: &'a dyn Fn(&SurfaceSettings) -> SurfaceSettings,
}

/// What `surge preview` asks for.
pub struct PreviewOptions<'a> {
    /// Frames, inclusive: `A..B`, `A..`, `..B` or `N` (see [`parse_preview_frames`]); every
    /// particle frame the run has when `None`.
    pub frames: Option<String>,
    /// The scene's render settings with this invocation's overrides applied.
    pub render: &'a dyn Fn(&RenderSettings) -> RenderSettings,
}

/// Parses `A..B` (inclusive), `A..` or `N`; `None` for an open upper end.
pub fn parse_mesh_frames(s: &str) -> anyhow::Result<(u32, Option<u32>)> {
    let num = |t: &str| -> anyhow::Result<u32> {
        t.trim().parse::<u32>().with_context(|| {
            format!("--frames {s}: '{t}' is not a frame number; use A..B (inclusive), A.. or N")
        })
    };
    match s.split_once("..") {
        None => {
            let n = num(s)?;
            Ok((n, Some(n)))
        }
        Some((a, b)) => {
            let b = b.strip_prefix('=').unwrap_or(b);
            let a = num(a)?;
            if b.trim().is_empty() {
                return Ok((a, None));
            }
            let b = num(b)?;
            if b < a {
                bail!(
                    "--frames {s}: the range is empty (B < A); both ends are inclusive, e.g. 0..4"
                );
            }
            Ok((a, Some(b)))
        }
    }
}

/// Frame numbers of `particles/frame_NNNN.bin` files, ascending. `particles_on`: the scene's
/// `output.particles` (a run without it has no particle frames).
pub fn particle_frames(layout: &RunLayout, particles_on: bool) -> anyhow::Result<Vec<u32>> {
    let dir = layout.particles_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(no_particle_frames(layout, particles_on));
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("reading {}", dir.display()))),
    };
    let mut frames = Vec::new();
    for e in entries {
        let name = e?.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name
            .strip_prefix("frame_")
            .and_then(|r| r.strip_suffix(".bin"))
            .and_then(|n| n.parse::<u32>().ok())
        {
            frames.push(n);
        }
    }
    frames.sort_unstable();
    if frames.is_empty() {
        return Err(no_particle_frames(layout, particles_on));
    }
    Ok(frames)
}

/// The error for a run folder without particle frames, shared with `surge preview`.
pub(crate) fn no_particle_frames(layout: &RunLayout, particles_on: bool) -> anyhow::Error {
    let dir = layout.particles_dir();
    if particles_on {
        fail(
            format!(
                "{}: no particle frames (frame_NNNN.bin): the run wrote none yet",
                dir.display()
            ),
            format!(
                "give the output folder of a `surge run` that has written frames, or continue this one with `surge resume {}`",
                layout.root.display()
            ),
        )
    } else {
        fail(
            format!(
                "{}: no particle frames: the run was made with `output.particles: false` (see {})",
                dir.display(),
                layout.scene().display()
            ),
            format!(
                "re-run the scene with `\"output\": {{\"particles\": true}}` (the default): `surge run SCENE -o {} --overwrite`",
                layout.root.display()
            ),
        )
    }
}

pub fn remesh(out: &Path, options: &MeshOptions, observer: &dyn Observer) -> anyhow::Result<()> {
    let layout = RunLayout::new(out);
    let mut scene = crate::scene::read_resolved(&layout.scene())?;
    let _lock = super::folder::lock_run_folder_shared(out, observer)?;
    scene.surface = (options.surface)(&scene.surface);
    scene
        .surface
        .validate_for(&scene.domain)
        .map_err(crate::error::InputError::from)
        .context(
            "surface settings (scene.json's `surface` section with the command-line flags applied)",
        )?;
    let present = particle_frames(&layout, scene.output.particles)?;
    let frames: Vec<u32> = match &options.frames {
        None => present.clone(),
        Some(spec) => {
            let (a, b) = parse_mesh_frames(spec)?;
            let last = match b {
                Some(b) => b,
                None => *present.last().unwrap_or(&a),
            };
            let wanted: Vec<u32> = (a..=last).collect();
            if let Some(m) = wanted.iter().find(|f| present.binary_search(f).is_err()) {
                bail!(
                    "{} does not exist: --frames {spec} asks for frame {m}, but the run has particle frames {}",
                    layout.particles(*m).display(),
                    describe(&present)
                );
            }
            wanted
        }
    };
    if frames.is_empty() {
        bail!(
            "{}: no particle frames to mesh",
            layout.particles_dir().display()
        );
    }
    let range = format!("{}..{}", frames[0], frames[frames.len() - 1]);
    // Plain lines (no progress bar): readable in a render farm's log files.
    observer.log(&format!(
        "surge mesh: {} frame{} {range} of {}",
        frames.len(),
        if frames.len() == 1 { "" } else { "s" },
        out.display()
    ));
    let t0 = Instant::now();
    for (k, &f) in frames.iter().enumerate() {
        let t = Instant::now();
        let path = layout.particles(f);
        let pf = frame::read(&path)?;
        if pf.frame != f {
            bail!(
                "{}: holds frame {} (expected {f}); the run folder is inconsistent",
                path.display(),
                pf.frame
            );
        }
        // The surface settings were checked once, above.
        let mesh = super::frame_mesh(&pf.particles, &scene, pf.time);
        let bytes = crate::output::ply::encode(&mesh, pf.frame, pf.time);
        let out = layout.mesh(f);
        atomic_write(&out, &bytes).with_context(|| format!("writing {}", out.display()))?;
        let (v, t_) = crate::output::ply::header_counts(&bytes)?;
        observer.log(&format!(
            "frame {f:4} ({}/{} of {range}): {} particles -> {v} vertices, {t_} triangles in {:.2} s -> {}",
            k + 1,
            frames.len(),
            pf.particles.len(),
            t.elapsed().as_secs_f64(),
            out.display()
        ));
    }
    observer.log(&format!(
        "meshed {} frame{} ({range}) in {:.2} s",
        frames.len(),
        if frames.len() == 1 { "" } else { "s" },
        t0.elapsed().as_secs_f64()
    ));
    Ok(())
}

fn describe(frames: &[u32]) -> String {
    match (frames.first(), frames.last()) {
        (Some(a), Some(b)) => format!("{a}..{b} ({} files)", frames.len()),
        _ => "none".to_string(),
    }
}

/// An inclusive frame range: `A..B`, `A..`, `..B` or `A`; `last` fills an open end.
pub fn parse_preview_frames(s: &str, last: u32) -> anyhow::Result<(u32, u32)> {
    let num = |p: &str, what: &str| -> anyhow::Result<u32> {
        p.trim().parse::<u32>().with_context(|| {
            format!("--frames {s:?}: the {what} {p:?} is not a frame number; use A..B (inclusive), e.g. 0..4")
        })
    };
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => {
            let b = b.strip_prefix('=').unwrap_or(b);
            (
                if a.trim().is_empty() {
                    0
                } else {
                    num(a, "start")?
                },
                if b.trim().is_empty() {
                    last
                } else {
                    num(b, "end")?
                },
            )
        }
        None => {
            let f = num(s, "frame")?;
            (f, f)
        }
    };
    if a > b {
        bail!("--frames {s:?}: the start comes after the end; ranges are inclusive, e.g. 0..4");
    }
    Ok((a, b))
}

/// `surge preview`: re-renders the sphere previews of a run's particle frames (`options.frames`,
/// default every one the run has), with the scene's render settings and the command line's
/// overrides, under the run folder's shared lock.
pub fn repreview(
    out: &Path,
    options: &PreviewOptions,
    observer: &dyn Observer,
) -> anyhow::Result<()> {
    let layout = RunLayout::new(out);
    let scene_path = layout.scene();
    if !scene_path.exists() {
        bail!(
            "{} not found: `surge preview` needs the output folder of a `surge run` (it holds \
             scene.json and particles/)",
            scene_path.display()
        );
    }
    let mut scene = crate::scene::read_resolved(&scene_path)?;
    let _lock = super::folder::lock_run_folder_shared(out, observer)?;
    scene.render = (options.render)(&scene.render);
    // Resolve once up front so a bad setting fails before any frame is read; every frame uses
    // this view.
    let view = View::from_scene(&scene)
        .map_err(|e| anyhow::anyhow!("{e} (from {} and the command line)", scene_path.display()))?;

    let present: Vec<u32> = (0..=scene.time.frames)
        .filter(|&f| layout.particles(f).exists())
        .collect();
    let frames: Vec<u32> = match &options.frames {
        Some(spec) => {
            // `A..` ends at the last particle frame present, as `surge mesh` reads it.
            let last = *present.last().unwrap_or(&scene.time.frames);
            let (a, b) = parse_preview_frames(spec, last)?;
            (a..=b).collect()
        }
        None => {
            if present.is_empty() {
                return Err(no_particle_frames(&layout, scene.output.particles));
            }
            present
        }
    };
    for &f in &frames {
        let p = layout.particles(f);
        if !p.exists() {
            bail!(
                "{} not found: frame {f} has no particle frame (the run has not reached it, or \
                 wrote no particles); pick frames the run has with --frames A..B",
                p.display()
            );
        }
    }

    let range = format!("{}..{}", frames[0], frames[frames.len() - 1]);
    observer.batch_begin(
        frames.len(),
        &format!(
            "surge preview: {} frame{} {range} of {}",
            frames.len(),
            if frames.len() == 1 { "" } else { "s" },
            out.display()
        ),
    );
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Frames are independent: render a few at a time (each render is parallel too), which
    // keeps the cores busy when frames are small.
    use rayon::prelude::*;
    frames.par_iter().with_max_len(1).try_for_each(|&f| {
        let t = Instant::now();
        let frame = output::frame::read(&layout.particles(f))?;
        // Moving emitters and sinks are outlined where they are at the frame's time.
        let moved;
        let view = if let Some(o) = crate::scene::outlines_at(&scene, frame.time) {
            let mut m = view.clone();
            m.outlines = o;
            moved = m;
            &moved
        } else {
            &view
        };
        let mut img = render::render(&frame.particles, view);
        render::stamp(&mut img, view, frame.frame, frame.time);
        // Obstacle outlines at the frame's time, as `surge run` draws them.
        let boxes: Vec<_> = (scene.built_obstacles.solids.iter())
            .map(|s| s.bounds(frame.time))
            .collect();
        render::outline::draw_boxes(&mut img, view, &boxes);
        let png = img
            .to_png()
            .with_context(|| format!("rendering the preview of frame {}", frame.frame))?;
        let path = layout.preview(f);
        output::atomic_write(&path, &png).with_context(|| format!("writing {}", path.display()))?;
        let k = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        observer.batch_tick(&format!(
            "frame {f:4} ({k}/{} of {range}): {} particles in {:.2} s -> {}",
            frames.len(),
            frame.particles.len(),
            t.elapsed().as_secs_f64(),
            path.display()
        ));
        anyhow::Ok(())
    })?;
    observer.batch_end();
    observer.log(&format!(
        "wrote {} preview(s) to {}",
        frames.len(),
        layout.previews_dir().display()
    ));
    Ok(())
}
