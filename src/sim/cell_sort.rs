//! Sorting particles by grid cell (stable counting sort).
//!
//! Every substep begins by reordering the particle arrays so that the particles of cell `c`
//! (flat index, x fastest, z slowest, see [`super::mac_grid`]) occupy
//! `cell_start[c]..cell_start[c + 1]`. The sort is stable, so the order is a pure function of
//! the order before it: at the start of a frame the particles are in creation order, hence the
//! order within every substep depends only on the frame's input, never on the thread count.
//! The sorted order lets the particle-to-grid splat run over z-planes of cells with a fixed
//! summation order (see [`super::transfer`]), gives the cell labels for free, and keeps memory
//! access coherent in every particle stage. The histogram and the stable destination scan are
//! sequential (O(particles + cells)); the permutation itself is a parallel gather.
//!
//! `ids[s]` is the creation index of the particle in sorted slot `s`; the frame ends by
//! scattering the particles back to creation order.

use super::mac_grid::GridDims;
use rayon::prelude::*;

/// Particle state in cell-sorted order, plus the scratch the sort needs.
#[derive(Default)]
pub struct SortedParticles {
    /// Positions `pos[axis][slot]`, m.
    pub pos: [Vec<f32>; 3],
    /// Velocities `vel[axis][slot]`, m/s.
    pub vel: [Vec<f32>; 3],
    /// Creation index of each slot.
    pub ids: Vec<u32>,
    /// `cell_start[c]..cell_start[c+1]` are the slots of cell `c` (length cells + 1).
    pub cell_start: Vec<u32>,
    key: Vec<u32>,
    tmp_pos: [Vec<f32>; 3],
    tmp_vel: [Vec<f32>; 3],
    tmp_ids: Vec<u32>,
    tmp_u: Vec<u32>,
}

impl SortedParticles {
    /// Number of particles.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True without particles.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Loads particles in creation order (ids = 0..n). Reuses the buffers.
    pub fn load(&mut self, p: &super::Particles, cells: usize) {
        let n = p.len();
        for a in 0..3 {
            self.pos[a].clear();
            self.pos[a].extend_from_slice(&p.pos[a]);
            self.vel[a].clear();
            self.vel[a].extend_from_slice(&p.vel[a]);
        }
        self.ids.clear();
        self.ids.extend(0..n as u32);
        self.key.resize(n, 0);
        for a in 0..3 {
            self.tmp_pos[a].resize(n, 0.0);
            self.tmp_vel[a].resize(n, 0.0);
        }
        self.tmp_ids.resize(n, 0);
        self.tmp_u.resize(n.max(cells + 1), 0);
        self.cell_start.resize(cells + 1, 0);
    }

    /// Writes the particles back in creation order into `out` (same length).
    pub fn store(&self, out: &mut super::Particles) {
        let ids = &self.ids;
        let [p0, p1, p2] = &mut out.pos;
        let [v0, v1, v2] = &mut out.vel;
        let jobs: [(&mut Vec<f32>, &Vec<f32>); 6] = [
            (p0, &self.pos[0]),
            (p1, &self.pos[1]),
            (p2, &self.pos[2]),
            (v0, &self.vel[0]),
            (v1, &self.vel[1]),
            (v2, &self.vel[2]),
        ];
        jobs.into_par_iter()
            .for_each(|(out, src)| scatter(out, src, ids));
    }

    /// Stable counting sort by cell; fills `cell_start`.
    pub fn sort(&mut self, d: &GridDims) {
        let n = self.len();
        let (px, py, pz) = (&self.pos[0], &self.pos[1], &self.pos[2]);
        self.key
            .par_iter_mut()
            .enumerate()
            .with_min_len(4096)
            .for_each(|(s, k)| *k = d.cell_of([px[s], py[s], pz[s]]) as u32);
        // Histogram, exclusive prefix sum (sequential: O(n + cells), order-independent result).
        let cs = &mut self.cell_start;
        cs.iter_mut().for_each(|c| *c = 0);
        for &k in &self.key {
            cs[k as usize + 1] += 1;
        }
        for c in 1..cs.len() {
            cs[c] += cs[c - 1];
        }
        // Destination slot of each particle, scanning in the current order (stable); the
        // running cursors live in `tmp_u`, which `load` sized for max(n, cells + 1).
        let cursor = &mut self.tmp_u[..cs.len()];
        cursor.copy_from_slice(cs);
        for k in self.key.iter_mut() {
            let c = *k as usize;
            *k = cursor[c];
            cursor[c] += 1;
        }
        // Source slot of each destination, then every array gathered in parallel.
        let src = &mut self.tmp_u[..n];
        for (s, &dst) in self.key.iter().enumerate() {
            src[dst as usize] = s as u32;
        }
        let src = &self.tmp_u[..n];
        let gather = |out: &mut [f32], v: &[f32]| {
            out.par_iter_mut()
                .zip(src.par_iter())
                .with_min_len(8192)
                .for_each(|(o, &s)| *o = v[s as usize]);
        };
        for a in 0..3 {
            gather(&mut self.tmp_pos[a], &self.pos[a]);
            gather(&mut self.tmp_vel[a], &self.vel[a]);
            std::mem::swap(&mut self.pos[a], &mut self.tmp_pos[a]);
            std::mem::swap(&mut self.vel[a], &mut self.tmp_vel[a]);
        }
        let ids = &self.ids;
        self.tmp_ids
            .par_iter_mut()
            .zip(src.par_iter())
            .with_min_len(8192)
            .for_each(|(o, &s)| *o = ids[s as usize]);
        std::mem::swap(&mut self.ids, &mut self.tmp_ids);
    }
}

/// `out[ids[s]] = src[s]`.
fn scatter(out: &mut [f32], src: &[f32], ids: &[u32]) {
    for (s, &id) in ids.iter().enumerate() {
        out[id as usize] = src[s];
    }
}
