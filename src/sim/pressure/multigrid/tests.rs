//! Tests of the V-cycle preconditioner against an independent `f64` matrix of the same
//! weighted Poisson problem.

use super::*;
use crate::sim::mac_grid::CellLabel::{Empty, Fluid, Solid};

mod direct;
mod drops;
mod layout;
mod runs;
mod setup;
mod slabs;
mod team;
mod window;

/// Counter-based hash to [0, 1) (no shared RNG state).
fn rnd(seed: u64, i: u64) -> f64 {
    let mut x = seed
        .wrapping_mul(0x9e3779b97f4a7c15)
        .wrapping_add(i.wrapping_mul(0xbf58476d1ce4e5b9));
    x ^= x >> 31;
    x = x.wrapping_mul(0x94d049bb133111eb);
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    x ^= x >> 32;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Per face component `a`, `w(a, f)` on each face `f` of its grid of `n + e_a` nodes.
fn face_weights(n: [usize; 3], w: impl Fn(usize, usize) -> f32) -> [Vec<f32>; 3] {
    std::array::from_fn(|a| {
        let mut m = n;
        m[a] += 1;
        (0..m[0] * m[1] * m[2]).map(|f| w(a, f)).collect()
    })
}

/// A free-surface problem: labels, face weights, and the rows (fluid cells in order).
struct Problem {
    n: [usize; 3],
    labels: Vec<CellLabel>,
    weights: [Vec<f32>; 3],
    cell_of: Vec<u32>,
    row_of: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl Problem {
    /// Irregular liquid: a few random balls and a pool below a wavy surface, random solid
    /// cells inside, and a closed solid box filled with liquid (a region touching no air: the
    /// singular, compatible case). `fractional`: random face weights in [0.05, 1].
    fn random(seed: u64, n: [usize; 3], fractional: bool) -> Self {
        let cells = n[0] * n[1] * n[2];
        let mut labels = vec![Empty; cells];
        let balls: Vec<([f64; 3], f64)> = (0..4)
            .map(|b| {
                let c = std::array::from_fn(|a| {
                    2.0 + rnd(seed, 10 * b + a as u64) * (n[a] as f64 - 4.0)
                });
                (c, 1.5 + 3.0 * rnd(seed, 10 * b + 5))
            })
            .collect();
        // The pocket: solid shell [2, 7]^2 x [2, 6] in the low x-y corner, fluid inside.
        let pocket = |i: usize, j: usize, k: usize| {
            (2..=7).contains(&i) && (2..=7).contains(&j) && (2..=6).contains(&k)
        };
        let pocket_in = |i: usize, j: usize, k: usize| {
            (3..=6).contains(&i) && (3..=6).contains(&j) && (3..=5).contains(&k)
        };
        for k in 0..n[2] {
            for j in 0..n[1] {
                for i in 0..n[0] {
                    let c = i + n[0] * (j + n[1] * k);
                    let p = [i as f64 + 0.5, j as f64 + 0.5, k as f64 + 0.5];
                    let border = i == 0
                        || j == 0
                        || k == 0
                        || i + 1 == n[0]
                        || j + 1 == n[1]
                        || k + 1 == n[2];
                    labels[c] = if border {
                        Solid
                    } else if pocket(i, j, k) {
                        if pocket_in(i, j, k) { Fluid } else { Solid }
                    } else if rnd(seed, 1000 + c as u64) < 0.04 {
                        Solid
                    } else {
                        let surface =
                            0.3 * n[2] as f64 + 1.5 * (0.7 * p[0]).sin() + (0.5 * p[1]).cos();
                        let in_ball = balls.iter().any(|(b, r)| {
                            (0..3).map(|a| (p[a] - b[a]).powi(2)).sum::<f64>() < r * r
                        });
                        // A few random holes and drops make the surface irregular.
                        let flip = rnd(seed, 5000 + c as u64) < 0.05;
                        if (p[2] < surface || in_ball) != flip {
                            Fluid
                        } else {
                            Empty
                        }
                    };
                }
            }
        }
        let weights = face_weights(n, |a, f| {
            if fractional {
                (0.05 + 0.95 * rnd(seed, 100_000 * (a as u64 + 1) + f as u64)) as f32
            } else {
                1.0
            }
        });
        Self::new(n, labels, weights)
    }

    /// The problem of these labels and face weights: its rows are the fluid cells in order.
    fn new(n: [usize; 3], labels: Vec<CellLabel>, weights: [Vec<f32>; 3]) -> Self {
        let mut row_of = vec![NONE; labels.len()];
        let mut cell_of = Vec::new();
        for (c, l) in labels.iter().enumerate() {
            if *l == Fluid {
                row_of[c] = cell_of.len() as u32;
                cell_of.push(c as u32);
            }
        }
        Self {
            n,
            labels,
            weights,
            cell_of,
            row_of,
        }
    }

    fn rows(&self) -> usize {
        self.cell_of.len()
    }

    /// `(neighbour cell, weight)` of the six faces of cell `c`; weight 0 across solid.
    fn faces(&self, c: usize) -> [(usize, f64); 6] {
        let n = self.n;
        let (i, j, k) = (c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1]));
        let st = [1, n[0], n[0] * n[1]];
        std::array::from_fn(|f| {
            let (a, up) = (f / 2, f % 2 == 1);
            let nb = if up { c + st[a] } else { c - st[a] };
            let mut m = n;
            m[a] += 1;
            let mut ijk = [i, j, k];
            if up {
                ijk[a] += 1;
            }
            let w = self.weights[a][ijk[0] + m[0] * (ijk[1] + m[1] * ijk[2])] as f64;
            let open = self.labels[c] != Solid && self.labels[nb] != Solid;
            (nb, if open { w } else { 0.0 })
        })
    }

    /// `out = A x` on the rows. A row with every face closed has diagonal 1, as in the
    /// stepper's system (`System::build_weights`).
    fn mul(&self, x: &[f64], out: &mut [f64]) {
        for (r, &c) in self.cell_of.iter().enumerate() {
            let (mut s, mut open) = (0.0, 0.0);
            for (nb, w) in self.faces(c as usize) {
                s += w * x[r];
                open += w;
                if self.row_of[nb] != NONE {
                    s -= w * x[self.row_of[nb] as usize];
                }
            }
            out[r] = if open > 0.0 { s } else { x[r] };
        }
    }

    fn has_closed_region(&self) -> bool {
        // The pocket's cells are fluid and none of its faces sees air.
        let n = self.n;
        let c = 4 + n[0] * (4 + n[1] * 4);
        self.labels[c] == Fluid
    }
}

/// `f()` on a pool of `threads` threads.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(f)
}

/// Conjugate gradient on `A x = b` (f64), preconditioned by `m` (`None`: plain CG), stopping at
/// `max|r| <= tol max|b|` (the stepper's rule). Returns `(x, iterations)`.
fn pcg(
    p: &Problem,
    b: &[f64],
    tol: f64,
    max_it: usize,
    mut m: Option<&mut Multigrid>,
) -> (Vec<f64>, usize) {
    let nr = p.rows();
    let mut x = vec![0.0; nr];
    let mut r = b.to_vec();
    let mut z = vec![0.0; nr];
    let mut q = vec![0.0; nr];
    let bmax = b.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let precon = |r: &[f64], z: &mut [f64], m: &mut Option<&mut Multigrid>| match m {
        Some(mg) => mg.apply(&p.cell_of, r, z),
        None => z.copy_from_slice(r),
    };
    precon(&r, &mut z, &mut m);
    let mut s = z.clone();
    let mut sigma = dot(&z, &r);
    for it in 0..max_it {
        p.mul(&s, &mut q);
        let alpha = sigma / dot(&q, &s);
        for i in 0..nr {
            x[i] += alpha * s[i];
            r[i] -= alpha * q[i];
        }
        if r.iter().fold(0.0f64, |a, v| a.max(v.abs())) <= tol * bmax {
            return (x, it + 1);
        }
        precon(&r, &mut z, &mut m);
        let sn = dot(&z, &r);
        for i in 0..nr {
            s[i] = z[i] + sn / sigma * s[i];
        }
        sigma = sn;
    }
    (x, max_it)
}

fn multigrid(p: &Problem, fractional: bool) -> Multigrid {
    let mut mg = Multigrid::new(p.n, Settings::default());
    mg.setup(&p.labels, fractional.then_some(&p.weights));
    mg
}

/// A right-hand side in the range of `A` (so compatible on the closed region): `A x` for a
/// random `x`.
fn rhs(p: &Problem, seed: u64) -> Vec<f64> {
    let x: Vec<f64> = (0..p.rows()).map(|i| rnd(seed, i as u64) - 0.5).collect();
    let mut b = vec![0.0; p.rows()];
    p.mul(&x, &mut b);
    b
}

/// The weighted pressure differences `w (q_c - q_nb)` across every face of a fluid cell to a
/// fluid or air cell: what the projection subtracts from the velocities. They do not depend on
/// the free constant of a closed region, so they compare solutions of the singular case.
fn gradients(p: &Problem, q: &[f64]) -> Vec<f64> {
    let mut g = Vec::new();
    for (r, &c) in p.cell_of.iter().enumerate() {
        for (nb, w) in p.faces(c as usize) {
            if w > 0.0 {
                let qn = if p.row_of[nb] == NONE {
                    0.0
                } else {
                    q[p.row_of[nb] as usize]
                };
                g.push(w * (q[r] - qn));
            }
        }
    }
    g
}

/// The largest difference of the weighted face differences ([`gradients`]) of `a` and `b`,
/// and the largest of `a`'s.
fn gradient_error(p: &Problem, a: &[f64], b: &[f64]) -> (f64, f64) {
    let (ga, gb) = (gradients(p, a), gradients(p, b));
    let big = ga.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = ga
        .iter()
        .zip(&gb)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    (err, big)
}

/// MGPCG reaches the stepper's stopping rule and agrees with plain CG converged to 1e-13 on
/// random irregular free-surface problems, with unit and fractional face weights, several
/// disconnected liquid regions and a closed region touching no air (compatible right-hand
/// side). MGPCG stops at `max|r| <= 1e-8 max|b|`; its error is
/// `A^-1 r`, and the Dirichlet problems here (about 24 cells across, face weights at least
/// 0.05) amplify a residual by at most a few hundred, so the weighted face differences (what
/// the projection uses; free of the closed region's constant) must agree to 1e-5 of their
/// largest value: looser than that bound, far tighter than a wrong operator or a
/// preconditioner CG cannot use would give. The latter would also show in the iteration
/// count: MGPCG must take at most a third of plain CG's iterations.
#[test]
fn mgpcg_matches_tightly_converged_cg() {
    let cases = [(1u64, false), (2, true), (3, true), (4, false)];
    for (seed, fractional) in cases {
        let p = Problem::random(seed, [26, 21, 18], fractional);
        assert!(p.has_closed_region());
        let mut mg = multigrid(&p, fractional);
        assert!(mg.levels() >= 2);
        let b = rhs(&p, seed + 100);
        let (q_ref, it_ref) = pcg(&p, &b, 1e-13, 20_000, None);
        let (q_mg, it_mg) = pcg(&p, &b, 1e-8, 500, Some(&mut mg));
        assert!(it_mg < 500, "seed {seed}: MGPCG did not converge");
        // The true residual (not CG's recurrence) meets the rule within rounding.
        let mut aq = vec![0.0; p.rows()];
        p.mul(&q_mg, &mut aq);
        let bmax = b.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let res = aq
            .iter()
            .zip(&b)
            .fold(0.0f64, |a, (x, y)| a.max((x - y).abs()));
        assert!(
            res <= 2e-8 * bmax,
            "seed {seed}: true residual {res:e} vs max|b| {bmax:e}"
        );
        let (err, gmax) = gradient_error(&p, &q_ref, &q_mg);
        assert!(
            err <= 1e-5 * gmax,
            "seed {seed}: gradient error {err:e} of {gmax:e}"
        );
        assert!(
            3 * it_mg <= it_ref,
            "seed {seed}: MGPCG {it_mg} iterations vs plain CG {it_ref}"
        );
        eprintln!(
            "seed {seed} fractional {fractional}: rows {}, MGPCG {it_mg} its, CG {it_ref} its, grad err {:.1e}",
            p.rows(),
            err / gmax
        );
    }
}

/// A fluid cell whose six faces are all closed (a moving solid shut it in this substep) is a
/// row of its own, `q = b` there. The cycle must map its residual to itself: with no inverse
/// of its zero diagonal it gave that row nothing, so CG could never remove a residual there
/// (a warm start's old pressure) and ran to its cap (`scripts/fuzz_motion.py` seed 74: 1,000
/// iterations, residual 0.15, then NaN). Several shut cells in the body, the pool and a ball.
#[test]
fn a_cell_shut_on_every_side_is_a_row_of_its_own() {
    let mut p = Problem::random(2, [26, 21, 18], true);
    let n = p.n;
    let mut shut = 0;
    for c in [
        3 + n[0] * (12 + n[1] * 2),
        15 + n[0] * (10 + n[1] * 3),
        20 + n[0] * (4 + n[1]),
    ] {
        if p.labels[c] != Fluid {
            continue;
        }
        let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
        for a in 0..3 {
            let mut m = n;
            m[a] += 1;
            for up in 0..2 {
                let mut f = ijk;
                f[a] += up;
                p.weights[a][f[0] + m[0] * (f[1] + m[1] * f[2])] = 0.0;
            }
        }
        shut += 1;
    }
    assert!(shut >= 2, "the chosen cells should be liquid");
    let mut mg = multigrid(&p, true);
    let b = rhs(&p, 7);
    let (q_ref, _) = pcg(&p, &b, 1e-13, 20_000, None);
    let (q_mg, it_mg) = pcg(&p, &b, 1e-8, 500, Some(&mut mg));
    assert!(it_mg < 100, "MGPCG took {it_mg} iterations");
    let (err, gmax) = gradient_error(&p, &q_ref, &q_mg);
    assert!(err <= 1e-5 * gmax, "gradient error {err:e} of {gmax:e}");
    for &c in &p.cell_of {
        if p.faces(c as usize).iter().all(|&(_, w)| w == 0.0) {
            let r = p.row_of[c as usize] as usize;
            assert!(
                (q_mg[r] - b[r]).abs() <= 1e-8 * b[r].abs().max(1e-30),
                "shut row {r}"
            );
        }
    }
}

/// The V-cycle is a symmetric linear map: `<M^-1 a, b> = <a, M^-1 b>` to f32 rounding (1e-5
/// relative to `|M^-1 a| |b|`; a pre- and post-smoother in the same order gives ~1e-2), and
/// positive: `<M^-1 a, a> > 0`.
#[test]
fn preconditioner_is_symmetric_and_positive() {
    let cases = [(5u64, true), (6, false)];
    for (seed, fractional) in cases {
        let p = Problem::random(seed, [22, 19, 17], fractional);
        let mut mg = multigrid(&p, fractional);
        let nr = p.rows();
        let a: Vec<f64> = (0..nr).map(|i| rnd(seed, 7 * i as u64) - 0.5).collect();
        let b: Vec<f64> = (0..nr).map(|i| rnd(seed + 1, 7 * i as u64) - 0.5).collect();
        let (mut ma, mut mb) = (vec![0.0; nr], vec![0.0; nr]);
        mg.apply(&p.cell_of, &a, &mut ma);
        mg.apply(&p.cell_of, &b, &mut mb);
        let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(u, v)| u * v).sum::<f64>();
        let norm = |x: &[f64]| dot(x, x).sqrt();
        let (ab, ba) = (dot(&ma, &b), dot(&a, &mb));
        let scale = norm(&ma) * norm(&b);
        assert!(
            (ab - ba).abs() <= 1e-5 * scale,
            "seed {seed}: {ab} vs {ba} (scale {scale})"
        );
        assert!(dot(&ma, &a) > 0.0 && dot(&mb, &b) > 0.0);
        eprintln!("seed {seed}: asymmetry {:.2e}", (ab - ba).abs() / scale);
    }
}

/// The V-cycle gives the same bits with 1 and 2 threads (every loop writes each cell from
/// values no other task writes, with no reductions), on a grid big enough to split rows across
/// tasks.
#[test]
fn preconditioner_is_thread_independent() {
    let p = Problem::random(9, [70, 60, 40], true);
    let r: Vec<f64> = (0..p.rows()).map(|i| rnd(9, i as u64) - 0.5).collect();
    let run = |threads: usize| {
        on_threads(threads, || {
            let mut mg = multigrid(&p, true);
            let mut z = vec![0.0; p.rows()];
            mg.apply(&p.cell_of, &r, &mut z);
            z.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        })
    };
    let one = run(1);
    assert!(one.iter().any(|&x| f64::from_bits(x) != 0.0));
    assert!(one == run(2), "1 and 2 threads differ");
}

/// The fused red-black sweeps (plane wavefront, slabs in parallel) give exactly the bits of
/// the separate half-sweeps one after the other, on every level of a problem big enough for several slabs, with
/// 1, 2, 3, 5 and 16 threads (one wavefront; 4, 3 or 5 slabs; stage by stage; groups of stages
/// as slabs: every plan of `slabs.rs`), from zero and from a non-zero `u`.
#[test]
fn fused_sweep_equals_two_half_sweeps() {
    // The flat grid's few planes of liquid run in groups of stages on 3 and 5 threads.
    for (fractional, n) in [
        (false, [40, 30, 90]),
        (true, [40, 30, 90]),
        (false, [120, 60, 40]),
    ] {
        let p = Problem::random(11, n, fractional);
        let mut mg = multigrid(&p, fractional);
        let r: Vec<f64> = (0..p.rows()).map(|i| rnd(11, i as u64) - 0.5).collect();
        let mut z = vec![0.0; p.rows()];
        // Fills every level's b and u with a V-cycle's values.
        mg.apply(&p.cell_of, &r, &mut z);
        for l in 0..mg.levels() {
            for (first, from_zero, sweeps, omega) in [
                (0, true, 1, 1.0),
                (0, false, 1, 1.0),
                (1, false, 1, 1.0),
                (0, true, 2, 1.0),
                (1, false, 2, 1.0),
                (0, false, 3, 1.0),
                (0, true, 3, 1.45),
                (1, false, 3, 1.45),
                (0, false, 2, 1.3),
            ] {
                let mut a = Multigrid::new(p.n, Settings::default());
                a.setup(&p.labels, fractional.then_some(&p.weights));
                let u0 = mg.levels[l].u.clone();
                a.levels[l].u.clone_from(&u0);
                a.levels[l].b.clone_from(&mg.levels[l].b);
                for h in 0..2 * sweeps {
                    let (c, zero) = ((first + h) % 2, from_zero && h == 0);
                    let w = wavefront::relaxation(first, h, 2 * sweeps, omega);
                    wavefront::half_sweep(&mut a.levels[l], c, zero, w);
                }
                let want = a.levels[l].u.clone();
                for threads in [1, 2, 3, 5, 16] {
                    a.levels[l].u.clone_from(&u0);
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    pool.install(|| {
                        super::sweeps::rb_sweeps(
                            &mut a.levels[l],
                            sweeps,
                            first,
                            from_zero,
                            wavefront::Extra::None,
                            omega,
                        )
                    });
                    let same = a.levels[l]
                        .u
                        .iter()
                        .zip(&want)
                        .all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(
                        same,
                        "level {l}, first {first}, from_zero {from_zero}, {sweeps} sweeps, omega {omega}, {threads} threads"
                    );
                }
                // The finest levels have work (coarser ones may have no liquid left).
                assert!(l > 1 || want.iter().any(|&x| x != 0.0));
            }
        }
    }
    // The flat grid's finest level on 3 threads runs its sweeps in groups of stages.
    let p = Problem::random(11, [120, 60, 40], false);
    let lv = &multigrid(&p, false).levels[0];
    let ny = lv.n[1];
    let has = |k: &usize| (0..ny).any(|j| lv.spans[j + ny * k][0] < lv.spans[j + ny * k][1]);
    let (k0, k1) = ((0..lv.n[2]).find(has), (0..lv.n[2]).rfind(has));
    let (k0, k1) = (k0.unwrap(), k1.unwrap() + 1);
    let (plan, _) = super::slabs::slab_plan(lv, k0, k1, 6, 3);
    assert!(super::slabs::stage_groups(lv.n, &lv.spans, (k0, k1), 6, 3, plan).is_some());
}

/// The wavefront with the residual after the pre-smoothing, and with the prolongation before
/// the post-smoothing, stores the same bits as the separate passes one after the other, with
/// 1, 2, 3, 5 and 16 threads (the fused passes change the order of the work, never its
/// operations).
#[test]
fn fused_residual_and_prolongation_equal_separate_passes() {
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    for fractional in [false, true] {
        let p = Problem::random(13, [40, 30, 90], fractional);
        let mut mg = multigrid(&p, fractional);
        let r: Vec<f64> = (0..p.rows()).map(|i| rnd(13, i as u64) - 0.5).collect();
        let mut z = vec![0.0; p.rows()];
        // Fills every level's b, u and r with a V-cycle's values.
        mg.apply(&p.cell_of, &r, &mut z);
        let fresh = || {
            let mut a = Multigrid::new(p.n, Settings::default());
            a.setup(&p.labels, fractional.then_some(&p.weights));
            for l in 0..a.levels() {
                a.levels[l].u.clone_from(&mg.levels[l].u);
                a.levels[l].b.clone_from(&mg.levels[l].b);
                a.levels[l].r.clone_from(&mg.levels[l].r);
            }
            a
        };
        for l in 0..mg.levels() - 1 {
            for (sweeps, omega) in [(1, 1.0), (3, 1.0), (3, 1.45)] {
                let w = |first, h| wavefront::relaxation(first, h, 2 * sweeps, omega);
                // Pre-smoothing from zero, then the residual.
                let mut a = fresh();
                for h in 0..2 * sweeps {
                    wavefront::half_sweep(&mut a.levels[l], h % 2, h == 0, w(0, h));
                }
                kernels::residual(&mut a.levels[l]);
                // Prolongation, then the mirrored smoothing.
                let mut c = fresh();
                let (f, co) = c.levels.split_at_mut(l + 1);
                kernels::prolong_add(&co[0], &mut f[l]);
                for h in 0..2 * sweeps {
                    wavefront::half_sweep(&mut f[l], (1 + h) % 2, false, w(1, h));
                }
                assert!(l > 1 || a.levels[l].r.iter().any(|&x| x != 0.0));
                for threads in [1, 2, 3, 5, 16] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let mut b = fresh();
                    let x = wavefront::Extra::Residual;
                    pool.install(|| {
                        super::sweeps::rb_sweeps(&mut b.levels[l], sweeps, 0, true, x, omega)
                    });
                    let what =
                        format!("level {l}, {sweeps} sweeps, omega {omega}, {threads} threads");
                    assert!(same(&b.levels[l].u, &a.levels[l].u), "pre u, {what}");
                    assert!(same(&b.levels[l].r, &a.levels[l].r), "residual, {what}");
                    let mut d = fresh();
                    let (f, co) = d.levels.split_at_mut(l + 1);
                    let x = wavefront::Extra::Prolong(&co[0]);
                    pool.install(|| {
                        super::sweeps::rb_sweeps(&mut f[l], sweeps, 1, false, x, omega)
                    });
                    assert!(same(&f[l].u, &c.levels[l].u), "post u, {what}");
                }
            }
        }
    }
}
