//! The rows' layout (`layout.rs`): every cell a loop of the cycle uses is stored in the row it
//! is read from, and a thin spread layer under a narrow column (a dam break's flowing frames)
//! stores far fewer entries than rows as wide as the window would.

use super::super::kernels::coarse_taps;
use super::*;

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

/// The cells `[a, b)` each row of plane `k` of `lv` stores.
fn stored(lv: &Level, k: usize) -> (usize, usize) {
    let (px, ph) = (lv.lay.px[k], lv.lay.ph[k]);
    (2 * px, 2 * (px + ph))
}

/// Checks that every cell the cycle's loops use is stored where they read it: for a row with
/// a span `[lo, hi)`, its own cells `lo - 1 ..= hi` and the four neighbour rows' `lo .. hi`
/// (the smoother and the residual); the restriction's fine cells `2 lo - 2 ..= 2 hi - 1` of
/// the 16 fine rows around a coarse row; the prolongation's coarse cells around a fine span
/// (`coarse_taps` of its cells along every axis).
fn check_reach(mg: &Multigrid, what: &str) {
    let covers = |lv: &Level, k: usize, a: usize, b: usize, why: &str| {
        let (s, e) = stored(lv, k);
        assert!(
            s <= a && b <= e,
            "{what}: {why}: cells {a}..{b} of a row of plane {k}, which stores {s}..{e}"
        );
    };
    for l in 0..mg.levels() {
        let lv = &mg.levels[l];
        let [_, ny, nz] = lv.n;
        for k in 0..nz {
            for j in 0..ny {
                let [lo, hi] = lv.spans[j + ny * k].map(|x| x as usize);
                if lo >= hi {
                    continue;
                }
                let why = format!("level {l} row ({j}, {k})");
                covers(lv, k, lo - 1, hi + 1, &why);
                for kk in [k - 1, k + 1] {
                    covers(lv, kk, lo, hi, &format!("{why}, z-neighbour"));
                }
                if l > 0 {
                    // This coarse row's restriction reads fine rows 2j - 2 ..= 2j + 1 (the last
                    // clamped) and planes 2k - 2 ..= 2k + 1.
                    let f = &mg.levels[l - 1];
                    for fk in 2 * k - 2..=(2 * k + 1).min(f.n[2] - 1) {
                        let why = format!("{why}, restriction from fine plane {fk}");
                        covers(f, fk, 2 * lo - 2, (2 * hi).min(f.n[0]), &why);
                    }
                }
                if l + 1 < mg.levels() {
                    let c = &mg.levels[l + 1];
                    let xs = (lo..hi).flat_map(|i| coarse_taps(i).0);
                    let (a, b) = xs.fold((usize::MAX, 0), |(a, b), x| (a.min(x), b.max(x + 1)));
                    for ck in coarse_taps(k).0 {
                        let why = format!("{why}, prolongation from coarse plane {ck}");
                        covers(c, ck, a, b, &why);
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
    let entries: usize = (0..nz).map(|k| ny * lv.lay.ph[k]).sum();
    let wide = ny * nz * super::super::level::row_entries(nx);
    let ratio = entries as f64 / wide as f64;
    eprintln!("spread 200: {entries} entries a colour against {wide}: {ratio:.2}");
    assert!(
        ratio <= 0.40,
        "{entries} entries against {wide} ({ratio:.2})"
    );
    let b = rhs(&p, 77);
    let (q_ref, _) = pcg(&p, &b, 1e-13, 20_000, None);
    let (q_mg, it) = pcg(&p, &b, 1e-8, 500, Some(&mut mg));
    assert!(it < 60, "MGPCG took {it} iterations");
    let (err, gmax) = gradient_error(&p, &q_ref, &q_mg);
    assert!(err <= 1e-5 * gmax, "gradient error {err:e} of {gmax:e}");
}
