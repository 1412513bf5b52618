//! The density correction's particle displacement ([`super::advect::displace`]) eight
//! particles at a time with AVX2 (x86_64 only, chosen at run time), with the stencil and
//! interpolation helpers of [`super::gather_avx2`]. Every lane performs exactly the scalar
//! loop's operations in the same order, without fused multiply-adds, so the results are
//! bit-identical (a unit test checks it).

use super::gather_avx2::{LANES, clamp8, interp8, stencil8};
use super::mac_grid::GridDims;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector displacement gives the scalar loop's bits on random particles and fields.
    #[test]
    fn avx2_displace_matches_scalar_bits() {
        if !std::is_x86_feature_detected!("avx2") {
            eprintln!("no AVX2 on this CPU: nothing to compare");
            return;
        }
        let dom = crate::geometry::Domain {
            lower: [-0.3, 0.1, 0.0],
            cell_size: 0.05,
            resolution: [9, 7, 11],
            boundaries: Default::default(),
            friction: 0.0,
        };
        let d = GridDims::new(&dom);
        let mut x = 12345u32;
        let mut r = move || {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            (x >> 8) as f32 / (1 << 24) as f32
        };
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
}
