//! Particle level sets sampled on a sparse, world-aligned grid.
//!
//! **Zhu & Bridson 2005** ("Animating sand as a fluid", SIGGRAPH 2005, section 3): with the kernel
//! `k(s) = max(0, 1 - s^2)^3`, `s = |x - x_i| / R`, the weighted mean particle position
//! `x_avg = sum k_i x_i / sum k_i` and (all radii equal here) `r_avg = r`,
//! `phi(x) = |x - x_avg| - r`. Deep inside the liquid `x_avg ~ x`, so `phi ~ -r`; at a flat
//! surface `x_avg` is pulled into the liquid, which is why the particle radius default is
//! calibrated for a flat, 2 x 2 x 2-per-cell seeded surface to land at the fill height.
//!
//! **Union of spheres**: `phi(x) = min_i |x - x_i| - r`, exact distance to the spheres within
//! `r + 1.5` cells, cheaper but bumpier.
//!
//! Both are *splatted*: each particle adds to the grid points within its reach, block by block
//! (see [`super::sparse_grid`]), one block per rayon task, particles in a fixed order, so the
//! result is bitwise independent of the thread count. Points no particle reaches get
//! `+reach`. The same kernel gives the per-point velocity `sum k_i v_i / sum k_i`.
//!
//! Walls: the outermost cell layer of the domain is solid, so liquid ends at the inner box
//! `[lower + cell, upper - cell]`. The field is `max(phi, d_box)` with `d_box` the box's signed
//! distance (slightly offset so no sample is exactly zero); meshes are thus capped flat where
//! the liquid touches a wall instead of leaking into it, and always closed.

use super::sparse_grid::{B, BP, SparseGrid};
use rayon::prelude::*;

/// Which level set to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ZhuBridson,
    Spheres,
}

/// Parameters of [`build`], all in metres.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub kind: Kind,
    /// Grid spacing.
    pub cell: f64,
    /// Particle radius r.
    pub radius: f64,
    /// Kernel radius R (Zhu-Bridson); for spheres the velocity kernel's radius is the reach.
    pub kernel_radius: f64,
    /// Liquid region (inside the wall layer).
    pub region_lo: [f64; 3],
    pub region_hi: [f64; 3],
}

impl Params {
    /// How far (m) a particle influences the grid.
    pub fn reach(&self) -> f64 {
        match self.kind {
            Kind::ZhuBridson => self.kernel_radius,
            Kind::Spheres => self.radius + 1.5 * self.cell,
        }
    }
}

/// A sampled level set: `phi` (m, negative inside the liquid) and velocity (m/s) per point of
/// every allocated block, block-major (`slot * BP + local`).
pub struct LevelSet {
    pub grid: SparseGrid,
    pub phi: Vec<f32>,
    pub vel: Vec<[f32; 3]>,
    /// Value of points in unallocated blocks.
    pub outside: f32,
}

impl LevelSet {
    /// `phi` at global point `g`.
    pub fn phi_at(&self, g: [i64; 3]) -> f32 {
        match self.locate(g) {
            Some(i) => self.phi[i],
            None => self.outside,
        }
    }

    /// Velocity at global point `g`.
    pub fn vel_at(&self, g: [i64; 3]) -> [f32; 3] {
        match self.locate(g) {
            Some(i) => self.vel[i],
            None => [0.0; 3],
        }
    }

    fn locate(&self, g: [i64; 3]) -> Option<usize> {
        let bi = B as i64;
        let l: [i64; 3] = std::array::from_fn(|a| g[a] - self.grid.origin[a]);
        let s = self
            .grid
            .slot_at(std::array::from_fn(|a| l[a].div_euclid(bi)));
        if s == super::sparse_grid::NONE {
            return None;
        }
        let q: [usize; 3] = std::array::from_fn(|a| l[a].rem_euclid(bi) as usize);
        Some(s as usize * BP + q[0] + B * (q[1] + B * q[2]))
    }
}

/// Samples the level set of `pos`/`vel` (SoA, m and m/s).
pub fn build(pos: &[Vec<f32>; 3], vel: &[Vec<f32>; 3], p: &Params) -> LevelSet {
    let reach = p.reach();
    let grid = SparseGrid::new(pos, vel, p.cell, p.region_lo, p.region_hi, reach);
    let nb = grid.blocks.len();
    let mut phi = vec![0f32; nb * BP];
    let mut velo = vec![[0f32; 3]; nb * BP];
    phi.par_chunks_mut(BP)
        .zip(velo.par_chunks_mut(BP))
        .enumerate()
        .for_each(|(s, (phi, vel))| match p.kind {
            Kind::ZhuBridson => splat_block::<true>(&grid, grid.blocks[s], p, phi, vel),
            Kind::Spheres => splat_block::<false>(&grid, grid.blocks[s], p, phi, vel),
        });
    LevelSet {
        grid,
        phi,
        vel: velo,
        outside: reach as f32,
    }
}

/// `ceil(v)` for `v >= 0` without a libm call.
#[inline(always)]
fn ceil_pos(v: f32) -> usize {
    let t = v as usize;
    if (t as f32) < v { t + 1 } else { t }
}

/// Splats the particles near one block into its points, then turns the sums into `phi` and
/// velocity. `ZB`: Zhu-Bridson (weighted mean position) instead of union of spheres.
fn splat_block<const ZB: bool>(
    g: &SparseGrid,
    dense: u32,
    p: &Params,
    phi_out: &mut [f32],
    vel_out: &mut [[f32; 3]],
) {
    let bc = g.coords(dense);
    let first: [i64; 3] = std::array::from_fn(|a| bc[a] * B as i64);
    let fo = first.map(|v| v as f32);
    let reach_g = (p.reach() / p.cell) as f32;
    let r2 = reach_g * reach_g;
    let inv_r2 = 1.0 / r2;
    let d = (reach_g / B as f32).ceil() as i64;
    let bmax = (B - 1) as f32;

    let mut w = [0f32; BP];
    let mut wx = [[0f32; BP]; 3];
    let mut wv = [[0f32; BP]; 3];
    let mut min2 = [r2; BP];
    for dz in -d..=d {
        for dy in -d..=d {
            for dx in -d..=d {
                let Some(nd) = g.dense([bc[0] + dx, bc[1] + dy, bc[2] + dz]) else {
                    continue;
                };
                for i in g.particles_of(nd) {
                    let q = [
                        g.pos[0][i] - fo[0],
                        g.pos[1][i] - fo[1],
                        g.pos[2][i] - fo[2],
                    ];
                    // Cheap reject: the particle's reach misses this block.
                    if (0..3).any(|a| q[a] <= -reach_g || q[a] >= bmax + reach_g) {
                        continue;
                    }
                    let v = [g.vel[0][i], g.vel[1][i], g.vel[2][i]];
                    let z0 = ceil_pos((q[2] - reach_g).max(0.0));
                    let z1 = ((q[2] + reach_g) as usize).min(B - 1);
                    let y0 = ceil_pos((q[1] - reach_g).max(0.0));
                    let y1 = ((q[1] + reach_g) as usize).min(B - 1);
                    for z in z0..=z1 {
                        let ddz = z as f32 - q[2];
                        let dz2 = ddz * ddz;
                        for y in y0..=y1 {
                            let ddy = y as f32 - q[1];
                            let dyz2 = dz2 + ddy * ddy;
                            if dyz2 >= r2 {
                                continue;
                            }
                            // Exact x extent of the kernel on this row.
                            let ext = (r2 - dyz2).sqrt();
                            if q[0] + ext < 0.0 || q[0] - ext > bmax {
                                continue;
                            }
                            let x0 = ceil_pos((q[0] - ext).max(0.0));
                            let x1 = ((q[0] + ext) as usize).min(B - 1);
                            let row = B * (y + B * z);
                            for x in x0..=x1 {
                                let ddx = x as f32 - q[0];
                                let d2 = dyz2 + ddx * ddx;
                                if d2 >= r2 {
                                    continue;
                                }
                                let k = row + x;
                                let t = 1.0 - d2 * inv_r2;
                                let wk = t * t * t;
                                w[k] += wk;
                                if ZB {
                                    wx[0][k] += wk * q[0];
                                    wx[1][k] += wk * q[1];
                                    wx[2][k] += wk * q[2];
                                } else if d2 < min2[k] {
                                    min2[k] = d2;
                                }
                                wv[0][k] += wk * v[0];
                                wv[1][k] += wk * v[1];
                                wv[2][k] += wk * v[2];
                            }
                        }
                    }
                }
            }
        }
    }

    let c = p.cell as f32;
    let r = p.radius as f32;
    let outside = p.reach() as f32;
    let eps = 1e-4 * c;
    for z in 0..B {
        for y in 0..B {
            for x in 0..B {
                let k = x + B * (y + B * z);
                let gp = [
                    first[0] + x as i64,
                    first[1] + y as i64,
                    first[2] + z as i64,
                ];
                let world: [f64; 3] =
                    std::array::from_fn(|a| (g.origin[a] + gp[a]) as f64 * p.cell);
                let wall = (0..3)
                    .map(|a| (p.region_lo[a] - world[a]).max(world[a] - p.region_hi[a]))
                    .fold(f64::MIN, f64::max) as f32
                    + eps;
                let wk = w[k];
                let (mut phi, v) = if wk > 0.0 {
                    let inv = 1.0 / wk;
                    let vel = [wv[0][k] * inv, wv[1][k] * inv, wv[2][k] * inv];
                    let phi = if ZB {
                        let dx = x as f32 - wx[0][k] * inv;
                        let dy = y as f32 - wx[1][k] * inv;
                        let dz = z as f32 - wx[2][k] * inv;
                        (dx * dx + dy * dy + dz * dz).sqrt() * c - r
                    } else {
                        min2[k].sqrt() * c - r
                    };
                    (phi, vel)
                } else {
                    (outside, [0.0; 3])
                };
                if wall > phi {
                    phi = wall;
                }
                phi_out[k] = phi;
                vel_out[k] = v;
            }
        }
    }
}
