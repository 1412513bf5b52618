//! `surge mesh OUT [--frames A..B] [surface options]`: re-mesh a run's particle frames.
//!
//! Reads `OUT/scene.json` and `OUT/particles/frame_NNNN.bin`, writes `OUT/meshes/frame_NNNN.ply`
//! atomically. Frames are independent and the output of a frame depends only on its particle
//! frame and the surface settings, so any split of the frames across machines gives the same
//! bytes, and re-running a frame is idempotent. Surface flags override the scene's `surface`
//! section for this invocation only; `OUT/scene.json` is not changed.

use super::GlobalArgs;
use crate::output::{RunLayout, atomic_write, frame};
use crate::surface::{Method, SurfaceSettings};
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct MeshArgs {
    /// The run's output folder (holds scene.json and particles/).
    pub out: PathBuf,
    /// Frames to mesh, inclusive: `A..B` (both ends included, so `0..4` and `5..9` cover 0-9),
    /// `A..` (from A to the last particle frame) or `N`. (default: every particle frame)
    #[arg(long, value_name = "A..B")]
    pub frames: Option<String>,
    #[command(flatten)]
    pub surface: SurfaceArgs,
}

/// Flags that override the scene's `surface` section (for this invocation only).
#[derive(Debug, Args, Clone, Default)]
pub struct SurfaceArgs {
    /// Level set: zhu_bridson, spheres or anisotropic.
    #[arg(long, value_parser = parse_method)]
    pub method: Option<Method>,
    /// Particle radius, m.
    #[arg(long, value_name = "M", allow_negative_numbers = true)]
    pub particle_radius: Option<f64>,
    /// Kernel radius as a multiple of the particle radius.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub kernel_radius_factor: Option<f64>,
    /// Mesh cell size as a fraction of the simulation cell size.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub cell_size_factor: Option<f64>,
    /// Passes of the level-set blur before meshing (0: off).
    #[arg(long, value_name = "N")]
    pub level_set_blur: Option<u32>,
    /// Taubin smoothing iterations (0: off).
    #[arg(long, value_name = "N")]
    pub smoothing_iterations: Option<u32>,
}

fn parse_method(s: &str) -> Result<Method, String> {
    match s {
        "zhu_bridson" => Ok(Method::ZhuBridson),
        "spheres" => Ok(Method::Spheres),
        "anisotropic" => Ok(Method::Anisotropic),
        _ => Err(format!(
            "unknown method '{s}': use zhu_bridson, spheres or anisotropic"
        )),
    }
}

impl SurfaceArgs {
    /// `base` with every given flag applied.
    pub fn apply(&self, base: &SurfaceSettings) -> SurfaceSettings {
        let mut s = base.clone();
        if let Some(m) = self.method {
            s.method = m;
        }
        if let Some(r) = self.particle_radius {
            s.particle_radius = Some(r);
        }
        if let Some(k) = self.kernel_radius_factor {
            s.kernel_radius_factor = k;
        }
        if let Some(c) = self.cell_size_factor {
            s.cell_size_factor = c;
        }
        if let Some(n) = self.level_set_blur {
            s.level_set_blur = n;
        }
        if let Some(n) = self.smoothing_iterations {
            s.smoothing_iterations = n;
        }
        s
    }
}

/// Parses `A..B` (inclusive), `A..` or `N`; `None` for an open upper end.
pub fn parse_frames(s: &str) -> anyhow::Result<(u32, Option<u32>)> {
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
fn particle_frames(layout: &RunLayout, particles_on: bool) -> anyhow::Result<Vec<u32>> {
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
        super::fail(
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
        super::fail(
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

pub fn run(global: &GlobalArgs, args: MeshArgs) -> anyhow::Result<()> {
    let layout = RunLayout::new(&args.out);
    let mut scene = crate::scene::read_resolved(&layout.scene())?;
    scene.surface = args.surface.apply(&scene.surface);
    scene.surface.validate_for(&scene.domain).context(
        "surface settings (scene.json's `surface` section with the command-line flags applied)",
    )?;
    let present = particle_frames(&layout, scene.output.particles)?;
    let frames: Vec<u32> = match &args.frames {
        None => present.clone(),
        Some(spec) => {
            let (a, b) = parse_frames(spec)?;
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
    let t0 = Instant::now();
    for &f in &frames {
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
        let bytes = crate::surface::frame_ply_bytes(&pf, &scene)
            .with_context(|| format!("meshing {}", path.display()))?;
        let out = layout.mesh(f);
        atomic_write(&out, &bytes).with_context(|| format!("writing {}", out.display()))?;
        if !global.quiet {
            let (v, t_) = crate::output::ply::header_counts(&bytes)?;
            eprintln!(
                "frame {f:4}: {} particles -> {v} vertices, {t_} triangles in {:.2} s -> {}",
                pf.particles.len(),
                t.elapsed().as_secs_f64(),
                out.display()
            );
        }
    }
    if !global.quiet {
        eprintln!(
            "meshed {} frame{} in {:.2} s",
            frames.len(),
            if frames.len() == 1 { "" } else { "s" },
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn describe(frames: &[u32]) -> String {
    match (frames.first(), frames.last()) {
        (Some(a), Some(b)) => format!("{a}..{b} ({} files)", frames.len()),
        _ => "none".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_ranges_are_inclusive() {
        assert_eq!(parse_frames("0..4").unwrap(), (0, Some(4)));
        assert_eq!(parse_frames("5..=9").unwrap(), (5, Some(9)));
        assert_eq!(parse_frames("7").unwrap(), (7, Some(7)));
        assert_eq!(parse_frames("3..").unwrap(), (3, None));
        assert!(
            parse_frames("4..2")
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(parse_frames("a..2").is_err());
    }
}
