//! APIC transfers: the affine particle-in-cell method (Jiang, Schroeder, Selle, Teran and
//! Stomakhin 2015, "The affine particle-in-cell method", ACM TOG 34(4); `solver.transfer =
//! "apic"`).
//!
//! Each particle carries, besides its velocity `v_p`, an affine matrix `C_p` (the local
//! velocity gradient, `C[a][b] = d v_a / d x_b`), so that around the particle the velocity is
//! `v_p + C_p (x - x_p)`. On the MAC grid every velocity component `a` is its own scalar field
//! on its own face grid, so `C_p` is three row vectors `c_a`, nine floats per particle, stored
//! struct-of-arrays in [`SortedParticles::aff`].
//!
//! **Particle to grid** (eq. 12 of the paper with weight normalisation, as the PIC/FLIP splat):
//! `u_f = sum_p w_pf (v_pa + c_pa . (x_f - x_p)) / sum_p w_pf`. With trilinear weights the
//! offset of the stencil corner `(dx, dy, dz)` from the particle is `h (d - frac)`, so the
//! affine term needs no face positions. The splat's blocks, colours and summation order are
//! those of [`super::transfer::splat`] (deterministic for any thread count); only the
//! per-particle body differs (with AVX2, eight particles' weights and corner velocities at
//! once, `super::gather_avx2::splat8`; the adds in this loop's order, the same bits).
//!
//! **Grid to particle**: `v_pa = sum_f w_pf u_f` (the PIC gather) and `c_pa = sum_f u_f
//! grad w_pf`, the gradient of the interpolated field at `x_p`. For quadratic or cubic
//! B-splines the paper writes `C_p = B_p D_p^{-1}` with a constant `D_p` (`h^2/4`, `h^2/3`);
//! for multilinear weights `D_p` is not constant (singular on the nodes), and the paper (sec.
//! 5.3) and the MPM course notes (Jiang et al. 2016, sec. 10.2) use `sum_i v_i grad w_ip^T`
//! instead, which is what this module computes. A linear velocity field (rigid rotation,
//! uniform shear) is then carried exactly through a splat and a gather, which is where APIC
//! keeps the angular momentum PIC dissipates, without FLIP's noise.
//!
//! The gather shares its interpolation with the first stage of the RK2 advection that
//! follows in the same pass, as the PIC/FLIP gather does ([`super::transfer`]); with AVX2 it
//! runs eight particles at a time (`super::gather_avx2::apic_gather_and_advect8`, the
//! scalar loop's operations lane by lane: the same bits, checked by a test). No allocation:
//! the particle arrays are written in place, chunk by chunk. With both vectorised (session
//! 42) APIC costs 1.19-1.21x PIC/FLIP's CPU time per substep on the 1M-particle dam break (1
//! thread, `BENCH_SKIP_TUTORIAL=1 BENCH_COMPARE_TRANSFERS=1 BENCH_DAM_FRAMES=8 cargo bench
//! --bench bench_stepper`, two runs; 1.78-1.80x with them scalar).

use super::cell_sort::SortedParticles;
use super::mac_grid::{GridDims, Stencil};
use super::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Splats the particles in slots `s0..s1` with their affine terms into the accumulators
/// `ap` (`[sum w u, sum w]` per face).
///
/// # Safety
/// As `SplatBlock::particles` of [`super::transfer`]: no task running at the same time
/// touches the faces these particles reach, and the accumulators cover the face grids.
#[inline(always)]
pub(super) unsafe fn splat_particles(
    d: &GridDims,
    sp: &SortedParticles,
    ap: [SyncPtr<[f32; 2]>; 3],
    s0: usize,
    s1: usize,
) {
    let (pos, pv, aff) = (&sp.pos, &sp.vel, &sp.aff);
    let h = d.h;
    for s in s0..s1 {
        let st = d.stencil([pos[0][s], pos[1][s], pos[2][s]]);
        for a in 0..3 {
            let m = d.face_n(a);
            let (sy, sz) = (m[0], m[0] * m[1]);
            let [fx, fy, fz] = st.frac[a];
            // The affine velocity at corner (dx, dy, dz): v + h c . (d - frac).
            let c = [
                h * aff[3 * a][s],
                h * aff[3 * a + 1][s],
                h * aff[3 * a + 2][s],
            ];
            let v0 = pv[a][s] - c[0] * fx - c[1] * fy - c[2] * fz;
            let b = st.base[a];
            for (dz, wz, uz) in [(0, 1.0 - fz, 0.0), (sz, fz, c[2])] {
                for (dy, wy, uy) in [(0, 1.0 - fy, 0.0), (sy, fy, c[1])] {
                    for (dx, wx, ux) in [(0, 1.0 - fx, 0.0), (1, fx, c[0])] {
                        let f = b + dz + dy + dx;
                        let w = wx * wy * wz;
                        let v = v0 + ux + uy + uz;
                        // SAFETY: the caller's contract (disjoint faces, in bounds).
                        unsafe {
                            let cell = &mut *ap[a].get(f);
                            cell[0] += w * v;
                            cell[1] += w;
                        }
                    }
                }
            }
        }
    }
}

/// Trilinear interpolation of face component `a` (values `f`) with stencil `st`, and its
/// gradient with respect to the point, 1/m times the field's unit.
#[inline(always)]
pub fn interp_grad(d: &GridDims, st: &Stencil, a: usize, f: &[f32]) -> (f32, [f32; 3]) {
    let m = d.face_n(a);
    let (sy, sz) = (m[0], m[0] * m[1]);
    let b = st.base[a];
    // The stencil clamps every index to the grid, so the farthest node is in bounds.
    assert!(b + sz + sy + 1 < f.len().max(1));
    let [fx, fy, fz] = st.frac[a];
    // SAFETY: every index is at most b + sz + sy + 1, checked above.
    let g = |i: usize| unsafe { *f.get_unchecked(i) };
    let lerp = |a0: f32, a1: f32, t: f32| a0 + (a1 - a0) * t;
    let (g000, g100) = (g(b), g(b + 1));
    let (g010, g110) = (g(b + sy), g(b + sy + 1));
    let (g001, g101) = (g(b + sz), g(b + sz + 1));
    let (g011, g111) = (g(b + sz + sy), g(b + sz + sy + 1));
    let c00 = lerp(g000, g100, fx);
    let c10 = lerp(g010, g110, fx);
    let c01 = lerp(g001, g101, fx);
    let c11 = lerp(g011, g111, fx);
    let c0 = lerp(c00, c10, fy);
    let c1 = lerp(c01, c11, fy);
    let value = lerp(c0, c1, fz);
    let inv = 1.0 / d.h;
    let gx = lerp(
        lerp(g100 - g000, g110 - g010, fy),
        lerp(g101 - g001, g111 - g011, fy),
        fz,
    );
    let gy = lerp(c10 - c00, c11 - c01, fz);
    let gz = c1 - c0;
    (value, [gx * inv, gy * inv, gz * inv])
}

/// Grid to particle with APIC and advection in one pass: `v_p = v_new(x_p)`, `C_p = grad
/// v_new(x_p)`, then one RK2 (midpoint) step of `dt` through `vel_new` as
/// [`super::transfer::gather_and_advect`] does (mirrored off walls, clamped on open faces).
pub fn gather_and_advect(d: &GridDims, sp: &mut SortedParticles, vel_new: &[Vec<f32>; 3], dt: f32) {
    #[cfg(target_arch = "x86_64")]
    let vector =
        std::is_x86_feature_detected!("avx2") && super::gather_avx2::fits(d, [vel_new, vel_new]);
    #[cfg(not(target_arch = "x86_64"))]
    let vector = false;
    gather_and_advect_with(d, sp, vel_new, dt, vector);
}

/// [`gather_and_advect`], eight particles at a time with AVX2 when `vector` (the CPU has it
/// and the grids fit), the same bits either way.
fn gather_and_advect_with(
    d: &GridDims,
    sp: &mut SortedParticles,
    vel_new: &[Vec<f32>; 3],
    dt: f32,
    vector: bool,
) {
    let n = sp.len();
    assert!(
        sp.pos.iter().chain(&sp.vel).all(|v| v.len() == n) && sp.aff.iter().all(|c| c.len() == n),
        "APIC gather: particle arrays of unequal lengths"
    );
    let (lo, hi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
    let pos = sp.pos.each_mut().map(|v| SyncPtr(v.as_mut_ptr()));
    let vel = sp.vel.each_mut().map(|v| SyncPtr(v.as_mut_ptr()));
    let aff = sp.aff.each_mut().map(|v| SyncPtr(v.as_mut_ptr()));
    const CHUNK: usize = 512;
    (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .with_min_len(2)
        .for_each(|c| {
            let (start, end) = (c * CHUNK, (c * CHUNK + CHUNK).min(n));
            let mut from = start;
            #[cfg(target_arch = "x86_64")]
            if vector {
                // SAFETY: every array has n elements and the chunk's slots are this task's
                // alone; AVX2 and the grid's fit were checked by the caller.
                unsafe {
                    let len = end - start;
                    let part = |p: SyncPtr<f32>| std::slice::from_raw_parts_mut(p.get(start), len);
                    from += super::gather_avx2::apic_gather_and_advect8(
                        d,
                        vel_new,
                        dt,
                        lo,
                        hi,
                        pos.map(part),
                        vel.map(part),
                        aff.map(part),
                    );
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = vector;
            for i in from..end {
                // SAFETY: every array has n elements (asserted above) and each chunk of slots
                // belongs to one task.
                unsafe {
                    let p = [*pos[0].get(i), *pos[1].get(i), *pos[2].get(i)];
                    let st = d.stencil(p);
                    let mut vn = [0.0f32; 3];
                    for a in 0..3 {
                        let (v, grad) = interp_grad(d, &st, a, &vel_new[a]);
                        vn[a] = v;
                        *vel[a].get(i) = v;
                        for b in 0..3 {
                            *aff[3 * a + b].get(i) = grad[b];
                        }
                    }
                    let hdt = 0.5 * dt;
                    let mid: [f32; 3] =
                        std::array::from_fn(|a| (p[a] + hdt * vn[a]).clamp(lo[a], hi[a]));
                    let um = d.sample_velocity(vel_new, mid);
                    for a in 0..3 {
                        *pos[a].get(i) =
                            super::advect::reflect(p[a] + dt * um[a], lo[a], hi[a], d.open[a]);
                    }
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gradient is the exact derivative of the trilinear interpolant (central differences
    /// of `interp` agree), and a linear field is reproduced with its exact gradient.
    #[test]
    fn gradient_of_trilinear_interpolation() {
        let d = GridDims {
            n: [6, 7, 5],
            h: 0.1,
            lower: [0.0, -0.3, 0.2],
            open: [[false; 2]; 3],
        };
        let field = |a: usize| -> Vec<f32> {
            let m = d.face_n(a);
            let o = GridDims::face_offset(a);
            let mut f = vec![0.0; d.faces(a)];
            for k in 0..m[2] {
                for j in 0..m[1] {
                    for i in 0..m[0] {
                        let x = [
                            d.lower[0] + (i as f32 + o[0]) * d.h,
                            d.lower[1] + (j as f32 + o[1]) * d.h,
                            d.lower[2] + (k as f32 + o[2]) * d.h,
                        ];
                        f[i + m[0] * (j + m[1] * k)] =
                            0.5 + (a as f32 + 1.0) * x[0] - 2.0 * x[1] + 3.0 * x[2];
                    }
                }
            }
            f
        };
        for a in 0..3 {
            let f = field(a);
            for p in [[0.23, 0.01, 0.37], [0.31, 0.12, 0.45], [0.4, -0.05, 0.5]] {
                let (v, g) = interp_grad(&d, &d.stencil(p), a, &f);
                let exact = 0.5 + (a as f32 + 1.0) * p[0] - 2.0 * p[1] + 3.0 * p[2];
                assert!((v - exact).abs() < 1e-5, "{v} vs {exact}");
                let want = [a as f32 + 1.0, -2.0, 3.0];
                for b in 0..3 {
                    assert!((g[b] - want[b]).abs() < 1e-3, "{a} {b}: {g:?}");
                }
            }
            // A non-linear field: the gradient matches central differences of `interp`.
            let wavy: Vec<f32> = (0..f.len()).map(|i| ((i * 37) % 11) as f32 * 0.3).collect();
            let p = [0.27, 0.04, 0.41];
            let (_, g) = interp_grad(&d, &d.stencil(p), a, &wavy);
            for b in 0..3 {
                let e = 1e-3;
                let (mut lo, mut hi) = (p, p);
                lo[b] -= e;
                hi[b] += e;
                let fd = (d.sample(a, &wavy, hi) - d.sample(a, &wavy, lo)) / (2.0 * e);
                // The field is linear along `b` within the cell (`p +- e` stays in it), so the
                // central difference is exact but for the `f32` rounding of the two samples
                // (values up to 3: about 4e-7 each, 4e-4 in the difference quotient).
                assert!(
                    (g[b] - fd).abs() < 1e-3 * (1.0 + fd.abs()),
                    "{a} {b}: {g:?} vs {fd}"
                );
            }
        }
    }

    /// The AVX2 gather (groups of eight, then the scalar remainder) gives the same positions,
    /// velocities and affine matrices, bit for bit, as the scalar loop, for particles inside,
    /// outside the domain and non-finite, and speeds that make the RK2 step reach the walls.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_gather_matches_scalar_bits() {
        use crate::sim::transfer::tests::*;
        if !has_avx2() {
            return;
        }
        let d = gather_grid([[false, true], [false; 2], [true, false]]);
        let mut rnd = uniform(5);
        let vel_new = random_faces(&d, &mut rnd);
        let count = 8 * 150 + 3;
        let mut p = crate::sim::Particles {
            pos: scattered(&d, &mut rnd, count),
            vel: std::array::from_fn(|_| vec![0.0; count]),
            ..Default::default()
        };
        p.pos[0][3] = f32::NAN;
        p.pos[1][20] = f32::INFINITY;
        let load = || {
            let mut sp = SortedParticles::default();
            sp.affine = true;
            sp.load(&p, d.cells());
            sp
        };
        let (mut scalar, mut vector) = (load(), load());
        gather_and_advect_with(&d, &mut scalar, &vel_new, 0.03, false);
        gather_and_advect_with(&d, &mut vector, &vel_new, 0.03, true);
        let bits = |sp: &SortedParticles| -> Vec<u32> {
            let arrays = sp.pos.iter().chain(&sp.vel).chain(&sp.aff);
            arrays.flatten().map(|x| x.to_bits()).collect()
        };
        assert_eq!(bits(&scalar), bits(&vector));
        // Real work was compared: most particles moved and got a non-zero matrix.
        let moved = (0..count)
            .filter(|&i| scalar.pos[0][i] != p.pos[0][i])
            .count();
        let turned = (0..count).filter(|&i| scalar.aff[4][i] != 0.0).count();
        assert!(
            moved > count * 9 / 10 && turned > count * 9 / 10,
            "{moved} {turned}"
        );
    }
}
