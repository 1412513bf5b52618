//! Body forces and solid boundary conditions on the MAC grid.
//!
//! Gravity is added to every face, `u_a += g_a k` for the substep's kick `k` (the leapfrog's
//! `(dt_prev + dt) / 2`, half a step at the start: `sim::stepping`; exact for a constant force).
//! Walls are static and free-slip: a face with a solid cell on exactly one side
//! ([`FaceKind::Wall`]) gets zero normal velocity, `u . n = 0` (Bridson, *Fluid Simulation for
//! Computer Graphics*, 2nd ed., sec. 5.1). Tangential velocity is left free; faces inside the
//! wall layer are filled by extrapolation so particles next to a wall interpolate slip velocity.

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use rayon::prelude::*;

/// Classifies every face of every component from the cell labels (plane-parallel). Faces on
/// the box boundary (between a wall cell and the outside) are free; every other face of
/// component `a` lies between cells `c - stride_a` and `c`, `c` its own flat cell index.
pub fn classify_faces(d: &GridDims, labels: &[CellLabel], kinds: &mut [Vec<FaceKind>; 3]) {
    let n = d.n;
    let cell_plane = n[0] * n[1];
    for (a, kind) in kinds.iter_mut().enumerate() {
        let m = d.face_n(a);
        let stride = [1, n[0], cell_plane][a];
        kind.par_chunks_mut(m[0] * m[1])
            .enumerate()
            .for_each(|(k, kp)| {
                for (j, row) in kp.chunks_exact_mut(m[0]).enumerate() {
                    if (a == 1 && (j == 0 || j == n[1])) || (a == 2 && (k == 0 || k == n[2])) {
                        row.fill(FaceKind::Free);
                        continue;
                    }
                    let c0 = n[0] * (j + n[1] * k);
                    if a == 0 {
                        // Faces 1..n0 lie between cells i-1 and i of this row.
                        let cells = &labels[c0..c0 + n[0]];
                        row[0] = FaceKind::Free;
                        row[n[0]] = FaceKind::Free;
                        kinds_between(&cells[..n[0] - 1], &cells[1..], &mut row[1..n[0]]);
                    } else {
                        let (below, here) = (
                            &labels[c0 - stride..c0 - stride + n[0]],
                            &labels[c0..c0 + n[0]],
                        );
                        kinds_between(below, here, row);
                    }
                }
            });
    }
}

/// `out[i]` = the kind of the face between cells labelled `below[i]` and `here[i]`
/// (`kind_between` (a test's)), as byte arithmetic the compiler vectorises: a wall where exactly one
/// side is solid, else fluid where either side is, else free.
#[inline(always)]
fn kinds_between(below: &[CellLabel], here: &[CellLabel], out: &mut [FaceKind]) {
    let n = out.len();
    assert!(below.len() >= n && here.len() >= n);
    // SAFETY: both enums are `repr(u8)`, so their slices are byte slices of the same length;
    // the bytes written are discriminants of `FaceKind` (0, 1 or 2).
    let (a, b, o) = unsafe {
        (
            std::slice::from_raw_parts(below.as_ptr() as *const u8, n),
            std::slice::from_raw_parts(here.as_ptr() as *const u8, n),
            std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, n),
        )
    };
    let (solid, fluid) = (CellLabel::Solid as u8, CellLabel::Fluid as u8);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let wall = (x == solid) != (y == solid);
        let wet = (x == fluid) | (y == fluid);
        let other = if wet {
            FaceKind::Fluid as u8
        } else {
            FaceKind::Free as u8
        };
        o[i] = if wall { FaceKind::Wall as u8 } else { other };
    }
}

/// Kind of the face between cells labelled `la` and `lb` (the reference of [`kinds_between`]).
#[cfg(test)]
fn kind_between(la: CellLabel, lb: CellLabel) -> FaceKind {
    use FaceKind::{Fluid, Free, Wall};
    // Indexed by the labels' discriminants (Empty 0, Fluid 1, Solid 2): one solid side is a
    // wall, two non-solid sides with fluid on one are a fluid face, the rest free.
    const TABLE: [[FaceKind; 3]; 3] = [
        [Free, Fluid, Wall],
        [Fluid, Fluid, Wall],
        [Wall, Wall, Free],
    ];
    TABLE[la as usize][lb as usize]
}

/// Keeps the splatted velocity in `old`, then adds `g dt` to every face velocity and zeroes the
/// normal velocity on wall faces, in one pass per component.
pub fn apply_forces(
    vel: &mut [Vec<f32>; 3],
    old: &mut [Vec<f32>; 3],
    kinds: &[Vec<FaceKind>; 3],
    g: [f32; 3],
    dt: f32,
) {
    for a in 0..3 {
        let dv = g[a] * dt;
        vel[a]
            .par_iter_mut()
            .zip(old[a].par_iter_mut())
            .zip(kinds[a].par_iter())
            .with_min_len(4096)
            .for_each(|((v, o), k)| {
                *o = *v;
                *v = if *k == FaceKind::Wall { 0.0 } else { *v + dv };
            });
    }
}

/// [`apply_forces`] fused with the splat's normalisation ([`super::transfer::splat`]): reads
/// the splat's sums `[sum w v, sum w]` per face (`sums`, from
/// [`super::transfer::splat_sums`]) and writes the splatted velocity to `old` and the forced
/// one to `vel` in one pass per component, the same values as `splat` then `apply_forces`
/// (one pass over the face grids less: the splatted velocity is not written and read back).
pub fn apply_forces_from_sums(
    sums: &[Vec<f32>; 3],
    vel: &mut [Vec<f32>; 3],
    old: &mut [Vec<f32>; 3],
    kinds: &[Vec<FaceKind>; 3],
    g: [f32; 3],
    dt: f32,
) {
    for a in 0..3 {
        let dv = g[a] * dt;
        let acc = sums[a].as_chunks::<2>().0;
        let n = vel[a].len();
        assert!(
            old[a].len() == n && kinds[a].len() == n && acc.len() >= n,
            "apply_forces_from_sums: grids of different sizes"
        );
        // Chunks of slices with a plain loop inside, which the compiler vectorises.
        const CHUNK: usize = 8192;
        vel[a]
            .par_chunks_mut(CHUNK)
            .zip(old[a].par_chunks_mut(CHUNK))
            .zip(kinds[a].par_chunks(CHUNK).zip(acc[..n].par_chunks(CHUNK)))
            .for_each(|((v, o), (k, s))| {
                let m = v.len();
                let (o, k, s) = (&mut o[..m], &k[..m], &s[..m]);
                for i in 0..m {
                    let u = super::transfer::normalised(s[i][0], s[i][1]);
                    o[i] = u;
                    let f = u + dv;
                    v[i] = if k[i] == FaceKind::Wall { 0.0 } else { f };
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectorised classification against the table, for every pair of labels (the nine
    /// cases), in a run long enough for the vector loop and its tail.
    #[test]
    fn kinds_between_matches_the_table() {
        use CellLabel::{Empty, Fluid, Solid};
        let all = [Empty, Fluid, Solid];
        let pairs: Vec<(CellLabel, CellLabel)> =
            (0..100).map(|i| (all[i % 3], all[(i / 3) % 3])).collect();
        let (a, b): (Vec<_>, Vec<_>) = pairs.iter().copied().unzip();
        let mut out = vec![FaceKind::Free; pairs.len()];
        kinds_between(&a, &b, &mut out);
        for ((x, y), k) in pairs.iter().zip(&out) {
            assert_eq!(*k, kind_between(*x, *y), "{x:?} | {y:?}");
        }
    }
}
