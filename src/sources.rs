//! Seeding and particle files under their old paths, for callers written against a whole
//! [`Scene`] (tests, benchmarks). The code lives in `sim::seeding` (seeding boxes and spheres)
//! and `output::part` (reading particle files).
//!
//! Layer 5 (beside `run`): re-exports and thin wrappers only; nothing in the crate imports it.

pub use crate::output::part::{parse_particle_text, read_particle_file};
use crate::particles::Particles;
use crate::scene::Scene;

/// Seeds every box and sphere source of `scene`, in source order; `files` are the particles of
/// its particle-file sources, one entry per such source.
pub fn seed_particles(scene: &Scene, files: &[Particles]) -> Particles {
    crate::sim::seeding::seed_particles(&scene.domain, &scene.sources, scene.seed, files)
}

/// [`seed_particles`], also returning how many particles each source gave.
pub fn seed_sources(scene: &Scene, files: &[Particles]) -> (Particles, Vec<usize>) {
    crate::sim::seeding::seed_sources(&scene.domain, &scene.sources, scene.seed, files)
}
