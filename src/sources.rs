//! Seeding fluid sources into particles.
//!
//! Boxes and spheres get 2 x 2 x 2 particles per grid cell, each jittered inside its sub-cell by
//! a ChaCha8 stream from the scene's seed, so the same scene and seed give the same particles.
//! Only cells fully inside the wall layer are seeded; a particle whose jittered position falls
//! outside the source shape is dropped.
//!
//! Particle files (the tutorial's `.in` layout: a count line, then `x y z vx vy vz` lines) are
//! read as they are, in file order, after checking every line.

use crate::geometry::{Ball, Cuboid, Domain, Shape};
use crate::scene::{InputError, Scene, Source};
use crate::particles::Particles;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use std::path::Path;

/// Seeds every box and sphere source of `scene`, in source order. Particle-file sources are
/// read by the scene loader and passed in as `files`, one entry per particle-file source.
pub fn seed_particles(scene: &Scene, files: &[Particles]) -> Particles {
    seed_sources(scene, files).0
}

/// [`seed_particles`], also returning how many particles each source gave.
pub fn seed_sources(scene: &Scene, files: &[Particles]) -> (Particles, Vec<usize>) {
    let d = &scene.domain;
    let h = d.cell_size;
    let mut rng = ChaCha8Rng::seed_from_u64(scene.seed);
    let mut out = Particles::default();
    let mut file_iter = files.iter();
    let mut counts = Vec::with_capacity(scene.sources.len());
    for src in &scene.sources {
        let before = out.len();
        let (lo, hi, vel, inside): (_, _, _, Box<dyn Fn([f64; 3]) -> bool>) = match src {
            Source::Box { min, max, velocity } => {
                let shape = Cuboid { min: *min, max: *max };
                let [lo, hi] = shape.aabb();
                (lo, hi, *velocity, Box::new(move |p| shape.contains(p)))
            }
            Source::Sphere {
                center,
                radius,
                velocity,
            } => {
                let shape = Ball { center: *center, radius: *radius };
                let [lo, hi] = shape.aabb();
                (lo, hi, *velocity, Box::new(move |p| shape.contains(p)))
            }
            Source::ParticleFile { .. } => {
                if let Some(f) = file_iter.next() {
                    for i in 0..f.len() {
                        out.push(f.position(i), f.velocity(i));
                    }
                }
                counts.push(out.len() - before);
                continue;
            }
        };
        // Cell range covering [lo, hi], clamped to the interior (inside the wall layer).
        let cells: [(i64, i64); 3] = std::array::from_fn(|a| {
            let n = d.resolution[a] as i64;
            let c0 = (((lo[a] - d.lower[a]) / h).floor() as i64).max(1);
            let c1 = (((hi[a] - d.lower[a]) / h).ceil() as i64).min(n - 1);
            (c0, c1)
        });
        let sub = 0.5 * h;
        for k in cells[2].0..cells[2].1 {
            for j in cells[1].0..cells[1].1 {
                for i in cells[0].0..cells[0].1 {
                    for s in 0..8 {
                        let o = [(s & 1) as f64, ((s >> 1) & 1) as f64, ((s >> 2) & 1) as f64];
                        let idx = [i, j, k];
                        let p: [f64; 3] = std::array::from_fn(|a| {
                            let jitter = 0.5 + 0.8 * (unit(&mut rng) - 0.5);
                            d.lower[a] + idx[a] as f64 * h + (o[a] + jitter) * sub
                        });
                        if inside(p) {
                            out.push(p.map(|v| v as f32), vel.map(|v| v as f32));
                        }
                    }
                }
            }
        }
        counts.push(out.len() - before);
    }
    (out, counts)
}

/// A uniform number in [0, 1).
fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Reads a particle file (`N`, then N lines `x y z vx vy vz`) and checks that every number is
/// finite, the count line matches the lines that follow, and every particle lies in `domain`'s
/// liquid region (inside the one-cell wall layer). Errors name the line.
pub fn read_particle_file(path: &Path, domain: &Domain) -> Result<Particles, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        InputError::file(
            path,
            format!("cannot read the particle file: {e}"),
            "check the path (relative paths: see README.md) and that it is a text file",
        )
    })?;
    let particles = parse_particle_text(&text, path)?;
    let [lo, hi] = domain.liquid_region();
    let mut outside = 0usize;
    let mut first = None;
    for i in 0..particles.len() {
        let p = particles.position(i);
        if (0..3).any(|a| (p[a] as f64) < lo[a] || (p[a] as f64) > hi[a]) {
            outside += 1;
            first.get_or_insert((i, p));
        }
    }
    let limit = crate::scene::MAX_ACCELERATION_OR_SPEED;
    if let Some(i) = (0..particles.len()).find(|&i| {
        particles
            .velocity(i)
            .iter()
            .any(|v| (*v as f64).abs() > limit)
    }) {
        return Err(InputError::line(
            path,
            line_of_particle(&text, i),
            format!(
                "the velocity {:?} is beyond what a liquid simulation can take (at most {limit} m/s per component)",
                particles.velocity(i)
            ),
            "check the columns (`x y z vx vy vz`) and the exponents",
        ));
    }
    if let Some((i, p)) = first {
        return Err(InputError::line(
            path,
            line_of_particle(&text, i),
            format!(
                "{outside} of {} particles lie outside the domain's liquid region [{lo:?}, {hi:?}] (the domain minus its one-cell wall layer); the first is this one, at {p:?}",
                particles.len()
            ),
            "move the particles inside, or enlarge the domain (`res`/`lc` or `domain.resolution`/`domain.lower`)",
        ));
    }
    Ok(particles)
}

/// 1-based line number of particle `i` (skipping blank lines as the parser does).
fn line_of_particle(text: &str, i: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .nth(i + 1)
        .map_or(0, |(n, _)| n + 1)
}

/// Parses a particle file's text; `path` names it in errors.
pub fn parse_particle_text(text: &str, path: &Path) -> Result<Particles, InputError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let Some((count_line, count_text)) = lines.next() else {
        return Err(InputError::file(
            path,
            "the particle file is empty",
            "write the particle count on line 1, then one line `x y z vx vy vz` per particle",
        ));
    };
    let n: usize = count_text.parse().map_err(|_| {
        InputError::line(
            path,
            count_line,
            format!("expected the particle count (a whole number), found `{count_text}`"),
            "write the particle count on the first line",
        )
    })?;
    if n > crate::scene::MAX_PARTICLES {
        return Err(InputError::line(
            path,
            count_line,
            format!(
                "{n} particles is more than surge handles ({})",
                crate::scene::MAX_PARTICLES
            ),
            "use fewer particles",
        ));
    }
    let mut p = Particles::with_capacity(n.min(1 << 24));
    let mut last_line = count_line;
    for (line, l) in lines {
        last_line = line;
        let mut values = [0f32; 6];
        let mut k = 0;
        for word in l.split_whitespace() {
            if k == 6 {
                k += 1;
                break;
            }
            let v: f32 = word.parse().map_err(|_| {
                InputError::line(
                    path,
                    line,
                    format!("`{word}` is not a number"),
                    "write six numbers `x y z vx vy vz` per line",
                )
            })?;
            if !v.is_finite() {
                return Err(InputError::line(
                    path,
                    line,
                    format!("`{word}` is not a finite number"),
                    "replace NaN and infinite values with finite positions and velocities",
                ));
            }
            values[k] = v;
            k += 1;
        }
        if k != 6 {
            return Err(InputError::line(
                path,
                line,
                format!(
                    "expected 6 numbers `x y z vx vy vz`, found {} in `{l}`",
                    l.split_whitespace().count()
                ),
                "write exactly six numbers per particle line",
            ));
        }
        p.push(
            [values[0], values[1], values[2]],
            [values[3], values[4], values[5]],
        );
    }
    if p.len() != n {
        return Err(InputError::line(
            path,
            count_line,
            format!(
                "the count line says {n} particles but {} particle lines follow (last at line {last_line})",
                p.len()
            ),
            format!(
                "set line {count_line} to {} or add/remove particle lines",
                p.len()
            ),
        ));
    }
    Ok(p)
}
