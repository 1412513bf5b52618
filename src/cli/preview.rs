//! `surge preview OUT`: re-renders a run's sphere previews from its particle frames
//! ([`crate::run::repreview`]).
//!
//! Reads `OUT/scene.json` and `OUT/particles/frame_NNNN.bin`, writes
//! `OUT/previews/frame_NNNN.png` atomically. Frames are independent, so a render farm can split
//! a run with `--frames 0..49`, `--frames 50..99`, ... (inclusive ranges).

use super::GlobalArgs;
use super::run::Terminal;
use crate::render::RenderSettings;
use crate::run::PreviewOptions;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args, Default)]
pub struct PreviewArgs {
    /// The run's output folder (holds scene.json and particles/).
    pub out: PathBuf,
    /// Frames to render: `A..B` is inclusive (`0..4` and `5..9` together cover 0 to 9), `A..`
    /// runs to the last particle frame, a single number renders one frame. (default: every particle
    /// frame the run has)
    #[arg(long, value_name = "A..B", value_parser = check_frames)]
    pub frames: Option<String>,
    /// Image width, pixels. (default: the scene's render.width, 960)
    #[arg(long)]
    pub width: Option<u32>,
    /// Image height, pixels. (default: the scene's render.height, 540)
    #[arg(long)]
    pub height: Option<u32>,
    /// Camera position, m. (default: the scene's, else a three-quarter view of the domain)
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub eye: Option<[f64; 3]>,
    /// Point the camera looks at, m. (default: the scene's, else the domain's centre)
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub target: Option<[f64; 3]>,
    /// Up direction in the image. (default: the scene's, else opposite to gravity)
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub up: Option<[f64; 3]>,
    /// Vertical field of view, degrees. (default: the scene's, 35)
    #[arg(long, value_name = "DEGREES", allow_negative_numbers = true)]
    pub fov: Option<f64>,
    /// Sphere radius, m. (default: the scene's, else half the particle spacing)
    #[arg(long, value_name = "METRES", allow_negative_numbers = true)]
    pub radius: Option<f64>,
    /// Speed at the fast (yellow) end of the colour map, m/s; the slow end stays as the scene
    /// says (0 by default). (default: the scene's, else sqrt(2 |g| height))
    #[arg(long, value_name = "M/S")]
    pub speed_max: Option<f64>,
}

/// `"x,y,z"` to three numbers.
fn parse_vec3(s: &str) -> Result<[f64; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err(format!("expected three numbers X,Y,Z, got {s:?}"));
    }
    let mut v = [0.0; 3];
    for (k, p) in parts.iter().enumerate() {
        v[k] = p
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("{p:?} in {s:?} is not a finite number"))?;
    }
    Ok(v)
}

pub use crate::run::remesh::parse_preview_frames as parse_frames;

/// A malformed `--frames` is a usage error (exit status 2), caught by the parser (the range
/// against the run's last frame is checked later).
fn check_frames(s: &str) -> Result<String, String> {
    parse_frames(s, u32::MAX)
        .map(|_| s.to_string())
        .map_err(|e| format!("{e:#}"))
}

fn settings(base: &RenderSettings, a: &PreviewArgs) -> RenderSettings {
    let mut s = base.clone();
    if let Some(w) = a.width {
        s.width = w;
    }
    if let Some(h) = a.height {
        s.height = h;
    }
    if a.eye.is_some() {
        s.eye = a.eye;
    }
    if a.target.is_some() {
        s.target = a.target;
    }
    if a.up.is_some() {
        s.up = a.up;
    }
    if let Some(f) = a.fov {
        s.fov_degrees = f;
    }
    if a.radius.is_some() {
        s.sphere_radius = a.radius;
    }
    s
}

pub fn run(global: &GlobalArgs, args: PreviewArgs) -> anyhow::Result<()> {
    let edit = |base: &RenderSettings| {
        let mut s = settings(base, &args);
        if let Some(max) = args.speed_max {
            let lo = s.speed_range.map_or(0.0, |r| r[0]);
            s.speed_range = Some([lo, max]);
        }
        s
    };
    let options = PreviewOptions {
        frames: args.frames.clone(),
        render: &edit,
    };
    crate::run::repreview(&args.out, &options, &Terminal::new(global))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_ranges_are_inclusive() {
        assert_eq!(parse_frames("0..4", 90).unwrap(), (0, 4));
        assert_eq!(parse_frames("5..", 9).unwrap(), (5, 9));
        assert_eq!(parse_frames("..3", 9).unwrap(), (0, 3));
        assert_eq!(parse_frames("7", 9).unwrap(), (7, 7));
        assert_eq!(parse_frames("2..=3", 9).unwrap(), (2, 3));
        assert!(parse_frames("4..2", 9).is_err());
        assert!(
            parse_frames("a..2", 9)
                .unwrap_err()
                .to_string()
                .contains("A..B")
        );
    }

    #[test]
    fn vectors_parse() {
        assert_eq!(parse_vec3("1, -2,3.5").unwrap(), [1.0, -2.0, 3.5]);
        assert!(parse_vec3("1,2").is_err());
        assert!(parse_vec3("1,nan,2").is_err());
    }
}
