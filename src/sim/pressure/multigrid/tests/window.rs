//! The window onto the liquid's box ([`super::super::window`]): the levels fitted to the
//! liquid give the same bits as the whole grid's hierarchy, whatever windows came before.

use super::*;

/// `p` inside a grid of `big` cells at offset `off`: its cells there (its solid border a
/// box around its liquid, or air where `!walls`), air elsewhere but the grid's own solid
/// border; random face weights in [0.05, 1] on every face (`fractional`) or 1.
fn embed(
    p: &Problem,
    big: [usize; 3],
    off: [usize; 3],
    (fractional, walls): (bool, bool),
    seed: u64,
) -> Problem {
    let cells = big[0] * big[1] * big[2];
    let mut labels = vec![Empty; cells];
    for k in 0..big[2] {
        for j in 0..big[1] {
            for i in 0..big[0] {
                let c = i + big[0] * (j + big[1] * k);
                let ijk = [i, j, k];
                let inside = (0..3).all(|a| ijk[a] >= off[a] && ijk[a] < off[a] + p.n[a]);
                if inside {
                    let [x, y, z] = [0, 1, 2].map(|a| ijk[a] - off[a]);
                    let edge = (0..3).any(|a| ijk[a] == off[a] || ijk[a] + 1 == off[a] + p.n[a]);
                    if walls || !edge {
                        labels[c] = p.labels[x + p.n[0] * (y + p.n[1] * z)];
                    }
                } else if (0..3).any(|a| ijk[a] == 0 || ijk[a] + 1 == big[a]) {
                    labels[c] = Solid;
                }
            }
        }
    }
    let weights = std::array::from_fn(|a| {
        let mut m = big;
        m[a] += 1;
        (0..m[0] * m[1] * m[2])
            .map(|f| match fractional {
                true => (0.05 + 0.95 * rnd(seed, 7_000_000 * (a as u64 + 1) + f as u64)) as f32,
                false => 1.0,
            })
            .collect()
    });
    Problem::new(big, labels, weights)
}

/// The bits of one application of the cycle after a set-up for `p`, the ghost-fluid terms
/// (`air`: per row, 0 on most) on the finest diagonal where given.
fn cycle_bits(mg: &mut Multigrid, p: &Problem, fractional: bool, air: Option<&[f64]>) -> Vec<u64> {
    mg.setup(&p.labels, fractional.then_some(&p.weights));
    if let Some(air) = air {
        let win = mg.window();
        mg.levels[0].add_to_diagonal(&p.cell_of, air, &win, None);
    }
    let r: Vec<f64> = (0..p.rows()).map(|i| rnd(21, i as u64) - 0.5).collect();
    let mut z = vec![0.0; p.rows()];
    mg.apply(&p.cell_of, &r, &mut z);
    assert!(z.iter().any(|&x| x != 0.0));
    z.iter().map(|x| x.to_bits()).collect()
}

/// Liquid in air at several places of a larger grid (touching its walls or not, with unit and
/// fractional face weights, with and without ghost-fluid diagonal terms): the hierarchy of the
/// liquid's window gives the same bits as the whole grid's (the window keeps every fluid
/// cell's neighbours' labels, and its lower corner is rounded so that coarse cells cover the
/// same fine cells), on a window that is smaller than the grid. (Where a solid layer hugs the
/// liquid, see the next test, a coarse cell across that layer and the window's border is
/// solid in the window and air in the whole grid.)
#[test]
fn window_gives_the_whole_grids_bits() {
    let small = [26, 21, 18];
    for (seed, off, fractional) in [
        (31u64, [0, 0, 0], false),
        (32, [5, 3, 7], true),
        (33, [20, 9, 3], false),
        (34, [33, 2, 17], true),
    ] {
        let p = embed(
            &Problem::random(seed, small, false),
            [62, 33, 40],
            off,
            (fractional, false),
            seed,
        );
        for ghost in [false, true] {
            let air: Vec<f64> = (0..p.rows())
                .map(|i| match rnd(seed, 9_000 + i as u64) < 0.1 && ghost {
                    true => 0.25 + rnd(seed, 19_000 + i as u64),
                    false => 0.0,
                })
                .collect();
            let air = ghost.then_some(&air[..]);
            let mut whole = Multigrid::new(p.n, Settings::default());
            whole.settings.window = false;
            let want = cycle_bits(&mut whole, &p, fractional, air);
            let mut fit = Multigrid::new(p.n, Settings::default());
            let got = cycle_bits(&mut fit, &p, fractional, air);
            let w = fit.window();
            assert!(
                (0..3).any(|a| w.n[a] < p.n[a]),
                "seed {seed}: the window {w:?} is the whole grid"
            );
            assert_eq!(whole.window().n, p.n);
            assert!(got == want, "seed {seed}, offset {off:?}, ghost {ghost}");
        }
    }
}

/// One hierarchy set up for a large liquid box, then a small one elsewhere, then a flat one
/// across the whole grid, then the first again (each window re-dimensions every level in
/// the same buffers): each application has the bits of a hierarchy set up for that problem
/// alone, so nothing of an earlier window's values or layout survives.
#[test]
fn windows_in_turn_leave_nothing_behind() {
    let big = [58, 37, 44];
    for fractional in [false, true] {
        let walled = |seed: u64, n: [usize; 3], off: [usize; 3]| {
            embed(
                &Problem::random(seed, n, false),
                big,
                off,
                (fractional, true),
                seed,
            )
        };
        let problems = [
            walled(41, [40, 30, 30], [3, 2, 1]),
            walled(42, [14, 12, 16], [40, 20, 25]),
            Problem::random(43, [58, 37, 44], fractional),
        ];
        let mut reused = Multigrid::new(big, Settings::default());
        for (t, p) in [0, 1, 2, 0, 2, 1].map(|i| (i, &problems[i])) {
            let got = cycle_bits(&mut reused, p, fractional, None);
            let want = cycle_bits(
                &mut Multigrid::new(big, Settings::default()),
                p,
                fractional,
                None,
            );
            assert!(got == want, "problem {t}, fractional {fractional}");
        }
        // The three windows differ from each other.
        let dims: Vec<_> = problems
            .iter()
            .map(|p| {
                reused.setup(&p.labels, fractional.then_some(&p.weights));
                reused.window().n
            })
            .collect();
        assert!(
            dims[0] != dims[1] && dims[1] != dims[2] && dims[0] != dims[2],
            "{dims:?}"
        );
    }
}

/// Liquid in solid boxes (a glass's walls hugging it) inside a larger grid: there a coarse
/// cell across the wall and the window's border is solid (the window's outermost layer), not
/// air as in the whole grid's hierarchy (McAdams' rule, air if any child is air, sees the air
/// beyond the wall), so the bits differ; the preconditioner must stay as good. MGPCG to the
/// stepper's rule at 1e-8 takes at most one iteration more than with the whole grid's levels
/// and the weighted face differences agree with the whole grid's solution to 1e-5 of their
/// largest (both converged to 1e-8; the bound of `mgpcg_matches_tightly_converged_cg`).
#[test]
fn window_around_walled_liquid_preconditions_as_well() {
    for (seed, off, fractional) in [(51u64, [5, 3, 7], false), (52, [30, 9, 20], true)] {
        let p = embed(
            &Problem::random(seed, [26, 21, 18], false),
            [62, 33, 40],
            off,
            (fractional, true),
            seed,
        );
        let b = rhs(&p, seed);
        let mut whole = Multigrid::new(p.n, Settings::default());
        whole.settings.window = false;
        whole.setup(&p.labels, fractional.then_some(&p.weights));
        let (xw, iw) = pcg(&p, &b, 1e-8, 200, Some(&mut whole));
        let mut fit = Multigrid::new(p.n, Settings::default());
        fit.setup(&p.labels, fractional.then_some(&p.weights));
        assert!((0..3).all(|a| fit.window().n[a] < p.n[a]));
        let (xf, it) = pcg(&p, &b, 1e-8, 200, Some(&mut fit));
        assert!(
            it <= iw + 1 && it < 200,
            "seed {seed}: {it} iterations, whole grid {iw}"
        );
        let (worst, big) = gradient_error(&p, &xw, &xf);
        assert!(worst <= 1e-5 * big, "seed {seed}: {worst} of {big}");
    }
}
