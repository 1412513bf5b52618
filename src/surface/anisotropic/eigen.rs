//! Closed-form eigen-decomposition of a symmetric 3x3 matrix, for the anisotropic kernels'
//! covariances (one per particle with a sparse neighbourhood).
//!
//! **Method: Eberly 2014**, "A Robust Eigensolver for 3 x 3 Symmetric Matrices" (Geometric
//! Tools), the non-iterative form of Smith 1961 ("Eigenvalues of a symmetric 3 x 3 matrix",
//! CACM 4(4)) that Kopp 2008 ("Efficient numerical diagonalization of hermitian 3 x 3
//! matrices", IJMPC 19(3)) also builds on:
//! 1. Scale by the largest entry (no overflow or underflow for tiny or huge matrices) and
//!    shift by the trace's third: `B = (A / s - q I) / p` has trace 0 and
//!    `tr(B²) = 6`, so its eigenvalues are `2 cos(θ + 2πk/3)` with `θ = acos(det(B) / 2) / 3`
//!    (the trigonometric solution of the characteristic cubic).
//! 2. The eigenvector of the eigenvalue farthest from the other two (the largest when
//!    `det(B) >= 0`, else the smallest; it is simple): the largest of the three cross
//!    products of the rows of `A - λ I`, normalised.
//! 3. The middle eigenvector inside the plane orthogonal to it: the null vector of the 2x2
//!    restriction of `A - λ I` to that plane (robust when the two remaining eigenvalues are
//!    equal: any unit vector of the plane then is one); the third is their cross product.
//!
//! A diagonal matrix (zero off-diagonal part) returns its diagonal and the identity. Computed
//! in f64 (the inputs are f32): the trigonometric step loses digits for close eigenvalues,
//! which f64 keeps far below f32's resolution.
//!
//! Why not nalgebra's `SymmetricEigen` (iterative: Householder tridiagonalisation, then
//! implicit QR sweeps with Givens rotations and `hypot`): measured on frame 20 of the 1M
//! dam break (`surge mesh`, one thread; 79,399 covariances decomposed), callgrind: 133.5M
//! instructions (1,680 per matrix, 2.0% of the stage) -> 56.1M (707 per matrix, 0.9%); perf
//! samples (with libm): 3.9% -> 2.4% of the stage. This form does one `acos`, two `cos` and a
//! few square roots.

/// Eigenvalues of the symmetric matrix `[xx, yy, zz, xy, xz, yz]`, largest first, and the
/// matching unit eigenvectors (`vectors[k]` belongs to `values[k]`; orthonormal, right-handed
/// up to sign).
pub(super) fn sym_eigen(c: [f32; 6]) -> ([f64; 3], [[f64; 3]; 3]) {
    let [a00, a11, a22, a01, a02, a12] = c.map(f64::from);
    let scale = [a00, a11, a22, a01, a02, a12]
        .iter()
        .fold(0f64, |m, v| m.max(v.abs()));
    let off = a01 * a01 + a02 * a02 + a12 * a12;
    if off == 0.0 || scale == 0.0 || !scale.is_finite() {
        return diagonal([a00, a11, a22]);
    }
    let inv = 1.0 / scale;
    let [a00, a11, a22, a01, a02, a12] = [a00, a11, a22, a01, a02, a12].map(|v| v * inv);
    let q = (a00 + a11 + a22) / 3.0;
    let (b00, b11, b22) = (a00 - q, a11 - q, a22 - q);
    let p = ((b00 * b00 + b11 * b11 + b22 * b22 + 2.0 * (a01 * a01 + a02 * a02 + a12 * a12)) / 6.0)
        .sqrt();
    if p == 0.0 {
        // Underflowed off-diagonal part: a multiple of the identity to f64's resolution.
        return diagonal([a00, a11, a22].map(|v| v * scale));
    }
    let c00 = b11 * b22 - a12 * a12;
    let c01 = a01 * b22 - a12 * a02;
    let c02 = a01 * a12 - b11 * a02;
    let half_det = ((b00 * c00 - a01 * c01 + a02 * c02) / (p * p * p) * 0.5).clamp(-1.0, 1.0);
    let angle = half_det.acos() / 3.0;
    // 2 cos(θ + 2π/3) <= 2 cos(θ + 4π/3) <= 2 cos(θ) for θ in [0, π/3].
    let beta2 = 2.0 * angle.cos();
    let beta0 = 2.0 * (angle + 2.0 * std::f64::consts::FRAC_PI_3).cos();
    let beta1 = -(beta0 + beta2);
    let (l0, l1, l2) = (q + p * beta0, q + p * beta1, q + p * beta2);
    let a = [a00, a11, a22, a01, a02, a12];
    let (v0, v1, v2);
    if half_det >= 0.0 {
        // The largest eigenvalue is the most separated one.
        v2 = vector_of_simple(a, l2);
        v1 = vector_in_plane(a, v2, l1);
        v0 = cross(v1, v2);
    } else {
        v0 = vector_of_simple(a, l0);
        v1 = vector_in_plane(a, v0, l1);
        v2 = cross(v0, v1);
    }
    ([l2, l1, l0].map(|l| l * scale), [v2, v1, v0])
}

/// The eigen-decomposition of a diagonal matrix: its diagonal, largest first (ties in axis
/// order), and the matching axes.
fn diagonal(d: [f64; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
    let mut idx = [0usize, 1, 2];
    idx.sort_by(|&a, &b| d[b].total_cmp(&d[a]));
    (
        idx.map(|k| d[k]),
        idx.map(|k| std::array::from_fn(|a| (a == k) as u8 as f64)),
    )
}

fn cross(u: [f64; 3], v: [f64; 3]) -> [f64; 3] {
    [
        u[1] * v[2] - u[2] * v[1],
        u[2] * v[0] - u[0] * v[2],
        u[0] * v[1] - u[1] * v[0],
    ]
}

fn dot(u: [f64; 3], v: [f64; 3]) -> f64 {
    u[0] * v[0] + u[1] * v[1] + u[2] * v[2]
}

/// A unit eigenvector of the simple eigenvalue `l` of `a` (`[xx, yy, zz, xy, xz, yz]`): the
/// rows of `a - l I` span the plane orthogonal to it, so the largest cross product of two rows
/// is the best-conditioned choice.
fn vector_of_simple(a: [f64; 6], l: f64) -> [f64; 3] {
    let [a00, a11, a22, a01, a02, a12] = a;
    let r0 = [a00 - l, a01, a02];
    let r1 = [a01, a11 - l, a12];
    let r2 = [a02, a12, a22 - l];
    let c = [cross(r0, r1), cross(r0, r2), cross(r1, r2)];
    let d = c.map(|v| dot(v, v));
    let k = if d[0] >= d[1] && d[0] >= d[2] {
        0
    } else if d[1] >= d[2] {
        1
    } else {
        2
    };
    if d[k] == 0.0 {
        // Not reached for a simple eigenvalue; a unit vector keeps the basis well formed.
        return [1.0, 0.0, 0.0];
    }
    let inv = 1.0 / d[k].sqrt();
    c[k].map(|v| v * inv)
}

/// A unit eigenvector of `a` for eigenvalue `l`, orthogonal to the unit eigenvector `w`: the
/// null vector of `a - l I` restricted to the plane orthogonal to `w` (a 2x2 symmetric
/// matrix; the larger of its rows gives it). Both remaining eigenvalues equal: the matrix is
/// zero and any vector of the plane is one.
fn vector_in_plane(a: [f64; 6], w: [f64; 3], l: f64) -> [f64; 3] {
    let [a00, a11, a22, a01, a02, a12] = a;
    // An orthonormal basis (u, v) of the plane orthogonal to w.
    let u = if w[0].abs() > w[1].abs() {
        let inv = 1.0 / (w[0] * w[0] + w[2] * w[2]).sqrt();
        [-w[2] * inv, 0.0, w[0] * inv]
    } else {
        let inv = 1.0 / (w[1] * w[1] + w[2] * w[2]).sqrt();
        [0.0, w[2] * inv, -w[1] * inv]
    };
    let v = cross(w, u);
    let mul = |x: [f64; 3]| {
        [
            a00 * x[0] + a01 * x[1] + a02 * x[2],
            a01 * x[0] + a11 * x[1] + a12 * x[2],
            a02 * x[0] + a12 * x[1] + a22 * x[2],
        ]
    };
    let (au, av) = (mul(u), mul(v));
    let (m00, m01, m11) = (dot(u, au) - l, dot(u, av), dot(v, av) - l);
    let (abs00, abs01, abs11) = (m00.abs(), m01.abs(), m11.abs());
    // The row with the larger diagonal entry (the first on a tie) gives the null vector up to
    // scale: `m01 u - m00 v` from `(m00, m01)`, `m11 u - m01 v` from `(m01, m11)`; the pair
    // `(m, m01)` is normalised without overflow by dividing by its larger entry first.
    let first_row = abs00 >= abs11;
    let (mut m, abs_m) = if first_row {
        (m00, abs00)
    } else {
        (m11, abs11)
    };
    if abs_m.max(abs01) == 0.0 {
        return u;
    }
    let mut m01 = m01;
    if abs_m >= abs01 {
        m01 /= m;
        m = 1.0 / (1.0 + m01 * m01).sqrt();
        m01 *= m;
    } else {
        m /= m01;
        m01 = 1.0 / (1.0 + m * m).sqrt();
        m *= m01;
    }
    if first_row {
        std::array::from_fn(|k| m01 * u[k] - m * v[k])
    } else {
        std::array::from_fn(|k| m * u[k] - m01 * v[k])
    }
}

#[cfg(test)]
mod tests;
