//! The density correction's particle displacement ([`super::advect::displace`]) and its
//! density splat ([`super::density::splat_density`]) eight particles at a time with AVX2
//! (x86_64 only, chosen at run time), with the stencil and interpolation helpers of
//! [`super::gather_avx2`]. Every lane performs exactly the scalar
//! loop's operations in the same order, without fused multiply-adds, so the results are
//! bit-identical (a unit test checks it).

use super::gather_avx2::{LANES, clamp8, interp8, stencil8};
use super::mac_grid::GridDims;
use super::sync_ptr::SyncPtr;
use std::arch::x86_64::*;

/// Moves the first whole groups of [`LANES`] particles of `pos` by `scale` times the
/// displacement `disp` interpolated at them, clamped to `[lo, hi]`; returns how many it moved.
///
/// # Safety
/// The CPU has AVX2 and [`super::gather_avx2::fits`]`(d, [disp, disp])`.
#[target_feature(enable = "avx2")]
pub unsafe fn displace8(
    d: &GridDims,
    disp: &[Vec<f32>; 3],
    scale: f32,
    lo: [f32; 3],
    hi: [f32; 3],
    pos: [&mut [f32]; 3],
) -> usize {
    let n = pos.iter().map(|s| s.len()).min().unwrap_or(0) / LANES * LANES;
    let sc = _mm256_set1_ps(scale);
    let [px, py, pz] = pos;
    let mut i = 0;
    while i < n {
        // SAFETY: i + LANES <= len of every slice; the grids fit (the caller's contract).
        unsafe {
            let load = |s: &[f32]| _mm256_loadu_ps(s.as_ptr().add(i));
            let p = [load(px), load(py), load(pz)];
            let st = stencil8(d, p);
            let q: [__m256; 3] = std::array::from_fn(|a| {
                let u = _mm256_mul_ps(interp8(d, &st, a, &disp[a]), sc);
                clamp8(_mm256_add_ps(p[a], u), lo[a], hi[a])
            });
            _mm256_storeu_ps(px.as_mut_ptr().add(i), q[0]);
            _mm256_storeu_ps(py.as_mut_ptr().add(i), q[1]);
            _mm256_storeu_ps(pz.as_mut_ptr().add(i), q[2]);
        }
        i += LANES;
    }
    n
}

/// The density splat ([`super::density::splat_particles`]) of the first whole groups of
/// [`LANES`] particles in slots `s0..s1`: the clamped positions, corners and the eight
/// weights per particle eight lanes at a time (the scalar loop's operations, lane by lane),
/// then the adds particle by particle and corner by corner in the scalar loop's order, so the
/// sums are bit-identical. Returns how many particles it did.
///
/// # Safety
/// The CPU has AVX2; the cell count is below `i32::MAX`; and as
/// [`super::density::splat_particles`].
#[target_feature(enable = "avx2")]
pub unsafe fn splat_density8(
    d: &GridDims,
    pos: &[Vec<f32>; 3],
    s0: usize,
    s1: usize,
    top: [f32; 3],
    out: SyncPtr<f32>,
) -> usize {
    let n = (s1 - s0) / LANES * LANES;
    let (nx, plane) = (d.n[0], d.n[0] * d.n[1]);
    let (one, half, zero) = (
        _mm256_set1_ps(1.0),
        _mm256_set1_ps(0.5),
        _mm256_setzero_ps(),
    );
    let inv = _mm256_set1_ps(1.0 / d.h);
    let (nxv, planev) = (
        _mm256_set1_epi32(nx as i32),
        _mm256_set1_epi32(plane as i32),
    );
    // Corner c = (z, y, x) bits, the scalar loop's order.
    let offs = [
        0,
        1,
        nx,
        nx + 1,
        plane,
        plane + 1,
        plane + nx,
        plane + nx + 1,
    ];
    let mut w = [[0.0f32; LANES]; 8];
    let mut base = [0i32; LANES];
    let mut s = s0;
    while s < s0 + n {
        // SAFETY: the loads read 8 elements of slices checked to hold them (`s..s + LANES`);
        // the stores write whole local arrays.
        unsafe {
            let g: [__m256; 3] = std::array::from_fn(|a| {
                let p = _mm256_loadu_ps(pos[a][s..s + LANES].as_ptr());
                let x = _mm256_sub_ps(
                    _mm256_mul_ps(_mm256_sub_ps(p, _mm256_set1_ps(d.lower[a])), inv),
                    half,
                );
                // max(x, 0) gives 0 for a NaN x, as f32::max does.
                _mm256_min_ps(_mm256_max_ps(x, zero), _mm256_set1_ps(top[a]))
            });
            let i = g.map(|x| _mm256_cvttps_epi32(x));
            let f: [__m256; 3] =
                std::array::from_fn(|a| _mm256_sub_ps(g[a], _mm256_cvtepi32_ps(i[a])));
            let b = _mm256_add_epi32(
                _mm256_add_epi32(i[0], _mm256_mullo_epi32(nxv, i[1])),
                _mm256_mullo_epi32(planev, i[2]),
            );
            _mm256_storeu_si256(base.as_mut_ptr().cast(), b);
            let (ax, ay) = (_mm256_sub_ps(one, f[0]), _mm256_sub_ps(one, f[1]));
            let wxy = [
                _mm256_mul_ps(ax, ay),
                _mm256_mul_ps(f[0], ay),
                _mm256_mul_ps(ax, f[1]),
                _mm256_mul_ps(f[0], f[1]),
            ];
            let wz = [_mm256_sub_ps(one, f[2]), f[2]];
            for c in 0..8 {
                _mm256_storeu_ps(w[c].as_mut_ptr(), _mm256_mul_ps(wz[c >> 2], wxy[c & 3]));
            }
        }
        for lane in 0..LANES {
            let b = base[lane] as usize;
            for c in 0..8 {
                // SAFETY: in bounds (each corner index at most n - 2 per axis, the clamp) and
                // exclusive (the caller's contract).
                unsafe { *out.get(b + offs[c]) += w[c][lane] };
            }
        }
        s += LANES;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small grid off the origin and a seeded pseudo-random number source in [0, 1).
    fn grid_and_random(seed: u32) -> (GridDims, impl FnMut() -> f32) {
        let dom = crate::geometry::Domain {
            lower: [-0.3, 0.1, 0.0],
            cell_size: 0.05,
            resolution: [9, 7, 11],
            boundaries: Default::default(),
            friction: Default::default(),
        };
        let mut x = seed;
        let r = move || {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            (x >> 8) as f32 / (1 << 24) as f32
        };
        (GridDims::new(&dom), r)
    }

    /// The vector displacement gives the scalar loop's bits on random particles and fields.
    #[test]
    fn avx2_displace_matches_scalar_bits() {
        if !crate::sim::transfer::tests::has_avx2() {
            return; // reported as a skip (no AVX2 on this CPU: nothing to compare)
        }
        let (d, mut r) = grid_and_random(12345);
        let disp: [Vec<f32>; 3] =
            std::array::from_fn(|a| (0..d.faces(a)).map(|_| 0.1 * (r() - 0.5)).collect());
        let (lo, hi) = d.interior_bounds(0.01 * d.h);
        let n = 203;
        let pos: [Vec<f32>; 3] =
            std::array::from_fn(|a| (0..n).map(|_| lo[a] + r() * (hi[a] - lo[a])).collect());
        let mut vec = pos.clone();
        let [a, b, c] = &mut vec;
        // SAFETY: AVX2 checked above; the grids are the face grids of d.
        let done = unsafe { displace8(&d, &disp, 0.7, lo, hi, [a, b, c]) };
        assert_eq!(done, n / LANES * LANES);
        for i in 0..done {
            let p = [pos[0][i], pos[1][i], pos[2][i]];
            let u = d.sample_velocity(&disp, p).map(|c| c * 0.7);
            for k in 0..3 {
                let want = (p[k] + u[k]).clamp(lo[k], hi[k]);
                assert_eq!(vec[k][i].to_bits(), want.to_bits(), "particle {i} axis {k}");
            }
        }
    }

    /// The vector density splat gives the scalar loop's bits: random particles inside the
    /// wall layer (and a few on its bounds) splatted by both into zeroed grids.
    #[test]
    fn avx2_density_splat_matches_scalar_bits() {
        if !crate::sim::transfer::tests::has_avx2() {
            return; // reported as a skip (no AVX2 on this CPU: nothing to compare)
        }
        let (d, mut r) = grid_and_random(777);
        let (lo, hi) = d.interior_bounds(0.01 * d.h);
        let n = 203;
        let mut pos: [Vec<f32>; 3] =
            std::array::from_fn(|a| (0..n).map(|_| lo[a] + r() * (hi[a] - lo[a])).collect());
        for a in 0..3 {
            pos[a][5] = lo[a];
            pos[a][6] = hi[a];
        }
        let top = d.n.map(|n| n as f32 - 1.5);
        let (mut want, mut got) = (vec![0.0f32; d.cells()], vec![0.0f32; d.cells()]);
        // SAFETY: AVX2 checked above; the grids hold the cells; one task.
        let done = unsafe {
            crate::sim::density::splat_particles(&d, &pos, 0, n, top, SyncPtr(want.as_mut_ptr()));
            let out = SyncPtr(got.as_mut_ptr());
            let done = splat_density8(&d, &pos, 0, n, top, out);
            crate::sim::density::splat_particles(&d, &pos, done, n, top, out);
            done
        };
        assert_eq!(done, n / LANES * LANES);
        let total: f32 = want.iter().sum();
        assert!(
            (total - n as f32).abs() < 1e-3,
            "weights sum to {total}, not {n}"
        );
        for c in 0..d.cells() {
            assert_eq!(got[c].to_bits(), want[c].to_bits(), "cell {c}");
        }
    }
}
