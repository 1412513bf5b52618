//! Helpers of emission: lattice indexing, the counter-based hash of the emitters' jitter, and
//! the slot ranges of the particles near a sink, an emitter or an open face (see the parent
//! module).

use super::super::cell_sort::SortedParticles;
use super::super::mac_grid::GridDims;
use crate::geometry::transform::Pose;

/// Index of `m` in a box of indices `range` (x fastest), if inside it. (Indices of points
/// far outside the grid saturate at the ends of `i64`: the differences are checked.)
#[inline]
pub(super) fn slot(range: &[(i64, i64); 3], m: [i64; 3]) -> Option<usize> {
    let mut idx = 0usize;
    for a in (0..3).rev() {
        let (lo, hi) = range[a];
        if m[a] < lo || m[a] > hi {
            return None;
        }
        let n = usize::try_from(hi.checked_sub(lo)?).ok()? + 1;
        idx = idx * n + (m[a] - lo) as usize;
    }
    Some(idx)
}

/// Lattice indices are kept within this many boxes of the origin (f64 holds them exactly and
/// their differences fit an `i64`): a region keyframed absurdly far away (1e30 m) gives an
/// empty range, not an overflow.
const INDEX_LIMIT: f64 = 1e15;

/// The grid's world box, its wall layer included: no particle and no emitted point lies
/// outside it.
pub(super) fn grid_box(d: &GridDims) -> ([f64; 3], [f64; 3]) {
    let lo = d.lower.map(|x| x as f64);
    (
        lo,
        std::array::from_fn(|a| lo[a] + d.n[a] as f64 * d.h as f64),
    )
}

/// An emitter's lattice index range `[lo, hi]` per axis at pose `pose`, its lattice displaced
/// by `now` in the body frame: the lattice boxes of the region's body-frame box `body` (with a
/// box's margin each side), clipped to those of the grid's box seen in the body frame (so a
/// region far larger than the domain walks and counts only the domain's lattice). Empty
/// (`hi < lo`) on an axis where they do not meet.
pub(super) fn lattice_range(
    (blo, bhi): ([f64; 3], [f64; 3]),
    pose: &Pose,
    d: &GridDims,
    now: [f64; 3],
) -> [(i64, i64); 3] {
    let sp_h = 0.5 * d.h as f64;
    let lower = d.lower.map(|x| x as f64);
    let (glo, ghi) = grid_box(d);
    let (mut dlo, mut dhi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for c in 0..8 {
        let w = std::array::from_fn(|a| if c >> a & 1 == 1 { ghi[a] } else { glo[a] });
        let b = pose.to_body(w);
        for a in 0..3 {
            dlo[a] = dlo[a].min(b[a]);
            dhi[a] = dhi[a].max(b[a]);
        }
    }
    std::array::from_fn(|a| {
        let index = |x: f64| ((x - lower[a] - now[a]) / sp_h).floor();
        let first = index(blo[a]);
        let last = first + ((bhi[a] - blo[a]) / sp_h).ceil() + 1.0;
        let lo = (first - 1.0).max(index(dlo[a]) - 1.0);
        let hi = last.min(index(dhi[a]) + 1.0);
        if lo.is_nan() || hi.is_nan() || lo > hi {
            return (1, 0);
        }
        let clamp = |x: f64| x.clamp(-INDEX_LIMIT, INDEX_LIMIT) as i64;
        (clamp(lo), clamp(hi))
    })
}

/// Scratch of [`zone_slots`]: the x intervals of one cell row, then the slot ranges.
pub(super) type ZoneScratch = (Vec<(usize, usize)>, Vec<(u32, u32)>);

/// The slot ranges of the cell-sorted particles whose cells (at the substep's sort) lie within
/// `reach` cells of a zone (world boxes) or of an open face's cell layer: every particle that
/// can have entered a sink, an emitter or an open face's bound in the substep, given that none
/// moves more than `reach - 2` cells (the CFL number). Per cell row (x fastest, so a row's
/// cells are contiguous slots), the zones' x intervals are merged, so the ranges are disjoint
/// and ascending. `rows` is scratch; the ranges are returned in its second part.
pub(super) fn zone_slots<'a>(
    d: &GridDims,
    sp: &SortedParticles,
    zones: &[[[f32; 3]; 2]],
    open: [[bool; 2]; 3],
    reach: usize,
    rows: &'a mut ZoneScratch,
) -> &'a [(u32, u32)] {
    let n = d.n;
    let cell = |x: f32, a: usize| ((x - d.lower[a]) / d.h).floor() as i64;
    let clamp = |c: i64, a: usize| c.clamp(0, n[a] as i64 - 1) as usize;
    let mut boxes: Vec<[(usize, usize); 3]> = (zones.iter())
        .map(|b| {
            std::array::from_fn(|a| {
                (
                    clamp(cell(b[0][a], a) - reach as i64, a),
                    clamp(cell(b[1][a], a) + reach as i64, a),
                )
            })
        })
        .collect();
    for (a, sides) in open.iter().enumerate() {
        for (side, &is_open) in sides.iter().enumerate() {
            if is_open {
                let mut b: [(usize, usize); 3] = std::array::from_fn(|k| (0, n[k] - 1));
                b[a] = if side == 0 {
                    (0, reach.min(n[a] - 1))
                } else {
                    ((n[a] - 1).saturating_sub(reach), n[a] - 1)
                };
                boxes.push(b);
            }
        }
    }
    let (row, ranges) = rows;
    ranges.clear();
    if boxes.is_empty() {
        return ranges;
    }
    let (z0, z1) = (
        boxes.iter().map(|b| b[2].0).min(),
        boxes.iter().map(|b| b[2].1).max(),
    );
    let (y0, y1) = (
        boxes.iter().map(|b| b[1].0).min(),
        boxes.iter().map(|b| b[1].1).max(),
    );
    let (Some(z0), Some(z1), Some(y0), Some(y1)) = (z0, z1, y0, y1) else {
        return ranges;
    };
    let cs = &sp.cell_start;
    for k in z0..=z1 {
        for j in y0..=y1 {
            row.clear();
            row.extend(
                (boxes.iter())
                    .filter(|b| (b[1].0..=b[1].1).contains(&j) && (b[2].0..=b[2].1).contains(&k))
                    .map(|b| b[0]),
            );
            row.sort_unstable();
            let mut i = 0;
            while i < row.len() {
                let (x0, mut x1) = row[i];
                i += 1;
                while i < row.len() && row[i].0 <= x1 + 1 {
                    x1 = x1.max(row[i].1);
                    i += 1;
                }
                let (s0, s1) = (cs[d.cell(x0, j, k)], cs[d.cell(x1, j, k) + 1]);
                if s1 > s0 {
                    ranges.push((s0, s1));
                }
            }
        }
    }
    ranges
}

/// A 64-bit hash of `words` (SplitMix64's finaliser chained over the words): the counter-based
/// jitter of emitted particles.
pub fn hash(words: &[u64]) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for &w in words {
        x ^= w
            .wrapping_add(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(x << 6)
            .wrapping_add(x >> 2);
        x = mix(x);
    }
    x
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
