//! `surge preview OUT`: re-renders a run's sphere previews from its particle frames.
//!
//! Reads `OUT/scene.json` and `OUT/particles/frame_NNNN.bin`, writes
//! `OUT/previews/frame_NNNN.png` atomically. Frames are independent, so a render farm can split
//! a run with `--frames 0..49`, `--frames 50..99`, ... (inclusive ranges).

use super::GlobalArgs;
use crate::output::{self, RunLayout};
use crate::render::{self, RenderSettings, View};
use anyhow::{Context, bail};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Debug, Args, Default)]
pub struct PreviewArgs {
    /// The run's output folder (holds scene.json and particles/).
    pub out: PathBuf,
    /// Frames to render: `A..B` is inclusive (`0..4` and `5..9` together cover 0 to 9), `A..`
    /// runs to the last frame, a single number renders one frame. (default: every particle
    /// frame the run has)
    #[arg(long, value_name = "A..B")]
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

/// An inclusive frame range: `A..B`, `A..`, `..B` or `A`; `last` fills an open end.
pub fn parse_frames(s: &str, last: u32) -> anyhow::Result<(u32, u32)> {
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

/// The scene's render settings with the command line's overrides.
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
    let layout = RunLayout::new(&args.out);
    let scene_path = layout.scene();
    if !scene_path.exists() {
        bail!(
            "{} not found: `surge preview` needs the output folder of a `surge run` (it holds \
             scene.json and particles/)",
            scene_path.display()
        );
    }
    let mut scene = crate::scene::read_resolved(&scene_path)?;
    scene.render = settings(&scene.render, &args);
    if let Some(max) = args.speed_max {
        let lo = scene.render.speed_range.map_or(0.0, |r| r[0]);
        scene.render.speed_range = Some([lo, max]);
    }
    // Resolve once up front so a bad setting fails before any frame is read.
    View::from_scene(&scene)
        .map_err(|e| anyhow::anyhow!("{e} (from {} and the command line)", scene_path.display()))?;

    let frames: Vec<u32> = match &args.frames {
        Some(spec) => {
            let (a, b) = parse_frames(spec, scene.time.frames)?;
            (a..=b).collect()
        }
        None => {
            let all: Vec<u32> = (0..=scene.time.frames)
                .filter(|&f| layout.particles(f).exists())
                .collect();
            if all.is_empty() {
                return Err(super::mesh::no_particle_frames(
                    &layout,
                    scene.output.particles,
                ));
            }
            all
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

    // A progress bar on a terminal; elsewhere (a log file, a render farm's job output) one plain
    // line per frame with the task's frame range, and no escape codes.
    let range = format!("{}..{}", frames[0], frames[frames.len() - 1]);
    let plain = !global.quiet && !std::io::stderr().is_terminal();
    let bar = if global.quiet || plain {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(frames.len() as u64).with_style(
            indicatif::ProgressStyle::with_template(
                "preview {bar:30} {pos}/{len} frames, {per_sec}, eta {eta}",
            )
            .expect("valid template"),
        )
    };
    if plain {
        eprintln!(
            "surge preview: {} frame{} {range} of {}",
            frames.len(),
            if frames.len() == 1 { "" } else { "s" },
            args.out.display()
        );
    }
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Frames are independent: render a few at a time (each render is parallel too), which
    // keeps the cores busy when frames are small.
    use rayon::prelude::*;
    frames.par_iter().with_max_len(1).try_for_each(|&f| {
        let t = std::time::Instant::now();
        let frame = output::frame::read(&layout.particles(f))?;
        let png = render::frame_png_bytes(&frame, &scene)?;
        let path = layout.preview(f);
        output::atomic_write(&path, &png).with_context(|| format!("writing {}", path.display()))?;
        bar.inc(1);
        if plain {
            let k = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            eprintln!(
                "frame {f:4} ({k}/{} of {range}): {} particles in {:.2} s -> {}",
                frames.len(),
                frame.particles.len(),
                t.elapsed().as_secs_f64(),
                path.display()
            );
        }
        anyhow::Ok(())
    })?;
    bar.finish_and_clear();
    if !global.quiet {
        eprintln!(
            "wrote {} preview(s) to {}",
            frames.len(),
            layout.previews_dir().display()
        );
    }
    Ok(())
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
