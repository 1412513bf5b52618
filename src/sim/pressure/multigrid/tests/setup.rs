//! The multigrid's set-up (coarse labels, unit-weight diagonal) against the rules it
//! implements, on the random problems of the parent tests.

use super::*;

/// The set-up's fast paths against the rules they implement. Every coarse level's labels:
/// air if any of a cell's children (fine cells `2I - 1`, `2I` per axis, those in the fine
/// grid) is air, else fluid if any is fluid, else solid, the border layer solid (McAdams et
/// al. 2010, sec. 4), checked cell by cell. The finest level's unit-weight diagonal (the open
/// faces counted over the neighbours' label rows) and its inverse: the bits of the weighted
/// path's with every face weight 1 (`sum_f w_f`, `1 / d`). Exact comparisons: both sides are
/// small integers and one correctly rounded division.
#[test]
fn setup_labels_and_unit_diagonal_follow_the_rules() {
    use super::level::{AIR, FLUID, SOLID};
    for seed in [5u64, 6] {
        let p = Problem::random(seed, [27, 22, 19], false);
        let ones: [Vec<f32>; 3] = std::array::from_fn(|a| {
            let mut m = p.n;
            m[a] += 1;
            vec![1.0; m[0] * m[1] * m[2]]
        });
        let mut a = Multigrid::new(p.n, Settings::default());
        a.setup(&p.labels, None);
        let mut b = Multigrid::new(p.n, Settings::default());
        b.setup(&p.labels, Some(&ones));
        let (la, lb) = (&a.levels[0], &b.levels[0]);
        assert!(la.unit && !lb.unit);
        let same = |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same(&la.diag, &lb.diag), "seed {seed}: diagonal");
        assert!(same(&la.invd, &lb.invd), "seed {seed}: inverse diagonal");
        assert!(la.diag.iter().any(|&d| d > 0.0 && d < 6.0));
        assert!(a.levels() >= 3);
        for l in 1..a.levels() {
            let (f, c) = (&a.levels[l - 1], &a.levels[l]);
            let mut fluid = 0;
            for k in 0..c.n[2] {
                for j in 0..c.n[1] {
                    for i in 0..c.n[0] {
                        let border = [i, j, k]
                            .iter()
                            .zip(c.n)
                            .any(|(&x, m)| x == 0 || x + 1 == m);
                        let mut s = 0u8;
                        for d in 0..8 {
                            let fx = [2 * i + (d & 1), 2 * j + (d >> 1 & 1), 2 * k + (d >> 2)];
                            if fx.iter().zip(f.n).all(|(&x, m)| x >= 1 && x <= m) {
                                let fc = fx[0] - 1 + f.n[0] * (fx[1] - 1 + f.n[1] * (fx[2] - 1));
                                s |= match f.label[fc] {
                                    FLUID => 1,
                                    AIR => 2,
                                    _ => 0,
                                };
                            }
                        }
                        let want = if border || s == 0 {
                            SOLID
                        } else if s & 2 != 0 {
                            AIR
                        } else {
                            FLUID
                        };
                        let got = c.label[i + c.n[0] * (j + c.n[1] * k)];
                        assert_eq!(got, want, "seed {seed}, level {l}, cell {i} {j} {k}");
                        fluid += (got == FLUID) as usize;
                    }
                }
            }
            assert!(l > 1 || fluid > 0, "seed {seed}: no coarse liquid");
        }
    }
}

/// `fluid_span` finds the first and last fluid cell as a plain search does, on rows of
/// every length up to 70 (blocks of 16, a short block at either end) with 0, 1 or more
/// fluid cells anywhere.
#[test]
fn fluid_span_matches_a_plain_search() {
    let mut seed = 12345u64;
    for len in 1..70 {
        for _ in 0..40 {
            let row: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // Mostly air and solid, a few fluid cells.
                    [0, 2, 0, 2, 0, 2, 1][(seed >> 33) as usize % 7]
                })
                .collect();
            let fluid = super::level::FLUID;
            let plain = row.iter().position(|&x| x == fluid).map(|lo| {
                (
                    lo,
                    len - row.iter().rev().position(|&x| x == fluid).unwrap(),
                )
            });
            assert_eq!(
                super::super::super::system::fluid_span(&row),
                plain,
                "{row:?}"
            );
        }
    }
}

/// The open-face counts the AVX2 loops read in place of the diagonals (`diagonal.rs`): with
/// unit weights every level's count is its diagonal on every entry (the padding and the
/// cells that are not fluid included), also after a second set-up of other labels in the
/// same buffers, and the level says so; with fractional weights, or once ghost-fluid terms
/// are added to the finest diagonal, it does not (the loops then read `invd` and `diag`, the
/// same bits: `fused_sweep_equals_two_half_sweeps` and the window tests compare them).
#[test]
fn counts_are_the_unit_diagonal_where_the_level_says_so() {
    let p = Problem::random(7, [27, 22, 19], false);
    let q = Problem::random(8, [27, 22, 19], false);
    let mut a = Multigrid::new(p.n, Settings::default());
    for labels in [&p.labels, &q.labels, &p.labels] {
        a.setup(labels, None);
        for lv in &a.levels[..a.levels()] {
            assert!(lv.int_diag);
            let same = lv.count.len() == lv.diag.len()
                && lv.count.iter().zip(&lv.diag).all(|(&n, &d)| n as f32 == d);
            assert!(same, "counts against the diagonal");
            let inverse = |n: u8| if n > 0 { 1.0 / n as f32 } else { 0.0 };
            let inv = lv.count.iter().zip(&lv.invd);
            assert!(
                inv.into_iter()
                    .all(|(&n, &i)| inverse(n).to_bits() == i.to_bits())
            );
        }
        assert!(a.levels[0].count.iter().any(|&n| n > 0 && n < 6));
    }
    let f = Problem::random(7, [27, 22, 19], true);
    let mut b = Multigrid::new(f.n, Settings::default());
    b.setup(&f.labels, Some(&f.weights));
    assert!(!b.levels[0].int_diag);
    let air: Vec<f64> = (0..p.rows()).map(|r| (r % 3) as f64 * 0.5).collect();
    let win = a.window();
    a.levels[0].add_to_diagonal(&p.cell_of, &air, &win, None);
    assert!(!a.levels[0].int_diag && a.levels[1].int_diag);
}
