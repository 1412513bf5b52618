//! Velocity extrapolation from the fluid faces into the air and into the wall layer.
//!
//! After the projection only faces touching a fluid cell ([`FaceKind::Fluid`]) carry a valid
//! velocity, and wall faces carry zero normal velocity. Particles near the surface interpolate
//! from faces beyond it, and the RK2 midpoint of a substep at CFL number `C` lies up to `C / 2`
//! cells out, so `ceil(C / 2) + 1` layers are filled, valid values spreading outwards layer by
//! layer: each pass sets every still-invalid free face
//! that has a valid neighbour (six neighbours in its own component's grid) to the mean of those
//! neighbours (Bridson, *Fluid Simulation for Computer Graphics*, 2nd ed., sec. 4.3; the
//! breadth-first "layers" of Foster & Fedkiw 2001). Each layer reads the previous layer's mask
//! only (Jacobi style), so the result does not depend on the order of evaluation or the threads.
//! The FLIP change `dv = v_new - v_old` is extrapolated with the same weights. Wall faces are
//! never written (zero normal velocity); free faces no layer reaches get zero, or, inside a
//! moving solid beside the liquid, its free-slip velocity (the solid's along its normal, the
//! liquid's across it) with a change of zero (`SolidState::inner_velocities`). A particle kept just outside a solid interpolates faces
//! up to about a cell and a half inside it, beyond the layers' reach from the liquid: beside a
//! static solid zero is its velocity, but beside a wall retreating across the grid zero held
//! the particles back every substep (water carried in a moving container gathered towards the
//! leading wall, `tests/obstacles_carried.rs`).
//!
//! Only a band around the liquid is touched: the x-rows of faces whose `(j, k)` lies within
//! `layers + 2` rows (in y and z) of an x-row of cells holding fluid. Every face a layer can
//! reach, and every face a particle interpolates from, is inside it; faces outside keep what
//! the projection left (no particle reads them, and the next substep's splat overwrites every
//! face). So a splash or a thin pool costs in proportion to the liquid, not to its bounding
//! box, and the rows spread over the threads whatever the liquid's shape. Within a band row a
//! layer visits only the faces that can have a valid neighbour: the row's span of valid faces
//! (kept per row and layer) grown by one, and its four neighbour rows' spans; the other faces
//! of the row would find no valid neighbour, so skipping them gives the same bits. (Every
//! layer used to visit whole band rows, mostly air far from the liquid in x: the spans cut the
//! stage's instructions by 77% on the 1M-particle dam break's first 3 frames, 1 thread,
//! `valgrind --tool=callgrind` on `cargo bench --bench bench_stepper`.)

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use super::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Scratch for extrapolation (one component at a time).
#[derive(Default)]
pub struct Extrapolator {
    valid: Vec<u8>,
    next: Vec<u8>,
    /// Per x-row of cells `(j, k)` at `k ny + j`: holds fluid, then (after dilation) in the band.
    near: Vec<u8>,
    near_tmp: Vec<u8>,
    /// The band's face rows of the current component, `k m_y + j` (a prefix of it).
    rows: Vec<u32>,
    /// Per face plane `k` of the current component: the index in `rows` of its first band
    /// row (one more entry: the band's row count).
    plane_rows: Vec<u32>,
    /// Per face row `k m_y + j` of the current component: the faces `lo..hi` (x indices)
    /// outside which the row has no valid face (`[u32::MAX, 0]`: none), for the current
    /// layer's mask and the next.
    span: Vec<[u32; 2]>,
    span_next: Vec<[u32; 2]>,
}

/// A row span holding no valid face.
const NO_SPAN: [u32; 2] = [u32::MAX, 0];

impl Extrapolator {
    /// Buffers for the grid `d`.
    pub fn new(d: &GridDims) -> Self {
        let faces = (0..3).map(|a| d.faces(a)).max().unwrap_or(0);
        let face_rows = (0..3)
            .map(|a| {
                let m = d.face_n(a);
                m[1] * m[2]
            })
            .max()
            .unwrap_or(0);
        let rows = d.n[1] * d.n[2];
        Self {
            valid: vec![0; faces],
            next: vec![0; faces],
            near: vec![0; rows],
            near_tmp: vec![0; rows],
            rows: vec![0; face_rows],
            plane_rows: vec![0; (0..3).map(|a| d.face_n(a)[2]).max().unwrap_or(0) + 1],
            span: vec![NO_SPAN; face_rows],
            span_next: vec![NO_SPAN; face_rows],
        }
    }

    /// Marks the x-rows of cells within `r` rows (in y and in z) of a row holding fluid.
    fn build_band(&mut self, d: &GridDims, labels: &[CellLabel], r: usize) {
        let (nx, ny, nz) = (d.n[0], d.n[1], d.n[2]);
        // Rows holding fluid (one task per z-plane of cells).
        self.near_tmp
            .par_chunks_mut(ny)
            .zip(labels.par_chunks(nx * ny))
            .with_min_len(4)
            .for_each(|(out, lp)| {
                for (o, row) in out.iter_mut().zip(lp.chunks_exact(nx)) {
                    *o = row.contains(&CellLabel::Fluid) as u8;
                }
            });
        // Dilate along y, then along z: a row is near when a row within r of it (in y, then
        // in z) is; one task per z-plane of rows in each pass, O(rows r) in all (a few
        // thousand rows), so no serial pass over the rows.
        let (src, dst) = (&self.near_tmp, &mut self.near);
        dst.par_chunks_mut(ny)
            .zip(src.par_chunks(ny))
            .with_min_len(4)
            .for_each(|(out, row)| {
                for (j, o) in out.iter_mut().enumerate() {
                    let window = &row[j.saturating_sub(r)..(j + r + 1).min(ny)];
                    *o = window.iter().any(|&x| x != 0) as u8;
                }
            });
        let (src, dst) = (&self.near, &mut self.near_tmp);
        dst.par_chunks_mut(ny)
            .enumerate()
            .with_min_len(4)
            .for_each(|(k, out)| {
                out.fill(0);
                for kk in k.saturating_sub(r)..(k + r + 1).min(nz) {
                    for (o, &x) in out.iter_mut().zip(&src[kk * ny..kk * ny + ny]) {
                        *o |= x;
                    }
                }
            });
        std::mem::swap(&mut self.near, &mut self.near_tmp);
    }

    /// Forms the FLIP change and extrapolates: `delta` holds the pre-projection velocity
    /// `v_old` on entry and `v_new - v_old` on return (computed in the same pass that resets
    /// the free faces); both it and `vel` are extrapolated by `layers` layers, inside the band
    /// (see the module documentation). `solid`: per face, what a free face no layer reaches
    /// keeps instead of 0, with a change of 0 (the moving solids' free-slip velocity on the
    /// faces inside them beside the liquid, `SolidState::inner_velocities`; 0 elsewhere).
    #[allow(clippy::too_many_arguments)]
    pub fn extrapolate(
        &mut self,
        d: &GridDims,
        labels: &[CellLabel],
        kinds: &[Vec<FaceKind>; 3],
        vel: &mut [Vec<f32>; 3],
        delta: &mut [Vec<f32>; 3],
        layers: u32,
        solid: Option<&[Vec<f32>; 3]>,
    ) {
        let (ny, nz) = (d.n[1], d.n[2]);
        self.build_band(d, labels, layers as usize + 2);
        for a in 0..3 {
            let nf = d.faces(a);
            let m = d.face_n(a);
            let (mx, plane) = (m[0], m[0] * m[1]);
            let kind = &kinds[a][..nf];
            let solid = solid.map(|s| &s[a][..nf]);
            let (v, dl) = (&mut vel[a][..nf], &mut delta[a][..nf]);
            let valid = &mut self.valid[..nf];
            let next = &mut self.next[..nf];
            // Face row (j, k) lies next to cell rows j - 1 and j (k - 1 and k) of its own
            // axis; the band's margin covers the one-row difference.
            let near = &self.near;
            let in_band = |j: usize, k: usize| near[k.min(nz - 1) * ny + j.min(ny - 1)] != 0;
            // The band's face rows in order (k, then j), listed in parallel: a count per face
            // plane, the planes' offsets (one number per plane, in sequence), then each plane
            // writes its rows at its offset.
            let (my, mz) = (m[1], m[2]);
            let at = &mut self.plane_rows[..mz + 1];
            at[1..]
                .par_iter_mut()
                .enumerate()
                .with_min_len(8)
                .for_each(|(k, c)| {
                    *c = (0..my).filter(|&j| in_band(j, k)).count() as u32;
                });
            at[0] = 0;
            for k in 0..mz {
                at[k + 1] += at[k];
            }
            let at = &*at;
            let rp = SyncPtr(self.rows.as_mut_ptr());
            (0..mz).into_par_iter().with_min_len(8).for_each(|k| {
                for (r, j) in (at[k] as usize..).zip((0..my).filter(|&j| in_band(j, k))) {
                    // SAFETY: plane k's rows go to `at[k]..at[k + 1]`, its own, below the
                    // number of face rows (`rows`' length).
                    unsafe { *rp.get(r) = (k * my + j) as u32 };
                }
            });
            let rows = &self.rows[..at[mz] as usize];
            if rows.is_empty() {
                continue;
            }
            let fp = SyncPtr(valid.as_mut_ptr());
            let (vp, dp) = (SyncPtr(v.as_mut_ptr()), SyncPtr(dl.as_mut_ptr()));
            let (mut scur, mut snxt) = (&mut self.span[..], &mut self.span_next[..]);
            let sp = SyncPtr(scur.as_mut_ptr());
            // SAFETY (every pass below): each task writes only the faces of its own rows
            // `row * mx .. row * mx + mx`, and the span of its own row, distinct rows of
            // `rows`, all inside the grid (`span` holds a span per face row).
            rows.par_iter().with_min_len(16).for_each(|&row| {
                let f0 = row as usize * mx;
                let kr = &kind[f0..f0 + mx];
                let (fr, vr, dr) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(fp.get(f0), mx),
                        std::slice::from_raw_parts_mut(vp.get(f0), mx),
                        std::slice::from_raw_parts_mut(dp.get(f0), mx),
                    )
                };
                // Branch-free (the compiler vectorises it): free faces get 0 (a moving
                // solid's velocity where one covers them), the others keep `v` and get
                // `dv = v - v_old`.
                for i in 0..mx {
                    let (k, vi, di) = (kr[i], vr[i], dr[i]);
                    fr[i] = (k == FaceKind::Fluid) as u8;
                    let free = k == FaceKind::Free;
                    let change = vi - di;
                    vr[i] = if free { 0.0 } else { vi };
                    dr[i] = if free { 0.0 } else { change };
                }
                if let Some(s) = solid {
                    for ((v, &k), &s) in vr.iter_mut().zip(kr).zip(&s[f0..f0 + mx]) {
                        if k == FaceKind::Free {
                            *v = s;
                        }
                    }
                }
                let fluid = |k: &FaceKind| *k == FaceKind::Fluid;
                let span = match (kr.iter().position(fluid), kr.iter().rposition(fluid)) {
                    (Some(lo), Some(hi)) => [lo as u32, hi as u32 + 1],
                    _ => NO_SPAN,
                };
                unsafe { *sp.get(row as usize) = span };
            });
            // Jacobi layers: each reads the mask `cur` and writes the next mask to `nxt` for
            // every band face; a face becoming valid gets its values written in place, which
            // is safe because no face reads an invalid neighbour's values (by `cur`) in the
            // same layer. The masks then swap, and so do the rows' spans of valid faces: a
            // face can only become valid next to a valid one, so a row's layer visits only
            // its own span grown by one face and its neighbour rows' spans (the rest of the
            // row stays invalid and its next mask is cleared), which gives what visiting the
            // whole row gives, bit for bit, at a fraction of the work (most band faces are
            // far from the liquid in x).
            let (mut cur, mut nxt) = (valid, next);
            for _ in 0..layers {
                let okr = &*cur;
                let sc = &*scur;
                let np = SyncPtr(nxt.as_mut_ptr());
                let snp = SyncPtr(snxt.as_mut_ptr());
                let any = rows
                    .par_iter()
                    .with_min_len(16)
                    .map(|&row| {
                        let row = row as usize;
                        let (j, k) = (row % m[1], row / m[1]);
                        // Neighbour rows outside the band hold nothing valid (and their masks
                        // are not reset for this component): they are skipped.
                        let (ym, yp) = (
                            j > 0 && in_band(j - 1, k),
                            j + 1 < m[1] && in_band(j + 1, k),
                        );
                        let (zm, zp) = (
                            k > 0 && in_band(j, k - 1),
                            k + 1 < m[2] && in_band(j, k + 1),
                        );
                        let own = sc[row];
                        // The faces that can have a valid neighbour: the own span grown by one,
                        // and the neighbour rows' spans.
                        let mut reach = if own[0] < own[1] {
                            [own[0].saturating_sub(1), own[1] + 1]
                        } else {
                            NO_SPAN
                        };
                        for (near_row, n) in [(ym, row.wrapping_sub(1)), (yp, row + 1)]
                            .into_iter()
                            .chain([(zm, row.wrapping_sub(m[1])), (zp, row + m[1])])
                        {
                            if near_row {
                                let s = sc[n];
                                reach = [reach[0].min(s[0]), reach[1].max(s[1])];
                            }
                        }
                        let hi = (reach[1] as usize).min(mx);
                        let lo = (reach[0] as usize).min(hi);
                        let f0 = row * mx;
                        // SAFETY: this task's row; outside `lo..hi` the row holds no valid
                        // face in `cur` (its span lies inside), so the next mask is 0 there.
                        unsafe {
                            std::ptr::write_bytes(np.get(f0), 0, lo);
                            std::ptr::write_bytes(np.get(f0 + hi), 0, mx - hi);
                        }
                        let mut span = own;
                        let mut any = false;
                        for i in lo..hi {
                            let f = f0 + i;
                            unsafe { *np.get(f) = okr[f] };
                            if okr[f] != 0 || kind[f] != FaceKind::Free {
                                continue;
                            }
                            let (mut sv, mut sd, mut cnt) = (0.0f32, 0.0f32, 0u32);
                            let mut take = |g: usize| {
                                if okr[g] != 0 {
                                    // SAFETY: a valid face is not written in this layer.
                                    unsafe {
                                        sv += *vp.get(g);
                                        sd += *dp.get(g);
                                    }
                                    cnt += 1;
                                }
                            };
                            if i > 0 {
                                take(f - 1);
                            }
                            if i + 1 < mx {
                                take(f + 1);
                            }
                            if ym {
                                take(f - mx);
                            }
                            if yp {
                                take(f + mx);
                            }
                            if zm {
                                take(f - plane);
                            }
                            if zp {
                                take(f + plane);
                            }
                            if cnt > 0 {
                                let inv = 1.0 / cnt as f32;
                                // SAFETY: face f is invalid in this layer (nobody reads it) and
                                // belongs to this task's row.
                                unsafe {
                                    *vp.get(f) = sv * inv;
                                    *dp.get(f) = sd * inv;
                                    *np.get(f) = 1;
                                }
                                span = [span[0].min(i as u32), span[1].max(i as u32 + 1)];
                                any = true;
                            }
                        }
                        unsafe { *snp.get(row) = span };
                        any
                    })
                    .reduce(|| false, |a, b| a || b);
                std::mem::swap(&mut cur, &mut nxt);
                std::mem::swap(&mut scur, &mut snxt);
                if !any {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The straightforward extrapolation the band-limited one must reproduce: the same Jacobi
    /// layers over every face of the grid, no band.
    fn reference(
        d: &GridDims,
        kinds: &[Vec<FaceKind>; 3],
        vel: &mut [Vec<f32>; 3],
        delta: &mut [Vec<f32>; 3],
        layers: u32,
    ) {
        for a in 0..3 {
            let m = d.face_n(a);
            let at = |i: usize, j: usize, k: usize| i + m[0] * (j + m[1] * k);
            let kind = &kinds[a];
            let mut valid: Vec<bool> = kind.iter().map(|k| *k == FaceKind::Fluid).collect();
            for f in 0..kind.len() {
                if kind[f] == FaceKind::Free {
                    vel[a][f] = 0.0;
                    delta[a][f] = 0.0;
                } else {
                    delta[a][f] = vel[a][f] - delta[a][f];
                }
            }
            for _ in 0..layers {
                let (v0, d0, ok0) = (vel[a].clone(), delta[a].clone(), valid.clone());
                for k in 0..m[2] {
                    for j in 0..m[1] {
                        for i in 0..m[0] {
                            let f = at(i, j, k);
                            if ok0[f] || kind[f] != FaceKind::Free {
                                continue;
                            }
                            let mut nbs = Vec::new();
                            if i > 0 {
                                nbs.push(at(i - 1, j, k));
                            }
                            if i + 1 < m[0] {
                                nbs.push(at(i + 1, j, k));
                            }
                            if j > 0 {
                                nbs.push(at(i, j - 1, k));
                            }
                            if j + 1 < m[1] {
                                nbs.push(at(i, j + 1, k));
                            }
                            if k > 0 {
                                nbs.push(at(i, j, k - 1));
                            }
                            if k + 1 < m[2] {
                                nbs.push(at(i, j, k + 1));
                            }
                            let (mut sv, mut sd, mut cnt) = (0.0f32, 0.0f32, 0u32);
                            for g in nbs {
                                if ok0[g] {
                                    sv += v0[g];
                                    sd += d0[g];
                                    cnt += 1;
                                }
                            }
                            if cnt > 0 {
                                let inv = 1.0 / cnt as f32;
                                vel[a][f] = sv * inv;
                                delta[a][f] = sd * inv;
                                valid[f] = true;
                            }
                        }
                    }
                }
            }
        }
    }

    /// A closed grid of `n` cells (0.1 m), its wall layer solid, the other cells labelled
    /// fluid where `fluid(i, j, k)` holds, solid where `solid` does, else empty.
    fn labelled(
        n: [usize; 3],
        fluid: impl Fn(usize, usize, usize) -> bool,
        solid: impl Fn(usize, usize, usize) -> bool,
    ) -> (GridDims, Vec<CellLabel>) {
        let d = GridDims {
            n,
            h: 0.1,
            lower: [0.0; 3],
            open: [[false; 2]; 3],
        };
        let mut labels = vec![CellLabel::Empty; d.cells()];
        for k in 0..n[2] {
            for j in 0..n[1] {
                for i in 0..n[0] {
                    labels[d.cell(i, j, k)] = if d.is_wall_cell(i, j, k) || solid(i, j, k) {
                        CellLabel::Solid
                    } else if fluid(i, j, k) {
                        CellLabel::Fluid
                    } else {
                        CellLabel::Empty
                    };
                }
            }
        }
        (d, labels)
    }

    /// Band-limited extrapolation gives the reference's values on every face a particle can
    /// read (within `layers + 1` cells of the liquid), for a liquid with a pool, a column and a
    /// lone droplet, at several layer counts.
    #[test]
    fn band_matches_full_grid_extrapolation() {
        let pool = |i, j, k| k <= 2 || (i <= 3 && j <= 4 && k <= 9) || (i, j, k) == (9, 7, 12);
        let (d, labels) = labelled([14, 12, 16], pool, |_, _, _| false);
        let mut kinds: [Vec<FaceKind>; 3] =
            std::array::from_fn(|a| vec![FaceKind::Free; d.faces(a)]);
        crate::sim::forces::classify_faces(&d, &labels, &mut kinds);
        let mut x = 1u32;
        let mut rnd = move || {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            (x >> 8) as f32 / (1 << 24) as f32 - 0.5
        };
        let vel: [Vec<f32>; 3] = std::array::from_fn(|a| (0..d.faces(a)).map(|_| rnd()).collect());
        let old: [Vec<f32>; 3] = std::array::from_fn(|a| (0..d.faces(a)).map(|_| rnd()).collect());
        for layers in [1, 2, 4] {
            let (mut v1, mut d1) = (vel.clone(), old.clone());
            let (mut v2, mut d2) = (vel.clone(), old.clone());
            Extrapolator::new(&d).extrapolate(&d, &labels, &kinds, &mut v1, &mut d1, layers, None);
            reference(&d, &kinds, &mut v2, &mut d2, layers);
            // Faces within layers + 1 cells (Chebyshev) of a fluid cell.
            let reach = layers as i64 + 1;
            let mut compared = 0;
            for a in 0..3 {
                let m = d.face_n(a);
                for k in 0..m[2] {
                    for j in 0..m[1] {
                        for i in 0..m[0] {
                            let near = (0..d.cells()).any(|c| {
                                labels[c] == CellLabel::Fluid && {
                                    let cc =
                                        [c % d.n[0], (c / d.n[0]) % d.n[1], c / (d.n[0] * d.n[1])];
                                    [i, j, k]
                                        .iter()
                                        .zip(cc)
                                        .all(|(&p, q)| (p as i64 - q as i64).abs() <= reach)
                                }
                            });
                            if !near {
                                continue;
                            }
                            let f = i + m[0] * (j + m[1] * k);
                            assert_eq!(
                                (v1[a][f].to_bits(), d1[a][f].to_bits()),
                                (v2[a][f].to_bits(), d2[a][f].to_bits()),
                                "component {a} face ({i}, {j}, {k}), {layers} layers"
                            );
                            compared += 1;
                        }
                    }
                }
            }
            assert!(compared > 1000, "only {compared} faces compared");
        }
    }

    /// A moving solid's velocity (`solid`) fills only the free faces the layers do not reach:
    /// faces deep in a solid slab beside the liquid keep it, with no change; every other face
    /// gets what it gets without it (the bits of `None`).
    #[test]
    fn unreached_free_faces_keep_the_solid_velocity() {
        // Liquid in x 1..=5, a solid slab in x 6..=10 (the domain's walls around), air beyond.
        let (d, labels) = labelled(
            [14, 8, 8],
            |i, _, k| i <= 5 && k <= 5,
            |i, _, _| (6..=10).contains(&i),
        );
        let mut kinds: [Vec<FaceKind>; 3] =
            std::array::from_fn(|a| vec![FaceKind::Free; d.faces(a)]);
        crate::sim::forces::classify_faces(&d, &labels, &mut kinds);
        let vel: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.25; d.faces(a)]);
        let old: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.125; d.faces(a)]);
        let solid: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.5 + a as f32; d.faces(a)]);
        let (mut v0, mut d0) = (vel.clone(), old.clone());
        let (mut v1, mut d1) = (vel.clone(), old.clone());
        let mut ex = Extrapolator::new(&d);
        ex.extrapolate(&d, &labels, &kinds, &mut v0, &mut d0, 1, None);
        ex.extrapolate(&d, &labels, &kinds, &mut v1, &mut d1, 1, Some(&solid));
        let mut kept = 0;
        for a in 0..3 {
            for f in 0..d.faces(a) {
                assert_eq!(
                    d1[a][f].to_bits(),
                    d0[a][f].to_bits(),
                    "change, axis {a} face {f}"
                );
                if v1[a][f].to_bits() != v0[a][f].to_bits() {
                    assert_eq!(kinds[a][f], FaceKind::Free, "axis {a} face {f}");
                    assert_eq!(
                        (v0[a][f], v1[a][f]),
                        (0.0, solid[a][f]),
                        "axis {a} face {f}"
                    );
                    kept += 1;
                }
            }
        }
        // The x face between solid cells 8 and 9 in a liquid row: two cells from the liquid's
        // last fluid face, beyond one layer's reach.
        let m = d.face_n(0);
        let deep = 9 + m[0] * (4 + m[1] * 3);
        assert_eq!(v1[0][deep], 0.5);
        assert!(kept > 100, "only {kept} faces kept the solid's velocity");
    }
}
