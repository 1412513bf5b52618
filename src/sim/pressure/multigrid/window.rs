//! The hierarchy's window onto the simulation grid: at each set-up the finest level covers
//! only the box around the liquid, not the whole domain, and the coarse levels follow.
//!
//! Every loop of the cycle already visits only each row's span of fluid cells (`level.rs`),
//! but the rows' layout came from the domain: a compact row of the 8M dam break's 319-cell rows
//! has 176 entries, so while the column stands (80 of the 319 cells per row are liquid) a row's
//! span is 40 entries and the next row's starts 704 bytes further on. Each row then costs its
//! own start-up (new cache lines in five arrays and four neighbour rows, the prefetcher
//! re-learning the stream), and the 8M column's cycle took 1.5x as long as the spread-out flow's
//! with the same number of fluid cells (`cargo bench --bench mg_cycle` on labels dumped after 2
//! and 10 frames). In a window of the liquid's box the rows follow each other in memory and the
//! levels' arrays are as small as the liquid's box (the idea of the bounding boxes and sparse
//! tiles of large-grid solvers, e.g. McAdams et al. 2010, sec. 5, and OpenVDB's sparse grids).
//!
//! The window is the liquid's bounding box grown by two cells each way (clipped to the
//! domain): the one-cell layer of the fluid cells' neighbours, whose labels the operator
//! reads, and the level's outermost layer, which is taken as solid. Its lower corner is
//! rounded down to a multiple of `2^(levels - 1)`, so each coarse cell covers the same fine
//! cells as in the domain's hierarchy. The levels are re-dimensioned in the buffers that
//! [`super::Multigrid::new`] allocated for the whole domain (`redim.rs`: a smaller box needs
//! fewer entries at every level), so a set-up allocates nothing.

use super::super::super::mac_grid::{CellLabel, label_bytes};
use super::super::system::fluid_span;
use rayon::prelude::*;

/// Where the hierarchy's finest level lies in the simulation grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Cells per axis of the simulation grid.
    pub full: [usize; 3],
    /// The window's first cell in the simulation grid.
    pub lo: [usize; 3],
    /// Cells per axis of the window (the finest level's grid).
    pub n: [usize; 3],
}

impl Window {
    /// The whole grid.
    pub fn whole(full: [usize; 3]) -> Self {
        Self {
            full,
            lo: [0; 3],
            n: full,
        }
    }

    /// The box of the fluid cells of `labels` (a grid of `full` cells), grown by two cells
    /// and clipped to the grid, its lower corner rounded down to a multiple of `align`; the
    /// whole grid where there is no fluid.
    pub fn around_liquid(labels: &[CellLabel], full: [usize; 3], align: usize) -> Self {
        // Per axis the first fluid cell and one past the last (`none`: no fluid yet).
        type Bounds = [usize; 6];
        let none: Bounds = [usize::MAX, 0, usize::MAX, 0, usize::MAX, 0];
        let merge = |a: Bounds, b: Bounds| -> Bounds {
            std::array::from_fn(|x| {
                if x % 2 == 0 {
                    a[x].min(b[x])
                } else {
                    a[x].max(b[x])
                }
            })
        };
        let b = labels
            .par_chunks(full[0])
            .enumerate()
            .with_min_len(64)
            .fold(
                || none,
                |b, (row, l)| match fluid_span(label_bytes(l)) {
                    Some((lo, hi)) => {
                        let (j, k) = (row % full[1], row / full[1]);
                        merge(b, [lo, hi, j, j + 1, k, k + 1])
                    }
                    None => b,
                },
            )
            .reduce(|| none, merge);
        if b[0] == usize::MAX {
            return Self::whole(full);
        }
        let align = align.max(1);
        let lo: [usize; 3] = std::array::from_fn(|a| b[2 * a].saturating_sub(2) / align * align);
        let n = std::array::from_fn(|a| (b[2 * a + 1] + 2).min(full[a]) - lo[a]);
        Self { full, lo, n }
    }

    /// The simulation grid's `(i, j, k)` of its cell `c`.
    #[inline(always)]
    fn grid_ijk(&self, c: usize) -> [usize; 3] {
        let (i, row) = (c % self.full[0], c / self.full[0]);
        [i, row % self.full[1], row / self.full[1]]
    }

    /// The window's `(i, j, k)` of the simulation grid's cell `c` (which must lie inside).
    #[inline(always)]
    pub fn local(&self, c: usize) -> [usize; 3] {
        let ijk = self.grid_ijk(c);
        std::array::from_fn(|a| ijk[a] - self.lo[a])
    }

    /// Whether the simulation grid's cell `c` lies inside the window, not on its outermost
    /// layer (where a fluid cell must lie).
    pub fn holds(&self, c: usize) -> bool {
        let ijk = self.grid_ijk(c);
        (0..3).all(|a| ijk[a] > self.lo[a] && ijk[a] + 1 < self.lo[a] + self.n[a])
    }
}
