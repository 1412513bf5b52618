//! Particle level sets sampled on a sparse, world-aligned grid.
//!
//! **Zhu & Bridson 2005** ("Animating sand as a fluid", SIGGRAPH 2005, section 3): with the kernel
//! `k(s) = max(0, 1 - s^2)^3`, `s = |x - x_i| / R`, the weighted mean particle position
//! `x_avg = sum k_i x_i / sum k_i` and (all radii equal here) `r_avg = r`,
//! `phi(x) = |x - x_avg| - r`. Deep inside the liquid `x_avg ~ x`, so `phi ~ -r`; at a flat
//! surface `x_avg` is pulled into the liquid, which is why the particle radius default is
//! calibrated for a flat, 2 x 2 x 2-per-cell seeded surface to land at the fill height.
//!
//! **Union of spheres**: `phi(x) = min_i |x - x_i| - r`, the exact distance to the spheres up
//! to one grid cell outside them (reach `r + h`; farther points get `+reach`). Bumpier; at the
//! default radii it costs about the same as Zhu-Bridson (fewer sums per point, similar reach).
//!
//! Both are *splatted*: each particle adds to the grid points within its reach, block by block
//! (see [`super::sparse_grid`]), one block per rayon task, particles in a fixed order, so the
//! result is bitwise independent of the thread count. Points no particle reaches get
//! `+reach`. The same kernel gives the per-point velocity `sum k_i v_i / sum k_i`.
//!
//! Walls: the outermost cell layer of the domain is solid, so liquid ends at the inner box
//! `[lower + cell, upper - cell]`. Particles within reach of a wall are mirrored across it
//! (normal velocity negated), so for the level set the liquid continues into the wall: no
//! thinning of the kernel sum near walls, surfaces meet walls at right angles. The field is
//! then `max(phi, d_box)` with `d_box` the box's signed distance (slightly offset so no sample
//! is exactly zero); meshes are thus capped flat on the walls, and always closed.

use super::sparse_grid::{B, BP, Points, SparseGrid};
use rayon::prelude::*;

/// Which level set to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ZhuBridson,
    Spheres,
    /// Yu & Turk 2013 anisotropic kernels.
    Anisotropic,
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

/// Longest anisotropic kernel radius over R: `k_r^(2/3)` (a filament's axis; see
/// the anisotropic module).
pub const MAX_STRETCH: f64 = 2.52;

impl Params {
    /// How far (m) a particle influences the grid.
    pub fn reach(&self) -> f64 {
        match self.kind {
            Kind::ZhuBridson => self.kernel_radius,
            Kind::Spheres => self.radius + self.cell,
            // The longest stretched kernel, or a thin-feature floor and its margin.
            Kind::Anisotropic => {
                (self.kernel_radius * MAX_STRETCH).max(self.radius * MAX_STRETCH + 2.5 * self.cell)
            }
        }
    }
}

/// A sampled level set: `phi` (m, negative inside the liquid) and velocity (m/s) per point of
/// every allocated block, block-major (`slot * BP + local`).
pub struct LevelSet {
    pub grid: SparseGrid,
    pub phi: Vec<f32>,
    /// Kernel-weighted particle velocity; NaN where no kernel reaches the point (the
    /// anisotropic method: there is no velocity to sample; marching cubes then takes the
    /// edge's other end, [`LevelSet::edge_velocity`]).
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

    /// Velocity at global point `g` (NaN where no kernel reached it, see [`LevelSet::vel`]).
    pub fn vel_at(&self, g: [i64; 3]) -> [f32; 3] {
        match self.locate(g) {
            Some(i) => self.vel[i],
            None => [0.0; 3],
        }
    }

    /// Velocity at fraction `t` of the edge from point `g` to `q`: linear interpolation of
    /// their velocities, or the velocity of the end a kernel reaches when the other has none
    /// (a stretched kernel can end between an inside point and its outside neighbour; mixing
    /// in a zero there slowed such vertices by up to 1%), or zero when neither has one.
    pub fn edge_velocity(&self, g: [i64; 3], q: [i64; 3], t: f32) -> [f32; 3] {
        let (v0, v1) = (self.vel_at(g), self.vel_at(q));
        match (v0[0].is_nan(), v1[0].is_nan()) {
            (false, false) => std::array::from_fn(|a| v0[a] + t * (v1[a] - v0[a])),
            (false, true) => v0,
            (true, false) => v1,
            (true, true) => [0.0; 3],
        }
    }

    /// Volume of `{phi < 0}` inside the liquid region, m^3, with a smoothed step
    /// `H = clamp(1/2 - phi / h, 0, 1)` per point, and the number of points in the band
    /// `|phi| < h / 2` (where `dV / d(shift) = count x h^2`). Summed per block, then in block
    /// order: the same bits for any thread count.
    pub fn field_volume(&self, p: &Params) -> (f64, usize) {
        let g = &self.grid;
        let h = p.cell;
        let per_block: Vec<(f64, usize)> = (0..g.blocks.len())
            .into_par_iter()
            .map(|s| {
                let bc = g.coords(g.blocks[s]);
                let first: [i64; 3] = std::array::from_fn(|a| g.origin[a] + bc[a] * B as i64);
                let (mut v, mut n) = (0.0f64, 0usize);
                for k in 0..BP {
                    let l = [k % B, (k / B) % B, k / (B * B)];
                    let inside = (0..3).all(|a| {
                        let w = (first[a] + l[a] as i64) as f64 * h;
                        w >= p.region_lo[a] && w <= p.region_hi[a]
                    });
                    if !inside {
                        continue;
                    }
                    let t = self.phi[s * BP + k] as f64 / h;
                    v += (0.5 - t).clamp(0.0, 1.0);
                    if t.abs() < 0.5 {
                        n += 1;
                    }
                }
                (v, n)
            })
            .collect();
        let (v, n) = per_block
            .iter()
            .fold((0.0, 0), |(a, b), (c, d)| (a + c, b + d));
        (v * h * h * h, n)
    }

    /// Lowers `phi` by a constant so that [`LevelSet::field_volume`] moves from `now` to
    /// `target` (one Newton step: `shift = (target - now) / (band points x h^2)`, at most a
    /// quarter cell either way).
    pub fn shift_to_volume(&mut self, p: &Params, target: f64, now: (f64, usize)) {
        let (v, n) = now;
        if n == 0 {
            return;
        }
        let h = p.cell;
        // At most a quarter cell: a tiny level set (a lone droplet) has so few band points that
        // the Newton step would otherwise lower the whole field into spurious blobs.
        let shift = ((target - v) / (n as f64 * h * h)).clamp(-0.25 * h, 0.25 * h) as f32;
        let outside = self.outside;
        self.phi.par_iter_mut().for_each(|x| {
            if *x < outside {
                *x -= shift;
            }
        });
    }

    /// Applies the wall clip `phi = max(phi, d_box + eps)` (see the module docs).
    pub fn clip_walls(&mut self, p: &Params) {
        let g = &self.grid;
        let h = p.cell;
        let eps = 1e-4 * h as f32;
        self.phi
            .par_chunks_mut(BP)
            .enumerate()
            .for_each(|(s, phi)| {
                let bc = g.coords(g.blocks[s]);
                let first: [i64; 3] = std::array::from_fn(|a| g.origin[a] + bc[a] * B as i64);
                for (k, x) in phi.iter_mut().enumerate() {
                    let l = [k % B, (k / B) % B, k / (B * B)];
                    let wall = (0..3)
                        .map(|a| {
                            let w = (first[a] + l[a] as i64) as f64 * h;
                            (p.region_lo[a] - w).max(w - p.region_hi[a])
                        })
                        .fold(f64::MIN, f64::max) as f32
                        + eps;
                    if wall > *x {
                        *x = wall;
                    }
                }
            });
    }

    /// Index in `phi` of global point `g`, `None` outside the allocated blocks.
    pub fn locate(&self, g: [i64; 3]) -> Option<usize> {
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

/// Mirror images of the particles within `reach` of a wall of the liquid region, reflected
/// across that wall (and across both or all three walls near an edge or corner), with the
/// velocity component normal to the wall negated: per chunk of particles, positions,
/// velocities, and per mirror the index of its particle and the axes it is reflected across
/// (bit `a` for axis `a`); the chunks in order give the serial order.
fn wall_mirrors(pos: &[Vec<f32>; 3], vel: &[Vec<f32>; 3], p: &Params) -> Vec<Mirrors> {
    let reach = p.reach();
    let lo = p.region_lo;
    let hi = p.region_hi;
    // Per chunk of particles, in parallel.
    const CHUNK: usize = 1 << 15;
    let n = pos[0].len();
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let range = c * CHUNK..((c + 1) * CHUNK).min(n);
            // Per axis: the wall coordinate to mirror across, if near one.
            let walls_of = |i: usize| -> [Option<f64>; 3] {
                std::array::from_fn(|a| {
                    let x = pos[a][i] as f64;
                    if (x - lo[a]).abs() < reach {
                        Some(lo[a])
                    } else if (x - hi[a]).abs() < reach {
                        Some(hi[a])
                    } else {
                        None
                    }
                })
            };
            // The chunk's mirror count first (2^walls - 1 per particle): the arrays are
            // allocated once, not grown by pushes (`surge mesh` of frame 20 of the 1M dam
            // break, callgrind: the process's `realloc` instructions 55M -> 40M). The walls
            // per particle are kept: the mirroring pass skips the particles near none.
            let near: Vec<u8> = range
                .clone()
                .map(|i| walls_of(i).iter().flatten().count() as u8)
                .collect();
            let count: usize = near.iter().map(|&k| (1usize << k) - 1).sum();
            let vec = || Vec::with_capacity(count);
            let mut out = Mirrors {
                pos: std::array::from_fn(|_| vec()),
                vel: std::array::from_fn(|_| vec()),
                source: Vec::with_capacity(count),
                mask: Vec::with_capacity(count),
            };
            for (i, _) in range.zip(&near).filter(|(_, k)| **k > 0) {
                let walls = walls_of(i);
                let has = (0..3).fold(0, |m, a| m | (walls[a].is_some() as usize) << a);
                for mask in (1..8usize).filter(|mask| mask & !has == 0) {
                    for a in 0..3 {
                        let (x, v) = (pos[a][i], vel[a][i]);
                        let (x, v) = match walls[a] {
                            Some(w) if mask >> a & 1 == 1 => ((2.0 * w - x as f64) as f32, -v),
                            _ => (x, v),
                        };
                        out.pos[a].push(x);
                        out.vel[a].push(v);
                    }
                    out.source.push(i as u32);
                    out.mask.push(mask as u8);
                }
            }
            out
        })
        .collect()
}

/// Wall mirrors ([`wall_mirrors`]): positions, velocities, and per mirror the index of the
/// particle it images and the axes it is reflected across (bit `a` for axis `a`).
#[derive(Default)]
pub struct Mirrors {
    pub pos: [Vec<f32>; 3],
    pub vel: [Vec<f32>; 3],
    pub source: Vec<u32>,
    pub mask: Vec<u8>,
}

/// The particles followed by their mirror images across the walls within reach (`None` when
/// no particle is near a wall): mirrored particles make the liquid continue into the wall for
/// the level set, so the surface meets a wall at a right angle and the cap (the wall clip) is
/// flat and full. Used by [`build`] and by the anisotropic level set (which also reads which
/// particle each mirror images: `source` and `mask` index the appended part).
pub fn mirrored(pos: &[Vec<f32>; 3], vel: &[Vec<f32>; 3], p: &Params) -> Option<Mirrors> {
    joined(pos, vel, p, true)
}

/// The wall mirrors of [`mirrored`] alone (`source` and `mask` as there), for a reader that
/// takes the particles and their mirrors as two parts ([`Points`]): no copy of the particles.
pub fn mirrors(pos: &[Vec<f32>; 3], vel: &[Vec<f32>; 3], p: &Params) -> Option<Mirrors> {
    joined(pos, vel, p, false)
}

/// [`mirrored`] (`particles`: the particles first) or [`mirrors`].
fn joined(
    pos: &[Vec<f32>; 3],
    vel: &[Vec<f32>; 3],
    p: &Params,
    particles: bool,
) -> Option<Mirrors> {
    let chunks = wall_mirrors(pos, vel, p);
    let count: usize = chunks.iter().map(|c| c.source.len()).sum();
    if count == 0 {
        return None;
    }
    // The particles, then each chunk's mirrors appended once, in chunk order (the six
    // coordinate arrays copied in parallel).
    fn part(c: &Mirrors, k: usize) -> &[f32] {
        if k < 3 { &c.pos[k] } else { &c.vel[k - 3] }
    }
    let arrays: Vec<Vec<f32>> = (0..6)
        .into_par_iter()
        .map(|k| {
            let a = if k < 3 { &pos[k] } else { &vel[k - 3] };
            let mut v = Vec::with_capacity(if particles { a.len() } else { 0 } + count);
            if particles {
                v.extend_from_slice(a);
            }
            for c in &chunks {
                v.extend_from_slice(part(c, k));
            }
            v
        })
        .collect();
    let mut six = arrays.into_iter();
    let mut next = || six.next().unwrap_or_default();
    let (x, y, z) = (next(), next(), next());
    let (vx, vy, vz) = (next(), next(), next());
    let mut out = Mirrors {
        pos: [x, y, z],
        vel: [vx, vy, vz],
        source: Vec::with_capacity(count),
        mask: Vec::with_capacity(count),
    };
    for c in chunks {
        out.source.extend_from_slice(&c.source);
        out.mask.extend_from_slice(&c.mask);
    }
    Some(out)
}

/// Samples the level set of `pos`/`vel` (SoA, m and m/s), before any blur and before the wall
/// clip ([`LevelSet::clip_walls`]); `super::level_set_of` runs the whole sequence.
pub fn build(pos: &[Vec<f32>; 3], vel: &[Vec<f32>; 3], p: &Params) -> LevelSet {
    let reach = p.reach();
    // Walls: mirrored particles make the liquid continue into the wall for the level set, so
    // the surface meets a wall at a right angle and the cap (the wall clip) is flat and full.
    let augmented = mirrored(pos, vel, p);
    let (pos, vel) = match &augmented {
        Some(m) => (&m.pos, &m.vel),
        None => (pos, vel),
    };
    let grid = SparseGrid::new(
        Points::one(pos),
        Some(Points::one(vel)),
        p.cell,
        p.region_lo,
        p.region_hi,
        reach,
    );
    let nb = grid.blocks.len();
    let mut phi = vec![0f32; nb * BP];
    let mut velo = vec![[0f32; 3]; nb * BP];
    phi.par_chunks_mut(BP)
        .zip(velo.par_chunks_mut(BP))
        .enumerate()
        .for_each(|(s, (phi, vel))| match p.kind {
            Kind::ZhuBridson => splat_block::<true>(&grid, grid.blocks[s], p, phi, vel),
            Kind::Spheres | Kind::Anisotropic => {
                splat_block::<false>(&grid, grid.blocks[s], p, phi, vel)
            }
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
pub(super) fn ceil_pos(v: f32) -> usize {
    // Through i32: one instruction, the same value for `0 <= v < 2^31` (grid coordinates).
    let t = v as i32 as usize;
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
                            if ZB {
                                // Branch-free over the row's exact extent (t clamped at 0 for
                                // rounding at the ends); equal-length slices, no bounds checks.
                                let (a, b) = (row + x0, row + x1 + 1);
                                let [w0, w1, w2] = &mut wx;
                                let [v0, v1, v2] = &mut wv;
                                let (ws, w0, w1, w2) =
                                    (&mut w[a..b], &mut w0[a..b], &mut w1[a..b], &mut w2[a..b]);
                                let (v0, v1, v2) = (&mut v0[a..b], &mut v1[a..b], &mut v2[a..b]);
                                for j in 0..ws.len() {
                                    let ddx = (x0 + j) as f32 - q[0];
                                    let t = (1.0 - (dyz2 + ddx * ddx) * inv_r2).max(0.0);
                                    let wk = t * t * t;
                                    ws[j] += wk;
                                    w0[j] += wk * q[0];
                                    w1[j] += wk * q[1];
                                    w2[j] += wk * q[2];
                                    v0[j] += wk * v[0];
                                    v1[j] += wk * v[1];
                                    v2[j] += wk * v[2];
                                }
                                continue;
                            }
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
                                if d2 < min2[k] {
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
    for z in 0..B {
        for y in 0..B {
            for x in 0..B {
                let k = x + B * (y + B * z);
                let wk = w[k];
                let (phi, v) = if wk > 0.0 {
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
                phi_out[k] = phi;
                vel_out[k] = v;
            }
        }
    }
}

impl LevelSet {
    /// One pass of a separable `[1, 2, 1] / 4` blur of `phi` over every allocated point (a
    /// 3x3x3 binomial filter, standard deviation 0.71 cells; before the wall clip). It removes
    /// particle-scale bumps of the particle level set; it also moves curved surfaces inwards by
    /// about `0.5 h^2 x mean curvature`, which [`LevelSet::shift_to_volume`] undoes.
    pub fn blur(&mut self) {
        const Q: usize = B + 2;
        let g = &self.grid;
        let nb = g.blocks.len();
        let mut out = vec![0f32; nb * BP];
        out.par_chunks_mut(BP).enumerate().for_each(|(s, dst)| {
            let bc = g.coords(g.blocks[s]);
            let first: [i64; 3] = std::array::from_fn(|a| g.origin[a] + bc[a] * B as i64);
            // Padded copy: local -1..=B per axis.
            let mut a = [0f32; Q * Q * Q];
            for z in 0..Q {
                for y in 0..Q {
                    for x in 0..Q {
                        let inner =
                            (1..=B).contains(&x) && (1..=B).contains(&y) && (1..=B).contains(&z);
                        a[x + Q * (y + Q * z)] = if inner {
                            self.phi[s * BP + (x - 1) + B * ((y - 1) + B * (z - 1))]
                        } else {
                            self.phi_at([
                                first[0] + x as i64 - 1,
                                first[1] + y as i64 - 1,
                                first[2] + z as i64 - 1,
                            ])
                        };
                    }
                }
            }
            let mut b = [0f32; Q * Q * Q];
            for (axis, stride) in [1usize, Q, Q * Q].into_iter().enumerate() {
                for z in 0..Q {
                    for y in 0..Q {
                        for x in 0..Q {
                            let c = [x, y, z];
                            let k = x + Q * (y + Q * z);
                            b[k] = if c[axis] == 0 || c[axis] == Q - 1 {
                                a[k]
                            } else {
                                0.25 * (a[k - stride] + 2.0 * a[k] + a[k + stride])
                            };
                        }
                    }
                }
                std::mem::swap(&mut a, &mut b);
            }
            for z in 0..B {
                for y in 0..B {
                    for x in 0..B {
                        dst[x + B * (y + B * z)] = a[(x + 1) + Q * ((y + 1) + Q * (z + 1))];
                    }
                }
            }
        });
        self.phi = out;
    }
}
