//! Particle containment after every particle move (advection, density correction): a particle
//! is stopped before the first solid point on its path from where it was, pushed out to
//! [`PUSHOUT_CELLS`] cells from the solid along the distance gradient, and its velocity's
//! normal component into the solid removed (see the parent module's docs).

use super::wedge::slide_along_walls;
use super::*;

impl SolidState {
    /// Keeps the positions before a particle move (for [`Self::hold`]).
    pub fn remember(&mut self, sp: &SortedParticles) {
        if !self.active() {
            return;
        }
        // A plain copy of 12 bytes per particle, twice a substep: in parallel chunks (one
        // core does not reach the memory bandwidth), into the buffer's kept capacity.
        const CHUNK: usize = 1 << 14;
        for a in 0..3 {
            self.prev[a].resize(sp.pos[a].len(), 0.0);
            self.prev[a]
                .par_chunks_mut(CHUNK)
                .zip(sp.pos[a].par_chunks(CHUNK))
                .for_each(|(dst, src)| dst.copy_from_slice(src));
        }
    }

    /// After a particle move to time `t`: stops each particle before the first solid point on
    /// its path from the remembered position, pushes any particle closer than
    /// [`PUSHOUT_CELLS`] cells to the solid out along the gradient, and removes the velocity's
    /// normal component into the solid (relative to the solid's velocity).
    pub fn hold(&mut self, d: &GridDims, t: f64, sp: &mut SortedParticles, fix_velocity: bool) {
        if !self.active() {
            return;
        }
        self.set_poses(t);
        let posed = Posed {
            solids: &self.obstacles.solids[..],
            poses: &self.poses,
        };
        let h = d.h;
        let eps = (PUSHOUT_CELLS * h) as f64;
        // A push-out never moves a particle into the domain's wall layer (an obstacle sunk into
        // a wall leaves a wedge where the gradient points into the wall).
        let (lo, hi) = d.interior_bounds(super::super::advect::WALL_MARGIN * h);
        let step = PATH_STEP_CELLS * h;
        let [px, py, pz] = &mut sp.pos;
        let [vx, vy, vz] = &mut sp.vel;
        let [qx, qy, qz] = &self.prev;
        // Cell-centre distances valid at `t` (static obstacles, or evaluated at `t`): a particle
        // in cell `c` is at least `cell_phi[c] - sqrt(3)/2 h` from every solid (the distance is
        // 1-Lipschitz, and the stored value a lower bound where not exact), so a particle whose
        // bound already passes the test below is skipped without evaluating the solids. Same
        // result, much cheaper for the particles far from obstacles (most of them).
        let cell_phi = (self.cell_time.is_some()
            && (!self.obstacles.animated() || self.cell_time == Some(t)))
        .then_some(&self.cell_phi[..]);
        let reach = 0.9 * h as f64;
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
                if let Some(phi) = cell_phi
                    && phi[d.cell_of(p1)] as f64 - reach >= (len as f64).max(eps)
                {
                    return;
                }
                let mut p = p1.map(|c| c as f64);
                // Far from every solid (the distance is 1-Lipschitz, and a lower bound where
                // not exact): no point of the path is in solid and no push-out is needed.
                let d1 = nearest(&posed, p).0;
                if d1 >= (len as f64).max(eps) {
                    return;
                }
                // Path check: only when the move is long enough to skip over a thin wall.
                let mut stopped = false;
                if len > step {
                    let steps = (len / step).ceil() as u32;
                    let mut last = p0.map(|c| c as f64);
                    for s in 1..=steps {
                        let f = s as f32 / steps as f32;
                        let q = [0, 1, 2].map(|a| (p0[a] + f * dist[a]) as f64);
                        if nearest(&posed, q).0 < 0.0 {
                            p = last;
                            stopped = true;
                            break;
                        }
                        last = q;
                    }
                }
                // Push out (a few Newton-like steps for corners between solids); a particle the
                // path check stopped loses its inward normal velocity wherever it stopped.
                let mut vel = [*u as f64, *v as f64, *w as f64];
                for it in 0..3 {
                    let (dd, g, s) = nearest(&posed, p);
                    if dd >= eps && !(stopped && it == 0) {
                        break;
                    }
                    let gl = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
                    if gl == 0.0 {
                        break;
                    }
                    let nrm = g.map(|c| c / gl);
                    for a in 0..3 {
                        p[a] += (eps - dd).max(0.0) * nrm[a];
                    }
                    if fix_velocity {
                        let vs = posed.get(s).velocity(p);
                        let rel: f64 = (0..3).map(|a| (vel[a] - vs[a]) * nrm[a]).sum();
                        if rel < 0.0 {
                            for a in 0..3 {
                                vel[a] -= rel * nrm[a];
                            }
                        }
                    }
                }
                let p = slide_along_walls(&posed, p, eps, lo, hi, h as f64);
                *x = p[0];
                *y = p[1];
                *z = p[2];
                *u = vel[0] as f32;
                *v = vel[1] as f32;
                *w = vel[2] as f32;
            });
    }
}
