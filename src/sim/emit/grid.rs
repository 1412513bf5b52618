//! The grid side of emission (open faces' labels, the emitters' imposed grid velocity) and
//! the frame's end (creation order), as methods of [`Emission`] (see the parent module).

use super::Emission;
use crate::particles::Particles;
use crate::sim::cell_sort::SortedParticles;
use crate::sim::mac_grid::{CellLabel, FaceKind, GridDims};
use crate::sim::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Blocks of creation indices the frame end's rank scan is split into (at most).
const RANK_BLOCKS: usize = 256;

impl Emission {
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
    /// at `t0`) to its velocity plus the region's rigid velocity there, except on an
    /// obstacle's wall faces (`kinds`: a solid cell on one side, not the domain's wall layer),
    /// whose velocity is the solid's. The projection takes a wall face's velocity as a
    /// prescribed flux, so an emitter overlapping an obstacle drove liquid through the
    /// obstacle's wall, and in liquid sealed from the air (a brim-full closed tank) that inflow
    /// had nowhere to go: every later solve ran to its iteration cap
    /// (`scripts/fuzz_motion.py --brim --mix` seed 51, session 35). On the domain's walls the
    /// emitter still sets the flux: an emitter against a wall is an inlet through it
    /// (`scenes/river.json`).
    pub fn impose_velocity(
        &mut self,
        d: &GridDims,
        kinds: &[Vec<FaceKind>; 3],
        vel: &mut [Vec<f32>; 3],
        (t0, t): (f64, f64),
    ) {
        for st in &mut self.emitters {
            let e = &st.e;
            if !e.active(t0, t) {
                continue;
            }
            let posed = e.shape.at(t0);
            let v = posed.pose().dir_to_world(st.vb);
            // An obstacle's wall face (a wall face not on the domain's wall layer).
            let obstacle_wall = |a: usize, f: usize| {
                let m = d.face_n(a);
                let i = [f % m[0], (f / m[0]) % m[1], f / (m[0] * m[1])][a];
                kinds[a][f] == FaceKind::Wall && !d.is_domain_wall_face(a, i)
            };
            // A static region's faces are found once and kept.
            let still = !e.shape.is_animated();
            if still && st.faces_ready {
                for (a, va) in vel.iter_mut().enumerate() {
                    for &f in &st.faces[a] {
                        if !obstacle_wall(a, f as usize) {
                            va[f as usize] = v[a] as f32;
                        }
                    }
                }
                continue;
            }
            let (lo, hi) = e.shape.bounds(t0);
            let band = d.h as f64;
            let cell = |x: f64, a: usize| ((x - d.lower[a] as f64) / d.h as f64).floor();
            for (a, va) in vel.iter_mut().enumerate() {
                let m = d.face_n(a);
                st.faces[a].clear();
                let r: [(usize, usize); 3] = std::array::from_fn(|b| {
                    let l = (cell(lo[b], b) - 1.0).max(0.0) as usize;
                    let h = (cell(hi[b], b) + 2.0).max(0.0) as usize;
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
                            // Inside the region, or within a cell of it on a face between
                            // two interior cells (the faces a particle inside interpolates
                            // from: without them the liquid at the region's edge sags out).
                            let dist = posed.signed_distance(p);
                            let interior = (0..3).all(|b| {
                                let (first, last) =
                                    if b == a { (2, m[b] - 3) } else { (1, m[b] - 2) };
                                idx[b] >= first && idx[b] <= last
                            });
                            if dist < 0.0 || (dist < band && interior) {
                                let w = posed.velocity(p);
                                let f = i + m[0] * (j + m[1] * k);
                                if !obstacle_wall(a, f) {
                                    va[f] = (v[a] + w[a]) as f32;
                                }
                                if still {
                                    st.faces[a].push(f as u32);
                                }
                            }
                        }
                    }
                }
            }
            st.faces_ready = still;
        }
    }

    /// At the frame's end: writes the particles in creation order (survivors of the frame's
    /// start, then the emitted ones) into `out`, resized to the count.
    pub fn store(&mut self, sp: &mut SortedParticles, out: &mut Particles) {
        let n = sp.len();
        let ids_total = self.next_id.max(n as u32) as usize;
        if n == ids_total {
            sp.store_into(out, None);
            return;
        }
        // rank[id] = position of creation index `id` among the survivors (u32::MAX for the
        // removed): a mark per id, then an exclusive scan over blocks of ids, every pass in
        // parallel (one thread's passes over a 1M-particle frame's ids were the serial tail of
        // every frame in which a crowded cell was thinned).
        let ids = &sp.ids;
        assert!(
            ids.par_iter()
                .with_min_len(8192)
                .all(|&id| (id as usize) < ids_total),
            "store: a creation index past the frame's count"
        );
        self.rank.clear();
        self.rank.par_extend(rayon::iter::repeat_n(0u32, ids_total));
        let marks = SyncPtr(self.rank.as_mut_ptr());
        ids.par_iter().with_min_len(8192).for_each(|&id| {
            // SAFETY: in bounds (checked above); the ids are distinct (creation indices), so
            // no two tasks write one entry.
            unsafe { *marks.get(id as usize) = 1 };
        });
        let block = ids_total.div_ceil(RANK_BLOCKS).max(4096);
        let mut base = [0u32; RANK_BLOCKS];
        let blocks = ids_total.div_ceil(block);
        base[..blocks]
            .par_iter_mut()
            .zip(self.rank.par_chunks(block))
            .for_each(|(b, r)| *b = r.iter().sum());
        let mut at = 0;
        for b in &mut base[..blocks] {
            (*b, at) = (at, at + *b);
        }
        self.rank
            .par_chunks_mut(block)
            .zip(base[..blocks].par_iter())
            .for_each(|(r, &b)| {
                let mut at = b;
                for x in r {
                    *x = if *x != 0 {
                        at += 1;
                        at - 1
                    } else {
                        u32::MAX
                    };
                }
            });
        sp.store_into(out, Some(&self.rank));
    }
}
