//! Sparse blocks of a world-aligned sampling grid.
//!
//! Grid point `g = [i, j, k]` (global integer index) sits at `g * cell` in world coordinates, so
//! the sampling lattice never moves between frames (no flicker from a grid that follows the
//! particles' bounding box). Points are grouped in cubic blocks of [`B`]^3 points; a dense table
//! over the domain's block range maps a block to its slot in the list of *allocated* blocks, or
//! to [`NONE`]. Only blocks near particles are allocated, so memory follows the liquid, not the
//! box. A point inside a block has local index `x + B * (y + B * z)`.
//!
//! Particles are binned into blocks by a stable counting sort (creation order inside a block),
//! which makes every per-block sum run in an order that does not depend on the thread count.

use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Points per block edge.
pub const B: usize = 8;
/// Points per block.
pub const BP: usize = B * B * B;
/// "No block" in the dense table.
pub const NONE: u32 = u32::MAX;

/// Particle coordinates (struct of arrays), read in place from two parts: `head`, then
/// `tail` (the particles, then their wall mirrors, without copying both into one array).
#[derive(Clone, Copy)]
pub struct Points<'a> {
    pub head: &'a [Vec<f32>; 3],
    pub tail: &'a [Vec<f32>; 3],
}

/// An empty part.
static NO_POINTS: [Vec<f32>; 3] = [Vec::new(), Vec::new(), Vec::new()];

impl<'a> Points<'a> {
    /// One part.
    pub fn one(head: &'a [Vec<f32>; 3]) -> Self {
        Self {
            head,
            tail: &NO_POINTS,
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.head[0].len() + self.tail[0].len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Coordinate `a` of point `i`.
    #[inline(always)]
    pub fn get(&self, a: usize, i: usize) -> f32 {
        let n = self.head[a].len();
        if i < n {
            self.head[a][i]
        } else {
            self.tail[a][i - n]
        }
    }

    /// Point `i`.
    #[inline(always)]
    pub fn at(&self, i: usize) -> [f32; 3] {
        std::array::from_fn(|a| self.get(a, i))
    }
}

/// `f(order[k])` for every `k`, as three arrays (one per coordinate), in one parallel pass:
/// the scattered reads of a point's three coordinates are issued together (one pass per
/// coordinate made each a separate miss, three times over the permutation).
pub fn gather3(order: &[u32], f: impl Fn(usize) -> [f32; 3] + Sync) -> [Vec<f32>; 3] {
    const CHUNK: usize = 1 << 13;
    let n = order.len();
    // Not zeroed first (every index is written below): on memory the allocator reuses, the
    // zeroing was a serial `memset` on the calling thread.
    let mut out: [Vec<MaybeUninit<f32>>; 3] = std::array::from_fn(|_| uninit(n));
    let [x, y, z] = &mut out;
    order
        .par_chunks(CHUNK)
        .zip(x.par_chunks_mut(CHUNK))
        .zip(y.par_chunks_mut(CHUNK))
        .zip(z.par_chunks_mut(CHUNK))
        .for_each(|(((o, x), y), z)| {
            for (k, &i) in o.iter().enumerate() {
                let v = f(i as usize);
                x[k] = MaybeUninit::new(v[0]);
                y[k] = MaybeUninit::new(v[1]);
                z[k] = MaybeUninit::new(v[2]);
            }
        });
    // SAFETY: the chunks above tile `0..n` and write every index of the three arrays.
    out.map(|v| unsafe { assume_init(v) })
}

/// A vector of `n` uninitialised values, for a parallel pass that writes every index (the
/// allocator's zeroing of a `vec![0; n]` is a serial `memset` where it reuses memory).
pub(crate) fn uninit<T>(n: usize) -> Vec<MaybeUninit<T>> {
    let mut v = Vec::with_capacity(n);
    // SAFETY: `MaybeUninit` needs no initialisation, and the capacity is `n`.
    unsafe { v.set_len(n) };
    v
}

/// `v` as initialised values.
///
/// # Safety
/// Every element of `v` must have been written.
pub(crate) unsafe fn assume_init<T>(v: Vec<MaybeUninit<T>>) -> Vec<T> {
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: `MaybeUninit<T>` has `T`'s layout; the caller guarantees every element is
    // initialised; the buffer's ownership moves to the returned vector.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast::<T>(), v.len(), v.capacity()) }
}

/// A stable counting sort of the indices of `keys` by key (`0..buckets`; [`NONE`]: left out):
/// the first index of each bucket (`buckets + 1` entries, the last the count kept) and the
/// indices, bucket by bucket, ascending within one. In parallel over pieces of `keys` (a
/// histogram each; a piece's indices of a bucket follow the earlier pieces'): the result is the
/// serial sort's for any thread count.
pub fn counting_sort(keys: &[u32], buckets: usize) -> (Vec<u32>, Vec<u32>) {
    // At most 8 pieces: each histogram spans every bucket.
    let pieces = rayon::current_num_threads().clamp(1, 8);
    let len = keys.len().div_ceil(pieces).max(1);
    let mut hist: Vec<Vec<u32>> = keys
        .par_chunks(len)
        .map(|c| {
            let mut h = vec![0u32; buckets];
            for &k in c.iter().filter(|&&k| k != NONE) {
                h[k as usize] += 1;
            }
            h
        })
        .collect();
    // Bucket starts, and each piece's first slot in each bucket: a prefix sum in bucket-major,
    // piece-minor order, in parallel over ranges of buckets (their totals first).
    const RANGE: usize = 1 << 14;
    let ranges = buckets.div_ceil(RANGE);
    let totals: Vec<u32> = (0..ranges)
        .into_par_iter()
        .map(|r| {
            let b = r * RANGE..((r + 1) * RANGE).min(buckets);
            hist.iter().map(|h| h[b.clone()].iter().sum::<u32>()).sum()
        })
        .collect();
    let firsts: Vec<u32> = totals
        .iter()
        .scan(0u32, |at, &t| {
            let f = *at;
            *at += t;
            Some(f)
        })
        .collect();
    let mut start = vec![0u32; buckets + 1];
    start[buckets] = totals.iter().sum();
    {
        // Per range of buckets: the starts, and the slice of every histogram (turned into
        // first slots).
        let mut cols: Vec<Vec<&mut [u32]>> = (0..ranges).map(|_| Vec::new()).collect();
        for h in hist.iter_mut() {
            for (r, c) in h.chunks_mut(RANGE).enumerate() {
                cols[r].push(c);
            }
        }
        start[..buckets]
            .par_chunks_mut(RANGE)
            .zip(cols.into_par_iter())
            .zip(firsts.par_iter())
            .for_each(|((st, mut cols), &first)| {
                let mut at = first;
                for (b, s) in st.iter_mut().enumerate() {
                    *s = at;
                    for c in cols.iter_mut() {
                        let n = c[b];
                        c[b] = at;
                        at += n;
                    }
                }
            });
    }
    let mut order = uninit::<u32>(start[buckets] as usize);
    let out = SharedOut(order.as_mut_ptr().cast::<u32>());
    keys.par_chunks(len)
        .zip(hist.par_iter_mut())
        .enumerate()
        .for_each(|(c, (keys, slots))| {
            let out = &out;
            for (j, &k) in keys.iter().enumerate() {
                if k != NONE {
                    let slot = &mut slots[k as usize];
                    // SAFETY: the slots of different pieces and buckets are disjoint ranges of
                    // `order` (the prefix sum above), each written once, in bounds.
                    unsafe { *out.0.add(*slot as usize) = (c * len + j) as u32 };
                    *slot += 1;
                }
            }
        });
    // SAFETY: every kept key's index was written to its own slot, and the slots of the kept
    // keys are exactly `0..start[buckets]`.
    (start, unsafe { assume_init(order) })
}

/// `order`'s buffer, written at disjoint indices by the pieces of [`counting_sort`].
struct SharedOut(*mut u32);
// SAFETY: see the write in `counting_sort`: each index is written by one piece only.
unsafe impl Sync for SharedOut {}

/// The block layout of one frame's sampling grid plus the binned particles.
#[derive(Debug, Clone)]
pub struct SparseGrid {
    /// Grid spacing, m.
    pub cell: f64,
    /// Global index of the first point of dense block `[0, 0, 0]`.
    pub origin: [i64; 3],
    /// Dense block table size per axis.
    pub dims: [usize; 3],
    /// Dense block index -> slot in `blocks`, or [`NONE`].
    pub slot: Vec<u32>,
    /// Allocated blocks, as dense indices in ascending order.
    pub blocks: Vec<u32>,
    /// Binned particles: position in grid units relative to `origin` (`x / cell - origin`).
    pub pos: [Vec<f32>; 3],
    /// Binned particles' velocities, m/s (empty when [`SparseGrid::new`] was given none: the
    /// reader then reads the input's through `order`).
    pub vel: [Vec<f32>; 3],
    /// Dense block index -> range `start[b]..start[b + 1]` of its particles in `pos`/`vel`.
    pub start: Vec<u32>,
    /// Binned particle -> index of that particle in the input arrays.
    pub order: Vec<u32>,
}

impl SparseGrid {
    /// Bins `particles` and allocates every block within `reach` (m) + 2 cells of a particle.
    /// `lo`/`hi` bound the region of interest (m); particles farther than `reach` from it, or
    /// with non-finite coordinates, are ignored. Velocities `vel`, if given, are copied in
    /// binned order.
    pub fn new(
        pos: Points,
        vel: Option<Points>,
        cell: f64,
        lo: [f64; 3],
        hi: [f64; 3],
        reach: f64,
    ) -> Self {
        let margin = reach + 3.0 * cell;
        let bi = B as i64;
        let origin: [i64; 3] = std::array::from_fn(|a| ((lo[a] - margin) / cell).floor() as i64)
            .map(|g| g.div_euclid(bi) * bi);
        let end: [i64; 3] = std::array::from_fn(|a| ((hi[a] + margin) / cell).ceil() as i64 + 1);
        let dims: [usize; 3] =
            std::array::from_fn(|a| ((end[a] - origin[a] + bi - 1) / bi).max(1) as usize);
        let nd = dims[0] * dims[1] * dims[2];

        // Keys of kept particles (NONE for ignored ones).
        let n = pos.len();
        let inv = 1.0 / cell;
        let keys: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|i| {
                // Not `array::map` (a call per particle: not inlined here).
                let q = pos.at(i);
                let p = [q[0] as f64, q[1] as f64, q[2] as f64];
                let ok = (0..3)
                    .all(|a| p[a].is_finite() && p[a] >= lo[a] - reach && p[a] <= hi[a] + reach);
                if !ok {
                    return NONE;
                }
                let b: [usize; 3] = std::array::from_fn(|a| {
                    let g = p[a] * inv - origin[a] as f64;
                    // `floor` for g >= 0 (negatives clamp to 0 either way) without libm,
                    // through i64 (one instruction; `as usize` from f64 takes several): the
                    // same value, as the clamp to the table follows.
                    ((g / B as f64).max(0.0) as i64 as usize).min(dims[a] - 1)
                });
                (b[0] + dims[0] * (b[1] + dims[1] * b[2])) as u32
            })
            .collect();
        let (start, order) = counting_sort(&keys, nd);
        drop(keys);
        let o = origin.map(|v| v as f64);
        let spos = gather3(&order, |i| {
            let p = pos.at(i);
            std::array::from_fn(|a| (p[a] as f64 * inv - o[a]) as f32)
        });
        let svel: [Vec<f32>; 3] = std::array::from_fn(|a| match vel {
            Some(vel) => order.par_iter().map(|&i| vel.get(a, i as usize)).collect(),
            None => Vec::new(),
        });

        // Allocate blocks within `d` blocks of an occupied one.
        let d = ((reach / cell + 2.0) / B as f64).ceil() as i64;
        let mut mark = vec![false; nd];
        for bz in 0..dims[2] {
            for by in 0..dims[1] {
                for bx in 0..dims[0] {
                    let b = bx + dims[0] * (by + dims[1] * bz);
                    if start[b + 1] == start[b] {
                        continue;
                    }
                    let c = [bx as i64, by as i64, bz as i64];
                    let r: [(i64, i64); 3] = std::array::from_fn(|a| {
                        ((c[a] - d).max(0), (c[a] + d).min(dims[a] as i64 - 1))
                    });
                    for z in r[2].0..=r[2].1 {
                        for y in r[1].0..=r[1].1 {
                            let row = dims[0] as i64 * (y + dims[1] as i64 * z);
                            for x in r[0].0..=r[0].1 {
                                mark[(row + x) as usize] = true;
                            }
                        }
                    }
                }
            }
        }
        let mut slot = vec![NONE; nd];
        let mut blocks = Vec::new();
        for (b, m) in mark.iter().enumerate() {
            if *m {
                slot[b] = blocks.len() as u32;
                blocks.push(b as u32);
            }
        }
        Self {
            cell,
            origin,
            dims,
            slot,
            blocks,
            pos: spos,
            vel: svel,
            start,
            order,
        }
    }

    /// Block coordinates of dense index `b`.
    pub fn coords(&self, b: u32) -> [i64; 3] {
        let b = b as usize;
        [
            (b % self.dims[0]) as i64,
            ((b / self.dims[0]) % self.dims[1]) as i64,
            (b / (self.dims[0] * self.dims[1])) as i64,
        ]
    }

    /// Dense index of block coordinates `c`, if inside the table.
    pub fn dense(&self, c: [i64; 3]) -> Option<u32> {
        if (0..3).all(|a| c[a] >= 0 && c[a] < self.dims[a] as i64) {
            Some(
                (c[0] as usize + self.dims[0] * (c[1] as usize + self.dims[1] * c[2] as usize))
                    as u32,
            )
        } else {
            None
        }
    }

    /// Slot of the block at coordinates `c`, or [`NONE`].
    pub fn slot_at(&self, c: [i64; 3]) -> u32 {
        self.dense(c).map_or(NONE, |d| self.slot[d as usize])
    }

    /// Particle index range of dense block `b`.
    pub fn particles_of(&self, b: u32) -> std::ops::Range<usize> {
        self.start[b as usize] as usize..self.start[b as usize + 1] as usize
    }

    /// Number of binned particles.
    pub fn particle_count(&self) -> usize {
        self.pos[0].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parallel counting sort gives the serial stable sort's order and bucket starts (a
    /// plain loop: count, prefix sum, place in input order) for any thread count, with keys
    /// left out ([`NONE`]), empty buckets and more pieces than some buckets hold. Exact
    /// equality: the order decides every later per-block sum, so one swapped pair would change
    /// the mesh bytes.
    #[test]
    fn counting_sort_is_the_serial_stable_sort_for_any_thread_count() {
        let buckets = 1000;
        // A scrambled sequence (a fixed LCG) with about 1 in 7 keys left out.
        let mut x = 12345u64;
        let keys: Vec<u32> = (0..100_003)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = (x >> 33) as u32;
                if v.is_multiple_of(7) {
                    NONE
                } else {
                    v % (buckets as u32 - 17)
                }
            })
            .collect();
        let mut start = vec![0u32; buckets + 1];
        for &k in keys.iter().filter(|&&k| k != NONE) {
            start[k as usize + 1] += 1;
        }
        for b in 0..buckets {
            start[b + 1] += start[b];
        }
        let mut fill = start.clone();
        let mut order = vec![0u32; start[buckets] as usize];
        for (i, &k) in keys.iter().enumerate().filter(|(_, k)| **k != NONE) {
            order[fill[k as usize] as usize] = i as u32;
            fill[k as usize] += 1;
        }
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (s, o) = pool.install(|| counting_sort(&keys, buckets));
            assert_eq!(s, start, "bucket starts with {threads} threads");
            assert_eq!(o, order, "order with {threads} threads");
        }
    }
}
