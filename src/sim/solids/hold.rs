//! Particle containment after every particle move (advection, density correction): a particle
//! is stopped before the first solid point on its path from where it was, pushed out to
//! [`PUSHOUT_CELLS`] cells from the solid along the distance gradient, and its velocity's
//! normal component into the solid removed (see the parent module's docs).
//!
//! Static obstacles: only the particles of the cells near a solid are visited. The substep's
//! sort put every particle in the slots of the cell it was in (`cell_start`), a point of cell
//! `c` is at least `cell_phi[c] - 0.9 h` from every solid (the distance is 1-Lipschitz, the
//! centre at most `sqrt(3)/2 h` away), and the caller bounds how far any particle has moved
//! since the sort (`moved`) and how far this move takes it (`step`; the largest face
//! velocity times `dt` for the advection, whose trilinear samples are convex combinations of
//! face values; the largest displacement for the density correction). A particle of a cell
//! with `cell_phi - 0.9 h >= moved + step + max(step, eps)` therefore ends at least
//! `max(len, eps)` from every solid, which is what the per-particle test below skips on: it
//! is left untouched either way, so visiting only the other cells gives the same bytes, and
//! the positions before the move are copied only for them.
//!
//! Moving obstacles: the cell distances are those of the substep's start, and the containment
//! after the advection runs at its end. Where every moving solid's distance is its shape's exact
//! signed distance (a box, a uniformly scaled sphere or cylinder: [`Solid::shift_radius`]), a
//! rigid move that shifts each point of a solid by at most `s` changes its distance anywhere by
//! at most `s` (the moved solid lies within `s` of the old one and the old within `s` of the
//! moved), so the same tests hold with the distances lowered by the largest such shift between
//! the two times ([`Pose::max_shift`] of the two poses): the same bytes again, and the particles
//! far from a moving box or sphere are no longer each evaluated against it. A moving mesh
//! (whose sampled distance is not exact) has every particle visited, but where the particle is
//! far enough from the mesh's world box the box decides without a sample of the mesh
//! (`far.rs`, the same answer).
//!
//! A solid that moves during the move (the advection: positions kept at the substep's start,
//! held at its end) is checked in its own frame: the particle's start is carried with the
//! solid from the start's time to the hold's (`P_end P_start^-1 p0`, [`SolidState::carry`])
//! and the path from there to the particle's end is sampled against that solid at the end.
//! Checked along the particle's own path, a face advancing onto the particles beside it has
//! covered their starts by the substep's end, so they were stopped at their starts and could
//! never slide along the face (a droplet hung on `scenes/paddle.json`'s paddle while gravity
//! built its speed to 1.5 m/s); and a solid thinner than its move in a substep passed through
//! the particles in its way. A carried start outside the domain's interior is clamped into it
//! (`scripts/fuzz_motion.py --brim --mix`: 4 of 38 runs peaked more than twice as fast as
//! with the particle's own path without the clamp, 2 with it). The static solids keep the
//! particle's own path, so scenes without motion keep their bytes. The earliest hit over the paths stops the particle at the
//! sample before it. A carried path is up to the solid's largest shift in the substep longer
//! than the move (`carried`): the bounds above add it to the move's length.

use super::wedge::slide_along_walls;
use super::*;
use crate::geometry::transform::Pose;
use crate::sim::sync_ptr::SyncPtr;

/// Relative and absolute (in cells) slack added to the movement bounds for f32 rounding.
const BOUND_SLACK: f64 = 1e-3;

impl SolidState {
    /// A bound on how far moving every particle by `scale` times a trilinear sample of the
    /// face field `field` (velocity times `dt`, or the density correction's displacement) can
    /// take it, m: `scale |(max |u|, max |v|, max |w|)|` (a trilinear sample is a convex
    /// combination of face values; the clamp into the interior box only shortens a move).
    /// `None` without obstacles or where a value is not finite.
    pub fn move_bound(&self, d: &GridDims, field: &[Vec<f32>; 3], scale: f64) -> Option<f64> {
        if !self.active() {
            return None;
        }
        let mut sum = 0.0f64;
        for (a, f) in field.iter().enumerate() {
            let m = f[..d.faces(a)]
                .par_iter()
                .with_min_len(1 << 14)
                .map(|x| {
                    if x.is_finite() {
                        x.abs()
                    } else {
                        f32::INFINITY
                    }
                })
                .reduce(|| 0.0, f32::max) as f64;
            sum += m * m;
        }
        let b = scale.abs() * sum.sqrt();
        b.is_finite().then_some(b)
    }

    /// How much lower than the cell distances the solids' distance may be at time `t`, m
    /// (with slack for rounding): 0 for static solids or at the cells' time, else the largest
    /// [`Pose::max_shift`] of a moving solid between the two times (see the module docs).
    /// `None` without cell distances or where a moving solid's distance is not exact.
    fn drift_since_cells(&self, t: f64, h: f64) -> Option<f64> {
        self.drift(self.cell_time?, t, h)
    }

    /// The largest [`Pose::max_shift`] of a moving solid between times `t0` and `t`, m, with
    /// slack for rounding (0 without motion); `None` where a moving solid's distance is not
    /// exact.
    fn drift(&self, t0: f64, t: f64, h: f64) -> Option<f64> {
        if !self.obstacles.animated() || t0 == t {
            return Some(0.0);
        }
        let mut most = 0.0f64;
        for s in self.obstacles.solids.iter().filter(|s| s.is_animated()) {
            let (radius, m) = (s.shift_radius()?, s.motion());
            most = most.max(Pose::max_shift(&m.pose(t0), &m.pose(t), radius));
        }
        let drift = most * (1.0 + BOUND_SLACK) + BOUND_SLACK * h;
        drift.is_finite().then_some(drift)
    }

    /// Fills [`Self::carry`] for a hold at time `t` of the positions kept at
    /// [`Self::prev_time`]; whether any solid moves in between.
    fn set_carry(&mut self, t: f64) -> bool {
        let t0 = self.prev_time;
        let moving = self.obstacles.animated() && t0.is_finite() && t0 != t;
        let mut any = false;
        for (s, c) in self.obstacles.solids.iter().zip(self.carry.iter_mut()) {
            *c = (moving && s.is_animated())
                .then(|| (s.motion().pose(t0), s.motion().pose(t)))
                .filter(|(a, b)| a != b);
            any |= c.is_some();
        }
        any
    }

    /// Keeps the positions at time `from` before a particle move whose [`Self::hold`] runs
    /// at time `t`. `bounds`: `(moved, step)`, m: how far any particle may have moved since
    /// the substep's sort before this move (0 for the substep's first move) and how far this
    /// move may take it (see the module docs); `None`: no bound, every particle is kept and
    /// held.
    pub fn remember(
        &mut self,
        d: &GridDims,
        sp: &SortedParticles,
        (from, t): (f64, f64),
        bounds: Option<(f64, f64)>,
    ) {
        if !self.active() {
            return;
        }
        let eps = (PUSHOUT_CELLS * d.h) as f64;
        let h = d.h as f64;
        self.prev_time = from;
        // Cell distances that bound the solids' at `t` once lowered by `drift`; a start
        // carried with a moving solid (see `hold`) lies up to `carried` farther.
        let drift = self.drift_since_cells(t, h);
        let carried = self.drift(from, t, h);
        let near = bounds
            .zip(drift.zip(carried))
            .map(|((moved, step), (drift, carried))| {
                let r = moved + step + (step + carried).max(eps) + drift;
                (r * (1.0 + BOUND_SLACK) + BOUND_SLACK * h, moved > 0.0)
            });
        self.near_time = t;
        // A second move in a substep also visits the cells the first one visited (their
        // particles may have been pushed out, away from where the sort put them).
        self.near = match near {
            Some((r, true)) => self.near.map(|q| q.max(r)),
            Some((r, false)) => Some(r),
            None => None,
        };
        for a in 0..3 {
            self.prev[a].resize(sp.pos[a].len(), 0.0);
        }
        let Some(r) = self.near else {
            // A plain copy of 12 bytes per particle: in parallel chunks (one core does not
            // reach the memory bandwidth), into the buffer's kept capacity.
            const CHUNK: usize = 1 << 14;
            for a in 0..3 {
                self.prev[a]
                    .par_chunks_mut(CHUNK)
                    .zip(sp.pos[a].par_chunks(CHUNK))
                    .for_each(|(dst, src)| dst.copy_from_slice(src));
            }
            return;
        };
        let reach = 0.9 * h;
        let [px, py, pz] = &sp.pos;
        let q = self.prev.each_mut().map(|v| SyncPtr(v.as_mut_ptr()));
        near_slots(&self.cell_phi, &sp.cell_start, d.n[0], (reach, r), |s| {
            // SAFETY: `near_slots` hands each slot to one task only, and `prev` has one
            // entry per slot.
            unsafe {
                *q[0].get(s) = px[s];
                *q[1].get(s) = py[s];
                *q[2].get(s) = pz[s];
            }
        });
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
        // The solids that move during this move carry each particle's start with them: the
        // path is checked in each one's own frame (below), up to `carried` longer.
        let carrying = self.set_carry(t);
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
        // Cell-centre distances that bound the solids' at `t` (static obstacles, evaluated at
        // `t`, or lowered by the moving solids' drift since): a particle in cell `c` is at least
        // `cell_phi[c] - sqrt(3)/2 h - drift` from every solid (the distance is 1-Lipschitz,
        // and the stored value a lower bound where not exact), so a particle whose bound
        // already passes the test below is skipped without evaluating the solids. Same result,
        // much cheaper for the particles far from obstacles (most of them).
        let reach = 0.9 * h as f64;
        let drift = self.drift_since_cells(t, h as f64);
        let carried = if carrying {
            self.drift(self.prev_time, t, h as f64)
        } else {
            Some(0.0)
        };
        let cell_phi = drift
            .zip(carried)
            .map(|(drift, carried)| (&self.cell_phi[..], reach + drift, carried));
        let carry = &self.carry[..];
        let unmoved = |i: &usize| carry[*i].is_none();
        // Static and moving obstacles: the static ones' cell-centre distances hold at every
        // time, so a particle far from them needs only the moving ones evaluated to be skipped
        // (the same test as below on the same distance: the minimum over the solids).
        let statics = self.split.as_ref().and_then(|s| s.static_cells());
        let (boxes, tol) = ((&self.boxes[..], &self.slacks[..]), 1e-3 * h as f64);
        let one = |x: &mut f32,
                   y: &mut f32,
                   z: &mut f32,
                   u: &mut f32,
                   v: &mut f32,
                   w: &mut f32,
                   ox: &f32,
                   oy: &f32,
                   oz: &f32| {
            let p1 = [*x, *y, *z];
            let p0 = [*ox, *oy, *oz];
            let dist = [p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]];
            let len = (dist[0] * dist[0] + dist[1] * dist[1] + dist[2] * dist[2]).sqrt();
            if let Some((phi, gap, carried)) = cell_phi
                && phi[d.cell_of(p1)] as f64 - gap >= (len as f64 + carried).max(eps)
            {
                return;
            }
            let mut p = p1.map(|c| c as f64);
            // Each moving solid's path: from the start carried with it to the end. A start
            // carried out of the domain's interior (a solid moving at a wall) is taken back
            // to it, where the particle could be; the end is in it, so the path only shortens.
            let starts = carry.iter().map(|c| {
                c.map(|(from, to)| {
                    let q = to.to_world(from.to_body(p0.map(|c| c as f64)));
                    [0, 1, 2].map(|a| q[a].clamp(lo[a] as f64, hi[a] as f64) as f32)
                })
            });
            let longest = (starts.clone().flatten())
                .map(|q| {
                    (0..3)
                        .map(|a| (p1[a] - q[a]) * (p1[a] - q[a]))
                        .sum::<f32>()
                        .sqrt()
                })
                .fold(len, f32::max);
            // Far from every solid (the distance is 1-Lipschitz, and a lower bound where
            // not exact): no point of a path is in solid and no push-out is needed.
            // The moving solids' world boxes decide it without evaluating a solid where they
            // can (`far.rs`; the same answer).
            let far = (longest as f64).max(eps);
            if let Some((cells, moving)) = statics
                && cells[d.cell_of(p1)] as f64 - reach >= far
                && posed.clear_of(moving.iter().copied(), p, boxes, far, tol)
            {
                return;
            }
            if posed.clear_of(0..posed.solids.len(), p, boxes, far, tol) {
                return;
            }
            // Path check (only where a path is long enough to skip over a thin wall): the
            // solids that stand still during the move along the path itself, each moving one
            // along the path from the start carried with it; the earliest hit stops the
            // particle at the sample before it.
            let all = 0..posed.solids.len();
            let mut hit = first_hit(&posed, all.filter(unmoved), (p0, p1), step);
            if carrying {
                for (i, q) in starts.enumerate() {
                    let Some(q) = q else { continue };
                    // The path lies within its length of its end: farther from the solid
                    // there, it cannot reach it (the distance is 1-Lipschitz, or a bound).
                    let l = (0..3).map(|a| (p1[a] - q[a]) * (p1[a] - q[a])).sum::<f32>();
                    if posed.min_distance(i..i + 1, p) >= l.sqrt() as f64 {
                        continue;
                    }
                    let h = first_hit(&posed, i..i + 1, (q, p1), step);
                    if let Some(h) = h.filter(|h| hit.is_none_or(|b| h.0 < b.0)) {
                        hit = Some(h);
                    }
                }
            }
            let stopped = hit.is_some();
            if let Some((_, last)) = hit {
                p = last;
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
        };
        if let Some(r) = self
            .near
            .filter(|_| cell_phi.is_some() && self.near_time == t)
        {
            // Only the cells near a solid (see the module docs).
            let pp = [px, py, pz].map(|v| SyncPtr(v.as_mut_ptr()));
            let vp = [vx, vy, vz].map(|v| SyncPtr(v.as_mut_ptr()));
            near_slots(&self.cell_phi, &sp.cell_start, d.n[0], (reach, r), |s| {
                // SAFETY: `near_slots` hands each slot to one task only; every array has one
                // entry per slot.
                unsafe {
                    one(
                        &mut *pp[0].get(s),
                        &mut *pp[1].get(s),
                        &mut *pp[2].get(s),
                        &mut *vp[0].get(s),
                        &mut *vp[1].get(s),
                        &mut *vp[2].get(s),
                        &qx[s],
                        &qy[s],
                        &qz[s],
                    )
                };
            });
            return;
        }
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
                one(x, y, z, u, v, w, ox, oy, oz)
            });
    }
}

/// The most samples on one path: a path longer than this many steps (64 cells) is sampled
/// more sparsely. A solid keyframed to jump 10^12 m in a substep (`scripts/fuzz_scene.py`)
/// otherwise gave its carried paths 10^14 samples each and the run never ended.
const MAX_PATH_SAMPLES: u32 = 256;

/// The first sample in solid (of the solids `set`) on the straight path `from -> to`, sampled
/// at most [`PATH_STEP_CELLS`] cells (`step`, m) apart when the path is longer than that (and
/// at most [`MAX_PATH_SAMPLES`] times): its fraction of the path and the sample before it
/// (`from` for the first).
///
/// Where every solid of `set` has its exact distance (1-Lipschitz: [`Posed::exact`]) a sample
/// at distance `d` from them clears the samples within `d` of it, which are not evaluated
/// (sphere tracing over the same samples, Hart 1996): the answer is the uniform sampling's,
/// with a margin kept for the rounding of the `f32` samples ([`SKIP_MARGIN_CELLS`]). The pillar
/// shot (`scenes/pillar.json`) samples about 16,000 points on 3,300 paths a substep by its
/// cylinder and box.
pub(super) fn first_hit(
    posed: &Posed<'_>,
    set: impl Iterator<Item = usize> + Clone,
    (from, to): ([f32; 3], [f32; 3]),
    step: f32,
) -> Option<(f32, [f64; 3])> {
    let dist = [to[0] - from[0], to[1] - from[1], to[2] - from[2]];
    let len = (dist[0] * dist[0] + dist[1] * dist[1] + dist[2] * dist[2]).sqrt();
    if len <= step {
        return None;
    }
    let steps = ((len / step).ceil() as u32).min(MAX_PATH_SAMPLES);
    let sample = |s: u32| {
        let f = s as f32 / steps as f32;
        [0, 1, 2].map(|a| (from[a] + f * dist[a]) as f64)
    };
    // Samples are `len / steps` apart, up to the rounding of the `f32` samples (a few units in
    // the last place of the largest coordinate) and of `len`, which the margin covers.
    let skip = posed.exact(set.clone()).then(|| {
        let spacing = len as f64 / steps as f64;
        let coord = (from.iter().chain(&to)).fold(0.0f32, |m, c| m.max(c.abs())) as f64;
        let rounding = 16.0 * f32::EPSILON as f64 * (coord + len as f64);
        let cells = SKIP_MARGIN_CELLS * step as f64 / PATH_STEP_CELLS as f64;
        (spacing, cells + rounding)
    });
    let mut s = 1;
    while s <= steps {
        let q = sample(s);
        let d = posed.min_distance(set.clone(), q);
        if d < 0.0 {
            let last = if s == 1 {
                from.map(|c| c as f64)
            } else {
                sample(s - 1)
            };
            return Some((s as f32 / steps as f32, last));
        }
        // The samples within `d - margin` of this one are outside every solid of `set`.
        let clear = skip.map_or(0.0, |(spacing, margin)| ((d - margin) / spacing).floor());
        s += 1 + if clear >= 1.0 {
            clear.min(steps as f64) as u32
        } else {
            0
        };
    }
    None
}

/// The slack, in cells, that [`first_hit`]'s skipping keeps below a sample's distance, on top
/// of the samples' `f32` rounding (16 units in the last place of the largest coordinate).
const SKIP_MARGIN_CELLS: f64 = 1e-3;

/// Calls `f(slot)` for every particle slot of the cells whose centre distance `phi` (cell
/// order, rows of `n0` cells) less `reach` is below `r` (m; `(reach, r)`), in parallel by
/// cell rows: the sort gave each cell its slots `start[c]..start[c + 1]`, so each slot goes
/// to one task only.
fn near_slots(
    phi: &[f32],
    start: &[u32],
    n0: usize,
    (reach, r): (f64, f64),
    f: impl Fn(usize) + Sync,
) {
    phi.par_chunks(n0)
        .enumerate()
        .with_min_len(16)
        .for_each(|(row, cells)| {
            let c0 = row * n0;
            for (i, &d) in cells.iter().enumerate() {
                if d as f64 - reach >= r {
                    continue;
                }
                let c = c0 + i;
                (start[c] as usize..start[c + 1] as usize).for_each(&f);
            }
        });
}
