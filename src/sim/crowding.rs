//! Thinning crowded cells: at the end of every substep, a cell holding more than
//! `solver.max_particles_per_cell` particles loses the excess.
//!
//! Why: the density correction ([`super::density`]) spreads over-dense liquid back to the
//! seeding density over a few substeps, but a crowd made within one substep (a splash thrown
//! against a wall in an impact) shows in the frames until it is spread: on the shipped dam break
//! one cell held 55 particles (6.9 times the seeding density of 8) before this stage, against
//! issue 19's bound of 3 times. FLIP solvers bound the count per cell directly:
//!
//! - Mantaflow's `adjustNumber` (used by its FLIP scenes) counts the particles per cell in
//!   storage order after the advection and deletes each particle found in a cell that already
//!   holds `maxParticles` (its scenes use twice the seeding density), except near the surface
//!   of the particles' level set, and seeds particles at random positions in interior cells
//!   holding fewer than `minParticles`;
//! - Houdini's FLIP reseeding (Gas Seed Fluid Particles) deletes and creates particles inside the
//!   liquid's signed distance field where the count per voxel leaves thresholds relative to
//!   the particles-per-voxel target, oversampling near the surface;
//! - the FLIP Fluids Blender add-on removes particles from cells over a maximum count.
//!
//! What surge does, and why: removal only, in every cell (surface included), at the end of
//! every substep after the advection and emission, so that the state a frame samples obeys the
//! bound and the physics does not depend on where frames fall (issue 19: it runs per substep,
//! never per frame). Which particles go is decided by a counter-based hash of (seed, creation
//! index in the frame, the substep's end time): in a cell of `n > m` particles the `n - m`
//! with the largest hashes are removed. Mantaflow's rule (keep the first `m` in storage order)
//! would be deterministic here too, but storage order follows space (the stable cell sort
//! keeps the previous substep's order), so it would always thin one side of the crowd; the
//! hash picks an unbiased subset, and it depends only on the frame's input (creation order),
//! so the result is the same for any thread count and a resumed run re-derives it. The kept
//! particles of a thinned cell get the cell's mean velocity back (each is shifted by the
//! difference between the mean of all and the mean of those kept): the grid velocity splatted
//! there next substep, a normalised average, is what it would have been, and the cell's
//! momentum per unit mass is kept (the removed mass takes its share of momentum with it, as it
//! must). APIC affine matrices are left as they are.
//!
//! Reseeding sparse interior cells (Mantaflow's `minParticles`, Houdini's birth threshold) is
//! not done: the dam break's particle volume already stays within 0.4% of the start, and a new
//! particle needs a velocity invented from the grid; see README, "Volume".
//!
//! Cost: the substep's cell sort moves from its start to the end of the previous substep (the
//! count per cell is `cell_start`'s differences), so thinning adds one sort per frame (the
//! frame's first substep still sorts after loading the particles in creation order), a scan of
//! the cells for a count above the bound (in parallel) and, in the rare substeps where a cell
//! is crowded, a sequential pass over the crowded cells' particles and the removal by
//! [`SortedParticles::remove_sorted`] (a parallel compaction that leaves the particles sorted
//! exactly as a sort after [`SortedParticles::remove_slots`] would: until session 12 the next
//! substep sorted again). No allocation: the scratch grows only when a crowd is larger than
//! any before.

use super::cell_sort::SortedParticles;
use super::emit::hash;
use super::mac_grid::GridDims;
use rayon::prelude::*;

/// State of the thinning between substeps (scratch only: nothing here is simulation state).
#[derive(Default)]
pub struct Crowding {
    /// The particles are cell-sorted and unchanged since (the next substep need not sort).
    sorted: bool,
    /// (hash, slot) of the particles of one crowded cell.
    order: Vec<(u64, u32)>,
    /// Slots to remove, ascending.
    gaps: Vec<u32>,
    /// Particles removed since the last [`Crowding::take_removed`].
    removed: u64,
}

/// Blocks of cells the search for crowded cells is split into.
const BLOCKS: usize = 256;

impl Crowding {
    /// Scratch for crowds of up to `cap` particles in a cell (grows beyond, rarely).
    pub fn with_capacity(cap: usize) -> Self {
        Self {
            order: Vec::with_capacity(cap),
            gaps: Vec::with_capacity(cap),
            ..Self::default()
        }
    }

    /// The particles' order changed outside the substeps (a frame's start): sort again.
    pub fn invalidate(&mut self) {
        self.sorted = false;
    }

    /// At a substep's start: sorts the particles by cell unless the previous substep's
    /// thinning left them sorted.
    pub fn sort(&mut self, d: &GridDims, sp: &mut SortedParticles) {
        if !std::mem::take(&mut self.sorted) {
            sp.sort(d);
        }
    }

    /// Particles removed since the last call.
    pub fn take_removed(&mut self) -> u64 {
        std::mem::take(&mut self.removed)
    }

    /// At a substep's end (after the advection and emission): with `max > 0`, sorts the
    /// particles by cell and thins every cell holding more than `max` to `max` particles.
    /// `salt` (the substep's end time and the scene's seed) varies the choice between
    /// substeps. Returns the particles removed.
    pub fn thin(
        &mut self,
        d: &GridDims,
        sp: &mut SortedParticles,
        max: u32,
        salt: [u64; 2],
    ) -> u64 {
        if max == 0 {
            return 0;
        }
        sp.sort(d);
        self.sorted = true;
        // Which blocks of cells hold a crowded cell (in parallel), so that the thinning's
        // ascending walk visits only those blocks: no serial pass over every cell.
        let starts = &sp.cell_start;
        let cells = starts.len() - 1;
        let block = cells.div_ceil(BLOCKS).max(1);
        let mut crowded = [false; BLOCKS];
        crowded.par_iter_mut().enumerate().for_each(|(b, f)| {
            let c0 = (b * block).min(cells);
            let c1 = (c0 + block).min(cells);
            *f = starts[c0..=c1].windows(2).any(|w| w[1] - w[0] > max);
        });
        if !crowded.contains(&true) {
            return 0;
        }
        self.gaps.clear();
        for b in (0..BLOCKS).filter(|&b| crowded[b]) {
            let c0 = b * block;
            for c in c0..(c0 + block).min(cells) {
                let (s0, s1) = (sp.cell_start[c], sp.cell_start[c + 1]);
                if s1 - s0 > max {
                    self.thin_cell(sp, s0, s1, max, salt);
                }
            }
        }
        // Removed from the sorted arrays, which stay sorted for the next substep.
        sp.remove_sorted(&self.gaps);
        let n = self.gaps.len() as u64;
        self.removed += n;
        n
    }

    /// Removes (appends to `gaps`, ascending) the `s1 - s0 - max` particles of slots
    /// `s0..s1` with the largest hashes, and shifts the kept particles' velocities so that
    /// their mean is the mean of all `s1 - s0`.
    fn thin_cell(&mut self, sp: &mut SortedParticles, s0: u32, s1: u32, max: u32, salt: [u64; 2]) {
        self.order.clear();
        self.order
            .extend((s0..s1).map(|s| (hash(&[salt[0], salt[1], sp.ids[s as usize] as u64]), s)));
        // Ascending by (hash, slot): the first `max` stay.
        self.order.sort_unstable();
        let (kept, gone) = self.order.split_at(max as usize);
        let first = self.gaps.len();
        self.gaps.extend(gone.iter().map(|&(_, s)| s));
        self.gaps[first..].sort_unstable();
        for v in sp.vel.iter_mut() {
            let all: f64 = (s0..s1).map(|s| v[s as usize] as f64).sum();
            let part: f64 = kept.iter().map(|&(_, s)| v[s as usize] as f64).sum();
            let shift = (all / (s1 - s0) as f64 - part / max as f64) as f32;
            for &(_, s) in kept {
                v[s as usize] += shift;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Domain;
    use crate::particles::Particles;

    /// A 6^3 grid (h = 0.1 m) with 40 particles in cell (2, 2, 2), 8 in cell (3, 2, 2) and
    /// 25 in cell (2, 3, 2), each with its own velocity.
    fn crowd() -> (GridDims, SortedParticles) {
        let d = GridDims::new(&Domain {
            lower: [0.0; 3],
            cell_size: 0.1,
            resolution: [6, 6, 6],
            boundaries: Default::default(),
            friction: Default::default(),
        });
        let mut p = Particles::default();
        let mut k = 0u32;
        for (cell, n) in [([2, 2, 2], 40), ([3, 2, 2], 8), ([2, 3, 2], 25)] {
            for q in 0..n {
                // Spread inside the cell (distinct positions), creation order interleaved.
                let f = (q as f32 + 0.5) / n as f32;
                let pos = [
                    0.1 * (cell[0] as f32 + f),
                    0.1 * (cell[1] as f32 + 0.5),
                    0.1 * (cell[2] as f32 + 1.0 - f),
                ];
                k += 1;
                p.push(
                    pos,
                    [k as f32 * 0.01, -(k as f32) * 0.02, 1.0 + (k % 7) as f32],
                );
            }
        }
        let mut sp = SortedParticles::default();
        sp.load(&p, d.cells());
        (d, sp)
    }

    fn count(d: &GridDims, sp: &mut SortedParticles, cell: [usize; 3]) -> u32 {
        sp.sort(d);
        let c = d.cell(cell[0], cell[1], cell[2]);
        sp.cell_start[c + 1] - sp.cell_start[c]
    }

    /// Mantaflow-style bound, checked exactly: a cell above the bound is thinned to it (40 ->
    /// 24, 25 -> 24), a cell at or below it keeps every particle; the kept particles' mean
    /// velocity in each thinned cell equals the mean before (to f32 rounding of the shift,
    /// 1e-5 m/s on velocities of order 1 m/s); the removed particles are the same whatever the
    /// thread count and on a second run, and differ with the salt (the hash decides, not the
    /// storage order).
    #[test]
    fn crowded_cell_is_thinned_to_the_bound_deterministically() {
        let run = |threads: usize, salt: [u64; 2]| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let (d, mut sp) = crowd();
                sp.sort(&d);
                let c = d.cell(2, 2, 2);
                let (s0, s1) = (sp.cell_start[c] as usize, sp.cell_start[c + 1] as usize);
                let mean_before: Vec<f64> = (0..3)
                    .map(|a| sp.vel[a][s0..s1].iter().map(|&x| x as f64).sum::<f64>() / 40.0)
                    .collect();
                let mut cr = Crowding::with_capacity(64);
                let removed = cr.thin(&d, &mut sp, 24, salt);
                assert_eq!(removed, 16 + 1);
                assert_eq!(cr.take_removed(), 17);
                assert_eq!(sp.len(), 40 + 8 + 25 - 17);
                assert_eq!(count(&d, &mut sp, [2, 2, 2]), 24);
                assert_eq!(count(&d, &mut sp, [3, 2, 2]), 8);
                assert_eq!(count(&d, &mut sp, [2, 3, 2]), 24);
                let (s0, s1) = (sp.cell_start[c] as usize, sp.cell_start[c + 1] as usize);
                for (a, before) in mean_before.iter().enumerate() {
                    let mean = sp.vel[a][s0..s1].iter().map(|&x| x as f64).sum::<f64>() / 24.0;
                    assert!((mean - before).abs() < 1e-5, "axis {a}: {mean} vs {before}");
                }
                let mut ids = sp.ids.clone();
                ids.sort_unstable();
                ids
            })
        };
        let one = run(1, [0, 1]);
        assert_eq!(one, run(2, [0, 1]));
        assert_eq!(one, run(3, [0, 1]));
        assert_ne!(
            one,
            run(1, [0, 2]),
            "the salt should change which particles go"
        );
        // Not simply the last (or first) in storage order of the 40: ids 0..40 are cell (2,2,2).
        let kept: Vec<u32> = one.iter().copied().filter(|&i| i < 40).collect();
        assert_ne!(kept, (0..24).collect::<Vec<_>>());
        assert_ne!(kept, (16..40).collect::<Vec<_>>());
    }

    /// Off (0) and a bound no cell exceeds change nothing; the bound leaves the particles
    /// sorted for the next substep, also after a removal.
    #[test]
    fn off_or_uncrowded_changes_nothing() {
        let (d, mut sp) = crowd();
        let before = sp.pos.clone();
        let mut cr = Crowding::default();
        assert_eq!(cr.thin(&d, &mut sp, 0, [0, 0]), 0);
        assert_eq!(sp.pos, before);
        assert!(!cr.sorted);
        assert_eq!(cr.thin(&d, &mut sp, 40, [0, 0]), 0);
        assert_eq!(sp.len(), 73);
        assert!(cr.sorted);
        assert_eq!(cr.thin(&d, &mut sp, 39, [0, 0]), 1);
        assert!(cr.sorted);
        // Sorted indeed: a stable sort changes nothing.
        let (ids, starts) = (sp.ids.clone(), sp.cell_start.clone());
        sp.sort(&d);
        assert_eq!((sp.ids.clone(), sp.cell_start.clone()), (ids, starts));
    }
}
