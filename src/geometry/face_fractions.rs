//! Fractional face areas open to liquid, for variational solid boundaries.
//!
//! Batty, Bertails and Bridson, *A Fast Variational Framework for Accurate Solid-Fluid Coupling*
//! (SIGGRAPH 2007) weight each velocity face of the MAC grid by the fraction of its area that is
//! not inside a solid; the pressure matrix and the solid-velocity term use these weights, so
//! sloped and curved walls do not staircase.
//!
//! Input: the solid signed distance (negative in the solid) at the grid *nodes*, the cell
//! corners, `n + 1` per axis for `n` cells, x fastest and z slowest (the same plane-by-plane
//! layout as the simulation's [`crate::sim`] grids). Each face is a square whose four corners are
//! nodes. Its solid fraction is the area of the square where the distance, interpolated linearly
//! along each edge, is negative: the corners and the edge zero-crossings are walked in order and
//! the polygon of the solid part measured with the shoelace formula. This is exact when the
//! distance is linear over the face (a plane). The one ambiguous case, a saddle with two
//! diagonally opposite solid corners, is resolved as in Batty's reference code by the mean of the
//! four corners: a negative mean joins the two solid corners through the middle, otherwise they
//! stay two separate triangles. The open fraction is one minus the solid fraction.
//!
//! Output: one `f32` in [0, 1] per face in the simulation's face layout: component `a` has
//! `n + e_a` faces per axis, flat index `i + na_x * (j + na_y * k)`; face `i` of `u` lies at
//! `x = i h`, between cells `i - 1` and `i`.

use rayon::prelude::*;

/// Fraction of the unit square that is negative, from its corner values in counter-clockwise
/// order around the square (e.g. (0,0), (1,0), (1,1), (0,1)).
pub fn fraction_inside(c: [f32; 4]) -> f32 {
    let corners = [[0.0f32, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
    let inside = c.map(|v| v < 0.0);
    let n_in = inside.iter().filter(|&&b| b).count();
    match n_in {
        0 => return 0.0,
        4 => return 1.0,
        _ => {}
    }
    // Zero crossing on edge e (from corner e to e + 1).
    let cross = |e: usize| {
        let (a, b) = (c[e], c[(e + 1) % 4]);
        let t = a / (a - b);
        let (p, q) = (corners[e], corners[(e + 1) % 4]);
        [p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])]
    };
    let shoelace = |poly: &[[f32; 2]]| {
        let mut s = 0.0;
        for i in 0..poly.len() {
            let (p, q) = (poly[i], poly[(i + 1) % poly.len()]);
            s += p[0] * q[1] - q[0] * p[1];
        }
        0.5 * s.abs()
    };
    if n_in == 2 && inside[0] == inside[2] {
        // Saddle. Each corner's own triangle is cut off by the crossings on its two edges.
        let tri = |k: usize| shoelace(&[cross((k + 3) % 4), corners[k], cross(k)]);
        let mean = 0.25 * (c[0] + c[1] + c[2] + c[3]);
        let (a, b) = if inside[0] { (0, 2) } else { (1, 3) };
        let (o1, o2) = ((a + 1) % 4, (b + 1) % 4);
        return if mean < 0.0 {
            // Solid joined through the middle: all but the two open corners' triangles.
            1.0 - tri(o1) - tri(o2)
        } else {
            tri(a) + tri(b)
        };
    }
    // One connected solid polygon: corners inside, plus crossings where the sign changes.
    let mut poly = [[0.0f32; 2]; 6];
    let mut n = 0;
    for e in 0..4 {
        if inside[e] {
            poly[n] = corners[e];
            n += 1;
        }
        if inside[e] != inside[(e + 1) % 4] {
            poly[n] = cross(e);
            n += 1;
        }
    }
    shoelace(&poly[..n]).clamp(0.0, 1.0)
}

/// Open (liquid) fractions of the faces of the three velocity components.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaceFractions {
    /// Cells per axis.
    pub cells: [usize; 3],
    /// `[u, v, w]`: one value per face of each component.
    pub open: [Vec<f32>; 3],
}

/// Open fractions of every MAC face of a grid of `cells` from the solid signed distance `phi`
/// at its `(cells + 1)` nodes per axis. Parallel over z-planes; the same for any thread count.
pub fn face_fractions(phi: &[f32], cells: [usize; 3]) -> FaceFractions {
    let mut out = FaceFractions::default();
    face_fractions_into(phi, cells, &mut out);
    out
}

/// [`face_fractions`] into `out`, reusing its buffers (no allocation once they have the size
/// of this grid: the stepper calls it every substep for moving obstacles).
pub fn face_fractions_into(phi: &[f32], cells: [usize; 3], out: &mut FaceFractions) {
    let nn = cells.map(|c| c + 1);
    assert_eq!(
        phi.len(),
        nn[0] * nn[1] * nn[2],
        "phi must have one value per node"
    );
    out.cells = cells;
    // Node strides: face (i, j, k) of component `a` has its corner (0, 0) at node (i, j, k).
    let stride = [1, nn[0], nn[0] * nn[1]];
    for (a, out) in out.open.iter_mut().enumerate() {
        let mut m = cells;
        m[a] += 1;
        out.resize(m[0] * m[1] * m[2], 0.0);
        if out.is_empty() {
            continue;
        }
        // The two axes spanning a face of component a, in right-handed order.
        let (su, sv) = (stride[(a + 1) % 3], stride[(a + 2) % 3]);
        out.par_chunks_mut(m[0] * m[1])
            .enumerate()
            .for_each(|(k, plane)| {
                for (j, row) in plane.chunks_exact_mut(m[0]).enumerate() {
                    let base = nn[0] * (j + nn[1] * k);
                    let corners = &phi[base..];
                    for (i, o) in row.iter_mut().enumerate() {
                        let c = [
                            corners[i],
                            corners[i + su],
                            corners[i + su + sv],
                            corners[i + sv],
                        ];
                        // All four corners open: the face is (`fraction_inside` gives 0).
                        *o = if c.iter().all(|&x| x >= 0.0) {
                            1.0
                        } else {
                            1.0 - fraction_inside(c)
                        };
                    }
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Solid area fraction of the unit square under the linear `a + b s + c t` (negative is
    /// solid), integrated along t by the midpoint rule on the exact 1D solid length.
    fn linear_reference(a: f64, b: f64, c: f64) -> f64 {
        let n = 20000;
        (0..n)
            .map(|i| {
                let t = (i as f64 + 0.5) / n as f64;
                let r = a + c * t; // f(s) = r + b s
                if b == 0.0 {
                    return if r < 0.0 { 1.0 } else { 0.0 };
                }
                let s0 = (-r / b).clamp(0.0, 1.0);
                if b > 0.0 { s0 } else { 1.0 - s0 }
            })
            .sum::<f64>()
            / n as f64
    }

    #[test]
    fn square_cases() {
        assert_eq!(fraction_inside([1.0; 4]), 0.0);
        assert_eq!(fraction_inside([-1.0; 4]), 1.0);
        // Half: a vertical line through the middle.
        assert!((fraction_inside([-1.0, 1.0, 1.0, -1.0]) - 0.5).abs() < 1e-7);
        // One corner, crossings at 1/2 on both edges: triangle of area 1/8.
        assert!((fraction_inside([-1.0, 1.0, 3.0, 1.0]) - 0.125).abs() < 1e-7);
        // Three corners: 1 - 1/8.
        assert!((fraction_inside([1.0, -1.0, -3.0, -1.0]) - 0.875).abs() < 1e-7);
        // Saddles: joined when the mean is negative, two triangles otherwise.
        assert!((fraction_inside([-1.0, 1.0, -1.0, 1.0]) - 0.25).abs() < 1e-7);
        assert!((fraction_inside([-2.0, 1.0, -2.0, 1.0]) - (1.0 - 2.0 * 0.5 / 9.0)).abs() < 1e-6);
    }

    #[test]
    fn planes_at_angles_are_exact() {
        for (n, (b, c)) in [
            (1.0, 0.0),
            (0.3, 0.7),
            (-0.8, 0.25),
            (0.5, -0.5),
            (-0.2, -0.9),
        ]
        .into_iter()
        .enumerate()
        {
            for a in [-1.2, -0.6, -0.31, -0.05, 0.0, 0.13, 0.4] {
                let f = |s: f64, t: f64| (a + b * s + c * t) as f32;
                let got = fraction_inside([f(0.0, 0.0), f(1.0, 0.0), f(1.0, 1.0), f(0.0, 1.0)]);
                let want = linear_reference(a, b, c);
                assert!(
                    (got as f64 - want).abs() < 1e-5,
                    "plane {n}, a = {a}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn tilted_plane_on_a_grid() {
        // Solid below the plane n . x = 1.3 (cells of size 1): every face is exact.
        let cells = [6, 5, 4];
        let nrm = [0.36, -0.48, 0.8];
        let phi_at = |p: [f64; 3]| nrm[0] * p[0] + nrm[1] * p[1] + nrm[2] * p[2] - 1.3;
        let nn = cells.map(|c| c + 1);
        let mut phi = vec![0f32; nn[0] * nn[1] * nn[2]];
        for k in 0..nn[2] {
            for j in 0..nn[1] {
                for i in 0..nn[0] {
                    phi[i + nn[0] * (j + nn[1] * k)] =
                        phi_at([i as f64, j as f64, k as f64]) as f32;
                }
            }
        }
        let ff = face_fractions(&phi, cells);
        for a in 0..3 {
            let (u, v) = ((a + 1) % 3, (a + 2) % 3);
            let mut m = cells;
            m[a] += 1;
            assert_eq!(ff.open[a].len(), m[0] * m[1] * m[2]);
            for k in 0..m[2] {
                for j in 0..m[1] {
                    for i in 0..m[0] {
                        let p = [i as f64, j as f64, k as f64];
                        let want = 1.0 - linear_reference(phi_at(p), nrm[u], nrm[v]);
                        let got = ff.open[a][i + m[0] * (j + m[1] * k)] as f64;
                        assert!(
                            (got - want).abs() < 1e-5,
                            "component {a} face {p:?}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn sphere_cross_sections() {
        // A solid ball of radius 10 cells: the solid area of the x-faces in the plane x = i is
        // the disc pi (R^2 - x^2). Straight segments between edge crossings cut the circle's
        // arcs (about h / r radians each), losing a relative (h / r)^2 / 6 or so: under 1% for
        // discs wider than 5 cells, and far less in total.
        let (r, c) = (10.0, [16.2, 15.7, 16.4]);
        let cells = [32; 3];
        let nn = 33;
        let mut phi = vec![0f32; nn * nn * nn];
        for k in 0..nn {
            for j in 0..nn {
                for i in 0..nn {
                    let d = [i as f64 - c[0], j as f64 - c[1], k as f64 - c[2]];
                    phi[i + nn * (j + nn * k)] =
                        ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() - r) as f32;
                }
            }
        }
        let ff = face_fractions(&phi, cells);
        let (mut total, mut want_total) = (0.0, 0.0);
        let mut worst: f64 = 0.0;
        for i in 0..=32usize {
            let x = i as f64 - c[0];
            let want = std::f64::consts::PI * (r * r - x * x).max(0.0);
            let got: f64 = (0..32 * 32)
                .map(|jk| 1.0 - ff.open[0][i + 33 * jk] as f64)
                .sum();
            total += got;
            want_total += want;
            if r * r - x * x > 25.0 {
                worst = worst.max((got - want).abs() / want);
            }
        }
        eprintln!(
            "sphere: worst disc {worst:.4}, total {:.5}",
            (total - want_total).abs() / want_total
        );
        assert!(worst < 0.01, "{worst}");
        assert!((total - want_total).abs() / want_total < 0.005);
    }
}
