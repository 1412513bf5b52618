//! The rows' layout (`layout.rs`): every cell a loop of the cycle uses is stored in the row it
//! is read from, and a thin spread layer under a narrow column (a dam break's flowing frames)
//! stores far fewer entries than rows as wide as the window would.

use super::super::taps::coarse_taps;
use super::*;

/// MGPCG with `mg` on `p` (a random right-hand side from `seed`) matches a tightly converged
/// CG, in under 60 iterations (as `mgpcg_matches_tightly_converged_cg`).
fn matches_cg(p: &Problem, mg: &mut Multigrid, seed: u64) {
    let b = rhs(p, seed);
    let (q_ref, _) = pcg(p, &b, 1e-13, 20_000, None);
    let (q_mg, it) = pcg(p, &b, 1e-8, 500, Some(mg));
    assert!(it < 60, "MGPCG took {it} iterations");
    let (err, gmax) = gradient_error(p, &q_ref, &q_mg);
    assert!(err <= 1e-5 * gmax, "gradient error {err:e} of {gmax:e}");
}

/// `entries` (a colour) at most `most` of what another layout stores (`against`).
fn stores_at_most(what: &str, entries: usize, against: usize, most: f64) {
    let ratio = entries as f64 / against as f64;
    eprintln!("{what}: {entries} entries a colour against {against}: {ratio:.2}");
    assert!(
        ratio <= most,
        "{what}: {entries} entries against {against} ({ratio:.2})"
    );
}

/// A problem of unit weights from its labels.
fn from_labels(n: [usize; 3], labels: Vec<CellLabel>) -> Problem {
    let weights = std::array::from_fn(|a| {
        let mut m = n;
        m[a] += 1;
        vec![1.0; m[0] * m[1] * m[2]]
    });
    Problem::new(n, labels, weights)
}

/// A dam break's flowing frame: a layer `depth` cells deep over the whole floor, a column
/// `width` cells wide above it at the low-x wall, up to `height`; with `spray`, a one-cell
/// sheet and a few single-cell drops in the air beside the column (their coarse parents are
/// air).
fn spread(n: [usize; 3], (depth, width, height): (usize, usize, usize), spray: bool) -> Problem {
    let mut labels = vec![Empty; n[0] * n[1] * n[2]];
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let border = [i, j, k].iter().zip(n).any(|(&x, m)| x == 0 || x + 1 == m);
                let sheet = spray && k == height / 2 && i > width + 2 && i < 3 * width;
                let drop = spray && i % 7 == 3 && j % 3 == 1 && k == depth + 4;
                labels[i + n[0] * (j + n[1] * k)] = if border {
                    Solid
                } else if k <= depth || (i <= width && k <= height) || sheet || drop {
                    Fluid
                } else {
                    Empty
                };
            }
        }
    }
    from_labels(n, labels)
}

/// The cells `[a, b)` that each stored range of row `row` of `lv` reaches (its cells and its
/// padding).
fn stored(lv: &Level, row: usize) -> Vec<(usize, usize)> {
    let e = super::super::layout::entries;
    let rs = lv.lay.ranges(row).iter();
    rs.map(|r| {
        (
            r.x0 as usize,
            r.x0 as usize + 2 * e(r.x0 as usize, r.end as usize),
        )
    })
    .collect()
}

/// Checks that every cell the cycle's loops use is stored where they read it, in one stored
/// range of the row (a loop reads a segment's cells of each row at one offset), and at the
/// offset the segment keeps (`segments.rs`): for a row's segment `[lo, hi)`, its own cells
/// `lo - 1 ..= hi` and the four neighbour rows' `lo .. hi` (the smoother and the residual);
/// the prolongation's coarse cells around a fine segment (`coarse_taps` of its cells along
/// every axis). (The restriction reads each fine row along its own segments.)
fn check_reach(mg: &Multigrid, what: &str) {
    let covers = |lv: &Level, row: usize, a: usize, b: usize, start: usize, why: &str| {
        let st = stored(lv, row);
        assert!(
            st.iter().any(|&(s, e)| s <= a && b <= e),
            "{what}: {why}: cells {a}..{b} of row {row}, which stores {st:?}"
        );
        assert_eq!(
            start,
            lv.lay.start(row, a.max(1)),
            "{what}: {why}: the kept start"
        );
    };
    for l in 0..mg.levels() {
        let lv = &mg.levels[l];
        let [_, ny, nz] = lv.n;
        for k in 0..nz {
            for j in 0..ny {
                let row = j + ny * k;
                for (s, seg) in lv.seg.of(row).iter().enumerate() {
                    let (lo, hi, st) = (seg.span[0] as usize, seg.span[1] as usize, seg.st());
                    let why = format!("level {l} row ({j}, {k}) segment {s}");
                    covers(lv, row, lo - 1, hi + 1, st[0], &why);
                    for (i, nb) in [row - 1, row + 1, row - ny, row + ny]
                        .into_iter()
                        .enumerate()
                    {
                        covers(lv, nb, lo, hi, st[1 + i], &format!("{why}, neighbour {i}"));
                    }
                }
                if l + 1 < mg.levels() {
                    let c = &mg.levels[l + 1];
                    for (seg, pro) in lv.seg.with_coarse(row..row + 1) {
                        let [lo, hi] = seg.span;
                        let xs = (lo as usize..hi as usize).flat_map(|i| coarse_taps(i).0);
                        let (a, b) = xs.fold((usize::MAX, 0), |(a, b), x| (a.min(x), b.max(x + 1)));
                        let (jj, kk) = (coarse_taps(j).0, coarse_taps(k).0);
                        let crs =
                            [(0, 0), (1, 0), (0, 1), (1, 1)].map(|(y, z)| jj[y] + c.n[1] * kk[z]);
                        for (cr, &p) in crs.into_iter().zip(pro) {
                            let why = format!("level {l} row ({j}, {k}), prolongation from {cr}");
                            let st = stored(c, cr);
                            assert!(
                                st.iter().any(|&(s, e)| s <= a && b <= e),
                                "{what}: {why}: cells {a}..{b}, which it stores {st:?}"
                            );
                            assert_eq!(
                                p,
                                c.lay.start(cr, (lo as usize).div_ceil(2)),
                                "{what}: {why}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn every_cell_read_is_stored_where_it_is_read() {
    for seed in 1..=6u64 {
        let p = Problem::random(seed, [30 + 3 * seed as usize, 17, 21], seed % 2 == 0);
        let mg = multigrid(&p, seed % 2 == 0);
        check_reach(&mg, &format!("random {seed}"));
    }
    for (n, shape) in [
        ([120, 9, 40], (3, 20, 36)),
        ([95, 12, 33], (1, 9, 30)),
        ([64, 7, 50], (6, 40, 45)),
    ] {
        let p = spread(n, shape, true);
        let mg = multigrid(&p, false);
        check_reach(&mg, &format!("spread {n:?} {shape:?}"));
    }
}

/// The spread layer under a column, 200 cells long (the window's rows: 112 entries): the
/// finest level stores 0.36x the entries that rows as wide as the window would, by the
/// layout's rule 6 planes of whole rows (the layer's 3 and the 2 above and the wall below it)
/// and 54 of 32 entries (the column's 41 cells, 2 more to the left, and the padding); the
/// test allows 0.40 for the rounding of the rule. MGPCG on it matches a tightly converged CG
/// (as `mgpcg_matches_tightly_converged_cg`).
#[test]
fn a_spread_layer_stores_what_its_planes_need() {
    let p = spread([200, 8, 60], (3, 40, 56), false);
    let mut mg = multigrid(&p, false);
    check_reach(&mg, "spread 200");
    let lv = &mg.levels[0];
    let [nx, ny, nz] = lv.n;
    let entries = lv.lay.half - lv.lay.rs[0];
    let wide = ny * nz * super::super::level::row_entries(nx);
    stores_at_most("spread 200", entries, wide, 0.40);
    matches_cg(&p, &mut mg, 77);
}

/// Liquid that climbs both end walls above a pool (a dam break's wave running back; the 8M
/// dam break's frame 28 in miniature): a pool `depth` cells deep, a sheet `t` cells thick
/// against each end wall up to `height`, and single-cell drops between the sheets.
fn walls(n: [usize; 3], depth: usize, t: usize, height: usize) -> Problem {
    let mut labels = vec![Empty; n[0] * n[1] * n[2]];
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let border = [i, j, k].iter().zip(n).any(|(&x, m)| x == 0 || x + 1 == m);
                let sheet = (i <= t || i + 1 + t >= n[0]) && k <= height;
                let drop = i % 11 == 5 && j % 4 == 2 && k == depth + 6;
                labels[i + n[0] * (j + n[1] * k)] = if border {
                    Solid
                } else if k <= depth || sheet || drop {
                    Fluid
                } else {
                    Empty
                };
            }
        }
    }
    from_labels(n, labels)
}

/// Where the liquid climbs both end walls, each row stores its own ranges: the sheets' rows
/// two short ranges, not the tank's length. Against rows as long as their plane's liquid (the
/// layout until session 23: each plane's rows store the union of the spans of the planes
/// within two of it, from two cells left of it, the whole tank's length above the pool): by
/// the rule, the pool's 5 planes and the 2 above them store whole rows (96 entries a colour),
/// the sheets' 45 planes above them two ranges of 16 entries, and the drops' rows a third: 0.42
/// of the entries; the test allows 0.5. MGPCG on it matches a tightly converged CG (as
/// `mgpcg_matches_tightly_converged_cg`).
#[test]
fn rows_store_their_own_ranges_where_liquid_climbs_both_walls() {
    let p = walls([160, 10, 60], 4, 3, 50);
    let mut mg = multigrid(&p, false);
    check_reach(&mg, "walls");
    let lv = &mg.levels[0];
    let [_, ny, nz] = lv.n;
    let entries = lv.lay.half - lv.lay.rs[0];
    let e = super::super::layout::entries;
    let plane = |k: usize| -> usize {
        let spans = (k.saturating_sub(2)..(k + 3).min(nz))
            .flat_map(|k| lv.spans[ny * k..ny * (k + 1)].iter())
            .filter(|s| s[0] < s[1]);
        let (lo, hi) = spans.fold((u32::MAX, 0), |(a, b), s| (a.min(s[0]), b.max(s[1])));
        if lo < hi {
            ny * e(lo.saturating_sub(2) as usize & !1, hi as usize)
        } else {
            0
        }
    };
    let planes: usize = (0..nz).map(plane).sum();
    stores_at_most("walls", entries, planes, 0.5);
    matches_cg(&p, &mut mg, 91);
}

/// The restriction reads a coarse segment's 16 fine rows at once where each stores the
/// segment's fine cells in one range, and each fine row along its own segments elsewhere
/// (`kernels::restrict_segment`): the second way on every segment gives the same bits (a
/// cell outside a fine row's segments is not fluid, its residual 0). Both ways occur on these
/// problems (counted), so the test fails if either path is wrong.
#[test]
fn restriction_by_fine_segments_equals_the_rows_at_once() {
    let problems = [
        walls([160, 10, 60], 4, 3, 50),
        spread([95, 12, 33], (1, 9, 30), true),
        Problem::random(3, [39, 17, 21], false),
    ];
    let (mut at_once, mut by_segments) = (0, 0);
    for (i, p) in problems.iter().enumerate() {
        let mut mg = multigrid(p, false);
        let b = rhs(p, 5 + i as u64);
        let mut z = vec![0.0; p.rows()];
        // A cycle leaves every level's residual behind.
        mg.apply(&p.cell_of, &b, &mut z);
        // The cycle restricts to each level down to the one solved exactly.
        let last = mg.direct.level.unwrap_or(mg.active - 1);
        for l in 1..=last {
            let (f, c) = mg.levels.split_at_mut(l);
            let (f, c) = (&f[l - 1], &mut c[0]);
            let (fast, slow) = c.seg.restrict_paths();
            (at_once, by_segments) = (at_once + fast, by_segments + slow);
            super::super::kernels::restrict(f, c);
            let bits: Vec<u32> = c.b.iter().map(|x| x.to_bits()).collect();
            assert!(
                c.b.iter().any(|&x| x != 0.0),
                "problem {i} level {l}: no residual"
            );
            c.seg.forget_restrict();
            super::super::kernels::restrict(f, c);
            let again: Vec<u32> = c.b.iter().map(|x| x.to_bits()).collect();
            assert!(bits == again, "problem {i} level {l}: the two ways differ");
        }
    }
    eprintln!(
        "coarse segments: {at_once} restricted with the rows at once, {by_segments} by fine segments"
    );
    assert!(
        at_once > 0 && by_segments > 0,
        "{at_once} and {by_segments}"
    );
}
