//! Surface reconstruction: particle level set, marching cubes, smoothing, binary PLY.
//!
//! [`reconstruct`] is the whole stage as a plain function: particles in, [`TriMesh`] out.
//!
//! 1. [`level_set`]: [`anisotropic`] (default: Yu & Turk kernels with thin-feature floors),
//!    Zhu-Bridson or union-of-spheres level set, splatted into sparse
//!    8^3-point blocks of a grid aligned to world multiples of the mesh cell size
//!    ([`sparse_grid`]); optionally blurred (then shifted back to its volume); capped at the
//!    walls.
//! 2. [`marching_cubes`]: closed, welded, outward-wound triangles, normals from the level-set
//!    gradient, per-vertex velocity.
//! 3. [`smoothing`]: Taubin smoothing with exact volume restoration (optional, on by default).
//!
//! Every stage runs on rayon and produces the same bytes for any thread count.
//! The PLY file is the output stage's (`output::ply`); `run::frame_ply_bytes` joins the two.
//!
//! Layer 2 (a stage beside sim, render and output, importing none of them): imports error,
//! particles, mesh and geometry. Owns [`SurfaceSettings`] and its checks; takes plain data
//! (`reconstruct(&Particles, &SurfaceSettings, &Domain) -> TriMesh`); the PLY encoding is
//! `output::ply`'s.

pub mod anisotropic;
pub mod fidelity;
pub mod flicker;
pub mod level_set;
pub mod marching_cubes;
pub mod obstacles;
pub mod smoothing;
pub mod sparse_grid;

use crate::error::InputError;
use crate::geometry::Domain;
use crate::mesh::TriMesh;
use crate::particles::Particles;
use serde::{Deserialize, Serialize};

/// Default particle radius as a multiple of the particle spacing `s = cell_size / 2`: the radius
/// of the ball with the particle's volume `s^3`, `(3 / (4 pi))^(1/3)`. With the default kernel
/// radius (3.2 r, about 2 s) the raw Zhu-Bridson surface of a seeded pool sits 2 mm above its
/// fill height at a 0.05 m cell (0.5 mm below it with the default smoothing) and a seeded
/// ball's enclosed volume is within 1.3% of `N s^3` (see `tests/surface.rs`).
pub const DEFAULT_RADIUS_PER_SPACING: f64 = 0.620_350_490_899_400_1;

/// Which particle level set to mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Zhu & Bridson 2005: distance to the kernel-weighted mean particle position minus the
    /// radius. Smooth surfaces, flat pools; loses thin sheets, droplets and splash bodies
    /// (issue 14).
    ZhuBridson,
    /// Union of spheres of the particle radius: bumpier (beads at the surface, sharper
    /// droplets), about 6% more volume than the particles' on a seeded ball; without the blur
    /// it may enclose tiny air pockets between particles. About as fast as `zhu_bridson`.
    Spheres,
    /// Yu & Turk 2013 anisotropic kernels: kernels stretched along sheets and filaments in the
    /// Zhu-Bridson average, a thin-feature floor so sheets, filaments and droplets survive the
    /// lattice, and wall films (see [`anisotropic`]). The default: it meets issue 14's
    /// fidelity targets, and on the 1M-particle dam break it meshes faster than `zhu_bridson`.
    #[default]
    Anisotropic,
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::ZhuBridson => "zhu_bridson",
            Method::Spheres => "spheres",
            Method::Anisotropic => "anisotropic",
        })
    }
}

/// The scene's `surface` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurfaceSettings {
    /// Level set: `"zhu_bridson"`, `"spheres"` or `"anisotropic"`. (default: `"anisotropic"`)
    #[serde(default)]
    pub method: Method,
    /// Particle radius r, m. (default: `null`, meaning for `zhu_bridson` `0.62 x` the particle
    /// spacing, the radius of a ball with one particle's volume, `(3 / (4 pi))^(1/3) x
    /// cell_size / 2`; for `spheres` the particle spacing `cell_size / 2`, so neighbouring
    /// spheres overlap)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub particle_radius: Option<f64>,
    /// Kernel radius R of the Zhu-Bridson average as a multiple of the particle radius; larger
    /// is smoother and slower (cost ~ R^3), and pulls the surface inwards. In [1, 8].
    /// (default: `3.2`, about one simulation cell)
    #[serde(default = "default_kernel_radius_factor")]
    pub kernel_radius_factor: f64,
    /// Mesh cell size as a fraction of the simulation cell size, in [0.05, 4], and coarse enough
    /// that the level-set grid spans at most 2^34 points over the domain. (default: `0.5`)
    #[serde(default = "default_cell_size_factor")]
    pub cell_size_factor: f64,
    /// Passes of a 3x3x3 binomial blur of the level set before meshing (removes particle-scale
    /// bumps; thin sheets and single-particle droplets may vanish); 0 turns it off. The
    /// `anisotropic` method ignores it. (default: `1`)
    #[serde(default = "default_level_set_blur")]
    pub level_set_blur: u32,
    /// Taubin smoothing iterations (lambda/mu pairs, volume restored exactly afterwards); 0 turns
    /// smoothing off. (default: `4`: on a seeded ball, RMS radius error 4.2 -> 3.6 mm and RMS
    /// dihedral angle 11.8 -> 8.0 degrees at a 0.05 m simulation cell, volume unchanged)
    #[serde(default = "default_smoothing_iterations")]
    pub smoothing_iterations: u32,
    /// Calm water: height-diffusion passes over the upward-facing surface where the liquid is
    /// at rest (slower than `calm_speed`), after the smoothing, so a pool at rest renders as a
    /// mirror (issue 14; [`smoothing`]); 0 turns it off. (default: `50`: on a pool settled for
    /// 1 s, RMS height 0.04 -> 0.004 cell and normals 4.1 -> 0.15 degrees off vertical)
    #[serde(default = "default_calm_flattening")]
    pub calm_flattening: u32,
    /// Speed (m/s) from which the liquid counts as moving for `calm_flattening` (the weight
    /// falls from 1 at half this speed to 0 at it); waves and splashes are faster and untouched.
    /// (default: `0.05`)
    #[serde(default = "default_calm_speed")]
    pub calm_speed: f64,
}

impl Default for SurfaceSettings {
    fn default() -> Self {
        Self {
            method: Method::default(),
            particle_radius: None,
            kernel_radius_factor: default_kernel_radius_factor(),
            cell_size_factor: default_cell_size_factor(),
            level_set_blur: default_level_set_blur(),
            smoothing_iterations: default_smoothing_iterations(),
            calm_flattening: default_calm_flattening(),
            calm_speed: default_calm_speed(),
        }
    }
}

/// Smallest `cell_size_factor`: a mesh cell of 1/20 simulation cell is 1/10 of the particle
/// spacing (about 1/6 of the default particle radius), already far below the detail particles
/// carry; finer ones only multiply the triangles (and the time, as the cube).
pub const MIN_CELL_SIZE_FACTOR: f64 = 0.05;
/// Most points the level-set sampling grid may span over the domain (2^34). Points are only
/// allocated near the liquid, but the dense block table spans the whole domain (9 bytes per
/// block of 512 points: about 300 MB at this limit), and finer grids only come from a tiny
/// `cell_size_factor` on a large domain, whose liquid would then also need tens of GB.
pub const MAX_SAMPLE_POINTS: f64 = 17179869184.0;
/// Bytes per sampled point near the liquid: `phi` (f32) and velocity (3 x f32).
const BYTES_PER_SAMPLE: f64 = 16.0;
/// Bytes per block of the dense block table: slot (u32), particle start (u32), mark (bool).
const BYTES_PER_TABLE_BLOCK: f64 = 9.0;

/// Surface settings that are invalid, or whose sampling grid would not fit in memory for the
/// domain ([`SurfaceSettings::validate_for`]). Displayed as the problem; the fix is a field, and
/// the error converts into [`InputError`] (the scene reader places it in its file).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SamplingTooFine {
    /// What is wrong, naming the field.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl From<SamplingTooFine> for InputError {
    fn from(e: SamplingTooFine) -> Self {
        InputError::plain(e.message, e.fix)
    }
}

fn default_kernel_radius_factor() -> f64 {
    3.2
}
fn default_cell_size_factor() -> f64 {
    0.5
}
fn default_level_set_blur() -> u32 {
    1
}
fn default_smoothing_iterations() -> u32 {
    4
}
fn default_calm_flattening() -> u32 {
    50
}
fn default_calm_speed() -> f64 {
    0.05
}

impl SurfaceSettings {
    /// Checks every field; errors name the field and the fix.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::ensure;
        if let Some(r) = self.particle_radius {
            ensure!(
                r.is_finite() && r > 0.0,
                "surface.particle_radius is {r}: it must be a positive length in metres (or leave it out for the default, 0.62 x the particle spacing)"
            );
        }
        let k = self.kernel_radius_factor;
        ensure!(
            k.is_finite() && (1.0..=8.0).contains(&k),
            "surface.kernel_radius_factor is {k}: it must be between 1 and 8 (default 3.2)"
        );
        let c = self.cell_size_factor;
        ensure!(
            c.is_finite() && (MIN_CELL_SIZE_FACTOR..=4.0).contains(&c),
            "surface.cell_size_factor is {c}: it must be in [{MIN_CELL_SIZE_FACTOR}, 4] (default 0.5; a mesh cell finer than a tenth of the particle spacing adds triangles but no detail)"
        );
        ensure!(
            self.level_set_blur <= 20,
            "surface.level_set_blur is {}: use at most 20 passes (default 1, 0 turns it off)",
            self.level_set_blur
        );
        ensure!(
            self.smoothing_iterations <= 1000,
            "surface.smoothing_iterations is {}: use at most 1000 (default 4, 0 turns it off)",
            self.smoothing_iterations
        );
        ensure!(
            self.calm_flattening <= 10000,
            "surface.calm_flattening is {}: use at most 10000 passes (default 50, 0 turns it off)",
            self.calm_flattening
        );
        let v = self.calm_speed;
        ensure!(
            v.is_finite() && v > 0.0 && v <= 100.0,
            "surface.calm_speed is {v}: it must be a speed in m/s in (0, 100] (default 0.05)"
        );
        Ok(())
    }

    /// Checks that the level-set sampling grid of `domain` fits in memory: its dense block
    /// table spans the whole liquid region (plus the kernel reach), so a tiny
    /// `cell_size_factor` asks for billions of points and the allocation would abort the
    /// process. Also runs [`Self::validate`]. The error names the field and the smallest factor
    /// that fits this domain.
    pub fn validate_for(&self, domain: &Domain) -> Result<(), SamplingTooFine> {
        self.validate().map_err(|e| SamplingTooFine {
            message: format!("{e:#}"),
            fix: "see the surface section of README.md".into(),
        })?;
        let points = self.sampling_points(domain);
        let total: f64 = points.iter().product();
        if total <= MAX_SAMPLE_POINTS {
            return Ok(());
        }
        // Points scale with 1 / factor^3 (the margin is a few cells, so this is close).
        let c = self.cell_size_factor;
        let min = c * (total / MAX_SAMPLE_POINTS).cbrt() * 1.01;
        let gb = |b: f64| b / (1u64 << 30) as f64;
        let table = gb(total / sparse_grid::BP as f64 * BYTES_PER_TABLE_BLOCK);
        let full = gb(total * BYTES_PER_SAMPLE);
        Err(SamplingTooFine {
            message: format!(
                "surface.cell_size_factor is {c}: the level set would be sampled on {:.0} x {:.0} x {:.0} = {total:.2e} points, more than the limit of {MAX_SAMPLE_POINTS:.2e} (its block table alone takes {table:.1} GB, and up to {full:.0} GB more where the liquid is)",
                points[0], points[1], points[2]
            ),
            fix: format!(
                "use surface.cell_size_factor (--cell-size-factor) of at least {min:.3} for this domain (default 0.5: mesh cells half a simulation cell)"
            ),
        })
    }

    /// Points per axis of the level-set sampling grid's dense block table for `domain` (as
    /// [`sparse_grid::SparseGrid::new`] lays it out), as f64 so that no factor overflows.
    pub fn sampling_points(&self, domain: &Domain) -> [f64; 3] {
        let p = self.level_set_params(domain);
        let margin = p.reach() + 3.0 * p.cell;
        let b = sparse_grid::B as f64;
        std::array::from_fn(|a| {
            let lo = ((p.region_lo[a] - margin) / p.cell).floor();
            let hi = ((p.region_hi[a] + margin) / p.cell).ceil() + 1.0;
            (((hi - lo) / b).ceil() + 1.0).max(1.0) * b
        })
    }

    /// Particle radius for `domain`, m.
    pub fn radius(&self, domain: &Domain) -> f64 {
        let per_spacing = match self.method {
            Method::ZhuBridson | Method::Anisotropic => DEFAULT_RADIUS_PER_SPACING,
            Method::Spheres => 1.0,
        };
        self.particle_radius
            .unwrap_or(per_spacing * domain.particle_spacing())
    }

    /// Mesh cell size for `domain`, m.
    pub fn mesh_cell(&self, domain: &Domain) -> f64 {
        self.cell_size_factor * domain.cell_size
    }

    /// The level-set parameters for `domain`.
    pub fn level_set_params(&self, domain: &Domain) -> level_set::Params {
        let r = self.radius(domain);
        let [region_lo, region_hi] = domain.liquid_region();
        level_set::Params {
            kind: match self.method {
                Method::ZhuBridson => level_set::Kind::ZhuBridson,
                Method::Spheres => level_set::Kind::Spheres,
                Method::Anisotropic => level_set::Kind::Anisotropic,
            },
            cell: self.mesh_cell(domain),
            radius: r,
            kernel_radius: self.kernel_radius_factor * r,
            region_lo,
            region_hi,
        }
    }
}

/// The level set that [`reconstruct`] meshes: sampled, blurred (volume kept), wall-clipped.
pub fn level_set_of(
    particles: &Particles,
    settings: &SurfaceSettings,
    domain: &Domain,
) -> level_set::LevelSet {
    let p = settings.level_set_params(domain);
    let mut ls = if p.kind == level_set::Kind::Anisotropic {
        match level_set::mirrors(&particles.pos, &particles.vel, &p) {
            Some(m) => {
                let of = anisotropic::MirrorOf {
                    originals: particles.len(),
                    source: &m.source,
                    mask: &m.mask,
                };
                let (pos, vel) = (&particles.pos, &particles.vel);
                let pos = sparse_grid::Points {
                    head: pos,
                    tail: &m.pos,
                };
                let vel = sparse_grid::Points {
                    head: vel,
                    tail: &m.vel,
                };
                anisotropic::build(pos, vel, &p, Some(of))
            }
            None => anisotropic::build(
                sparse_grid::Points::one(&particles.pos),
                sparse_grid::Points::one(&particles.vel),
                &p,
                None,
            ),
        }
    } else {
        level_set::build(&particles.pos, &particles.vel, &p)
    };
    // The anisotropic method has no blur: it erodes what the kernels keep (measured on the dam
    // break's splash: 0.004% -> 0.74% of the particles outside the mesh by a spacing).
    if settings.level_set_blur > 0 && settings.method != Method::Anisotropic {
        let before = ls.field_volume(&p);
        for _ in 0..settings.level_set_blur {
            ls.blur();
        }
        let after = ls.field_volume(&p);
        ls.shift_to_volume(&p, before.0, after);
    }
    // The anisotropic level set comes floored and wall-clipped (in its splat).
    if settings.method != Method::Anisotropic {
        ls.clip_walls(&p);
    }
    ls
}

/// Meshes `particles` in `domain`: the whole surface stage without files. Settings are assumed
/// valid ([`SurfaceSettings::validate`]).
pub fn reconstruct(particles: &Particles, settings: &SurfaceSettings, domain: &Domain) -> TriMesh {
    reconstruct_with_solids(particles, settings, domain, None)
}

/// [`reconstruct`] with obstacles: `solids` is their signed distance at the frame's time; the
/// level set is extended into them and clipped at their surface ([`obstacles`]), so the mesh
/// meets them without a gap, and liquid a kernel put beyond a thin wall is dropped. `None`:
/// exactly [`reconstruct`].
pub fn reconstruct_with_solids(
    particles: &Particles,
    settings: &SurfaceSettings,
    domain: &Domain,
    solids: Option<obstacles::SolidDistance<'_>>,
) -> TriMesh {
    let p = settings.level_set_params(domain);
    if particles.is_empty() {
        return TriMesh::default();
    }
    let cells = obstacles::SimCells {
        lower: domain.lower,
        h: domain.cell_size,
        n: domain.resolution.map(|n| n as usize),
    };
    let mirrored = solids.and_then(|sd| obstacles::with_mirrors(particles, p.reach(), cells, sd));
    let mut ls = level_set_of(mirrored.as_ref().unwrap_or(particles), settings, domain);
    drop(mirrored);
    if let Some(sd) = solids {
        let mut class = obstacles::clip(&mut ls, &p, sd, domain.cell_size);
        let occ = obstacles::occupancy(particles, cells);
        obstacles::fill_interior(&mut ls, &mut class, &p, sd, cells, &occ);
        obstacles::fill_pockets(&mut ls, &mut class, &p, sd);
        obstacles::drop_films(&mut ls, &mut class, &p, cells, &occ);
    }
    let mut mesh = marching_cubes::extract(&ls);
    // Freed on a worker (about 100 MB at a million particles; unmapping it is a serial step
    // otherwise), while the smoothing runs.
    rayon::spawn(move || drop(ls));
    let calm = smoothing::Calm {
        iterations: settings.calm_flattening,
        speed: settings.calm_speed as f32,
    };
    smoothing::smooth(
        &mut mesh,
        settings.smoothing_iterations,
        calm,
        p.region_lo,
        p.region_hi,
        p.cell,
    );
    if let Some(sd) = solids {
        obstacles::snap(&mut mesh, p.cell, sd);
    }
    mesh
}
