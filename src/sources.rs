//! Seeding fluid sources into particles.
//!
//! Boxes and spheres get 2 x 2 x 2 particles per grid cell, each jittered inside its sub-cell by
//! a ChaCha8 stream from the scene's seed, so the same scene and seed give the same particles.
//! Only cells fully inside the wall layer are seeded; a particle whose jittered position falls
//! outside the source shape is dropped.
//!
//! SKELETON: the pipeline issue owns this file (particle files, validation, errors).

use crate::scene::{Scene, Source};
use crate::sim::Particles;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// Seeds every box and sphere source of `scene`, in source order. Particle-file sources are
/// read by the scene loader and passed in as `files`, one entry per particle-file source.
pub fn seed_particles(scene: &Scene, files: &[Particles]) -> Particles {
    let d = &scene.domain;
    let h = d.cell_size;
    let mut rng = ChaCha8Rng::seed_from_u64(scene.seed);
    let mut out = Particles::default();
    let mut file_iter = files.iter();
    for src in &scene.sources {
        let (lo, hi, vel, inside): (_, _, _, Box<dyn Fn([f64; 3]) -> bool>) = match src {
            Source::Box { min, max, velocity } => {
                let (min, max) = (*min, *max);
                (
                    min,
                    max,
                    *velocity,
                    Box::new(move |p: [f64; 3]| (0..3).all(|a| p[a] >= min[a] && p[a] <= max[a])),
                )
            }
            Source::Sphere {
                center,
                radius,
                velocity,
            } => {
                let (c, r) = (*center, *radius);
                (
                    std::array::from_fn(|a| c[a] - r),
                    std::array::from_fn(|a| c[a] + r),
                    *velocity,
                    Box::new(move |p: [f64; 3]| {
                        (0..3).map(|a| (p[a] - c[a]).powi(2)).sum::<f64>() <= r * r
                    }),
                )
            }
            Source::ParticleFile { .. } => {
                if let Some(f) = file_iter.next() {
                    for i in 0..f.len() {
                        out.push(f.position(i), f.velocity(i));
                    }
                }
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
    }
    out
}

/// A uniform number in [0, 1).
fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}
