//! The drops apart from the cycle (`drops.rs`): the pieces found by the union-find over runs
//! against a flood fill of the labels, and the CG loop with them against the loop without
//! them (the same system, solution and symmetry; the same bits for 1 and 2 threads).

use super::super::super::super::mac_grid::GridDims;
use super::super::super::{Preconditioning, PressureSolver, SolidFaces};
use super::super::drops::Drops;
use super::*;
use crate::sim::pressure::system::System;

pub(super) fn dims(n: [usize; 3]) -> GridDims {
    GridDims {
        n,
        h: 0.1,
        lower: [0.0; 3],
        open: [[false; 2]; 3],
    }
}

/// The pieces of `p`'s fluid cells (6-connected), each as its rows in order, by a flood fill
/// of the labels (independent of the system's runs).
fn pieces(p: &Problem) -> Vec<Vec<u32>> {
    let st = [1, p.n[0], p.n[0] * p.n[1]];
    let mut seen = vec![false; p.labels.len()];
    let mut out = Vec::new();
    for &c0 in &p.cell_of {
        if seen[c0 as usize] {
            continue;
        }
        seen[c0 as usize] = true;
        let (mut stack, mut rows) = (vec![c0 as usize], Vec::new());
        while let Some(c) = stack.pop() {
            rows.push(p.row_of[c]);
            for s in st {
                for m in [c - s, c + s] {
                    if p.labels[m] == Fluid && !seen[m] {
                        seen[m] = true;
                        stack.push(m);
                    }
                }
            }
        }
        rows.sort_unstable();
        out.push(rows);
    }
    out
}

/// A pool in the lower third, and above it a spray of single cells, every other cell in a
/// 3-D checkerboard (a fluid cell's face neighbours are not fluid): more drop cells than
/// the drops' room.
fn spray(n: [usize; 3]) -> Problem {
    let mut labels = vec![Empty; n[0] * n[1] * n[2]];
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let c = i + n[0] * (j + n[1] * k);
                let border = (0..3).any(|a| [i, j, k][a] == 0 || [i, j, k][a] + 1 == n[a]);
                labels[c] = if border {
                    Solid
                } else if 3 * k < n[2] || (i + j + k) % 2 == 0 && 3 * k > n[2] + 2 {
                    Fluid
                } else {
                    Empty
                };
            }
        }
    }
    Problem::new(n, labels, face_weights(n, |_, _| 1.0))
}

/// Every piece of at most `max` cells but the largest (the first in row order of the most
/// cells) is a drop while the drops fit in an eighth of the grid's cells, on problems with
/// hundreds of pieces (the random holes and drops of [`Problem::random`], its closed pocket,
/// balls): the drop rows and the labels the cycle gets (drops as air, all else unchanged)
/// equal the flood fill's, with the joins in one slab of planes and in slabs of a few planes
/// (in parallel, then across the slabs).
#[test]
fn drops_are_the_small_pieces_but_the_largest() {
    for seed in [11u64, 12, 0] {
        let p = if seed == 0 {
            spray([30, 23, 19])
        } else {
            Problem::random(seed, [30, 23, 19], false)
        };
        let mut sys = System::new(p.labels.len());
        sys.build(&dims(p.n), &p.labels);
        let ps = pieces(&p);
        assert!(ps.len() > 50, "seed {seed}: {} pieces", ps.len());
        let big = ps.iter().map(|r| r.len()).max().unwrap();
        // Pieces are found in order of their first row: the first of the largest is the main.
        let main = ps.iter().position(|r| r.len() == big).unwrap();
        let mut drops = Drops::new(p.labels.len(), true);
        // One slab of planes, and slabs of a few planes (joined in parallel, then across).
        for (slab_runs, max) in [1 << 20, 8]
            .into_iter()
            .flat_map(|s| [0, 1, 7, 48, 256, usize::MAX].map(|m| (s, m)))
        {
            drops.pieces.slab_runs = slab_runs;
            let n = drops.label(&sys, &p.labels, max);
            // The pieces in order of their first row, while they fit in an eighth of the
            // grid's cells.
            // Piece by piece, in that order, each piece's rows increasing.
            let mut room = p.labels.len() / 8;
            let (mut want, mut at): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
            for (i, r) in ps.iter().enumerate() {
                if i != main && max > 0 && r.len() <= max && r.len() <= room {
                    room -= r.len();
                    at.push(want.len() as u32);
                    want.extend(r);
                }
            }
            if !want.is_empty() {
                at.push(want.len() as u32);
            }
            if seed == 0 && max >= 1 {
                // The spray: more drop cells than the room.
                let all: usize = ps.iter().map(|r| r.len()).sum::<usize>() - big;
                assert!(want.len() < all, "the room is never reached");
            }
            assert_eq!(
                drops.rows, want,
                "seed {seed}, max {max}, slab runs {slab_runs}"
            );
            assert_eq!(drops.piece_at, at, "seed {seed}, max {max}");
            assert_eq!(n, want.len());
            want.sort_unstable();
            for r in 0..sys.nf {
                assert_eq!(drops.holds(r), want.binary_search(&(r as u32)).is_ok());
            }
            if n > 0 {
                for (c, (&l, &d)) in p.labels.iter().zip(&drops.labels).enumerate() {
                    let drop = p.row_of[c] != NONE && drops.holds(p.row_of[c] as usize);
                    assert_eq!(d, if drop { Empty } else { l }, "seed {seed}, cell {c}");
                }
            }
        }
    }
}

/// A pressure solver on `p` with the multigrid (`drop_cells` as given), the ghost-fluid air
/// terms from a random fill, and `p`'s weights when `fractional`; its system built and set up.
pub(super) fn solver(p: &Problem, fractional: bool, drop_cells: usize) -> PressureSolver {
    let cells = p.labels.len();
    let mut s = PressureSolver::new(cells);
    s.set_preconditioning(crate::sim::settings::PressurePreconditioner::Multigrid, p.n);
    if let Preconditioning::Multigrid(m) = &mut s.preconditioner {
        m.settings.drop_cells = drop_cells;
    }
    s.fill = (0..cells)
        .map(|c| match p.labels[c] {
            Fluid => 0.5 + 0.5 * rnd(77, c as u64) as f32,
            _ => 0.5 * rnd(78, c as u64) as f32,
        })
        .collect();
    // Static solids: no velocity on any face (`build` reads the fractions only).
    let still: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; p.weights[a].len()]);
    let solid = fractional.then_some(SolidFaces {
        open: &p.weights,
        velocity: &still,
    });
    s.build(&dims(p.n), &p.labels, solid);
    let open = solid.map(|s| s.open);
    s.preconditioner.get().setup(&s.sys, &p.labels, open);
    s
}

/// `A x` of the solver's system for a random `x` (a right-hand side in the range of `A`, so
/// compatible on the closed pocket).
fn range_rhs(s: &mut PressureSolver, seed: u64) -> Vec<f64> {
    let nf = s.sys.nf;
    let mut x: Vec<f64> = (0..=nf).map(|i| rnd(seed, i as u64) - 0.5).collect();
    x[nf] = 0.0;
    let mut b = vec![0.0; nf + 1];
    let mut partials = vec![0.0; nf + 1];
    s.sys.mul_dot(&x, &mut b, &mut partials);
    b
}

/// The CG loop with the drops apart (the default, at most 256 cells) against the loop with
/// every piece in the cycle, on the same systems (ghost-fluid air terms; unit and fractional
/// weights; the closed pocket among the drops): both meet the stopping rule at 1e-9, their
/// face differences (what the projection uses, free of the pocket's constant) agree to 1e-6 of
/// the largest (the residual bound times the few hundred these small Dirichlet problems can
/// amplify it by, as in `mgpcg_matches_tightly_converged_cg`), and the drops cost at most one
/// extra iteration (four symmetric Gauss-Seidel sweeps on a drop of at most 256 cells, with
/// air around it, precondition it about as well as the cycle: the same counts here, where a
/// sixth of the rows are drops; one sweep takes four more, so the bound can fail).
#[test]
fn cg_with_drops_apart_solves_as_with_them_in_the_cycle() {
    for (seed, fractional) in [(21u64, false), (22, true), (23, false)] {
        let p = Problem::random(seed, [30, 23, 19], fractional);
        let mut runs = Vec::new();
        for drop_cells in [256, 0] {
            let mut s = solver(&p, fractional, drop_cells);
            let Preconditioning::Multigrid(m) = &s.preconditioner else {
                unreachable!()
            };
            let drop_rows = m.drops.rows.len();
            let b = range_rhs(&mut s, seed);
            let nf = s.sys.nf;
            s.r[..=nf].copy_from_slice(&b);
            let bmax = b.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            let st = s.solve(bmax, 1e-9, 500, false);
            assert!(
                st.residual <= 1e-9,
                "seed {seed}, drops {drop_cells}: {st:?}"
            );
            runs.push((drop_rows, st.iterations, s.q[..nf].to_vec()));
        }
        let (with, without) = (&runs[0], &runs[1]);
        assert!(
            with.0 > 20 && without.0 == 0,
            "drop rows {} {}",
            with.0,
            without.0
        );
        let (err, big) = gradient_error(&p, &with.2, &without.2);
        assert!(err <= 1e-6 * big, "seed {seed}: {err:e} of {big:e}");
        assert!(
            with.1 <= without.1 + 1,
            "seed {seed}: {} iterations with the drops apart, {} without",
            with.1,
            without.1
        );
        eprintln!(
            "seed {seed}: {} drop rows of {}, iterations {} vs {}, gradient error {:.1e}",
            with.0,
            p.rows(),
            with.1,
            without.1,
            err / big
        );
    }
}

/// With the drops apart the preconditioner is still a symmetric positive map of the
/// residual (`<M a, b> = <a, M b>` to the cycle's f32 rounding, as
/// `preconditioner_is_symmetric_and_positive`), and gives the same bits on 1 and 2 threads.
#[test]
fn drops_apart_keep_the_preconditioner_symmetric_and_thread_independent() {
    let p = Problem::random(31, [30, 23, 19], true);
    let run = |threads: usize| {
        on_threads(threads, || {
            let mut s = solver(&p, true, 256);
            let nf = s.sys.nf;
            let vec = |seed: u64| {
                let mut v: Vec<f64> = (0..=nf).map(|i| rnd(seed, i as u64) - 0.5).collect();
                v[nf] = 0.0;
                v
            };
            let (a, b) = (vec(1), vec(2));
            let (mut ma, mut mb) = (vec![0.0; nf + 1], vec![0.0; nf + 1]);
            let mut partials = vec![0.0; nf + 1];
            let pc = s.preconditioner.get();
            let ama = pc.apply(&s.sys, &a, &mut ma, &mut partials);
            let bmb = pc.apply(&s.sys, &b, &mut mb, &mut partials);
            (a, b, ma, mb, ama, bmb)
        })
    };
    let (a, b, ma, mb, ama, bmb) = run(1);
    let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(u, v)| u * v).sum::<f64>();
    let (ab, ba) = (dot(&ma, &b), dot(&a, &mb));
    let scale = dot(&ma, &ma).sqrt() * dot(&b, &b).sqrt();
    assert!((ab - ba).abs() <= 1e-5 * scale, "{ab} vs {ba} ({scale})");
    assert!(ama > 0.0 && bmb > 0.0);
    assert!(((ama - dot(&ma, &a)) / ama).abs() < 1e-12);
    let two = run(2);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(bits(&ma) == bits(&two.2) && bits(&mb) == bits(&two.3));
    assert_eq!(ama.to_bits(), two.4.to_bits());
}

/// The drops' sweeps run piece by piece on all threads (`Drops::smooth`); each is a
/// Gauss-Seidel sweep over all the drop rows in row order, done here on the system's own
/// rows (its neighbours, weights and diagonal, not the drops' compact copy): the same bits,
/// on 1 and 2 threads, with unit and fractional weights and pieces that straddle the tasks'
/// ranges.
#[test]
fn drop_sweeps_by_pieces_equal_sweeps_in_row_order() {
    for (seed, fractional) in [(41u64, false), (42, true)] {
        let p = Problem::random(seed, [40, 31, 29], fractional);
        let s = solver(&p, fractional, 256);
        let Preconditioning::Multigrid(m) = &s.preconditioner else {
            unreachable!()
        };
        let (sys, nf) = (&s.sys, s.sys.nf);
        let mut rows = m.drops.rows.clone();
        assert!(rows.len() > 200, "seed {seed}: {} drop rows", rows.len());
        rows.sort_unstable();
        let r: Vec<f64> = (0..=nf).map(|i| rnd(seed + 7, i as u64) - 0.5).collect();
        // The reference: sweeps over the drop rows in row order, on the system's rows.
        let mut want = vec![0.0f64; nf + 1];
        let gs = |z: &mut [f64], row: usize| {
            let mut acc = r[row];
            for k in 0..6 {
                let q = sys.nb[row][k] as usize;
                if q < nf {
                    let cut = sys.fractional && crate::sim::pressure::system::is_cut(&sys.cut, row);
                    let w = if cut { sys.w[row][k] } else { 1.0 };
                    acc += w as f64 * z[q];
                }
            }
            z[row] = if sys.diag[row] > 0.0 {
                acc / sys.diag[row]
            } else {
                0.0
            };
        };
        for _ in 0..m.settings.drop_sweeps {
            rows.iter().for_each(|&row| gs(&mut want, row as usize));
            rows.iter()
                .rev()
                .for_each(|&row| gs(&mut want, row as usize));
        }
        // Tasks of the default size (one here), and of 7 rows (pieces of a few rows straddle
        // their ranges: each goes whole to the task where it begins).
        for (threads, per) in [(1, 0), (2, 0), (1, 7), (2, 7)] {
            let mut s = solver(&p, fractional, 256);
            let Preconditioning::Multigrid(m) = &mut s.preconditioner else {
                unreachable!()
            };
            if per > 0 {
                m.drops.piece_rows = per;
            }
            let mut z = vec![0.0f64; nf + 1];
            let sweeps = m.settings.drop_sweeps;
            on_threads(threads, || m.drops.smooth(&r, &mut z, sweeps));
            for &row in &rows {
                let row = row as usize;
                assert_eq!(
                    z[row].to_bits(),
                    want[row].to_bits(),
                    "seed {seed}, {threads} threads, {per} rows a task, row {row}: {} vs {}",
                    z[row],
                    want[row]
                );
            }
        }
    }
}
