//! Removing particles from cell-sorted arrays without sorting again (the thinning of crowded
//! cells, [`crate::sim::crowding`]).
//!
//! [`SortedParticles::remove_slots`] fills each removed slot with the next kept particle from
//! the end of the arrays, which leaves them unsorted: the next substep sorted again, one whole
//! sort more per substep that thinned a cell (15 of the 187 substeps of the 1M dam break's
//! first 30 frames). [`SortedParticles::remove_sorted`] produces the same arrays and
//! `cell_start` as `remove_slots` followed by [`SortedParticles::sort`] (so the simulation's
//! bits do not change), directly: that stable sort keeps every cell's particles in their order
//! after `remove_slots`, which is their order before it except in the one cell straddling the
//! new length `kept`, whose particles from the tail (moved into the lowest gaps, in order) are
//! merged with its others by the slot they were moved to. Every other cell keeps its
//! survivors in their old order (a cell wholly in the tail moves in order), so the result is
//! the stable compaction of the arrays plus that one cell's merge: a parallel pass building the
//! source slots, one small sort, the cells' starts shifted by the removed count below them, and
//! the gathers of a sort, without its keys and counting sort.

use super::SortedParticles;
use crate::sim::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Slots (and cells) per task.
const CHUNK: usize = 1 << 14;

impl SortedParticles {
    /// Removes the particles in slots `gaps` (ascending, distinct, below the count) from
    /// cell-sorted arrays (`cell_start` valid) and leaves them cell-sorted, exactly as
    /// [`Self::remove_slots`] followed by [`Self::sort`] would (see the module docs).
    pub fn remove_sorted(&mut self, gaps: &[u32]) {
        let n = self.len();
        if gaps.is_empty() {
            return;
        }
        assert!(
            gaps.windows(2).all(|w| w[0] < w[1]) && (gaps[gaps.len() - 1] as usize) < n,
            "remove_sorted: gaps not ascending below the count"
        );
        assert_eq!(self.cell_start.last().copied(), Some(n as u32));
        let kept = n - gaps.len();
        let below = gaps.partition_point(|&g| (g as usize) < kept);
        // The stable compaction's source slots: chunk `c` of the old slots writes its
        // survivors from `c * CHUNK - (gaps below it)` on.
        self.tmp_u.resize(kept, 0);
        let out = SyncPtr(self.tmp_u.as_mut_ptr());
        (0..n.div_ceil(CHUNK)).into_par_iter().for_each(|c| {
            let (o0, o1) = (c * CHUNK, ((c + 1) * CHUNK).min(n));
            let mut g = gaps.partition_point(|&x| (x as usize) < o0);
            let mut j = o0 - g;
            for o in o0..o1 {
                if gaps.get(g) == Some(&(o as u32)) {
                    g += 1;
                    continue;
                }
                // SAFETY: survivor `o` goes to its rank among the survivors, below `kept`
                // (which `tmp_u` holds), distinct for every `o`.
                unsafe { *out.get(j) = o as u32 };
                j += 1;
            }
        });
        // The cell straddling `kept` (its start below it, its end above): its survivors from
        // the tail sort by the gap they were moved to, the others by their own slot.
        let cs = &self.cell_start;
        let c = cs.partition_point(|&s| (s as usize) <= kept) - 1;
        if (cs[c] as usize) < kept && kept < cs[c + 1] as usize {
            let removed_below = |s: usize| gaps.partition_point(|&x| (x as usize) < s);
            let (s0, s1) = (cs[c] as usize, cs[c + 1] as usize);
            let (n0, n1) = (s0 - removed_below(s0), s1 - removed_below(s1));
            let moved_to = |o: u32| {
                let o = o as usize;
                if o < kept {
                    o
                } else {
                    // The tail's survivors fill the gaps below `kept` in order.
                    gaps[(o - kept) - (removed_below(o) - below)] as usize
                }
            };
            // The slots moved to are distinct, so an unstable sort is the stable one (and
            // does not allocate).
            self.tmp_u[n0..n1].sort_unstable_by_key(|&o| moved_to(o));
        }
        // Each cell's start shifted down by the removed slots below it.
        self.cell_start.par_chunks_mut(CHUNK).for_each(|starts| {
            let mut g = gaps.partition_point(|&x| x < starts[0]);
            for s in starts.iter_mut() {
                while g < gaps.len() && gaps[g] < *s {
                    g += 1;
                }
                *s -= g as u32;
            }
        });
        // SAFETY: the source slots are survivors, below n.
        unsafe { self.permute() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::mac_grid::GridDims;

    /// Against the definition, exactly: `remove_slots` then `sort` give the same arrays
    /// (positions, velocities, ids) and cell starts as `remove_sorted`, for gaps in the middle,
    /// at the end, in the cell straddling the new count, the whole tail, a cell emptied, on 1
    /// and 3 threads.
    #[test]
    fn matches_remove_then_sort() {
        let d = GridDims {
            n: [6, 5, 4],
            h: 0.1,
            lower: [0.0; 3],
            open: [[false; 2]; 3],
        };
        let mut seed = 7u64;
        let mut rnd = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut p = crate::particles::Particles::default();
        for _ in 0..40_000 {
            let x = [rnd() * 0.6, rnd() * 0.5, rnd() * 0.4];
            p.push(x, [rnd(), rnd(), rnd()]);
        }
        let n = p.len() as u32;
        let cases: Vec<Vec<u32>> = vec![
            vec![3, 17, 20_000, 39_999],
            (0..300).map(|i| i * 131 + 7).collect(),
            (n - 500..n).collect(),
            (n - 700..n).step_by(3).chain([5, 6, 7]).collect(),
            (0..n).step_by(2).collect(),
            vec![0],
        ];
        for mut gaps in cases {
            gaps.sort_unstable();
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    let mut a = SortedParticles::default();
                    a.load(&p, d.cells());
                    a.sort(&d);
                    // A second sort: slots no longer in creation order.
                    for x in a.pos[0].iter_mut() {
                        *x = (*x + 0.013) % 0.6;
                    }
                    a.sort(&d);
                    let mut b = SortedParticles::default();
                    b.load(&p, d.cells());
                    (b.pos, b.vel, b.ids) = (a.pos.clone(), a.vel.clone(), a.ids.clone());
                    b.cell_start = a.cell_start.clone();
                    a.remove_slots(&gaps);
                    a.sort(&d);
                    b.remove_sorted(&gaps);
                    assert_eq!(a.ids, b.ids, "{} gaps, {threads} threads", gaps.len());
                    assert_eq!(a.pos, b.pos);
                    assert_eq!(a.vel, b.vel);
                    assert_eq!(a.cell_start, b.cell_start);
                });
            }
        }
    }
}
