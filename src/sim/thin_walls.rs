//! Walls thinner than a cell: no pressure path from the liquid to the air on the wall's far side.
//!
//! The variational boundaries (Batty, Bertails & Bridson 2007; [`super::solids`]) weight each
//! face by its open area, computed from the solid distance at the grid nodes. A wall thinner
//! than a cell can lie between two nodes and a cell can hold both of its sides: a cell whose
//! centre is in the wall of a glass is fluid as soon as it holds a particle (on the inner
//! side), and its face on the outer side is open to the air outside the glass (the open area
//! there is on the far side of the wall, or the wall passes between the face's nodes and the
//! face reads fully open). The projection then sees a free surface (pressure 0) right next to
//! the liquid at the wall: the hydrostatic pressure drops there, the liquid flows towards the
//! wall at every substep and the particles pile up on the push-out shell. Measured on the
//! block thrown into the glass of `tests/obstacles_glass.rs` (16^3 cells, 1 cm wall, 1.25 cm
//! cells; then at the default step, one substep per frame): a
//! shell of 4x the seeding density within a tenth of a cell of the inner wall, 0.5x for the
//! next 1.5 cells, a steady drift of 0.02 cells per frame towards the wall, and the liquid
//! mesh 29-55% below its first frame's volume; with these faces sealed, 2.0-7.2% below (what
//! remains: slivers in the corner between base and wall, [`super::rest_share`]).
//!
//! Rule: a face between a fluid cell near a solid (cell-centre distance under 0.9 cells) and an
//! empty cell is sealed (made a wall face with open fraction 0 for this substep) when the
//! straight path from the mean position of the fluid cell's particles to the centroid of the
//! face's open part (from the face's corner distances; where that part is too small for the
//! 4 x 4 samples, the centroid of its open corners) crosses solid, traced with the solids'
//! exact distance in steps of that distance, at least a tenth of a cell (the nodes' trilinear
//! interpolant misses walls thinner than a cell). Without the corner fallback such a sliver
//! of a face stayed open to the air outside the glass: its velocity grew by the hydrostatic
//! pressure jump at every substep (the flux through it stays small), and FLIP handed that
//! growth to the particles beside it: water seeded at rest in the glass of
//! `tests/obstacles_glass.rs` reached 1.9 m/s at the wall in 10 frames and never settled
//! (with the fallback: 3e-7 m/s). The sealed
//! fractions are restored from the node distances after the substep's projection
//! ([`unseal`]), so the state between substeps is the geometric one (exact resume).
//!
//! Each face is decided by its own task from read-only data and written once (its fluid cell
//! is the only one beside it): the same for any thread count.

use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, FaceKind, GridDims};
use crate::geometry::face_fractions::fraction_inside;
use rayon::prelude::*;

/// Cells whose centre is at least this far (in cells) from every solid cannot hold a wall.
const NEAR_CELLS: f32 = 0.9;
/// Step (in cells) of the path check.
const PATH_STEP: f64 = 0.1;

/// Whether the straight segment from `p` to `q` (m) crosses solid: sphere tracing (the
/// distance is 1-Lipschitz, so no solid lies within `phi(x)` of `x`), with steps of at least a
/// tenth of a cell.
fn crosses(phi: &(dyn Fn([f64; 3]) -> f64 + Sync), p: [f64; 3], q: [f64; 3], h: f64) -> bool {
    let len = (0..3).map(|a| (q[a] - p[a]).powi(2)).sum::<f64>().sqrt();
    let mut t = 0.0f64;
    loop {
        let u = if len > 0.0 { t / len } else { 1.0 };
        let d = phi(std::array::from_fn(|a| p[a] + u * (q[a] - p[a])));
        if d < 0.0 {
            return true;
        }
        if t >= len {
            return false;
        }
        t = (t + d.max(PATH_STEP * h)).min(len);
    }
}

/// What deciding a face needs: the grid, the solids' cell-centre and node distances and their
/// exact distance `phi` at a point (m), the particles and the cells' labels.
#[derive(Clone, Copy)]
pub struct Walls<'a> {
    pub d: &'a GridDims,
    pub cell_phi: &'a [f32],
    pub node_phi: &'a [f32],
    pub phi: &'a (dyn Fn([f64; 3]) -> f64 + Sync),
    pub sp: &'a SortedParticles,
    pub labels: &'a [CellLabel],
}

impl Walls<'_> {
    /// Whether face `f` of component `a`, of kind `kind`, is to be sealed (the module
    /// documentation's rule).
    fn seals(&self, a: usize, f: [usize; 3], kind: FaceKind) -> bool {
        let (d, n) = (self.d, self.d.n);
        if kind != FaceKind::Fluid || f[a] == 0 || f[a] >= n[a] {
            // Fluid faces lie between two cells inside the grid.
            return false;
        }
        let stride = [1, n[0], n[0] * n[1]][a];
        let hi = f[0] + n[0] * (f[1] + n[1] * f[2]);
        let below = hi - stride;
        let c = match (self.labels[below], self.labels[hi]) {
            (CellLabel::Fluid, CellLabel::Empty) => below,
            (CellLabel::Empty, CellLabel::Fluid) => hi,
            _ => return false,
        };
        if self.cell_phi[c] >= NEAR_CELLS * d.h {
            return false;
        }
        let sp = self.sp;
        let (s0, s1) = (sp.cell_start[c] as usize, sp.cell_start[c + 1] as usize);
        if s1 == s0 {
            return false;
        }
        let (h, lo) = (d.h as f64, d.lower.map(|x| x as f64));
        let nn = n.map(|c| c + 1);
        let (u, v) = ((a + 1) % 3, (a + 2) % 3);
        let mut cen = [0.0f64; 3];
        for s in s0..s1 {
            for (b, x) in cen.iter_mut().enumerate() {
                *x += sp.pos[b][s] as f64;
            }
        }
        let cen = cen.map(|x| x / (s1 - s0) as f64);
        // Centroid of the face's open part: 4 x 4 samples of the bilinear interpolant of its
        // corners' distances (a wall passing between the corners leaves the face centre, on
        // the wall: the path check decides).
        let corner = |du: usize, dv: usize| {
            let mut p = f;
            p[u] += du;
            p[v] += dv;
            self.node_phi[p[0] + nn[0] * (p[1] + nn[1] * p[2])]
        };
        let c4 = [corner(0, 0), corner(1, 0), corner(0, 1), corner(1, 1)];
        let (mut acc, mut cnt) = ([0.0f64; 3], 0);
        // Adds the point `(x, y)` of the face (in cells along `u` and `v`) to the centroid.
        let mut add = |x: f64, y: f64| {
            let mut g = f.map(|x| x as f64);
            g[u] += x;
            g[v] += y;
            for b in 0..3 {
                acc[b] += lo[b] + g[b] * h;
            }
            cnt += 1;
        };
        let mut sampled = false;
        for su in 0..4 {
            for sv in 0..4 {
                let (x, y) = ((su as f32 + 0.5) / 4.0, (sv as f32 + 0.5) / 4.0);
                let bl = (1.0 - x) * (1.0 - y) * c4[0]
                    + x * (1.0 - y) * c4[1]
                    + (1.0 - x) * y * c4[2]
                    + x * y * c4[3];
                if bl > 0.0 {
                    add(x as f64, y as f64);
                    sampled = true;
                }
            }
        }
        if !sampled {
            // Open part smaller than the samples' spacing: its open corners.
            for (q, &cv) in c4.iter().enumerate() {
                if cv > 0.0 {
                    add((q & 1) as f64, (q >> 1) as f64);
                }
            }
        }
        if cnt == 0 {
            return false;
        }
        let fc = acc.map(|x| x / cnt as f64);
        crosses(self.phi, cen, fc, h)
    }
}

/// Seals the faces described in the module documentation: kind [`FaceKind::Wall`], `open` 0,
/// `mask` 1. Visits every face, or with `listed` (static solids) only the faces it lists: the
/// same faces sealed. Returns how many.
pub fn seal(
    w: &Walls,
    listed: Option<&mut ThinFaces>,
    kinds: &mut [Vec<FaceKind>; 3],
    open: &mut [Vec<f32>; 3],
    mask: &mut [Vec<u8>; 3],
) -> usize {
    let Some(faces) = listed else {
        return (0..3)
            .map(|a| seal_all(w, a, &mut kinds[a], &mut open[a], &mut mask[a]))
            .sum();
    };
    let mut total = 0;
    for a in 0..3 {
        let m = w.d.face_n(a);
        let (fl, list, ka) = (&mut faces.flags[a], &faces.list[a], &kinds[a]);
        fl.resize(list.len(), 0);
        fl.par_iter_mut()
            .zip(list.par_iter())
            .with_min_len(1024)
            .for_each(|(x, &f)| {
                let f = f as usize;
                let ijk = [f % m[0], (f / m[0]) % m[1], f / (m[0] * m[1])];
                *x = w.seals(a, ijk, ka[f]) as u8;
            });
        // Few faces seal: written serially, in face order.
        for (&x, &f) in fl.iter().zip(list) {
            if x != 0 {
                let f = f as usize;
                kinds[a][f] = FaceKind::Wall;
                open[a][f] = 0.0;
                mask[a][f] = 1;
                total += 1;
            }
        }
    }
    total
}

/// [`seal`] on every face of component `a`, by rows.
fn seal_all(
    w: &Walls,
    a: usize,
    kinds: &mut [FaceKind],
    open: &mut [f32],
    mask: &mut [u8],
) -> usize {
    let m = w.d.face_n(a);
    let row = m[0];
    kinds
        .par_chunks_mut(row)
        .zip(open.par_chunks_mut(row))
        .zip(mask.par_chunks_mut(row))
        .enumerate()
        .map(|(r, ((kr, or), mr))| {
            let (j, k) = (r % m[1], r / m[1]);
            let mut sealed = 0;
            for i in 0..m[0] {
                if w.seals(a, [i, j, k], kr[i]) {
                    kr[i] = FaceKind::Wall;
                    or[i] = 0.0;
                    mr[i] = 1;
                    sealed += 1;
                }
            }
            sealed
        })
        .sum()
}

/// The faces [`seal`] can seal while the solids stay where they are (static solids): those
/// inside the grid beside a cell whose centre is nearer than 0.9 cells to a solid, by
/// component, in face order, and one byte of scratch each, for [`seal`] to visit only these
/// (a pass over every face took 0.9 ms a substep on the 1M dam break's 2M faces).
#[derive(Debug, Default)]
pub struct ThinFaces {
    list: [Vec<u32>; 3],
    flags: [Vec<u8>; 3],
}

impl ThinFaces {
    /// The faces of solids whose cell-centre distances are `cell_phi`.
    pub fn new(d: &GridDims, cell_phi: &[f32]) -> Self {
        Self {
            list: candidates(d, cell_phi),
            flags: Default::default(),
        }
    }
}

/// The faces of [`ThinFaces`].
fn candidates(d: &GridDims, cell_phi: &[f32]) -> [Vec<u32>; 3] {
    let n = d.n;
    let near = NEAR_CELLS * d.h;
    std::array::from_fn(|a| {
        let stride = [1, n[0], n[0] * n[1]][a];
        d.list_faces(a, |_, f, c| {
            (cell_phi[c] < near || cell_phi[c - stride] < near).then_some(f as u32)
        })
    })
}

/// Restores the open fraction of every sealed face from the node distances `node_phi` (as
/// `geometry::face_fractions` computes it) and clears the mask.
pub fn unseal(d: &GridDims, node_phi: &[f32], open: &mut [Vec<f32>; 3], mask: &mut [Vec<u8>; 3]) {
    let n = d.n;
    let nn = n.map(|c| c + 1);
    let node = |p: [usize; 3]| node_phi[p[0] + nn[0] * (p[1] + nn[1] * p[2])];
    for a in 0..3 {
        let m = d.face_n(a);
        let (u, v) = ((a + 1) % 3, (a + 2) % 3);
        mask[a]
            .par_chunks_mut(m[0])
            .zip(open[a].par_chunks_mut(m[0]))
            .enumerate()
            .for_each(|(r, (mr, or))| {
                let (j, k) = (r % m[1], r / m[1]);
                for (i, (x, o)) in mr.iter_mut().zip(or.iter_mut()).enumerate() {
                    if *x == 0 {
                        continue;
                    }
                    *x = 0;
                    let at = |du: usize, dv: usize| {
                        let mut p = [i, j, k];
                        p[u] += du;
                        p[v] += dv;
                        node(p)
                    };
                    let c = [at(0, 0), at(1, 0), at(1, 1), at(0, 1)];
                    *o = 1.0 - fraction_inside(c);
                }
            });
    }
}
