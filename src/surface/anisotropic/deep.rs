//! The narrow band of the anisotropic method: blocks deep inside the liquid, found from the
//! particle counts of small density cubes, are set inside without splatting a kernel.

use super::super::sparse_grid::{B, SparseGrid};
use rayon::prelude::*;

/// Edge (mesh cells) of the density cubes of the deep-block test ([`is_deep`]); a block holds
/// `(B / CUBE)^3` of them.
pub const CUBE: usize = 4;
pub(super) const CPB: usize = B / CUBE;
/// Least share of the rest density (one particle per `4/3 π r³`) in every density cube of a
/// deep block and of the ring of cubes around it.
pub const DEEP_DENSITY: f32 = 0.6;

/// Particle counts of the density cubes of each allocated block (slot order).
pub(super) fn cube_counts(g: &SparseGrid) -> Vec<[u16; CPB * CPB * CPB]> {
    g.blocks
        .par_iter()
        .map(|&dense| {
            let bc = g.coords(dense);
            let mut c = [0u16; CPB * CPB * CPB];
            for i in g.particles_of(dense) {
                let l: [usize; 3] = std::array::from_fn(|a| {
                    let q = g.pos[a][i] - (bc[a] * B as i64) as f32;
                    // Through i32 (one instruction; `as usize` from f32 takes several): the
                    // same value for `0 <= q < 2^31`, and larger ones clamp the same.
                    ((q.max(0.0) as i32 as usize) / CUBE).min(CPB - 1)
                });
                let k = l[0] + CPB * (l[1] + CPB * l[2]);
                c[k] = c[k].saturating_add(1);
            }
            c
        })
        .collect()
}

/// Whether block `dense` lies deep inside the liquid: every density cube of it and of the ring
/// of cubes around it ([`CUBE`] cells wide) holds at least `min` particles ([`DEEP_DENSITY`] of
/// the rest density). A free surface leaves the cubes it crosses, or the ones beside it, short
/// of particles, so no marching-cubes edge crossing the surface, nor the gradient stencil of
/// one, touches a deep block: its points need no splat (the narrow band; most of a deep pool's
/// points). Air pockets that leave every cube three quarters full (thinner than about one
/// cell) are filled; the Zhu-Bridson average closes them anyway.
pub(super) fn is_deep(
    g: &SparseGrid,
    counts: &[[u16; CPB * CPB * CPB]],
    dense: u32,
    min: f32,
) -> bool {
    let bc = g.coords(dense);
    let c = CPB as i64;
    // The slots of the block and its 26 neighbours, looked up once (per cube, the lookup's
    // Euclidean divisions were 1.3% of `surge mesh`'s instructions on frame 20 of the 1M dam
    // break), and per cube coordinate `-1..=CPB` relative to the block: its block offset and
    // its index in that block.
    let slots: [u32; 27] = std::array::from_fn(|k| {
        let o = [k % 3, k / 3 % 3, k / 9].map(|v| v as i64 - 1);
        g.slot_at([bc[0] + o[0], bc[1] + o[1], bc[2] + o[2]])
    });
    let at = |p: i64| -> (usize, usize) {
        if p < 0 {
            (0, (p + c) as usize)
        } else if p >= c {
            (2, (p - c) as usize)
        } else {
            (1, p as usize)
        }
    };
    for z in -1..=c {
        let (oz, lz) = at(z);
        for y in -1..=c {
            let (oy, ly) = at(y);
            for x in -1..=c {
                let (ox, lx) = at(x);
                let slot = slots[ox + 3 * (oy + 3 * oz)];
                if slot == super::super::sparse_grid::NONE {
                    return false;
                }
                if (counts[slot as usize][lx + CPB * (ly + CPB * lz)] as f32) < min {
                    return false;
                }
            }
        }
    }
    true
}
