//! Solid obstacles in the stepper: the per-substep solid state and the particle push-out.
//!
//! Method (what is implemented; see README "Obstacles"):
//! - **Grid.** At each substep the solid signed distance is evaluated at every cell centre at
//!   the substep's start time (static obstacles: once per run, the buffer is kept). A cell whose
//!   centre is in solid is labelled `Solid`, so the existing pressure system treats it as a
//!   Neumann wall (Bridson 2015, sec. 5.1: a staircase boundary). Wall faces next to an
//!   obstacle cell carry the solid's normal velocity instead of zero, so a moving obstacle
//!   pushes the liquid through the pressure solve's right-hand side. (The variational
//!   fractional weights of Batty, Bertails & Bridson 2007 are not wired into the pressure
//!   system yet: `geometry::face_fractions` computes them.)
//! - **Particles.** Water is held by the particles, decided from the signed distance at the
//!   particle, not from cell labels: after advection (and after the density correction) every
//!   particle's path from its position before the move to after is sampled against the
//!   distance at steps of at most a quarter cell; the particle stops at the last sample before
//!   the first one in solid, so it cannot tunnel through a wall thinner than a cell. Then any
//!   particle with distance below [`PUSHOUT_CELLS`] cells is moved along the distance gradient
//!   to that distance (Bridson 2015, sec. 7.? particle boundary handling), and its velocity's
//!   normal component relative to the solid is made non-negative (no inflow into the solid).
//!
//! Every loop is per particle or per cell, writing disjoint outputs: the same for any thread
//! count. Poses are functions of time, so resume is exact. Buffers are allocated once
//! ([`SolidState::new`]); the position copy is resized only when the particle count grows.
//!
//! Layer 2 (sim): imports geometry only.

use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, FaceKind, GridDims};
use crate::geometry::solid::{PosedSolid, Solid};
use rayon::prelude::*;
use std::sync::Arc;

/// Distance (in cells) particles are kept from solid surfaces.
pub const PUSHOUT_CELLS: f32 = 0.1;
/// Largest step (in cells) of the anti-tunnelling path check.
const PATH_STEP_CELLS: f32 = 0.25;

/// The obstacles of a simulation: plain solids, compared by the key they were built from.
#[derive(Debug, Clone, Default)]
pub struct Obstacles {
    pub solids: Arc<Vec<Solid>>,
    /// What the solids were built from (e.g. the scene's obstacle JSON): equality of two sets.
    pub key: String,
}

impl PartialEq for Obstacles {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.solids.len() == other.solids.len()
    }
}

impl Obstacles {
    pub fn new(solids: Vec<Solid>, key: String) -> Self {
        Self {
            solids: Arc::new(solids),
            key,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.solids.is_empty()
    }
    /// Whether any obstacle moves.
    pub fn animated(&self) -> bool {
        self.solids.iter().any(|s| s.is_animated())
    }
}

/// Minimum signed distance and its gradient over `posed` at `p`.
#[inline]
fn nearest(posed: &[PosedSolid<'_>], p: [f64; 3]) -> (f64, [f64; 3], usize) {
    let mut best = (f64::INFINITY, [0.0; 3], 0);
    for (i, s) in posed.iter().enumerate() {
        let (d, g) = s.distance_and_normal(p);
        if d < best.0 {
            best = (d, g, i);
        }
    }
    best
}

/// Per-run solid state of the stepper.
pub struct SolidState {
    obstacles: Obstacles,
    /// Signed distance at every cell centre (valid for `cell_time`).
    cell_phi: Vec<f32>,
    cell_time: Option<f64>,
    /// Positions before the particle move (anti-tunnelling).
    prev: [Vec<f32>; 3],
}

impl SolidState {
    pub fn new(obstacles: Obstacles, d: &GridDims) -> Self {
        let cells = if obstacles.is_empty() { 0 } else { d.cells() };
        Self {
            obstacles,
            cell_phi: vec![f32::INFINITY; cells],
            cell_time: None,
            prev: Default::default(),
        }
    }

    pub fn active(&self) -> bool {
        !self.obstacles.is_empty()
    }

    fn posed(&self, t: f64) -> Vec<PosedSolid<'_>> {
        self.obstacles.solids.iter().map(|s| s.at(t)).collect()
    }

    /// Evaluates the cell-centre distance at `t` (skipped for static obstacles after the first).
    fn update_cells(&mut self, d: &GridDims, t: f64) {
        if self.cell_time.is_some() && (!self.obstacles.animated() || self.cell_time == Some(t)) {
            return;
        }
        let solids = self.obstacles.solids.clone();
        let posed: Vec<PosedSolid<'_>> = solids.iter().map(|s| s.at(t)).collect();
        let n = d.n;
        let (h, lo) = (d.h as f64, d.lower.map(|x| x as f64));
        self.cell_phi
            .par_chunks_mut(n[0])
            .enumerate()
            .for_each(|(row, out)| {
                let (j, k) = (row % n[1], row / n[1]);
                for (i, o) in out.iter_mut().enumerate() {
                    let p = [
                        lo[0] + (i as f64 + 0.5) * h,
                        lo[1] + (j as f64 + 0.5) * h,
                        lo[2] + (k as f64 + 0.5) * h,
                    ];
                    *o = nearest(&posed, p).0 as f32;
                }
            });
        self.cell_time = Some(t);
    }

    /// Labels every cell whose centre is in solid at `t` as `Solid`.
    pub fn label_solid_cells(&mut self, d: &GridDims, t: f64, labels: &mut [CellLabel]) {
        if !self.active() {
            return;
        }
        self.update_cells(d, t);
        labels
            .par_iter_mut()
            .zip(self.cell_phi.par_iter())
            .with_min_len(4096)
            .for_each(|(l, &phi)| {
                if phi < 0.0 {
                    *l = CellLabel::Solid;
                }
            });
    }

    /// Sets the normal velocity of every wall face next to an obstacle cell to the obstacle's
    /// velocity there (zero for static obstacles, as the walls already have).
    pub fn wall_velocities(
        &self,
        d: &GridDims,
        t: f64,
        kinds: &[Vec<FaceKind>; 3],
        vel: &mut [Vec<f32>; 3],
    ) {
        if !self.active() || !self.obstacles.animated() {
            return;
        }
        let posed = self.posed(t);
        let n = d.n;
        let (h, lo) = (d.h as f64, d.lower.map(|x| x as f64));
        for a in 0..3 {
            let m = d.face_n(a);
            let stride = [1, n[0], n[0] * n[1]][a];
            let phi = &self.cell_phi;
            vel[a]
                .par_chunks_mut(m[0])
                .zip(kinds[a].par_chunks(m[0]))
                .enumerate()
                .for_each(|(row, (vr, kr))| {
                    let (j, k) = (row % m[1], row / m[1]);
                    for i in 0..m[0] {
                        if kr[i] != FaceKind::Wall {
                            continue;
                        }
                        let ijk = [i, j, k];
                        // Cells on both sides of the face (the face lies between c - stride and c).
                        if ijk[a] == 0 || ijk[a] >= n[a] {
                            continue;
                        }
                        let c = i + n[0] * (j + n[1] * k);
                        if phi[c] >= 0.0 && phi[c - stride] >= 0.0 {
                            continue; // a domain wall, not an obstacle
                        }
                        let mut p = [0.0; 3];
                        for b in 0..3 {
                            let off = if b == a { 0.0 } else { 0.5 };
                            p[b] = lo[b] + (ijk[b] as f64 + off) * h;
                        }
                        let (_, _, s) = nearest(&posed, p);
                        vr[i] = posed[s].velocity(p)[a] as f32;
                    }
                });
        }
    }

    /// Keeps the positions before a particle move (for [`Self::hold`]).
    pub fn remember(&mut self, sp: &SortedParticles) {
        if !self.active() {
            return;
        }
        for a in 0..3 {
            self.prev[a].clear();
            self.prev[a].extend_from_slice(&sp.pos[a]);
        }
    }

    /// After a particle move to time `t`: stops each particle before the first solid point on
    /// its path from the remembered position, pushes any particle closer than
    /// [`PUSHOUT_CELLS`] cells to the solid out along the gradient, and removes the velocity's
    /// normal component into the solid (relative to the solid's velocity).
    pub fn hold(&self, d: &GridDims, t: f64, sp: &mut SortedParticles, fix_velocity: bool) {
        if !self.active() {
            return;
        }
        let posed = self.posed(t);
        let h = d.h;
        let eps = (PUSHOUT_CELLS * h) as f64;
        let step = PATH_STEP_CELLS * h;
        let [px, py, pz] = &mut sp.pos;
        let [vx, vy, vz] = &mut sp.vel;
        let [qx, qy, qz] = &self.prev;
        px.par_iter_mut()
            .zip(py.par_iter_mut())
            .zip(pz.par_iter_mut())
            .zip(
                vx.par_iter_mut()
                    .zip(vy.par_iter_mut())
                    .zip(vz.par_iter_mut()),
            )
            .zip(qx.par_iter().zip(qy.par_iter()).zip(qz.par_iter()))
            .with_min_len(512)
            .for_each(|((((x, y), z), ((u, v), w)), ((ox, oy), oz))| {
                let p1 = [*x, *y, *z];
                let p0 = [*ox, *oy, *oz];
                let dist = [p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]];
                let len = (dist[0] * dist[0] + dist[1] * dist[1] + dist[2] * dist[2]).sqrt();
                let mut p = p1.map(|c| c as f64);
                // Far from every solid (the distance is 1-Lipschitz, and a lower bound where
                // not exact): no point of the path is in solid and no push-out is needed.
                let d1 = nearest(&posed, p).0;
                if d1 >= (len as f64).max(eps) {
                    return;
                }
                // Path check: only when the move is long enough to skip over a thin wall.
                if len > step {
                    let steps = (len / step).ceil() as u32;
                    let mut last = p0.map(|c| c as f64);
                    for s in 1..=steps {
                        let f = s as f32 / steps as f32;
                        let q = [0, 1, 2].map(|a| (p0[a] + f * dist[a]) as f64);
                        if nearest(&posed, q).0 < 0.0 {
                            p = last;
                            break;
                        }
                        last = q;
                    }
                }
                // Push out (a few Newton-like steps for corners between solids).
                let mut vel = [*u as f64, *v as f64, *w as f64];
                for _ in 0..3 {
                    let (dd, g, s) = nearest(&posed, p);
                    if dd >= eps {
                        break;
                    }
                    let gl = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
                    if gl == 0.0 {
                        break;
                    }
                    let nrm = g.map(|c| c / gl);
                    for a in 0..3 {
                        p[a] += (eps - dd) * nrm[a];
                    }
                    if fix_velocity {
                        let vs = posed[s].velocity(p);
                        let rel: f64 = (0..3).map(|a| (vel[a] - vs[a]) * nrm[a]).sum();
                        if rel < 0.0 {
                            for a in 0..3 {
                                vel[a] -= rel * nrm[a];
                            }
                        }
                    }
                }
                *x = p[0] as f32;
                *y = p[1] as f32;
                *z = p[2] as f32;
                *u = vel[0] as f32;
                *v = vel[1] as f32;
                *w = vel[2] as f32;
            });
    }
}
