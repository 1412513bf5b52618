//! Sorting particles by grid cell (stable counting sort).
//!
//! Every substep begins by reordering the particle arrays so that the particles of cell `c`
//! (flat index, x fastest, z slowest, see [`super::mac_grid`]) occupy
//! `cell_start[c]..cell_start[c + 1]`. The sort is stable, so the order is a pure function of
//! the order before it: at the start of a frame the particles are in creation order, hence the
//! order within every substep depends only on the frame's input, never on the thread count.
//! The sorted order lets the particle-to-grid splat run over blocks of cell rows with a fixed
//! summation order (see [`super::transfer`]), gives the cell labels for free, and keeps memory
//! access coherent in every particle stage. The stable counting sort is a two-pass parallel
//! radix sort (by group of cells, then by cell within each group, the cell keys computed
//! vectorised in the first pass; see [`SortedParticles::counting_sort`]: no sequential pass
//! over the particles or the cells), and the permutation itself is a parallel gather.
//!
//! `ids[s]` is the creation index of the particle in sorted slot `s`; the frame ends by
//! scattering the particles back to creation order. Every particle array (positions,
//! velocities and, with APIC transfers (`affine` set), the nine affine arrays) is permuted
//! two at a time ([`super::permute`]) through two scratch arrays, the shared `tmp` and the
//! cell keys' array (dead after the counting sort): gathered into them, swapped in, and the
//! old arrays become the scratch of the next pair (two arrays of scratch, not one per array:
//! 20 bytes per particle less). The ids go with the last odd array, or alone, into the keys'
//! array.

mod removal;

use super::mac_grid::GridDims;
use super::permute::{bits_f32, bits_u32, gather1, gather2, scatter};
use super::sync_ptr::SyncPtr;
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
    /// Whether the particles carry APIC affine matrices (`aff`); set before [`Self::load`].
    pub affine: bool,
    /// APIC affine matrices `aff[3 a + b][slot]` = `d v_a / d x_b`, 1/s (empty unless
    /// `affine`).
    pub aff: [Vec<f32>; 9],
    /// The permutation's scratch, shared by every `f32` array in turn.
    tmp: Vec<f32>,
    /// `cell_start[c]..cell_start[c+1]` are the slots of cell `c` (length cells + 1).
    pub cell_start: Vec<u32>,
    /// Cell key of each slot; after the counting sort, the scratch of the ids' permutation.
    key: Vec<u32>,
    tmp_u: Vec<u32>,
    /// Per-cell cursors of the scatter (length cells + 1).
    cursor: Vec<u32>,
    /// The sort's bucket offsets per chunk of slots and group of cells.
    hist: Vec<u32>,
    /// First bucket slot of each group of cells (groups + 1).
    group_start: Vec<u32>,
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

    /// Loads particles in creation order (ids = 0..n), copying them. Reuses the buffers.
    pub fn load(&mut self, p: &super::Particles, cells: usize) {
        for a in 0..3 {
            self.pos[a].clear();
            self.pos[a].extend_from_slice(&p.pos[a]);
            self.vel[a].clear();
            self.vel[a].extend_from_slice(&p.vel[a]);
        }
        for (k, c) in self.aff.iter_mut().enumerate() {
            c.clear();
            if self.affine && p.has_affine() {
                c.extend_from_slice(&p.affine[k]);
            }
        }
        self.prepare(p.len(), cells);
    }

    /// Loads particles in creation order (ids = 0..n) by moving their arrays in, without a
    /// copy: `p` is left empty until [`Self::store_into`] gives them back. (The simulation
    /// keeps one copy of its particles, not two: 24 bytes per particle.)
    pub fn take(&mut self, p: &mut super::Particles, cells: usize) {
        let (n, had_affine) = (p.len(), p.has_affine());
        for a in 0..3 {
            self.pos[a] = std::mem::take(&mut p.pos[a]);
            self.vel[a] = std::mem::take(&mut p.vel[a]);
        }
        for (k, c) in self.aff.iter_mut().enumerate() {
            if self.affine && had_affine {
                *c = std::mem::take(&mut p.affine[k]);
            } else {
                c.clear();
            }
        }
        self.prepare(n, cells);
    }

    /// After [`Self::load`] or [`Self::take`] of `n` particles: ids `0..n`, zero affine
    /// matrices where the particles had none, and the scratch sized.
    fn prepare(&mut self, n: usize, cells: usize) {
        // Every array written in parallel (the frame's only passes over every particle
        // outside the stages): the ids, and the scratch where its size changed (a first frame's
        // 17 MB at 1M particles, which `resize` would write on one thread).
        self.ids.clear();
        self.ids.par_extend((0..n as u32).into_par_iter());
        if self.affine {
            for c in self.aff.iter_mut() {
                sized(c, n, 0.0);
            }
        }
        sized(&mut self.tmp, n, 0.0);
        sized(&mut self.key, n, 0);
        sized(&mut self.tmp_u, n, 0);
        sized(&mut self.cursor, cells + 1, 0);
        sized(&mut self.cell_start, cells + 1, 0);
    }

    /// Gives the particles back in creation order: every array is permuted in place (through
    /// the scratch, two arrays per pass) so that slot `s` goes to `rank[ids[s]]` (`rank`: `None` for the
    /// identity, when no particle was removed), then moved into `out`, leaving this empty until
    /// the next [`Self::take`]. `rank` must map the ids to a permutation of `0..len`.
    pub fn store_into(&mut self, out: &mut super::Particles, rank: Option<&[u32]>) {
        let n = self.len();
        self.tmp.resize(n, 0.0);
        self.key.resize(n, 0);
        // Each slot's destination, looked up once (not once per array: a random read of
        // `rank` per slot and array), into `tmp_u` (free at the frame's end).
        let dest: &[u32] = match rank {
            Some(r) => {
                self.tmp_u.resize(n, 0);
                let ids = &self.ids;
                self.tmp_u
                    .par_iter_mut()
                    .zip(ids.par_iter())
                    .with_min_len(8192)
                    .for_each(|(t, &id)| *t = r[id as usize]);
                &self.tmp_u
            }
            None => &self.ids,
        };
        assert!(
            dest.par_iter()
                .with_min_len(8192)
                .all(|&t| (t as usize) < n),
            "store_into: a destination past the particle count"
        );
        // Two arrays per pass (the destinations read once for both), through `tmp` and the
        // keys' array (dead at the frame's end) as the second scratch.
        let mut b = bits_f32(std::mem::take(&mut self.key));
        let aff = if self.affine {
            &mut self.aff[..]
        } else {
            &mut []
        };
        let mut arrays = self.pos.iter_mut().chain(self.vel.iter_mut()).chain(aff);
        while let Some(x) = arrays.next() {
            match arrays.next() {
                Some(y) => {
                    // SAFETY: the destinations are a permutation of 0..n (distinct ids, and
                    // `rank` maps them one to one), checked in bounds above.
                    unsafe { scatter(dest, [&x[..], &y[..]], [&mut self.tmp, &mut b]) };
                    std::mem::swap(x, &mut self.tmp);
                    std::mem::swap(y, &mut b);
                }
                None => {
                    // SAFETY: as above.
                    unsafe { scatter(dest, [&x[..]], [&mut self.tmp]) };
                    std::mem::swap(x, &mut self.tmp);
                }
            }
        }
        self.key = bits_u32(b);
        for a in 0..3 {
            out.pos[a] = std::mem::take(&mut self.pos[a]);
            out.vel[a] = std::mem::take(&mut self.vel[a]);
        }
        if self.affine {
            for (o, c) in out.affine.iter_mut().zip(self.aff.iter_mut()) {
                *o = std::mem::take(c);
            }
        } else {
            out.affine = Default::default();
        }
    }

    /// Room for `more` particles beyond the current ones, scratch included (emission).
    pub fn reserve(&mut self, more: usize) {
        for a in 0..3 {
            self.pos[a].reserve(more);
            self.vel[a].reserve(more);
        }
        self.tmp.reserve(more);
        for v in [&mut self.ids, &mut self.key, &mut self.tmp_u] {
            v.reserve(more);
        }
        if self.affine {
            for c in self.aff.iter_mut() {
                c.reserve(more);
            }
        }
    }

    /// Appends one particle with creation index `id` (emission; the next sort places it).
    pub fn push(&mut self, pos: [f32; 3], vel: [f32; 3], id: u32) {
        for a in 0..3 {
            self.pos[a].push(pos[a]);
            self.vel[a].push(vel[a]);
        }
        if self.affine {
            for c in &mut self.aff {
                c.push(0.0);
            }
        }
        self.ids.push(id);
    }

    /// Removes the particles in slots `gaps` (ascending): each gap below the new length is
    /// filled by the next kept particle from beyond it, then the arrays are truncated. O(gaps),
    /// not O(particles); the slot order changes, deterministically (a function of the gaps),
    /// and the frame's end writes creation order from `ids` whatever the slot order.
    pub fn remove_slots(&mut self, gaps: &[u32]) {
        let n = self.len();
        if gaps.is_empty() {
            return;
        }
        let kept = n - gaps.len();
        let below = gaps.partition_point(|&g| (g as usize) < kept);
        let mut above = gaps[below..].iter().peekable();
        let mut src = kept;
        for &dst in &gaps[..below] {
            // The next slot at or after `src` that is not removed.
            while above.peek().is_some_and(|&&g| g as usize == src) {
                above.next();
                src += 1;
            }
            let dst = dst as usize;
            for a in 0..3 {
                self.pos[a][dst] = self.pos[a][src];
                self.vel[a][dst] = self.vel[a][src];
            }
            if self.affine {
                for c in &mut self.aff {
                    c[dst] = c[src];
                }
            }
            self.ids[dst] = self.ids[src];
            src += 1;
        }
        for a in 0..3 {
            self.pos[a].truncate(kept);
            self.vel[a].truncate(kept);
        }
        if self.affine {
            for c in &mut self.aff {
                c.truncate(kept);
            }
        }
        self.ids.truncate(kept);
    }

    /// Stable counting sort by cell; fills `cell_start`.
    pub fn sort(&mut self, d: &GridDims) {
        let n = self.len();
        // The scratch follows the particle count (emission and removal change it).
        self.key.resize(n, 0);
        self.tmp.resize(n, 0.0);
        self.tmp_u.resize(n, 0);
        self.counting_sort(Some(d));
        // SAFETY: the counting sort leaves a permutation of 0..n in `tmp_u`.
        unsafe { self.permute() };
    }

    /// Every array gathered in parallel from its source slot `tmp_u` (whose length `m` the
    /// arrays take), two arrays per pass (the source slots read once for both) into two
    /// scratch arrays: `tmp` and the keys' array, dead after the counting sort (as `f32`
    /// bits). The ids go with the last odd array or alone, into the keys' array, which then
    /// holds the old ids.
    ///
    /// # Safety
    /// Every entry of `tmp_u` is below the particle count.
    unsafe fn permute(&mut self) {
        let m = self.tmp_u.len();
        self.tmp.resize(m, 0.0);
        self.key.resize(m, 0);
        let src = &self.tmp_u[..];
        let mut b = bits_f32(std::mem::take(&mut self.key));
        let aff = if self.affine {
            &mut self.aff[..]
        } else {
            &mut []
        };
        let mut arrays = self.pos.iter_mut().chain(self.vel.iter_mut()).chain(aff);
        let mut single = None;
        while let Some(x) = arrays.next() {
            let Some(y) = arrays.next() else {
                single = Some(x);
                break;
            };
            // The scratch is the previous pair's old arrays: `m` long where the count shrinks.
            self.tmp.truncate(m);
            b.truncate(m);
            // SAFETY: `src`'s entries are below the arrays' length (the caller's contract).
            unsafe { gather2(src, (&mut self.tmp, &mut b), (&x[..], &y[..])) };
            std::mem::swap(x, &mut self.tmp);
            std::mem::swap(y, &mut b);
        }
        let mut b = bits_u32(b);
        self.tmp.truncate(m);
        b.truncate(m);
        match single {
            Some(x) => {
                // SAFETY: as above.
                unsafe { gather2(src, (&mut self.tmp, &mut b), (&x[..], &self.ids[..])) };
                std::mem::swap(x, &mut self.tmp);
            }
            // SAFETY: as above.
            None => unsafe { gather1(src, &mut b, &self.ids) },
        }
        self.key = std::mem::replace(&mut self.ids, b);
    }

    /// The stable counting sort of the keys (`key`, or with `keys_of` the cell keys of the
    /// positions on that grid, which the first pass computes into `key` chunk by chunk: one
    /// pass over the keys less), in parallel: fills `cell_start` and the source slot of each
    /// destination, `tmp_u[..n]`. A stable sort by key has one result, so it is
    /// the same for any thread count and any chunking (checked against the sequential
    /// `counting_sort_serial` by a test). Two passes of a most-significant-digit radix
    /// sort:
    ///
    /// 1. the particles, in [`CHUNK`]-slot chunks, are bucketed by cell *group* (runs of
    ///    `group_cells` consecutive cells): a histogram per chunk and group (in parallel), the
    ///    exclusive scan over groups then chunks (each group's total and its run over the
    ///    chunks in parallel over the groups; only the groups' starts, at most [`MAX_GROUPS`]
    ///    numbers, in sequence), then each chunk writes its slots and keys to its run of
    ///    each group, in slot order (in parallel; the runs are disjoint);
    /// 2. each group, in parallel, counts its particles per cell, writes its cells'
    ///    `cell_start`, and places its slots by cell, in bucket order (so in slot order: stable).
    ///
    /// The bucketed keys live in `tmp` (free until the gathers, as `u32` bits) and the slots in
    /// `tmp_u`; the placed slots go to `key` (read only in pass 1), which then swaps with
    /// `tmp_u`.
    fn counting_sort(&mut self, keys_of: Option<&GridDims>) {
        let n = self.len();
        let cells = self.cell_start.len() - 1;
        // A power of two, so that a key's group is a shift (a division per particle and pass
        // cost more than the rest of the bucketing); a stable sort has one result whatever
        // the grouping.
        let group_cells = GROUP_CELLS
            .max(cells.div_ceil(MAX_GROUPS))
            .next_power_of_two();
        let group_shift = group_cells.trailing_zeros();
        let groups = cells.div_ceil(group_cells).max(1);
        let chunks = n.div_ceil(CHUNK);
        self.hist.resize(chunks * groups, 0);
        self.group_start.resize(groups + 1, 0);
        let group_of = |k: u32| (k >> group_shift) as usize;
        // Pass 1: histograms per chunk, each chunk's cell keys computed first (from the
        // positions, with `keys_of`; vectorised) while they are in cache.
        let pos = &self.pos;
        self.hist[..chunks * groups]
            .par_chunks_mut(groups)
            .zip(self.key[..n].par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(c, (h, ks))| {
                if let Some(d) = keys_of {
                    let r = c * CHUNK..c * CHUNK + ks.len();
                    let [px, py, pz] = pos.each_ref().map(|p| &p[r.clone()]);
                    cell_keys(d, px, py, pz, ks);
                }
                // Four tallies, one per slot mod 4, summed at the end: nearly sorted keys
                // (every sort but a frame's first) fall in one group for thousands of slots
                // in a row, and with one tally every increment would wait on the one before.
                let mut more = [[0u32; MAX_GROUPS]; 3];
                h.fill(0);
                let mut quads = ks.chunks_exact(4);
                for q in &mut quads {
                    h[group_of(q[0])] += 1;
                    more[0][group_of(q[1])] += 1;
                    more[1][group_of(q[2])] += 1;
                    more[2][group_of(q[3])] += 1;
                }
                for &k in quads.remainder() {
                    h[group_of(k)] += 1;
                }
                for (g, t) in h.iter_mut().enumerate() {
                    *t += more[0][g] + more[1][g] + more[2][g];
                }
            });
        let (keys, hist) = (&self.key[..n], &mut self.hist[..chunks * groups]);
        // Exclusive scan, group-major: hist[c][g] becomes the first bucket slot of chunk c's
        // particles of group g. The groups' totals and their runs over the chunks in parallel
        // over the groups, the groups' starts (at most MAX_GROUPS) in sequence.
        let gs = &mut self.group_start;
        gs[1..]
            .par_iter_mut()
            .enumerate()
            .for_each(|(g, t)| *t = (0..chunks).map(|c| hist[c * groups + g]).sum());
        gs[0] = 0;
        for g in 0..groups {
            gs[g + 1] += gs[g];
        }
        debug_assert_eq!(gs[groups] as usize, n);
        let hp = SyncPtr(hist.as_mut_ptr());
        gs[..groups].par_iter().enumerate().for_each(|(g, &start)| {
            let mut at = start;
            for c in 0..chunks {
                // SAFETY: column g of the chunks x groups table is this task's alone.
                let h = unsafe { &mut *hp.get(c * groups + g) };
                let m = *h;
                *h = at;
                at += m;
            }
        });
        let hist = &mut self.hist[..chunks * groups];
        let sp = SyncPtr(self.tmp_u.as_mut_ptr());
        let kp = SyncPtr(self.tmp.as_mut_ptr() as *mut u32);
        hist.par_chunks_mut(groups)
            .zip(keys.par_chunks(CHUNK))
            .enumerate()
            .for_each(|(c, (h, ks))| {
                for (t, &k) in ks.iter().enumerate() {
                    let g = group_of(k);
                    let d = h[g] as usize;
                    h[g] += 1;
                    // SAFETY: the scan gives each (chunk, group) its own run of slots below
                    // n, as long as the run's count; `tmp` and `tmp_u` hold n entries.
                    unsafe {
                        *sp.get(d) = (c * CHUNK + t) as u32;
                        *kp.get(d) = k;
                    }
                }
            });
        // Pass 2: each group sorts its bucket by cell into `key`.
        let (gs, cs, cursor) = (&self.group_start, &mut self.cell_start, &mut self.cursor);
        let slots = &self.tmp_u[..n];
        // SAFETY: `tmp` holds n f32s, which pass 1 wrote as u32 bits (same size and alignment).
        let bkeys = unsafe { std::slice::from_raw_parts(self.tmp.as_ptr() as *const u32, n) };
        let out = SyncPtr(self.key.as_mut_ptr());
        cs[..cells]
            .par_chunks_mut(group_cells)
            .zip(cursor[..cells].par_chunks_mut(group_cells))
            .enumerate()
            .for_each(|(g, (cs, cur))| {
                let (a, b) = (gs[g] as usize, gs[g + 1] as usize);
                let c0 = g * group_cells;
                // Two tallies (even and odd bucket slots; the second in the cell starts, which
                // are written after), for the reason of pass 1's four.
                cur.fill(0);
                cs.fill(0);
                let mut pairs = bkeys[a..b].chunks_exact(2);
                for p in &mut pairs {
                    cur[p[0] as usize - c0] += 1;
                    cs[p[1] as usize - c0] += 1;
                }
                for k in pairs.remainder() {
                    cur[*k as usize - c0] += 1;
                }
                let mut at = a as u32;
                for (s, c) in cs.iter_mut().zip(cur.iter_mut()) {
                    let count = *c + *s;
                    *s = at;
                    at += count;
                    *c = *s;
                }
                for (&slot, k) in slots[a..b].iter().zip(&bkeys[a..b]) {
                    let c = &mut cur[*k as usize - c0];
                    // SAFETY: the group's cursors run over its bucket `a..b`, disjoint from
                    // every other group's, below n = key.len().
                    unsafe { *out.get(*c as usize) = slot };
                    *c += 1;
                }
            });
        cs[cells] = n as u32;
        std::mem::swap(&mut self.key, &mut self.tmp_u);
    }
}

/// `v` at length `n`: left as it is when it has that length, else refilled with `x` in
/// parallel.
fn sized<T: Copy + Send + Sync>(v: &mut Vec<T>, n: usize, x: T) {
    if v.len() != n {
        v.clear();
        v.par_extend(rayon::iter::repeat_n(x, n));
    }
}

/// Slots per chunk of the sort's bucketing pass: 64 chunks at 1M particles, so that 16
/// threads get four each and one slow thread does not hold up the pass (64k slots gave 16
/// chunks, one per thread); the table of counts (chunks x groups) stays small (170 kB).
const CHUNK: usize = 16 * 1024;
/// Cells per group of the sort (at least; a power of two), and most groups.
const GROUP_CELLS: usize = 1024;
const MAX_GROUPS: usize = 1024;

/// The sequential stable counting sort of `keys` over `cells` cells: `cell_start` and each
/// destination's source slot (the reference of [`SortedParticles::counting_sort`]).
#[cfg(test)]
fn counting_sort_serial(keys: &[u32], cells: usize) -> (Vec<u32>, Vec<u32>) {
    let mut cs = vec![0u32; cells + 1];
    for &k in keys {
        cs[k as usize + 1] += 1;
    }
    for c in 1..cs.len() {
        cs[c] += cs[c - 1];
    }
    let mut cursor = cs.clone();
    let mut src = vec![0u32; keys.len()];
    for (s, &k) in keys.iter().enumerate() {
        src[cursor[k as usize] as usize] = s as u32;
        cursor[k as usize] += 1;
    }
    (cs, src)
}

/// Cell index of each position, as [`GridDims::cell_of`] computes it (clamped to the grid),
/// written so that the compiler vectorises it: the clamp happens in floating point, where
/// `max` also maps NaN to 0, so the truncation is exact and needs no saturation checks.
fn cell_keys(d: &GridDims, x: &[f32], y: &[f32], z: &[f32], out: &mut [u32]) {
    let inv = 1.0 / d.h;
    let top = d.n.map(|n| (n - 1) as f32);
    let (nx, ny) = (d.n[0] as i32, d.n[1] as i32);
    let lower = d.lower;
    let n = out.len();
    let (x, y, z) = (&x[..n], &y[..n], &z[..n]);
    for i in 0..n {
        // SAFETY: the value is in [0, n - 1], far inside i32.
        let c = |p: f32, a: usize| unsafe {
            ((p - lower[a]) * inv)
                .max(0.0)
                .min(top[a])
                .to_int_unchecked::<i32>()
        };
        out[i] = (c(x[i], 0) + nx * (c(y[i], 1) + ny * c(z[i], 2))) as u32;
    }
}

#[cfg(test)]
mod tests;
