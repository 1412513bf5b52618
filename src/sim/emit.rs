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
use super::mac_grid::GridDims;
use super::sync_ptr::SyncPtr;
use crate::geometry::Boundaries;
use crate::geometry::solid::{PosedSolid, Solid};
use rayon::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

mod grid;
mod lattice;
mod spec;
pub use lattice::hash;
use lattice::{ZoneScratch, grid_box, lattice_range, slot, zone_slots};
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
    /// The velocity in the region's body frame (the world `velocity` at its start time).
    vb: [f64; 3],
    /// Body-frame bounds of the region.
    body: ([f64; 3], [f64; 3]),
    /// Most grid cells the region covers at any of its poses (the reserve per refill).
    cells: usize,
    /// Lattice index range `[lo, hi]` per axis at the substep's end, clipped to the grid.
    range: [(i64, i64); 3],
    /// Particles per lattice box of `range` (x fastest).
    occ: Vec<AtomicU32>,
    /// Grid cell range `[lo, hi]` per axis of the region's world bounds at the substep's end,
    /// within the grid.
    crange: [(i64, i64); 3],
    /// Particles per grid cell of `crange` (x fastest).
    cell_occ: Vec<AtomicU32>,
    /// A static region's grid faces per axis whose velocity is imposed (found once).
    faces: [Vec<u32>; 3],
    faces_ready: bool,
    /// World bounds of the region at the substep's end (f32, for the particle pass).
    aabb: [[f32; 3]; 2],
    active: bool,
}

impl EmitterState {
    fn dims(&self) -> [usize; 3] {
        self.range
            .map(|(lo, hi)| if hi < lo { 0 } else { (hi - lo + 1) as usize })
    }
    /// Index in `occ` of lattice index `m`, if in range.
    #[inline]
    fn slot(&self, m: [i64; 3]) -> Option<usize> {
        slot(&self.range, m)
    }
    /// Index in `cell_occ` of grid cell `c`, if in range.
    #[inline]
    fn cell_slot(&self, c: [i64; 3]) -> Option<usize> {
        slot(&self.crange, c)
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
    /// Cells a particle may move in a substep, plus 2: how far around a sink, an emitter or an
    /// open face the particle pass looks ([`zone_slots`]).
    reach: usize,
    /// Scratch of [`zone_slots`].
    rows: ZoneScratch,
    /// Removal flag per particle (scratch of a substep's removal).
    flags: Vec<u8>,
    /// The flagged slots (scratch of the compaction).
    gaps: Vec<u32>,
    warned_cap: bool,
    report: EmissionReport,
}

impl EmitterState {
    /// Body-frame displacement of the lattice at `time` (it moves at `vb` in the body frame).
    #[inline]
    fn shift(&self, time: f64) -> [f64; 3] {
        std::array::from_fn(|a| self.vb[a] * (time - self.e.start))
    }
    /// The emitter's velocity in the world at the pose `posed`, at world point `p`.
    #[inline]
    fn velocity_at(&self, posed: &PosedSolid<'_>, p: [f64; 3]) -> [f64; 3] {
        let v = posed.pose().dir_to_world(self.vb);
        let w = posed.velocity(p);
        std::array::from_fn(|a| v[a] + w[a])
    }
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
        // Every buffer of an emitter is sized by the part of its region that can overlap the
        // grid, not by the region: a region far larger than the domain (a box to +-1e6 m) is
        // clipped to it, so its scratch and its lattice walk stay the domain's size.
        let (glo, ghi) = grid_box(d);
        let span = (0..3)
            .map(|a| (ghi[a] - glo[a]).powi(2))
            .sum::<f64>()
            .sqrt();
        let emitters = emitters
            .iter()
            .map(|e| {
                let cells = key_times(&e.shape)
                    .into_iter()
                    .map(|t| {
                        let (lo, hi) = e.shape.bounds(t);
                        (0..3)
                            .map(|a| {
                                let extent = (hi[a].min(ghi[a]) - lo[a].max(glo[a])).max(0.0);
                                (extent / d.h as f64).ceil().max(1.0) as usize + 1
                            })
                            .product::<usize>()
                    })
                    .max()
                    .unwrap_or(1);
                let pose = e.shape.pose(e.start);
                let (o, tip) = (pose.to_body([0.0; 3]), pose.to_body(e.velocity));
                let body = e.shape.body_bounds();
                // The lattice range of a substep ([`Emission::prepare`]) spans at most the
                // region's body-frame box and the grid's (whose extent on any axis is at most
                // the grid's diagonal), with margins.
                let lattice: usize = (0..3)
                    .map(|a| {
                        let extent = (body.1[a] - body.0[a]).min(span);
                        (extent / (0.5 * d.h as f64)).ceil() as usize + 5
                    })
                    .product();
                let diag = (0..3)
                    .map(|a| (body.1[a] - body.0[a]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                // The grid cells of the region's world box at any pose, within the grid.
                let cube = (diag / d.h as f64).ceil().min(1e9) as usize + 3;
                let cell_slots: usize = d.n.iter().map(|&n| n.min(cube)).product();
                EmitterState {
                    e: e.clone(),
                    crange: [(0, -1); 3],
                    faces: Default::default(),
                    faces_ready: false,
                    cell_occ: (0..cell_slots).map(|_| AtomicU32::new(0)).collect(),
                    vb: std::array::from_fn(|a| tip[a] - o[a]),
                    body,
                    cells,
                    range: [(0, -1); 3],
                    occ: (0..lattice).map(|_| AtomicU32::new(0)).collect(),
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
            reach: 5,
            rows: Default::default(),
            flags: Vec::new(),
            gaps: Vec::new(),
            warned_cap: false,
            report: EmissionReport::default(),
        }
    }

    /// The CFL number of the substeps (cells a particle moves in one at most, as the step
    /// size is chosen; the particle pass looks that far plus 2 cells around each zone).
    pub fn with_cfl(mut self, cfl: f64) -> Self {
        self.reach = (cfl.max(0.0).ceil() as usize).min(1 << 16) + 2;
        self
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

    /// Each emitter's activity, bounds and lattice range at the substep's end (clipped to the
    /// grid, [`lattice_range`]), its box counts zeroed (the buffers hold the largest range of
    /// any pose, sized once in [`Self::new`]).
    fn prepare(&mut self, d: &GridDims, t0: f64, t: f64) {
        let lower = d.lower.map(|x| x as f64);
        for st in &mut self.emitters {
            st.active = st.e.active(t0, t);
            if !st.active {
                continue;
            }
            let now = st.shift(t);
            let (lo, hi) = st.e.shape.bounds(t);
            st.aabb = [lo.map(|x| x as f32), hi.map(|x| x as f32)];
            let pose = st.e.shape.pose(t);
            st.range = lattice_range(st.body, &pose, d, now);
            let n: usize = st.dims().iter().product();
            st.occ[..n]
                .iter()
                .for_each(|c| c.store(0, Ordering::Relaxed));
            let h = d.h as f64;
            // Within the grid, and at most the cube of the region's diagonal (the buffer's
            // size) at any pose.
            st.crange = std::array::from_fn(|a| {
                let cell = |x: f64| ((x - lower[a]) / h).floor();
                let top = d.n[a] as f64 - 1.0;
                (cell(lo[a]).max(0.0) as i64, cell(hi[a]).min(top) as i64)
            });
            let nc: usize = st
                .crange
                .iter()
                .map(|(l, h)| (h - l + 1).max(0) as usize)
                .product();
            st.cell_occ[..nc.min(st.cell_occ.len())]
                .iter()
                .for_each(|c| c.store(0, Ordering::Relaxed));
        }
    }

    /// One parallel pass over the particles near a sink, an active emitter or an open face
    /// ([`zone_slots`]): removal flags (0 keep, 1 open face, 2 + k sink k); the kept
    /// particles inside an active emitter take its velocity and are counted in its lattice
    /// boxes and grid cells. Then, only if any is flagged, a sequential count per sink and
    /// [`SortedParticles::remove_slots`] (O(removed)).
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
        let inv_h = 1.0 / d.h as f64;
        let lower = d.lower.map(|x| x as f64);
        let n = sp.len();
        self.flags.resize(n, 0);
        let zones: Vec<[[f32; 3]; 2]> = (sinks.iter().map(|(_, b)| *b))
            .chain(active.iter().map(|(st, _)| st.aabb))
            .collect();
        let ranges = zone_slots(d, sp, &zones, self.open, self.reach, &mut self.rows);
        let open = self.open;
        let [px, py, pz] = &sp.pos;
        let [vx, vy, vz] = &mut sp.vel;
        let vel = [vx, vy, vz].map(|v| SyncPtr(v.as_mut_ptr()));
        let flags = SyncPtr(self.flags.as_mut_ptr());
        let in_box =
            |p: [f32; 3], b: &[[f32; 3]; 2]| (0..3).all(|a| p[a] >= b[0][a] && p[a] <= b[1][a]);
        let flagged: usize = ranges
            .par_iter()
            .map(|&(s0, s1)| {
                let mut count = 0;
                for i in s0 as usize..s1 as usize {
                    let p = [px[i], py[i], pz[i]];
                    // SAFETY: the slot ranges are disjoint (zone_slots), so no other task
                    // touches slot `i`; `i < n`, the arrays' length.
                    let f = unsafe { &mut *flags.get(i) };
                    *f = 0;
                    if (0..3)
                        .any(|a| (open[a][0] && p[a] <= lo[a]) || (open[a][1] && p[a] >= hi[a]))
                    {
                        *f = 1;
                    } else if let Some(s) = sinks
                        .iter()
                        .position(|(s, b)| in_box(p, b) && inside(s, p.map(|x| x as f64)))
                    {
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
                        let v = st.velocity_at(posed, q);
                        for a in 0..3 {
                            // SAFETY: as for the flag.
                            unsafe { *vel[a].get(i) = v[a] as f32 };
                        }
                        let now = st.shift(t);
                        let b = posed.pose().to_body(q);
                        let m: [i64; 3] = std::array::from_fn(|a| {
                            ((b[a] - lower[a] - now[a]) * inv).floor() as i64
                        });
                        if let Some(s) = st.slot(m) {
                            st.occ[s].fetch_add(1, Ordering::Relaxed);
                        }
                        let c = std::array::from_fn(|a| ((q[a] - lower[a]) * inv_h).floor() as i64);
                        if let Some(s) = st.cell_slot(c) {
                            st.cell_occ[s].fetch_add(1, Ordering::Relaxed);
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
        // The removed slots in ascending order (the ranges are), counted per sink.
        self.gaps.clear();
        for &(s0, s1) in ranges.iter() {
            for i in s0..s1 {
                match self.flags[i as usize] {
                    0 => continue,
                    1 => self.report.removed_open += 1,
                    k => self.report.removed_sinks[(k - 2) as usize] += 1,
                }
                self.gaps.push(i);
            }
        }
        sp.remove_slots(&self.gaps);
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
    /// - or its lattice box holds no particle, and the grid cell it is in lies wholly in the
    ///   region and holds at most 4 particles (the region has drained, e.g. a still emitter
    ///   whose liquid falls out). The cells are the world grid's, not the moving lattice's:
    ///   liquid lagging behind its lattice boxes (slowed by a wall) crowds its cells rather
    ///   than emptying them, so a flowing emitter is not refilled twice.
    fn emit(&mut self, d: &GridDims, sp: &mut SortedParticles, t0: f64, t: f64) {
        let sp_h = 0.5 * d.h as f64;
        let lower = d.lower.map(|x| x as f64);
        let (blo, bhi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
        // Obstacles are avoided by more than the stepper's push-out distance.
        let clear = crate::geometry::solid::PUSHOUT_CELLS as f64 * d.h as f64;
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
            let (now, before) = (st.shift(t), st.shift(t0));
            let (posed, posed0) = (e.shape.at(t), e.shape.at(t0));
            let (pose, pose0) = (*posed.pose(), *posed0.pose());
            let range = st.range;
            let seed = self.seed;
            // Lattice point `m` in the body frame, displaced by `shift`.
            let point = |m: [i64; 3], shift: [f64; 3]| -> [f64; 3] {
                let r = hash(&[seed, ei as u64, m[0] as u64, m[1] as u64, m[2] as u64]);
                std::array::from_fn(|a| {
                    let u = ((r >> (21 * a)) & ((1 << 21) - 1)) as f64 / (1u64 << 21) as f64;
                    lower[a] + (m[a] as f64 + 0.5 + 0.8 * (u - 0.5)) * sp_h + shift[a]
                })
            };
            // The grid cell holding world point `p` lies wholly in the region (its corners)
            // and holds at most 4 particles (half of the sources' 8).
            let h = d.h as f64;
            let drained_cell = |p: [f64; 3]| -> bool {
                let c: [i64; 3] = std::array::from_fn(|a| ((p[a] - lower[a]) / h).floor() as i64);
                let Some(s) = st.cell_slot(c) else {
                    return false;
                };
                if st.cell_occ[s].load(Ordering::Relaxed) > 4 {
                    return false;
                }
                (0..8).all(|k| {
                    let q: [f64; 3] =
                        std::array::from_fn(|a| lower[a] + (c[a] + (k >> a & 1)) as f64 * h);
                    in_bounds(q) && inside(&posed, q)
                })
            };
            let mut added = 0u64;
            let mut capped = false;
            'lattice: for mk in range[2].0..=range[2].1 {
                for mj in range[1].0..=range[1].1 {
                    for mi in range[0].0..=range[0].1 {
                        let m = [mi, mj, mk];
                        let base = point(m, [0.0; 3]);
                        let p = pose.to_world(std::array::from_fn(|a| base[a] + now[a]));
                        if !(in_bounds(p) && inside(&posed, p)) {
                            continue;
                        }
                        if !first {
                            let q = pose0.to_world(std::array::from_fn(|a| base[a] + before[a]));
                            let entered = !(in_bounds(q) && inside(&posed0, q));
                            let drained = || {
                                st.slot(m)
                                    .is_some_and(|s| st.occ[s].load(Ordering::Relaxed) == 0)
                                    && drained_cell(p)
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
                        let v = st.velocity_at(&posed, p).map(|x| x as f32);
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
