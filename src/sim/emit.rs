//! Liquid that enters and leaves the shot: [`Emitter`]s (inflow), [`Sink`]s (outflow), open
//! domain faces, and the particle cap `limits.max_particles`.
//!
//! Layer 2 (sim): imports error, particles and geometry. Owns the scene types of `emitters`
//! and `sinks` ([`Emitter`], [`Sink`], their shape [`Region`]) with their checks, and the
//! per-substep work ([`Emission`]), which runs at the end of every substep, after the
//! advection (and the density correction), on the cell-sorted particles:
//!
//! 1. removal: every particle inside a sink, or pinned by the advection's clamp against an open
//!    face (it would have left the domain), is removed by a stable in-place compaction, so the
//!    survivors keep their relative order;
//! 2. emission, for each emitter active at the substep's end time, in scene order: the
//!    particles inside the emitter's shape take its velocity, and every empty sub-cell of the
//!    2 x 2 x 2 pattern of the sources in the emitter's cells gets a particle, jittered inside
//!    its sub-cell by a counter-based hash of (seed, emitter index, frame, substep, cell,
//!    sub-cell) (no shared random stream: the result does not depend on thread count, and a
//!    resumed run re-derives it); new particles are appended in (emitter, cell, sub-cell) order
//!    with fresh creation indices, and at the end of the frame [`Emission::store`] writes the
//!    survivors in creation order followed by the new ones. Emission stops at
//!    `max_particles`.
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
use crate::particles::Particles;
use rayon::prelude::*;

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

/// One emitter's grid footprint: its cell range.
struct EmitterCells {
    lo: [usize; 3],
    hi: [usize; 3],
    cells: usize,
}

/// The runtime state of emission and removal (allocated once with the simulation).
pub struct Emission {
    emitters: Vec<(Emitter, EmitterCells)>,
    sinks: Vec<Sink>,
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
                let [lo, hi] = e.shape.aabb();
                let lo: [usize; 3] = std::array::from_fn(|a| {
                    (((lo[a] - d.lower[a] as f64) / d.h as f64).floor().max(1.0) as usize)
                        .min(d.n[a] - 1)
                });
                let hi: [usize; 3] = std::array::from_fn(|a| {
                    (((hi[a] - d.lower[a] as f64) / d.h as f64).ceil() as usize)
                        .min(d.n[a] - 1)
                        .max(lo[a])
                });
                let cells = (0..3).map(|a| hi[a] - lo[a]).product();
                (e.clone(), EmitterCells { lo, hi, cells })
            })
            .collect();
        Self {
            emitters,
            sinks: sinks.to_vec(),
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

    /// Most particles one refill of every emitter adds.
    fn refill(&self) -> usize {
        self.emitters.iter().map(|(_, c)| 8 * c.cells).sum()
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

    /// Sets the grid velocity of every face inside an emitter active in `(t0, t]` to its
    /// velocity.
    pub fn impose_velocity(&self, d: &GridDims, vel: &mut [Vec<f32>; 3], t0: f64, t: f64) {
        for (e, cells) in &self.emitters {
            if !e.active(t0, t) {
                continue;
            }
            for (a, va) in vel.iter_mut().enumerate() {
                let m = d.face_n(a);
                for k in cells.lo[2]..=cells.hi[2].min(m[2] - 1) {
                    for j in cells.lo[1]..=cells.hi[1].min(m[1] - 1) {
                        for i in cells.lo[0]..=cells.hi[0].min(m[0] - 1) {
                            let idx = [i, j, k];
                            let p: [f64; 3] = std::array::from_fn(|b| {
                                let off = if b == a { 0.0 } else { 0.5 };
                                d.lower[b] as f64 + (idx[b] as f64 + off) * d.h as f64
                            });
                            if e.shape.contains(p) {
                                va[i + m[0] * (j + m[1] * k)] = e.velocity[a] as f32;
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
        self.remove(d, sp);
        if self.emitters.iter().any(|(e, _)| e.active(t0, t)) {
            self.emit(d, sp, t0, t);
        }
    }

    /// Stable compaction of the particles in sinks and against open faces: a parallel pass
    /// flags them (0 keep, 1 open face, 2 + k sink k), then, only if any is flagged, a
    /// sequential count per sink and [`SortedParticles::retain_unflagged`].
    fn remove(&mut self, d: &GridDims, sp: &mut SortedParticles) {
        let any_open = self.open.iter().flatten().any(|&o| o);
        if self.sinks.is_empty() && !any_open {
            return;
        }
        // The advection clamps positions to these bounds: a particle on an open face's bound
        // was moving out of the domain.
        let (lo, hi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
        let n = sp.len();
        self.flags.resize(n, 0);
        let (open, sinks) = (self.open, &self.sinks);
        let [px, py, pz] = &sp.pos;
        let flagged: usize = self
            .flags
            .par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, fl)| {
                let mut count = 0;
                for (k, f) in fl.iter_mut().enumerate() {
                    let i = c * CHUNK + k;
                    let p = [px[i], py[i], pz[i]];
                    *f = 0;
                    if (0..3)
                        .any(|a| (open[a][0] && p[a] <= lo[a]) || (open[a][1] && p[a] >= hi[a]))
                    {
                        *f = 1;
                    } else if !sinks.is_empty() {
                        let q = p.map(|x| x as f64);
                        if let Some(k) = sinks.iter().position(|s| s.shape.contains(q)) {
                            *f = 2 + k.min(253) as u8;
                        }
                    }
                    count += (*f != 0) as usize;
                }
                count
            })
            .sum();
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
    /// time, each point jittered inside its sub-cell by [`hash`] of (seed, emitter, lattice
    /// index)) that moves at the emitter's velocity; a lattice point becomes a particle in the
    /// substep in which it enters the emitter's shape (at the emitter's first active substep,
    /// every point inside). So the region stays full of liquid moving at `v`, and the flow is
    /// `v x` open area particles' worth per second whatever the substeps.
    fn emit(&mut self, d: &GridDims, sp: &mut SortedParticles, t0: f64, t: f64) {
        let h = d.h as f64;
        let sp_h = 0.5 * h;
        let lower = d.lower.map(|x| x as f64);
        // The emitter's velocity on the particles inside its shape.
        for (e, _) in &self.emitters {
            if !e.active(t0, t) {
                continue;
            }
            let v = e.velocity.map(|x| x as f32);
            let [lo, hi] = e.shape.aabb();
            let (lo, hi) = (lo.map(|x| x as f32), hi.map(|x| x as f32));
            let [px, py, pz] = &sp.pos;
            let [vx, vy, vz] = &mut sp.vel;
            vx.par_chunks_mut(CHUNK)
                .zip(vy.par_chunks_mut(CHUNK))
                .zip(vz.par_chunks_mut(CHUNK))
                .enumerate()
                .for_each(|(c, ((vx, vy), vz))| {
                    for k in 0..vx.len() {
                        let i = c * CHUNK + k;
                        let p = [px[i], py[i], pz[i]];
                        if (0..3).all(|a| p[a] >= lo[a] && p[a] <= hi[a])
                            && e.shape.contains(p.map(|x| x as f64))
                        {
                            (vx[k], vy[k], vz[k]) = (v[0], v[1], v[2]);
                        }
                    }
                });
        }
        let (blo, bhi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
        // Inside the emitter's shape and the advection's clamp bounds (the shape clipped to
        // the liquid region).
        let inside = |e: &Emitter, p: [f64; 3]| {
            e.shape.contains(p)
                && (0..3).all(|a| {
                    let x = p[a] as f32;
                    x >= blo[a] && x <= bhi[a]
                })
        };
        for (ei, (e, _)) in self.emitters.iter().enumerate() {
            if !e.active(t0, t) {
                continue;
            }
            let first = t0 <= e.start;
            let v = e.velocity;
            let vf = v.map(|x| x as f32);
            let shift =
                |time: f64| -> [f64; 3] { std::array::from_fn(|a| v[a] * (time - e.start)) };
            let (now, before) = (shift(t), shift(t0));
            let [lo, hi] = e.shape.aabb();
            let range: [(i64, i64); 3] = std::array::from_fn(|a| {
                (
                    ((lo[a] - lower[a] - now[a]) / sp_h).floor() as i64 - 1,
                    ((hi[a] - lower[a] - now[a]) / sp_h).ceil() as i64 + 1,
                )
            });
            for mk in range[2].0..=range[2].1 {
                for mj in range[1].0..=range[1].1 {
                    for mi in range[0].0..=range[0].1 {
                        let m = [mi, mj, mk];
                        let r = hash(&[self.seed, ei as u64, mi as u64, mj as u64, mk as u64]);
                        let base: [f64; 3] = std::array::from_fn(|a| {
                            let u =
                                ((r >> (21 * a)) & ((1 << 21) - 1)) as f64 / (1u64 << 21) as f64;
                            lower[a] + (m[a] as f64 + 0.5 + 0.8 * (u - 0.5)) * sp_h
                        });
                        let p: [f64; 3] = std::array::from_fn(|a| base[a] + now[a]);
                        if !inside(e, p) {
                            continue;
                        }
                        if !first {
                            let q: [f64; 3] = std::array::from_fn(|a| base[a] + before[a]);
                            if inside(e, q) {
                                continue;
                            }
                        }
                        let pf = p.map(|x| x as f32);
                        if sp.len() >= self.cap {
                            self.report.capped = true;
                            return;
                        }
                        sp.push(pf, vf, self.next_id);
                        self.next_id += 1;
                        self.report.added[ei] += 1;
                    }
                }
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
        for c in &mut out.affine {
            c.resize(if sp.affine { n } else { 0 }, 0.0);
        }
        for (s, &id) in sp.ids.iter().enumerate() {
            let o = self.rank[id as usize] as usize;
            for a in 0..3 {
                out.pos[a][o] = sp.pos[a][s];
                out.vel[a][o] = sp.vel[a][s];
            }
            if sp.affine {
                for (c, src) in out.affine.iter_mut().zip(&sp.aff) {
                    c[o] = src[s];
                }
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
    fn emitter_json_round_trips_and_names_missing_keys() {
        let e: Emitter = serde_json::from_str(
            r#"{"type":"box","min":[0,0,0],"max":[1,1,1],"velocity":[1,0,0],"end":2}"#,
        )
        .unwrap();
        assert_eq!(e.start, 0.0);
        assert!(e.active(0.0, 0.1) && e.active(1.9, 2.1) && !e.active(2.0, 2.5));
        let back: Emitter = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
        assert_eq!(back, e);
        let bad = serde_json::from_str::<Emitter>(r#"{"type":"sphere","center":[0,0,0]}"#);
        assert!(bad.unwrap_err().to_string().contains("`radius`"));
        let bad = serde_json::from_str::<Sink>(
            r#"{"type":"box","min":[0,0,0],"max":[1,1,1],"velocity":[0,0,0]}"#,
        );
        assert!(bad.unwrap_err().to_string().contains("velocity"));
    }
}
