//! Thinning crowded cells: at the end of every substep, a cell holding more than
//! `solver.max_particles_per_cell` particles loses the excess, to an emptier liquid cell nearby
//! where there is one, otherwise removed.
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
//! What surge does, and why: at the end of every substep after the advection and emission, in
//! every cell (surface included), so that the state a frame samples obeys the bound and the
//! physics does not depend on where frames fall (issue 19: it runs per substep, never per
//! frame). Which particles leave a cell of `n > m` is decided by a counter-based hash of
//! (seed, creation index in the frame, the substep's end time): the `n - m` with the largest
//! hashes. Mantaflow's rule (keep the first `m` in storage order) would be deterministic here
//! too, but storage order follows space (the stable cell sort keeps the previous substep's
//! order), so it would always thin one side of the crowd; the hash picks an unbiased subset,
//! and it depends only on the frame's input (creation order), so the result is the same for
//! any thread count and a resumed run re-derives it. The kept particles of a thinned cell get
//! the cell's mean velocity back (each is shifted by the difference between the mean of all
//! and the mean of those kept): the grid velocity splatted there next substep, a normalised
//! average, is what it would have been, and the cell's momentum per unit mass is kept.
//!
//! **Moved, not removed, where there is room.** A leaving particle goes to the emptiest cell
//! within [`REACH`] cells per axis that holds [`RECEIVE_FROM`] to [`RECEIVE_BELOW`]` - 1`
//! particles (liquid, under the seeding density; counting the particles this thinning already
//! moved there), whose centre is at least [`CLEAR_CELLS`] cells from every solid
//! ([`Room`]), the nearest on a tie, then the first in (z, y, x) order: it is placed within
//! [`SPREAD`] of that cell's centre per axis (a hash of seed, end time, creation index and
//! axis) with the cell's mean velocity (and APIC matrix). Only a particle that finds no such
//! cell is removed (the removed mass takes its share of momentum with it). This is the
//! peers' pairing of deletion in crowded cells with seeding in sparse ones (Mantaflow's
//! `minParticles`, Houdini's birth threshold) made budget-neutral: no particle is created, so
//! the count, and the volume it stands for, is kept, and no velocity is invented (the
//! receiving cell's own). Why: removal alone made crowds a sink. In `scenes/tap.json` the
//! swirl left after the pour presses particles onto the push-out distance of the glass's wall
//! and base (the interpolated velocity in a cell the wall cuts is not zero at the wall)
//! faster than the density correction spreads them, cells there reached 25 to 43 particles in
//! a substep, and the thinning removed 1.18% of the water in the second after the pour
//! (109,093 particles at 4 s, 107,804 at 5 s); with the moves 0.06% (110,041 to 109,973,
//! `tap_fills_the_glass_and_it_keeps_its_water` in `tests/obstacles_glass.rs`; 1 cell of
//! reach instead of 2 left 0.64%). Beside moving solids nothing moves ([`Room::None`]: the
//! solids' distances are those of the substep's start, the particles at its end), as before.
//! The moves leave the particles unsorted: the next substep sorts again. Seeding sparse cells
//! from nothing (a new particle with a velocity invented from the grid) is still not done:
//! the dam break's volume stays within 1% without it (README, "Volume").
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
    /// Particles moved since the last [`Crowding::take_moved`].
    moved: u64,
    /// (cell, particles moved into it) in the current thinning, ascending by cell.
    added: Vec<(u32, u32)>,
}

/// Where a crowded cell's excess may go instead of being removed.
#[derive(Clone, Copy)]
pub enum Room<'a> {
    /// Nowhere: removal only (moving solids: a cell clear of them at the substep's start may
    /// be covered at its end).
    None,
    /// Any interior cell (no obstacles).
    Anywhere,
    /// Interior cells whose centre is at least [`CLEAR_CELLS`] cells from every solid:
    /// `cell_phi`, the static solids' distance at each cell centre (m; a lower bound is
    /// enough).
    Clear(&'a [f32]),
}

/// Distance (cells) of a receiving cell's centre from every solid: a particle placed within
/// [`SPREAD`] of the centre per axis (at most `0.433` cells from it) stays beyond the
/// push-out distance ([`crate::geometry::solid::PUSHOUT_CELLS`], 0.1) with a margin.
pub const CLEAR_CELLS: f32 = 0.6;

/// Half-width (cells) per axis of the box around a receiving cell's centre in which a moved
/// particle is placed.
const SPREAD: f32 = 0.25;

/// How far (cells per axis) a receiving cell may lie from the crowded one.
const REACH: usize = 2;

/// A receiving cell holds at least this many particles (it is liquid, not spray or air) and
/// fewer than [`RECEIVE_BELOW`].
const RECEIVE_FROM: u32 = 4;

/// A receiving cell holds fewer particles than the seeding density.
const RECEIVE_BELOW: u32 = 8;

/// Blocks of cells the search for crowded cells is split into.
const BLOCKS: usize = 256;

impl Crowding {
    /// Scratch for crowds of up to `cap` particles in a cell (grows beyond, rarely).
    pub fn with_capacity(cap: usize) -> Self {
        Self {
            order: Vec::with_capacity(cap),
            gaps: Vec::with_capacity(cap),
            added: Vec::with_capacity(cap),
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

    /// Particles moved to a neighbouring cell since the last call.
    pub fn take_moved(&mut self) -> u64 {
        std::mem::take(&mut self.moved)
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
        room: Room<'_>,
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
        self.added.clear();
        let mut moved = 0;
        for b in (0..BLOCKS).filter(|&b| crowded[b]) {
            let c0 = b * block;
            for c in c0..(c0 + block).min(cells) {
                let (s0, s1) = (sp.cell_start[c], sp.cell_start[c + 1]);
                if s1 - s0 > max {
                    moved += self.thin_cell(d, sp, (c, s0, s1), max, salt, room);
                }
            }
        }
        // Removed from the sorted arrays, which stay sorted for the next substep unless a
        // particle moved to another cell.
        sp.remove_sorted(&self.gaps);
        self.sorted = moved == 0;
        self.moved += moved;
        let n = self.gaps.len() as u64;
        self.removed += n;
        n
    }

    /// The cell within [`REACH`] cells of cell `c` per axis that receives a particle, if any:
    /// an interior cell `room` allows holding [`RECEIVE_FROM`]`..`[`RECEIVE_BELOW`] particles
    /// (counting those this thinning moved there); the emptiest, then the nearest, then the
    /// first in (z, y, x) order.
    fn receiver(
        &self,
        d: &GridDims,
        sp: &SortedParticles,
        c: usize,
        room: Room<'_>,
    ) -> Option<usize> {
        let n = d.n;
        let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
        let clear = CLEAR_CELLS * d.h;
        let mut best: Option<((u32, u32), usize)> = None;
        let r = REACH as i64;
        for dz in -r..=r {
            for dy in -r..=r {
                for dx in -r..=r {
                    let t = [dx, dy, dz];
                    if t == [0, 0, 0] {
                        continue;
                    }
                    let g: [i64; 3] = std::array::from_fn(|a| ijk[a] as i64 + t[a]);
                    if (0..3).any(|a| g[a] < 1 || g[a] + 2 > n[a] as i64) {
                        continue;
                    }
                    let e = d.cell(g[0] as usize, g[1] as usize, g[2] as usize);
                    let ok = match room {
                        Room::None => false,
                        Room::Anywhere => true,
                        Room::Clear(phi) => phi[e] >= clear,
                    };
                    if !ok {
                        continue;
                    }
                    let extra = (self.added)
                        .binary_search_by_key(&(e as u32), |&(x, _)| x)
                        .map_or(0, |i| self.added[i].1);
                    let held = sp.cell_start[e + 1] - sp.cell_start[e];
                    let count = held + extra;
                    if held < RECEIVE_FROM || count >= RECEIVE_BELOW {
                        continue;
                    }
                    let key = (count, (dx * dx + dy * dy + dz * dz) as u32);
                    if best.is_none_or(|(b, _)| key < b) {
                        best = Some((key, e));
                    }
                }
            }
        }
        best.map(|(_, e)| e)
    }

    /// Takes the `s1 - s0 - max` particles of slots `s0..s1` (cell `c`) with the largest
    /// hashes out of the cell: each moves to the cell [`Self::receiver`] finds, or, where none,
    /// is removed (appended to `gaps`, ascending within the cell); shifts the kept particles'
    /// velocities so that their mean is the mean of all `s1 - s0`. Returns the particles moved.
    #[allow(clippy::too_many_arguments)]
    fn thin_cell(
        &mut self,
        d: &GridDims,
        sp: &mut SortedParticles,
        (c, s0, s1): (usize, u32, u32),
        max: u32,
        salt: [u64; 2],
        room: Room<'_>,
    ) -> u64 {
        self.order.clear();
        self.order
            .extend((s0..s1).map(|s| (hash(&[salt[0], salt[1], sp.ids[s as usize] as u64]), s)));
        // Ascending by (hash, slot): the first `max` stay.
        self.order.sort_unstable();
        let kept = &self.order[..max as usize];
        for v in sp.vel.iter_mut() {
            let all: f64 = (s0..s1).map(|s| v[s as usize] as f64).sum();
            let part: f64 = kept.iter().map(|&(_, s)| v[s as usize] as f64).sum();
            let shift = (all / (s1 - s0) as f64 - part / max as f64) as f32;
            for &(_, s) in kept {
                v[s as usize] += shift;
            }
        }
        let first = self.gaps.len();
        let mut moved = 0;
        for i in max as usize..self.order.len() {
            let s = self.order[i].1;
            match self.receiver(d, sp, c, room) {
                Some(e) => {
                    move_to(d, sp, s as usize, e, salt);
                    match self.added.binary_search_by_key(&(e as u32), |&(x, _)| x) {
                        Ok(i) => self.added[i].1 += 1,
                        Err(i) => self.added.insert(i, (e as u32, 1)),
                    }
                    moved += 1;
                }
                None => self.gaps.push(s),
            }
        }
        self.gaps[first..].sort_unstable();
        moved
    }
}

/// Moves the particle in slot `s` into cell `e` (a receiving cell, not crowded: its slots hold
/// only its own particles): to a point within [`SPREAD`] of the cell's centre per axis, from a
/// hash of (salt, creation index, axis), with the mean velocity (and, with APIC, the mean
/// affine matrix) of the cell's particles.
fn move_to(d: &GridDims, sp: &mut SortedParticles, s: usize, e: usize, salt: [u64; 2]) {
    let n = d.n;
    let ijk = [e % n[0], (e / n[0]) % n[1], e / (n[0] * n[1])];
    let (e0, e1) = (sp.cell_start[e] as usize, sp.cell_start[e + 1] as usize);
    let k = (e1 - e0) as f64;
    let id = sp.ids[s] as u64;
    for (a, &g) in ijk.iter().enumerate() {
        let u = (hash(&[salt[0], salt[1], id, a as u64 + 1]) >> 40) as f32 / (1u64 << 24) as f32;
        let x = g as f32 + 0.5 + SPREAD * (2.0 * u - 1.0);
        sp.pos[a][s] = d.lower[a] + x * d.h;
        let v = &mut sp.vel[a];
        v[s] = (v[e0..e1].iter().map(|&x| x as f64).sum::<f64>() / k) as f32;
    }
    if sp.affine {
        for m in sp.aff.iter_mut() {
            m[s] = (m[e0..e1].iter().map(|&x| x as f64).sum::<f64>() / k) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Domain;
    use crate::particles::Particles;

    /// The tests' closed 6^3 grid of 0.1 m cells from the origin.
    fn grid() -> GridDims {
        GridDims::new(&Domain {
            lower: [0.0; 3],
            cell_size: 0.1,
            resolution: [6, 6, 6],
            boundaries: Default::default(),
            friction: Default::default(),
        })
    }

    /// A 6^3 grid (h = 0.1 m) with 40 particles in cell (2, 2, 2), 8 in cell (3, 2, 2) and
    /// 25 in cell (2, 3, 2), each with its own velocity.
    fn crowd() -> (GridDims, SortedParticles) {
        let d = grid();
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
                let removed = cr.thin(&d, &mut sp, 24, salt, Room::None);
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

    /// A 6^3 grid (h = 0.1 m): 40 particles in cell (2, 2, 2) and, around it, cells that can
    /// receive (5, 6, 7 and 5 particles: room for 3 + 2 + 1 + 3) and cells that cannot (8:
    /// full; 2: too few to be liquid).
    fn crowd_with_room() -> (GridDims, SortedParticles, Vec<([usize; 3], u32)>) {
        let d = grid();
        let cells = vec![
            ([2, 2, 2], 40),
            ([1, 2, 2], 5),
            ([2, 1, 2], 6),
            ([3, 3, 3], 7),
            ([4, 4, 4], 5),
            ([3, 2, 2], 8),
            ([2, 2, 1], 2),
        ];
        let mut p = Particles::default();
        let mut k = 0u32;
        for &(cell, n) in &cells {
            for q in 0..n {
                let f = (q as f32 + 0.5) / n as f32;
                let pos = [0, 1, 2].map(|a| 0.1 * (cell[a] as f32 + [f, 0.5, 1.0 - f][a]));
                k += 1;
                p.push(pos, [k as f32 * 0.01, -(k as f32) * 0.02, (k % 7) as f32]);
            }
        }
        let mut sp = SortedParticles::default();
        sp.load(&p, d.cells());
        (d, sp, cells)
    }

    /// With room nearby the excess moves instead of going: into cells holding 4 to 7
    /// particles within two cells, never past 8 in one, each moved particle within the spread
    /// of its new cell's centre and carrying that cell's mean velocity; what finds no room is
    /// removed. A cell the solids' distance rules out receives nothing. The same for any
    /// thread count. (Fails if the moves ignore the counts, the distance or the bound.)
    #[test]
    fn crowded_cell_moves_its_excess_to_emptier_liquid_cells() {
        let run = |threads: usize, room: &(dyn Fn(&GridDims) -> Vec<f32> + Sync)| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let (d, mut sp, cells) = crowd_with_room();
                sp.sort(&d);
                // Each cell's mean velocity before.
                let mean = |sp: &SortedParticles, c: [usize; 3]| {
                    let e = d.cell(c[0], c[1], c[2]);
                    let (e0, e1) = (sp.cell_start[e] as usize, sp.cell_start[e + 1] as usize);
                    [0, 1, 2].map(|a| {
                        (sp.vel[a][e0..e1].iter().map(|&x| x as f64).sum::<f64>()
                            / (e1 - e0) as f64) as f32
                    })
                };
                let means: Vec<[f32; 3]> = cells.iter().map(|&(c, _)| mean(&sp, c)).collect();
                let phi = room(&d);
                let mut cr = Crowding::with_capacity(64);
                let removed = cr.thin(&d, &mut sp, 24, [3, 4], Room::Clear(&phi));
                let moved = cr.take_moved();
                assert!(!cr.sorted, "moved particles leave the order unsorted");
                assert_eq!(sp.len() as u64, 73 - removed);
                // Where the crowd's particles (ids 0..40) are now.
                for s in 0..sp.len() {
                    let id = sp.ids[s];
                    let x = [0, 1, 2].map(|a| sp.pos[a][s] / 0.1);
                    let c = x.map(|v| v.floor() as usize);
                    if id >= 40 || c == [2, 2, 2] {
                        continue;
                    }
                    let k = cells
                        .iter()
                        .position(|&(e, _)| e == c)
                        .expect("moved to a listed cell");
                    assert!((1..5).contains(&k), "moved to {c:?}");
                    for a in 0..3 {
                        let off = (x[a] - c[a] as f32 - 0.5).abs();
                        assert!(
                            off <= SPREAD + 1e-5,
                            "{c:?} axis {a}: {off} from the centre"
                        );
                    }
                    assert_eq!([0, 1, 2].map(|a| sp.vel[a][s]), means[k], "velocity");
                }
                let counts: Vec<u32> = cells.iter().map(|&(c, _)| count(&d, &mut sp, c)).collect();
                (removed, moved, counts, sp.pos.clone())
            })
        };
        let everywhere = |d: &GridDims| vec![1.0; d.cells()];
        let (removed, moved, counts, pos) = run(1, &everywhere);
        assert_eq!((removed, moved), (7, 9));
        assert_eq!(counts, vec![24, 8, 8, 8, 8, 8, 2]);
        assert_eq!(pos, run(3, &everywhere).3, "1 vs 3 threads");
        // Cell (4, 4, 4) too close to a solid (its centre 0.05 m from it, under 0.6 cells).
        let blocked = |d: &GridDims| {
            let mut phi = vec![1.0; d.cells()];
            phi[d.cell(4, 4, 4)] = 0.05;
            phi
        };
        let (removed, moved, counts, _) = run(2, &blocked);
        assert_eq!((removed, moved), (10, 6));
        assert_eq!(counts, vec![24, 8, 8, 8, 5, 8, 2]);
    }

    /// Off (0) and a bound no cell exceeds change nothing; the bound leaves the particles
    /// sorted for the next substep, also after a removal.
    #[test]
    fn off_or_uncrowded_changes_nothing() {
        let (d, mut sp) = crowd();
        let before = sp.pos.clone();
        let mut cr = Crowding::default();
        assert_eq!(cr.thin(&d, &mut sp, 0, [0, 0], Room::None), 0);
        assert_eq!(sp.pos, before);
        assert!(!cr.sorted);
        assert_eq!(cr.thin(&d, &mut sp, 40, [0, 0], Room::None), 0);
        assert_eq!(sp.len(), 73);
        assert!(cr.sorted);
        assert_eq!(cr.thin(&d, &mut sp, 39, [0, 0], Room::None), 1);
        assert!(cr.sorted);
        // Sorted indeed: a stable sort changes nothing.
        let (ids, starts) = (sp.ids.clone(), sp.cell_start.clone());
        sp.sort(&d);
        assert_eq!((sp.ids.clone(), sp.cell_start.clone()), (ids, starts));
    }
}
