//! The exact coarse solve ([`super::super::direct`]) against the level's own operator, on the
//! random free-surface problems of the parent tests and on a closed tank full of liquid (no
//! air: every level singular, the null-pivot path).

use super::super::direct::Direct;
use super::super::kernels;
use super::*;

/// A closed box of `n` cells, every interior cell fluid: a singular, compatible Neumann
/// problem on every level.
fn full_tank(n: [usize; 3]) -> Vec<CellLabel> {
    let mut labels = vec![Fluid; n[0] * n[1] * n[2]];
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let border =
                    i == 0 || j == 0 || k == 0 || i + 1 == n[0] || j + 1 == n[1] || k + 1 == n[2];
                if border {
                    labels[i + n[0] * (j + n[1] * k)] = Solid;
                }
            }
        }
    }
    labels
}

/// A test case: name, grid, labels, face weights (`None`: unit).
type Case = (String, [usize; 3], Vec<CellLabel>, Option<[Vec<f32>; 3]>);

/// `b - A u` of level `lv` (its `r`, by colour) through the reference residual.
fn residual(lv: &mut Level, u: &[f32], b: &[f32]) -> Vec<f32> {
    lv.u.copy_from_slice(u);
    lv.b.copy_from_slice(b);
    kernels::residual(lv);
    lv.r.clone()
}

/// On every coarse level that fits the budgets (the flop budget lifted), with unit and
/// fractional weights and on a singular closed tank: (1) for a right-hand side in the range of
/// the level's operator (`b = A y`, so compatible on closed regions), the solve's `x`
/// satisfies `A x = b` to `1e-4` of `max|b|` (f32 storage of `x` and an f32 residual: a few
/// ulps of the terms `diag x`, which the conditioning of at most 512 unknowns keeps within a
/// few hundred times `|b|`; a wrong factor or a dropped coupling leaves residuals of the
/// order of `|b|`); (2) the solve is a symmetric map, `<S a, c> = <a, S c>` to `1e-5`
/// relative (f32 rounding of the stored results), as the cycle's symmetry needs; (3) it is
/// positive semi-definite, `<S a, a> >= 0`; (4) the closed tank's factor has exactly one
/// null pivot (its one constant null vector), with unit and with random face weights.
#[test]
fn direct_solve_inverts_the_level_operator() {
    let mut cases: Vec<Case> = vec![];
    for (seed, fractional) in [(1u64, false), (2, true), (7, false)] {
        let p = Problem::random(seed, [26, 21, 18], fractional);
        let w = fractional.then(|| p.weights.clone());
        cases.push((format!("random {seed}"), p.n, p.labels, w));
    }
    cases.push((
        "full tank".into(),
        [14, 12, 10],
        full_tank([14, 12, 10]),
        None,
    ));
    // The same with random face weights: the level's `f32` diagonal sums its weights with
    // rounding, and the factor must still see the one null pivot (session 30: it did not, and
    // a closed tank around an obstacle took 1,000 CG iterations per solve).
    for seed in 1..=4u64 {
        let n = [14, 12, 10];
        let w = face_weights(n, |a, f| {
            (0.05 + 0.95 * rnd(seed, 100_000 * (a as u64 + 1) + f as u64)) as f32
        });
        cases.push((
            format!("full tank, weights {seed}"),
            n,
            full_tank(n),
            Some(w),
        ));
    }
    for (name, n, labels, weights) in &cases {
        // Levels of this case tested: every case must test one at least.
        let mut tested = 0;
        let mut mg = Multigrid::new(*n, Settings::default());
        mg.setup(labels, weights.as_ref());
        for l in 1..mg.levels() {
            let mut d = Direct::new();
            // (A level with no unknowns, all air at that coarseness, has nothing to test.)
            if !d.factor(&mg.levels[l], l, usize::MAX / 8) || d.unknowns() == 0 {
                continue;
            }
            tested += 1;
            // The closed tank is one singular block: exactly one null pivot.
            if name.starts_with("full tank") {
                assert_eq!(d.null_pivots(), 1, "{name}, level {l}");
            }
            let lv = &mut mg.levels[l];
            let len = lv.u.len();
            // The level's unknowns (by colour): a non-zero inverse diagonal.
            let unknown: Vec<bool> = lv.invd.iter().map(|&x| x != 0.0).collect();
            let random = |seed: u64| -> Vec<f32> {
                (0..len)
                    .map(|x| {
                        if unknown[x] {
                            (rnd(seed, x as u64) - 0.5) as f32
                        } else {
                            0.0
                        }
                    })
                    .collect()
            };
            let zeros = vec![0.0f32; len];
            // (1) b = A y = -(0 - A y).
            let y = random(31 + l as u64);
            let b: Vec<f32> = residual(lv, &y, &zeros).iter().map(|x| -x).collect();
            lv.b.copy_from_slice(&b);
            lv.u.fill(0.0);
            d.solve(lv);
            let x = lv.u.clone();
            let r = residual(lv, &x, &b);
            let bmax = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let rmax = r.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            assert!(bmax > 0.0);
            assert!(
                rmax <= 1e-4 * bmax,
                "{name}, level {l}: residual {rmax:e} of max|b| {bmax:e}"
            );
            // (2), (3): symmetric and positive semi-definite.
            let solve = |lv: &mut Level, d: &mut Direct, b: &[f32]| {
                lv.b.copy_from_slice(b);
                lv.u.fill(0.0);
                d.solve(lv);
                lv.u.clone()
            };
            let (a, c) = (random(41), random(43));
            let (sa, sc) = (solve(lv, &mut d, &a), solve(lv, &mut d, &c));
            let dot = |x: &[f32], y: &[f32]| {
                x.iter()
                    .zip(y)
                    .map(|(u, v)| *u as f64 * *v as f64)
                    .sum::<f64>()
            };
            let norm = |x: &[f32]| dot(x, x).sqrt();
            let (ac, ca) = (dot(&sa, &c), dot(&a, &sc));
            let scale = norm(&sa) * norm(&c);
            assert!(
                (ac - ca).abs() <= 1e-5 * scale,
                "{name}, level {l}: <Sa, c> {ac} vs <a, Sc> {ca}"
            );
            assert!(dot(&sa, &a) >= 0.0 && dot(&sc, &c) >= 0.0);
            eprintln!(
                "{name}: level {l}, {} unknowns, residual {:.1e}, asymmetry {:.1e}",
                d.unknowns(),
                rmax / bmax,
                (ac - ca).abs() / scale
            );
        }
        assert!(tested >= 1, "{name}: no level fit the budgets");
    }
}
