//! The liquid's connected pieces, found by runs of rows ([`System::runs`]): a union-find over
//! the runs, joined along x to the next run of the same x-line and along +y, +z to the run
//! holding the first row's neighbour (the neighbour rows of a run are consecutive cells of one
//! line, and the runs of that line that touch are joined along x, so one join per direction
//! is enough), found by a cursor that only moves forward because the neighbours' rows
//! increase with the rows. In slabs of z-planes in parallel, then across the slabs'
//! boundaries: each set's root is its first run whatever the order of the joins, so the
//! pieces do not depend on the slabs or the threads.
//!
//! Two cells are joined when they share a face, whatever its weight: with face weights these
//! are the pieces of the labels, of which a piece of the matrix (joined across open faces
//! only) is a part. The multigrid's drops (`multigrid/drops.rs`) and the density correction's
//! sealed pieces (`pockets.rs`) use them.

use super::super::super::sync_ptr::SyncPtr;
use super::System;
use rayon::prelude::*;

/// Fewest runs per slab of the joins (slabs of z-planes, joined in parallel).
const SLAB_RUNS: usize = 1024;
/// Most slabs.
const MAX_SLABS: usize = 256;

/// The pieces of a system's rows and the scratch of [`Pieces::label`].
pub struct Pieces {
    /// Each run's first row.
    pub starts: Vec<u32>,
    /// Each run's root (its piece's first run) after [`Pieces::label`].
    pub parent: Vec<u32>,
    /// The first run of each slab of planes, and the end.
    bounds: Vec<u32>,
    /// Fewest runs per slab ([`SLAB_RUNS`]; tests lower it).
    pub slab_runs: usize,
}

/// The root of `x`'s set in `p`, the parents of the runs `off..off + p.len()` (every run
/// `x`'s path reaches lies there), halving the path on the way. Every parent is at most its
/// run (`join` hangs the larger root under the smaller), so a root is its set's first run.
fn find(p: &mut [u32], off: u32, mut x: u32) -> u32 {
    while p[(x - off) as usize] != x {
        let g = p[(p[(x - off) as usize] - off) as usize];
        p[(x - off) as usize] = g;
        x = g;
    }
    x
}

/// Joins the sets of `a` and `b` (runs of `p` as in [`find`]) under the smaller root: each
/// set's root is its first run, whatever the order of the joins.
fn join(p: &mut [u32], off: u32, a: u32, b: u32) {
    let (ra, rb) = (find(p, off, a), find(p, off, b));
    if ra != rb {
        p[(ra.max(rb) - off) as usize] = ra.min(rb);
    }
}

impl Pieces {
    /// Scratch reserved for `runs` runs (pages become resident only as a system uses them).
    pub fn with_capacity(runs: usize) -> Self {
        Self {
            starts: Vec::with_capacity(runs),
            parent: Vec::with_capacity(runs),
            bounds: Vec::with_capacity(MAX_SLABS + 1),
            slab_runs: SLAB_RUNS,
        }
    }

    /// The end (one past the last row) of run `i` of a system of `nf` rows.
    #[inline]
    pub fn end(&self, i: usize, nf: usize) -> usize {
        self.starts.get(i + 1).map_or(nf, |&s| s as usize)
    }

    /// The pieces of `sys`'s fluid rows: [`Self::starts`] the runs' first rows,
    /// [`Self::parent`] each run's root.
    pub fn label(&mut self, sys: &System) {
        let nf = sys.nf;
        let starts = &mut self.starts;
        starts.clear();
        let mut a = 0;
        while a < nf {
            starts.push(a as u32);
            a = sys.run_end(a, nf);
        }
        let nr = starts.len();
        let end = |i: usize| starts.get(i + 1).map_or(nf, |&s| s as usize);
        // `c` to the run holding row `q` (at or after run `c`).
        let advance = |c: &mut usize, q: usize| {
            while end(*c) <= q {
                *c += 1;
            }
            assert!(starts[*c] as usize <= q, "pieces: runs out of order");
        };
        // Slabs of whole z-planes (a run lies in one plane), each a range of runs.
        let bounds = &mut self.bounds;
        bounds.clear();
        bounds.push(0);
        let slabs = (nr / self.slab_runs.max(1)).clamp(1, MAX_SLABS);
        for s in 1..slabs {
            let k = sys.ijk_of[starts[s * nr / slabs] as usize][2] as usize;
            let b = starts.partition_point(|&a| a < sys.plane_rows[k]) as u32;
            if b > *bounds.last().unwrap() {
                bounds.push(b);
            }
        }
        bounds.push(nr as u32);
        let p = &mut self.parent;
        p.clear();
        p.extend(0..nr as u32);
        // Within each slab in parallel: every join but those of +z neighbours in the next
        // slab. Per direction (+y, +z) the run holding the last neighbour found: the
        // neighbours' rows increase with the rows, so the cursor only moves forward.
        let pp = SyncPtr(p.as_mut_ptr());
        let bounds = &*bounds;
        (0..bounds.len() - 1).into_par_iter().for_each(|s| {
            let (b0, b1) = (bounds[s] as usize, bounds[s + 1] as usize);
            // SAFETY: the slabs' ranges of runs are disjoint, each written by its own task.
            let p = unsafe { std::slice::from_raw_parts_mut(pp.get(b0), b1 - b0) };
            let (off, next) = (b0 as u32, starts.get(b1).map_or(nf, |&a| a as usize));
            let mut cur = [b0; 2];
            for (i, &a) in (b0..).zip(&starts[b0..b1]) {
                let (a, b) = (a as usize, end(i));
                if b < nf && sys.nb[b - 1][1] as usize == b {
                    join(p, off, i as u32, i as u32 + 1);
                }
                let m = sys.nb[a];
                for (c, q) in cur.iter_mut().zip([m[3] as usize, m[5] as usize]) {
                    if q < next {
                        advance(c, q);
                        join(p, off, i as u32, *c as u32);
                    }
                }
            }
        });
        // Across the slabs: the +z joins of each slab's last plane.
        for &b1 in &bounds[1..bounds.len() - 1] {
            let b1 = b1 as usize;
            let k = sys.ijk_of[starts[b1] as usize][2] as usize;
            let first = starts.partition_point(|&a| a < sys.plane_rows[k - 1]);
            let mut c = b1;
            for (i, &a) in (first..).zip(&starts[first..b1]) {
                let q = sys.nb[a as usize][5] as usize;
                if q < nf {
                    advance(&mut c, q);
                    join(p, 0, i as u32, c as u32);
                }
            }
        }
        // Every run's parent to its root, in order (a parent is at most its run).
        for i in 0..nr {
            p[i] = p[p[i] as usize];
        }
    }
}
