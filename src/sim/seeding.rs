//! Seeding liquid sources into particles, and the [`Source`] type (the scene's `sources`).
//!
//! Layer 2 (sim): imports error, particles and geometry. Boxes and spheres (the shapes of
//! [`crate::geometry::shapes`]) get 2 x 2 x 2 particles per grid cell, each jittered inside its
//! sub-cell by a ChaCha8 stream from the scene's seed, so the same scene and seed give the same
//! particles (jittered-grid seeding as in Bridson 2015, sec. 7.3). Only cells fully inside the
//! wall layer are seeded; a particle whose jittered position falls outside the source shape is
//! dropped. Particle files are read by the output stage (`output::part`) and handed in.

use crate::error::InputError;
use crate::error::check::{bounded, err, finite3, positive};
use crate::geometry::{Ball, Cuboid, Domain, Shape};
use crate::particles::{MAX_ACCELERATION_OR_SPEED, MAX_PARTICLES, Particles};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A region that starts full of liquid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// An axis-aligned box `[min, max]`, m, seeded 2 x 2 x 2 jittered particles per cell.
    Box {
        min: [f64; 3],
        max: [f64; 3],
        /// Initial velocity, m/s. (default: `[0, 0, 0]`)
        #[serde(default)]
        velocity: [f64; 3],
    },
    /// A ball, m, seeded like a box.
    Sphere {
        center: [f64; 3],
        radius: f64,
        /// Initial velocity, m/s. (default: `[0, 0, 0]`)
        #[serde(default)]
        velocity: [f64; 3],
    },
    /// A particle file in the tutorial's text layout (`N`, then N lines `x y z vx vy vz`).
    /// A relative path is relative to the scene file's folder.
    ParticleFile { path: PathBuf },
}

impl Source {
    /// The bounding box `[lower, upper]` of a box or sphere source (its shape's, see
    /// [`crate::geometry::shapes`]); `None` for a particle file.
    pub fn aabb(&self) -> Option<[[f64; 3]; 2]> {
        match self {
            Source::Box { min, max, .. } => Some(
                Cuboid {
                    min: *min,
                    max: *max,
                }
                .aabb(),
            ),
            Source::Sphere { center, radius, .. } => Some(
                Ball {
                    center: *center,
                    radius: *radius,
                }
                .aabb(),
            ),
            Source::ParticleFile { .. } => None,
        }
    }
}

/// Seeds every box and sphere source, in source order. Particle-file sources are
/// read by the scene loader and passed in as `files`, one entry per particle-file source.
pub fn seed_particles(
    domain: &Domain,
    sources: &[Source],
    seed: u64,
    files: &[Particles],
) -> Particles {
    seed_sources(domain, sources, seed, files).0
}

/// [`seed_particles`], also returning how many particles each source gave.
pub fn seed_sources(
    domain: &Domain,
    sources: &[Source],
    seed: u64,
    files: &[Particles],
) -> (Particles, Vec<usize>) {
    let d = domain;
    let h = d.cell_size;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Particles::default();
    let mut file_iter = files.iter();
    let mut counts = Vec::with_capacity(sources.len());
    for src in sources {
        let before = out.len();
        let (lo, hi, vel, inside): (_, _, _, Box<dyn Fn([f64; 3]) -> bool>) = match src {
            Source::Box { min, max, velocity } => {
                let shape = Cuboid {
                    min: *min,
                    max: *max,
                };
                let [lo, hi] = shape.aabb();
                (lo, hi, *velocity, Box::new(move |p| shape.contains(p)))
            }
            Source::Sphere {
                center,
                radius,
                velocity,
            } => {
                let shape = Ball {
                    center: *center,
                    radius: *radius,
                };
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

/// A box's or sphere's initial velocity: finite and of a plausible size.
fn check_velocity(f: &str, velocity: &[f64; 3]) -> Result<(), InputError> {
    finite3(
        &format!("{f}.velocity"),
        velocity,
        "give three finite numbers in m/s",
    )?;
    bounded(
        &format!("{f}.velocity"),
        velocity,
        MAX_ACCELERATION_OR_SPEED,
        "m/s",
        "check the exponent; give the initial velocity in m/s",
    )
}

/// Checks the scene's `sources`: at least one; every box and sphere well formed, reaching into
/// the liquid region, and all together seeding at most [`MAX_PARTICLES`].
pub fn check_sources(d: &Domain, sources: &[Source]) -> Result<(), InputError> {
    if sources.is_empty() {
        return Err(err(
            "sources",
            "no fluid sources: the scene would be empty".to_string(),
            "add at least one source, e.g. {\"type\": \"box\", \"min\": [...], \"max\": [...]}",
        ));
    }
    let h = d.cell_size;
    let [lo_in, hi_in] = d.liquid_region();
    let region = format!("[{:?}, {:?}]", lo_in, hi_in);
    let mut seeded_estimate = 0.0f64;
    for (i, src) in sources.iter().enumerate() {
        let f = format!("sources[{i}]");
        let Some([lo, hi]) = source_bounds(&f, src)? else {
            continue;
        };
        if (0..3).any(|a| hi[a] <= lo_in[a] || lo[a] >= hi_in[a]) {
            return Err(err(
                &f,
                format!(
                    "the source [{lo:?}, {hi:?}] lies outside the domain's liquid region {region} (the domain minus its one-cell wall layer)"
                ),
                "move the source inside the domain or enlarge the domain",
            ));
        }
        // Upper bound of the particles it seeds: 8 per covered interior cell.
        let cells: f64 = (0..3)
            .map(|a| {
                let c0 = ((lo[a].max(lo_in[a]) - d.lower[a]) / h).floor();
                let c1 = ((hi[a].min(hi_in[a]) - d.lower[a]) / h).ceil();
                (c1 - c0).max(0.0)
            })
            .product();
        seeded_estimate += 8.0 * cells;
        if seeded_estimate > MAX_PARTICLES as f64 {
            return Err(err(
                &f,
                format!(
                    "the sources would seed about {seeded_estimate:.3e} particles, more than surge handles ({MAX_PARTICLES})"
                ),
                "use a larger domain.cell_size or smaller sources",
            ));
        }
    }
    Ok(())
}

/// Checks one box or sphere source (`f` its JSON path) and returns its bounding box; `None`
/// for a particle file (read and checked later).
fn source_bounds(f: &str, src: &Source) -> Result<Option<[[f64; 3]; 2]>, InputError> {
    let bounds = match src {
        Source::Box { min, max, velocity } => {
            finite3(
                &format!("{f}.min"),
                min,
                "give three finite numbers in metres",
            )?;
            finite3(
                &format!("{f}.max"),
                max,
                "give three finite numbers in metres",
            )?;
            check_velocity(f, velocity)?;
            for a in 0..3 {
                if min[a] >= max[a] {
                    return Err(err(
                        &format!("{f}.max[{a}]"),
                        format!(
                            "the box is empty: max {} is not above min {}",
                            max[a], min[a]
                        ),
                        "make every max coordinate larger than the min one",
                    ));
                }
            }
            [*min, *max]
        }
        Source::Sphere {
            center,
            radius,
            velocity,
        } => {
            finite3(
                &format!("{f}.center"),
                center,
                "give three finite numbers in metres",
            )?;
            positive(&format!("{f}.radius"), *radius, "give the radius in metres")?;
            check_velocity(f, velocity)?;
            Ball {
                center: *center,
                radius: *radius,
            }
            .aabb()
        }
        Source::ParticleFile { .. } => return Ok(None),
    };
    Ok(Some(bounds))
}
