//! Liquid that enters and leaves the shot: [`Emitter`]s (inflow), [`Sink`]s (outflow), open
//! domain faces, and the particle cap `limits.max_particles`.
//!
//! Layer 2 (sim): imports error, particles and geometry. Owns the plain data of `emitters`
//! and `sinks` ([`Emitter`], [`Sink`]: their regions are [`crate::geometry::solid::Solid`]s,
//! the obstacles' shapes, transforms and keyframes) with their checks, and the per-substep work
//! ([`Emission`]), which runs at the end of every substep, after the advection (and the
//! density correction), on the cell-sorted particles:
//!
//! 1. one parallel pass over the particles flags every particle inside a sink, or pinned by
//!    the advection's clamp against an open face (it would have left the domain); every other
//!    particle inside an active emitter's region takes the emitter's velocity plus the
//!    region's rigid velocity at it, and is counted in the emitter's lattice box it lies in
//!    (atomic counts: the same for any thread count);
//! 2. the flagged particles are removed by a stable in-place compaction, so the survivors keep
//!    their relative order;
//! 3. emission, for each emitter active at the substep's end time, in scene order (see
//!    [`Emission::emit`]): lattice points of the sources' 2 x 2 x 2-per-cell pattern, jittered
//!    by a counter-based hash of (seed, emitter index, lattice index) (no shared random stream:
//!    the result does not depend on thread count, and a resumed run re-derives it), become
//!    particles where they enter the region, or where the region has drained (a lattice box
//!    with no particle in a half-empty 2 x 2 x 2 group: a still or slow emitter whose liquid
//!    falls out is refilled), never inside an obstacle; new particles are appended in
//!    (emitter, lattice index) order with fresh creation indices, and at the end of the frame
//!    [`Emission::store`] writes the survivors in creation order followed by the new ones.
//!    Emission stops at `max_particles`.
//!
//! The grid velocity inside an active emitter is set to its velocity after the pressure
//! projection ([`Emission::impose_velocity`]), so the liquid leaves the emitter at `v` and
//! the flow rate is `v x` open area. On an open face the boundary cell layer is labelled air
//! ([`Emission::open_faces`]): pressure 0 there (free outflow) instead of a wall.
//!
//! Memory: at each frame's start the particle arrays reserve room for one full refill of every
//! emitter (8 per covered cell); beyond that `Vec` grows geometrically (amortised, rare).

use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, GridDims};
use crate::geometry::Boundaries;
use crate::geometry::solid::{PosedSolid, Solid};
use crate::particles::Particles;
use rayon::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Particles per parallel job of the removal and velocity passes.
const CHUNK: usize = 16384;

mod spec;
pub use spec::*;

/// Per-frame figures of emission and removal (stats).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct EmissionReport {
    /// Particles added by each emitter.
    pub added: Vec<u64>,
    /// Particles removed by each sink.
    pub removed_sinks: Vec<u64>,
    /// Particles removed by the open faces.
    pub removed_open: u64,
    /// True when emission stopped at `limits.max_particles` during this frame.
    pub capped: bool,
}

impl EmissionReport {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed_sinks.is_empty() && self.removed_open == 0
    }
}

/// One emitter with its per-substep scratch: the lattice range of the substep and the count
/// of particles in each lattice box of it.
struct EmitterState {
    e: Emitter,
    /// Most cells the region covers at any of its poses (the reserve per refill).
    cells: usize,
    /// Lattice index range `[lo, hi]` per axis at the substep's end.
    range: [(i64, i64); 3],
    /// Particles per lattice box of `range` (x fastest).
    occ: Vec<AtomicU32>,
    /// World bounds of the region at the substep's end (f32, for the particle pass).
    aabb: [[f32; 3]; 2],
    active: bool,
}

impl EmitterState {
    fn dims(&self) -> [usize; 3] {
        self.range.map(|(lo, hi)| (hi - lo + 1) as usize)
    }
    /// Index in `occ` of lattice index `m`, if in range.
    #[inline]
    fn slot(&self, m: [i64; 3]) -> Option<usize> {
        let n = self.dims();
        let mut idx = 0usize;
        for a in (0..3).rev() {
            let r = m[a] - self.range[a].0;
            if r < 0 || r as usize >= n[a] {
                return None;
            }
            idx = idx * n[a] + r as usize;
        }
        Some(idx)
    }
}

/// The runtime state of emission and removal (allocated once with the simulation).
pub struct Emission {
    emitters: Vec<EmitterState>,
    sinks: Vec<Sink>,
    obstacles: Arc<Vec<Solid>>,
    open: [[bool; 2]; 3],
    cap: usize,
    seed: u64,
    /// Creation index of the next emitted particle (reset at each frame's start).
    next_id: u32,
    /// Scratch of [`Emission::store`].
    rank: Vec<u32>,
    /// Removal flag per particle (scratch of a substep's removal).
    flags: Vec<u8>,
    warned_cap: bool,
    report: EmissionReport,
}

/// The lattice of the sources' pattern: spacing half a cell, aligned with the domain.
#[inline]
fn lattice_shift(e: &Emitter, time: f64) -> [f64; 3] {
    std::array::from_fn(|a| e.velocity[a] * (time - e.start))
}

impl Emission {
    /// Nothing to do: no emitter, sink or open face.
    pub fn idle(&self) -> bool {
        self.emitters.is_empty() && self.sinks.is_empty() && !self.open.iter().flatten().any(|&o| o)
    }

    pub fn new(
        d: &GridDims,
        emitters: &[Emitter],
        sinks: &[Sink],
        boundaries: &Boundaries,
        cap: usize,
        seed: u64,
    ) -> Self {
        let emitters = emitters
            .iter()
            .map(|e| {
                let cells = key_times(&e.shape)
                    .into_iter()
                    .map(|t| {
                        let (lo, hi) = e.shape.bounds(t);
                        (0..3)
                            .map(|a| ((hi[a] - lo[a]) / d.h as f64).ceil().max(1.0) as usize + 1)
                            .product::<usize>()
                    })
                    .max()
                    .unwrap_or(1);
                EmitterState {
                    e: e.clone(),
                    cells,
                    range: [(0, -1); 3],
                    occ: Vec::new(),
                    aabb: [[0.0; 3]; 2],
                    active: false,
                }
            })
            .collect();
        Self {
            emitters,
            sinks: sinks.to_vec(),
            obstacles: Arc::default(),
            open: boundaries.open(),
            cap,
            seed,
            next_id: 0,
            rank: Vec::new(),
            flags: Vec::new(),
            warned_cap: false,
            report: EmissionReport::default(),
        }
    }

    /// The obstacles emitters must not fill.
    pub fn with_obstacles(mut self, obstacles: Arc<Vec<Solid>>) -> Self {
        self.obstacles = obstacles;
        self
    }

    /// Most particles one refill of every emitter adds.
    fn refill(&self) -> usize {
        self.emitters.iter().map(|s| 8 * s.cells).sum()
    }

    /// At a frame's start, after `sp.load`: creation indices continue after the loaded
    /// particles; room is reserved for one refill of every emitter.
    pub fn begin_frame(&mut self, sp: &mut SortedParticles) {
        self.next_id = sp.len() as u32;
        self.report = EmissionReport {
            added: vec![0; self.emitters.len()],
            removed_sinks: vec![0; self.sinks.len()],
            removed_open: 0,
            capped: false,
        };
        if !self.emitters.is_empty() {
            sp.reserve(self.refill());
        }
        if !self.idle() {
            self.flags.reserve(sp.len() + self.refill());
        }
    }

    /// The frame's figures.
    pub fn take_report(&mut self) -> EmissionReport {
        if self.idle() {
            return EmissionReport::default();
        }
        std::mem::take(&mut self.report)
    }

    /// True once emission has stopped at the cap (the warning is given once per run).
    pub fn take_cap_warning(&mut self) -> bool {
        if self.report.capped && !self.warned_cap {
            self.warned_cap = true;
            return true;
        }
        false
    }

    /// Labels the boundary cell layer of every open face air (pressure 0), except cells also
    /// in a wall face's layer (edges and corners with a wall stay solid).
    pub fn open_faces(&self, d: &GridDims, labels: &mut [CellLabel]) {
        if !self.open.iter().flatten().any(|&o| o) {
            return;
        }
        let n = d.n;
        let layer = |c: [usize; 3], a: usize, s: usize| c[a] == if s == 0 { 0 } else { n[a] - 1 };
        for a in 0..3 {
            for s in 0..2 {
                if !self.open[a][s] {
                    continue;
                }
                // Walk the face's layer.
                let (b, c) = ((a + 1) % 3, (a + 2) % 3);
                for v in 0..n[c] {
                    for u in 0..n[b] {
                        let mut idx = [0; 3];
                        idx[a] = if s == 0 { 0 } else { n[a] - 1 };
                        idx[b] = u;
                        idx[c] = v;
                        let walled = (0..3)
                            .any(|a2| (0..2).any(|s2| !self.open[a2][s2] && layer(idx, a2, s2)));
                        if !walled {
                            labels[d.cell(idx[0], idx[1], idx[2])] = CellLabel::Empty;
                        }
                    }
                }
            }
        }
    }

    /// Sets the grid velocity of every face inside an emitter active in `(t0, t]` (its region
    /// at `t0`) to its velocity plus the region's rigid velocity there.
    pub fn impose_velocity(&self, d: &GridDims, vel: &mut [Vec<f32>; 3], t0: f64, t: f64) {
        for st in &self.emitters {
            let e = &st.e;
            if !e.active(t0, t) {
                continue;
            }
            let posed = e.shape.at(t0);
            let (lo, hi) = e.shape.bounds(t0);
            let cell = |x: f64, a: usize| ((x - d.lower[a] as f64) / d.h as f64).floor();
            for (a, va) in vel.iter_mut().enumerate() {
                let m = d.face_n(a);
                let r: [(usize, usize); 3] = std::array::from_fn(|b| {
                    let l = cell(lo[b], b).max(0.0) as usize;
                    let h = (cell(hi[b], b) + 1.0).max(0.0) as usize;
                    (l, h.min(m[b] - 1))
                });
                for k in r[2].0..=r[2].1 {
                    for j in r[1].0..=r[1].1 {
                        for i in r[0].0..=r[0].1 {
                            let idx = [i, j, k];
                            let p: [f64; 3] = std::array::from_fn(|b| {
                                let off = if b == a { 0.0 } else { 0.5 };
                                d.lower[b] as f64 + (idx[b] as f64 + off) * d.h as f64
                            });
                            if inside(&posed, p) {
                                let w = posed.velocity(p);
                                va[i + m[0] * (j + m[1] * k)] = (e.velocity[a] + w[a]) as f32;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Removal and emission after the substep `(t0, t]`.
    pub fn after_substep(&mut self, d: &GridDims, sp: &mut SortedParticles, t0: f64, t: f64) {
        if self.idle() {
            return;
        }
        self.prepare(d, t0, t);
        self.particle_pass(d, sp, t);
        if self.emitters.iter().any(|s| s.active) {
            self.emit(d, sp, t0, t);
        }
    }

    /// Each emitter's activity, bounds and lattice range at the substep's end, its box counts
    /// zeroed (the count buffer grows only when a moving region's range does).
    fn prepare(&mut self, d: &GridDims, t0: f64, t: f64) {
        let sp_h = 0.5 * d.h as f64;
        let lower = d.lower.map(|x| x as f64);
        for st in &mut self.emitters {
            st.active = st.e.active(t0, t);
            if !st.active {
                continue;
            }
            let now = lattice_shift(&st.e, t);
            let (lo, hi) = st.e.shape.bounds(t);
            st.aabb = [lo.map(|x| x as f32), hi.map(|x| x as f32)];
            st.range = std::array::from_fn(|a| {
                (
                    ((lo[a] - lower[a] - now[a]) / sp_h).floor() as i64 - 1,
                    ((hi[a] - lower[a] - now[a]) / sp_h).ceil() as i64 + 1,
                )
            });
            let n: usize = st.dims().iter().product();
            if st.occ.len() < n {
                st.occ.resize_with(n, || AtomicU32::new(0));
            }
            st.occ[..n].iter().for_each(|c| c.store(0, Ordering::Relaxed));
        }
    }

    /// One parallel pass: removal flags (0 keep, 1 open face, 2 + k sink k); the kept
    /// particles inside an active emitter take its velocity and are counted in its lattice
    /// boxes. Then, only if any is flagged, a sequential count per sink and
    /// [`SortedParticles::retain_unflagged`].
    fn particle_pass(&mut self, d: &GridDims, sp: &mut SortedParticles, t: f64) {
        let any_open = self.open.iter().flatten().any(|&o| o);
        let active: Vec<(&EmitterState, PosedSolid<'_>)> = self
            .emitters
            .iter()
            .filter(|s| s.active)
            .map(|s| (s, s.e.shape.at(t)))
            .collect();
        let sinks: Vec<(PosedSolid<'_>, [[f32; 3]; 2])> = self
            .sinks
            .iter()
            .map(|s| {
                let (lo, hi) = s.shape.bounds(t);
                (s.shape.at(t), [lo.map(|x| x as f32), hi.map(|x| x as f32)])
            })
            .collect();
        if sinks.is_empty() && !any_open && active.is_empty() {
            return;
        }
        // The advection clamps positions to these bounds: a particle on an open face's bound
        // was moving out of the domain.
        let (lo, hi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
        let inv = 2.0 / d.h as f64;
        let lower = d.lower.map(|x| x as f64);
        let n = sp.len();
        self.flags.resize(n, 0);
        let open = self.open;
        let [px, py, pz] = &sp.pos;
        let [vx, vy, vz] = &mut sp.vel;
        let in_box = |p: [f32; 3], b: &[[f32; 3]; 2]| (0..3).all(|a| p[a] >= b[0][a] && p[a] <= b[1][a]);
        let flagged: usize = self
            .flags
            .par_chunks_mut(CHUNK)
            .zip(vx.par_chunks_mut(CHUNK))
            .zip(vy.par_chunks_mut(CHUNK))
            .zip(vz.par_chunks_mut(CHUNK))
            .enumerate()
            .map(|(c, (((fl, vx), vy), vz))| {
                let mut count = 0;
                for (k, f) in fl.iter_mut().enumerate() {
                    let i = c * CHUNK + k;
                    let p = [px[i], py[i], pz[i]];
                    *f = 0;
                    if (0..3)
                        .any(|a| (open[a][0] && p[a] <= lo[a]) || (open[a][1] && p[a] >= hi[a]))
                    {
                        *f = 1;
                    } else if let Some(s) = sinks.iter().position(|(s, b)| {
                        in_box(p, b) && inside(s, p.map(|x| x as f64))
                    }) {
                        *f = 2 + s.min(253) as u8;
                    }
                    if *f != 0 {
                        count += 1;
                        continue;
                    }
                    for (st, posed) in &active {
                        if !in_box(p, &st.aabb) {
                            continue;
                        }
                        let q = p.map(|x| x as f64);
                        if !inside(posed, q) {
                            continue;
                        }
                        let w = posed.velocity(q);
                        let v = std::array::from_fn::<f32, 3, _>(|a| (st.e.velocity[a] + w[a]) as f32);
                        (vx[k], vy[k], vz[k]) = (v[0], v[1], v[2]);
                        let now = lattice_shift(&st.e, t);
                        let m: [i64; 3] = std::array::from_fn(|a| {
                            ((q[a] - lower[a] - now[a]) * inv).floor() as i64
                        });
                        if let Some(s) = st.slot(m) {
                            st.occ[s].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                count
            })
            .sum();
        drop(active);
        drop(sinks);
        if flagged == 0 {
            return;
        }
        for &f in &self.flags[..n] {
            match f {
                0 => {}
                1 => self.report.removed_open += 1,
                k => self.report.removed_sinks[(k - 2) as usize] += 1,
            }
        }
        sp.retain_unflagged(&self.flags);
    }

    /// Emission of the substep `(t0, t]`. Each emitter carries a lattice of the sources'
    /// 2 x 2 x 2-per-cell pattern (spacing half a cell, aligned with the domain at its start
    /// time, each point jittered inside its box by [`hash`] of (seed, emitter, lattice index))
    /// that moves at the emitter's velocity. A lattice point inside the region at `t` (and in
    /// the advection's clamp bounds, and not in an obstacle) becomes a particle when
    /// - it entered the region in this substep (it was outside the region's pose at `t0`), or
    ///   this is the emitter's first active substep: so the region stays full of liquid moving
    ///   at `v`, and the flow is `v x` open area particles' worth per second whatever the
    ///   substeps, plus what a moving region sweeps over;
    /// - or its box holds no particle, and its 2 x 2 x 2 group lies wholly in the region and
    ///   holds at most 4 (the region has drained, e.g. a still emitter whose liquid falls out;
    ///   a particle drifting into the neighbouring box of a full group, or liquid leaving
    ///   faster than `v` across the region's boundary, does not trigger it).
    fn emit(&mut self, d: &GridDims, sp: &mut SortedParticles, t0: f64, t: f64) {
        let sp_h = 0.5 * d.h as f64;
        let lower = d.lower.map(|x| x as f64);
        let (blo, bhi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
        // Obstacles are avoided by more than the stepper's push-out distance.
        let clear = super::solids::PUSHOUT_CELLS as f64 * d.h as f64;
        let obstacles = self.obstacles.clone();
        let free = |p: [f64; 3]| obstacles.iter().all(|s| s.signed_distance(p, t) >= clear);
        let in_bounds = |p: [f64; 3]| {
            (0..3).all(|a| {
                let x = p[a] as f32;
                x >= blo[a] && x <= bhi[a]
            })
        };
        for ei in 0..self.emitters.len() {
            let st = &self.emitters[ei];
            if !st.active {
                continue;
            }
            let e = &st.e;
            let first = t0 <= e.start;
            let (now, before) = (lattice_shift(e, t), lattice_shift(e, t0));
            let (posed, posed0) = (e.shape.at(t), e.shape.at(t0));
            let range = st.range;
            let seed = self.seed;
            let point = |m: [i64; 3], shift: [f64; 3]| -> [f64; 3] {
                let r = hash(&[seed, ei as u64, m[0] as u64, m[1] as u64, m[2] as u64]);
                std::array::from_fn(|a| {
                    let u = ((r >> (21 * a)) & ((1 << 21) - 1)) as f64 / (1u64 << 21) as f64;
                    lower[a] + (m[a] as f64 + 0.5 + 0.8 * (u - 0.5)) * sp_h + shift[a]
                })
            };
            // The 2 x 2 x 2 group of `m` lies wholly in the region and holds at most 4
            // particles.
            let drained_group = |m: [i64; 3]| -> bool {
                let g = m.map(|x| x.div_euclid(2) * 2);
                let mut count = 0;
                for c in 0..8 {
                    let q = [g[0] + (c & 1), g[1] + (c >> 1 & 1), g[2] + (c >> 2 & 1)];
                    let (Some(s), p) = (st.slot(q), point(q, now)) else {
                        return false;
                    };
                    if !(in_bounds(p) && inside(&posed, p)) {
                        return false;
                    }
                    count += st.occ[s].load(Ordering::Relaxed);
                }
                count <= 4
            };
            let mut added = 0u64;
            let mut capped = false;
            'lattice: for mk in range[2].0..=range[2].1 {
                for mj in range[1].0..=range[1].1 {
                    for mi in range[0].0..=range[0].1 {
                        let m = [mi, mj, mk];
                        let base = point(m, [0.0; 3]);
                        let p: [f64; 3] = std::array::from_fn(|a| base[a] + now[a]);
                        if !(in_bounds(p) && inside(&posed, p)) {
                            continue;
                        }
                        if !first {
                            let q: [f64; 3] = std::array::from_fn(|a| base[a] + before[a]);
                            let entered = !(in_bounds(q) && inside(&posed0, q));
                            let drained = || {
                                st.slot(m).is_some_and(|s| st.occ[s].load(Ordering::Relaxed) == 0)
                                    && drained_group(m)
                            };
                            if !entered && !drained() {
                                continue;
                            }
                        }
                        if !free(p) {
                            continue;
                        }
                        if sp.len() >= self.cap {
                            capped = true;
                            break 'lattice;
                        }
                        let w = posed.velocity(p);
                        let v = std::array::from_fn(|a| (e.velocity[a] + w[a]) as f32);
                        sp.push(p.map(|x| x as f32), v, self.next_id);
                        self.next_id += 1;
                        added += 1;
                    }
                }
            }
            self.report.added[ei] += added;
            if capped {
                self.report.capped = true;
                return;
            }
        }
    }

    /// At the frame's end: writes the particles in creation order (survivors of the frame's
    /// start, then the emitted ones) into `out`, resized to the count.
    pub fn store(&mut self, sp: &SortedParticles, out: &mut Particles) {
        let n = sp.len();
        let ids_total = self.next_id.max(out.len() as u32) as usize;
        if n == ids_total && out.len() == n {
            sp.store(out);
            return;
        }
        // rank[id] = position of creation index `id` among the survivors.
        self.rank.clear();
        self.rank.resize(ids_total, u32::MAX);
        for &id in &sp.ids {
            self.rank[id as usize] = 0;
        }
        let mut r = 0u32;
        for x in self.rank.iter_mut() {
            if *x == 0 {
                *x = r;
                r += 1;
            }
        }
        for a in 0..3 {
            out.pos[a].resize(n, 0.0);
            out.vel[a].resize(n, 0.0);
        }
        for (s, &id) in sp.ids.iter().enumerate() {
            let o = self.rank[id as usize] as usize;
            for a in 0..3 {
                out.pos[a][o] = sp.pos[a][s];
                out.vel[a][o] = sp.vel[a][s];
            }
        }
    }
}

/// A 64-bit hash of `words` (SplitMix64's finaliser chained over the words): the counter-based
/// jitter of emitted particles.
pub fn hash(words: &[u64]) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for &w in words {
        x ^= w
            .wrapping_add(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(x << 6)
            .wrapping_add(x >> 2);
        x = mix(x);
    }
    x
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_every_word() {
        let h = hash(&[1, 2, 3]);
        assert_ne!(h, hash(&[1, 2, 4]));
        assert_ne!(h, hash(&[0, 2, 3]));
        assert_ne!(h, hash(&[1, 2, 3, 0]));
        assert_eq!(h, hash(&[1, 2, 3]));
    }
}
