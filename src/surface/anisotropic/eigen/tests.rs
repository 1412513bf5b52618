//! [`sym_eigen`] against nalgebra's iterative `SymmetricEigen` (f64, on the same f32 inputs)
//! on random symmetric matrices and on the degenerate ones a covariance can be: repeated
//! eigenvalues (a sphere's or a disc's neighbourhood), diagonal, rank 1 (particles on a line),
//! zero (one particle), tiny and huge scales.
//!
//! Tolerances, relative to the largest eigenvalue magnitude `|λ|max`: eigenvalues within
//! 2e-8 `|λ|max` of nalgebra's, eigenvector residuals `|A v - λ v|` and `Q diag(λ) Qᵀ - A`
//! within the same. Why 2e-8: the trigonometric step loses precision where two eigenvalues
//! nearly coincide (`acos` near ±1 turns an error of ε in its argument into √ε in the angle:
//! √(2.2e-16) = 1.5e-8 in f64; measured worst here: 7.7e-9 (rank 1), printed by the tests), and the
//! covariance it decomposes is itself f32, rounded at 6e-8 `|λ|max`, so the error stays below
//! the input's own. Eigenvectors orthonormal to 1e-12, and compared with nalgebra's
//! (`|v · v_ref| = 1` to 1e-6) only where the eigenvalue is at least 1e-3 `|λ|max` away from
//! the others (unique up to sign only for a simple eigenvalue; the vector's error is the
//! matrix's over that gap).

use super::sym_eigen;
use nalgebra::{Matrix3, SymmetricEigen};

/// A small deterministic generator (splitmix64) of uniform values in [-1, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    /// A random rotation (Gram-Schmidt of random vectors).
    fn rotation(&mut self) -> Matrix3<f64> {
        let m = Matrix3::from_fn(|_, _| self.next());
        m.qr().q()
    }
}

fn matrix(c: [f32; 6]) -> Matrix3<f64> {
    let c = c.map(f64::from);
    Matrix3::new(c[0], c[3], c[4], c[3], c[1], c[5], c[4], c[5], c[2])
}

/// `R diag(d) Rᵀ` rounded to f32, as `[xx, yy, zz, xy, xz, yz]`.
fn packed(r: &Matrix3<f64>, d: [f64; 3]) -> [f32; 6] {
    let m = r * Matrix3::from_diagonal(&d.into()) * r.transpose();
    [
        m[(0, 0)],
        m[(1, 1)],
        m[(2, 2)],
        m[(0, 1)],
        m[(0, 2)],
        m[(1, 2)],
    ]
    .map(|v| v as f32)
}

/// Checks [`sym_eigen`] on `c` (see the module docs); returns the eigenvalue error over
/// `|λ|max`.
fn check(c: [f32; 6]) -> f64 {
    let a = matrix(c);
    let (values, vectors) = sym_eigen(c);
    let reference = SymmetricEigen::new(a);
    let mut idx = [0usize, 1, 2];
    idx.sort_by(|&x, &y| reference.eigenvalues[y].total_cmp(&reference.eigenvalues[x]));
    let ref_values = idx.map(|k| reference.eigenvalues[k]);
    let top = ref_values.iter().fold(0f64, |m, v| m.max(v.abs()));
    let tol = 2e-8 * top;
    assert!(
        values[0] >= values[1] && values[1] >= values[2],
        "{c:?}: not sorted {values:?}"
    );
    let mut worst = 0f64;
    for k in 0..3 {
        let err = (values[k] - ref_values[k]).abs();
        worst = worst.max(if top > 0.0 { err / top } else { err });
        assert!(
            err <= tol,
            "{c:?}: eigenvalue {k} {} vs nalgebra {} (error {err:e}, tolerance {tol:e})",
            values[k],
            ref_values[k]
        );
    }
    let q = Matrix3::from_columns(&vectors.map(nalgebra::Vector3::from));
    let orth = (q.transpose() * q - Matrix3::identity()).abs().max();
    assert!(orth <= 1e-12, "{c:?}: not orthonormal ({orth:e})");
    for k in 0..3 {
        let v = q.column(k);
        let res = (a * v - values[k] * v).norm();
        assert!(
            res <= tol,
            "{c:?}: residual {res:e} of vector {k} (tolerance {tol:e})"
        );
        let gap = (0..3)
            .filter(|&j| j != k)
            .map(|j| (ref_values[j] - ref_values[k]).abs())
            .fold(f64::MAX, f64::min);
        if top > 0.0 && gap >= 1e-3 * top {
            let r = reference.eigenvectors.column(idx[k]);
            let align = v.dot(&r).abs();
            assert!(
                (align - 1.0).abs() <= 1e-6,
                "{c:?}: vector {k} |v . v_ref| = {align}"
            );
        }
    }
    let back = q * Matrix3::from_diagonal(&values.into()) * q.transpose();
    let err = (back - a).abs().max();
    assert!(
        err <= tol.max(f64::MIN_POSITIVE),
        "{c:?}: Q Λ Qᵀ - A = {err:e}"
    );
    worst
}

#[test]
fn random_matrices_match_nalgebra() {
    let mut rng = Rng(14);
    let mut worst = 0f64;
    for _ in 0..20_000 {
        let c: [f32; 6] = std::array::from_fn(|_| rng.next() as f32);
        worst = worst.max(check(c));
    }
    // Covariance-like: positive semi-definite, eigenvalues spread over 4 decades.
    for _ in 0..20_000 {
        let r = rng.rotation();
        let d = [0, 1, 2].map(|_| 10f64.powf(-4.0 * (rng.next() + 1.0) / 2.0) * 1e-5);
        worst = worst.max(check(packed(&r, d)));
    }
    println!("worst eigenvalue error: {worst:e} of the largest");
}

/// The largest eigenvalue error seen (over `|λ|max`), printed by each test.
struct Worst(f64);

impl Worst {
    fn max_with(&mut self, e: f64) {
        self.0 = self.0.max(e);
    }
}

#[test]
fn repeated_and_near_repeated_eigenvalues() {
    let mut worst = Worst(0.0);
    let mut rng = Rng(3);
    for _ in 0..5_000 {
        let r = rng.rotation();
        let (a, b) = (rng.next() + 2.0, rng.next() + 2.0);
        // Two equal (a disc's spread), all three equal (a sphere's), and two within 1e-6.
        worst.max_with(check(packed(&r, [a, a, b])));
        worst.max_with(check(packed(&r, [b, a, a])));
        worst.max_with(check(packed(&r, [a, a, a])));
        worst.max_with(check(packed(&r, [a, a * (1.0 + 1e-6), b])));
    }
    // Exactly a multiple of the identity, and a diagonal with a repeated entry.
    for c in [
        [2.0, 2.0, 2.0, 0.0, 0.0, 0.0],
        [1.0, 3.0, 1.0, 0.0, 0.0, 0.0],
    ] {
        worst.max_with(check(c));
    }
    println!("worst eigenvalue error: {:e} of the largest", worst.0);
}

#[test]
fn diagonal_rank_one_and_zero() {
    let mut worst = Worst(0.0);
    let mut rng = Rng(7);
    for _ in 0..5_000 {
        let d: [f32; 3] = std::array::from_fn(|_| rng.next() as f32);
        worst.max_with(check([d[0], d[1], d[2], 0.0, 0.0, 0.0]));
        // Rank 1: u uᵀ (particles on a line), and rank 2.
        let u: [f64; 3] = std::array::from_fn(|_| rng.next());
        let r = rng.rotation();
        worst.max_with(check(packed(
            &r,
            [u[0] * u[0] + u[1] * u[1] + u[2] * u[2], 0.0, 0.0],
        )));
        worst.max_with(check(packed(&r, [rng.next().abs(), rng.next().abs(), 0.0])));
    }
    let (values, vectors) = sym_eigen([0.0; 6]);
    assert_eq!(values, [0.0; 3]);
    assert_eq!(vectors, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);
    println!("worst eigenvalue error: {:e} of the largest", worst.0);
}

#[test]
fn tiny_and_huge_scales() {
    let mut worst = Worst(0.0);
    let mut rng = Rng(11);
    for scale in [1e-30f64, 1e-15, 1e-6, 1e6, 1e15, 1e30] {
        for _ in 0..2_000 {
            let r = rng.rotation();
            let d = [0, 1, 2].map(|_| (rng.next() + 1.5) * scale);
            worst.max_with(check(packed(&r, d)));
            let c: [f32; 6] = std::array::from_fn(|_| (rng.next() * scale) as f32);
            worst.max_with(check(c));
        }
    }
    println!("worst eigenvalue error: {:e} of the largest", worst.0);
}
