//! `surge mesh OUT [--frames A..B] [surface options]`: re-mesh a run's particle frames
//! ([`crate::run::remesh()`]).
//!
//! Reads `OUT/scene.json` and `OUT/particles/frame_NNNN.bin`, writes `OUT/meshes/frame_NNNN.ply`
//! atomically. Frames are independent and the output of a frame depends only on its particle
//! frame and the surface settings, so any split of the frames across machines gives the same
//! bytes, and re-running a frame is idempotent. Surface flags override the scene's `surface`
//! section for this invocation only; `OUT/scene.json` is not changed.

use super::GlobalArgs;
use super::run::Terminal;
use crate::run::MeshOptions;
use crate::surface::{Method, SurfaceSettings};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MeshArgs {
    /// The run's output folder (holds scene.json and particles/).
    pub out: PathBuf,
    /// Frames to mesh, inclusive: `A..B` (both ends included, so `0..4` and `5..9` cover 0-9),
    /// `A..` (from A to the last particle frame) or `N`. (default: every particle frame)
    #[arg(long, value_name = "A..B", value_parser = check_frames)]
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
    /// Calm-water flattening passes (0: off).
    #[arg(long, value_name = "N")]
    pub calm_flattening: Option<u32>,
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
        if let Some(n) = self.calm_flattening {
            s.calm_flattening = n;
        }
        s
    }
}

pub use crate::run::remesh::parse_mesh_frames as parse_frames;

/// A malformed `--frames` is a usage error (exit status 2), caught by the parser.
fn check_frames(s: &str) -> Result<String, String> {
    parse_frames(s)
        .map(|_| s.to_string())
        .map_err(|e| format!("{e:#}"))
}

pub fn run(global: &GlobalArgs, args: MeshArgs) -> anyhow::Result<()> {
    let edit = |base: &SurfaceSettings| args.surface.apply(base);
    let options = MeshOptions {
        frames: args.frames.clone(),
        surface: &edit,
    };
    crate::run::remesh(&args.out, &options, &Terminal::new(global))
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
