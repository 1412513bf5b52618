//! The products by runs ([`System::runs`]) against the row formulas with `nb`, bit for bit, on
//! irregular labels: splashes of single cells, x-lines of several spans, solids inside the
//! liquid, and face weights along obstacles.

use super::super::super::mac_grid::{CellLabel, GridDims};
use super::super::super::reduce;
use super::*;

/// Counter-based hash to [0, 1) (no shared RNG state).
fn unit(seed: u64, i: u64) -> f64 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// A pool below a wavy surface with holes, solid blocks and drops above it; the outer layer
/// is solid.
fn labels(seed: u64, n: [usize; 3]) -> Vec<CellLabel> {
    let mut l = vec![CellLabel::Empty; n[0] * n[1] * n[2]];
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let c = i + n[0] * (j + n[1] * k);
                let h = unit(seed, c as u64);
                let edge = i == 0 || j == 0 || k == 0 || i + 1 == n[0] || j + 1 == n[1];
                let top = k + 1 == n[2];
                let surface = n[2] as f64 * (0.45 + 0.1 * ((i + 2 * j) as f64 * 0.3).sin());
                l[c] = if edge || top || h < 0.03 {
                    CellLabel::Solid
                } else if (k as f64) < surface {
                    if h < 0.1 {
                        CellLabel::Empty
                    } else {
                        CellLabel::Fluid
                    }
                } else if h > 0.93 {
                    CellLabel::Fluid
                } else {
                    CellLabel::Empty
                };
            }
        }
    }
    l
}

fn dims(n: [usize; 3]) -> GridDims {
    GridDims {
        n,
        h: 0.1,
        lower: [0.0; 3],
        open: [[false; 2]; 3],
    }
}

/// `A s` row by row with `nb` (the formulas the runs must reproduce).
fn rows_plain(sys: &System, s: &[f64]) -> Vec<f64> {
    (0..sys.nf)
        .map(|r| unsafe {
            if sys.fractional && is_cut(&sys.cut, r) {
                a_row_weighted(r, &sys.nb, &sys.diag, &sys.w, s)
            } else {
                a_row(r, &sys.nb, &sys.diag, s)
            }
        })
        .collect()
}

#[test]
fn products_by_runs_are_the_row_formulas() {
    for (seed, n, fractional) in [
        (1, [47, 29, 23], false),
        (2, [47, 29, 23], true),
        (3, [120, 11, 16], false),
        (4, [120, 11, 16], true),
    ] {
        let d = dims(n);
        let l = labels(seed, n);
        let mut sys = System::new(d.cells());
        sys.build(&d, &l);
        if fractional {
            let open = std::array::from_fn(|a| {
                (0..d.faces(a))
                    .map(|f| {
                        if unit(seed + 7, (a * 1_000_000 + f) as u64) < 0.2 {
                            0.5
                        } else {
                            1.0
                        }
                    })
                    .collect()
            });
            sys.build_weights(&d, &l, &open);
        }
        let nf = sys.nf;
        assert!(
            nf > 3 * reduce::CHUNK / 2,
            "the test wants more than one chunk: {nf}"
        );
        // Runs: many of one row (splashes, holes) and many of four rows or more (the
        // vectorised inner rows), and along each the neighbours follow.
        let mut starts: Vec<usize> = (0..nf).filter(|&r| is_cut(&sys.runs, r)).collect();
        starts.push(nf);
        let lens: Vec<usize> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        let (single, long) = (
            lens.iter().filter(|&&x| x == 1),
            lens.iter().filter(|&&x| x >= 4),
        );
        assert!(
            single.count() > 100 && long.count() > 100,
            "{} runs",
            lens.len()
        );
        for r in 1..nf {
            if !is_cut(&sys.runs, r) {
                assert_eq!(sys.nb[r][0] as usize, r - 1, "row {r}");
                for k in 2..6 {
                    let (p, q) = (sys.nb[r - 1][k], sys.nb[r][k]);
                    assert!(
                        q == p + 1 || (p as usize == nf && q as usize == nf),
                        "row {r}"
                    );
                }
            }
        }
        if fractional {
            assert!((0..nf).any(|r| is_cut(&sys.cut, r)));
        }
        let s: Vec<f64> = (0..=nf)
            .map(|r| {
                if r == nf {
                    0.0
                } else {
                    unit(seed + 3, r as u64) - 0.5
                }
            })
            .collect();
        let want = rows_plain(&sys, &s);
        let mut out = vec![0.0; nf + 1];
        let mut partials = vec![0.0; reduce::partials_len(nf + 1)];
        let dot = sys.mul_dot(&s, &mut out, &mut partials);
        for r in 0..nf {
            assert_eq!(out[r].to_bits(), want[r].to_bits(), "seed {seed} row {r}");
        }
        // Per chunk, four lanes (row r of the chunk into lane r % 4, each in row order) summed
        // as (l0 + l1) + (l2 + l3); the chunks left to right.
        let mut want_dot = 0.0;
        for ch in 0..=nf / reduce::CHUNK {
            let mut lane = [0.0f64; 4];
            for r in ch * reduce::CHUNK..((ch + 1) * reduce::CHUNK).min(nf + 1) {
                lane[r % 4] += if r < nf { want[r] * s[r] } else { 0.0 };
            }
            want_dot += (lane[0] + lane[1]) + (lane[2] + lane[3]);
        }
        assert_eq!(dot.to_bits(), want_dot.to_bits(), "seed {seed}");
        let mut m = vec![0.0; nf + 1];
        sys.mul(&s, &mut m);
        let mut res: Vec<f64> = (0..=nf).map(|r| unit(seed + 5, r as u64)).collect();
        let rmax = sys.residual(&s, &mut res);
        let mut want_max = 0.0f64;
        for r in 0..nf {
            assert_eq!(m[r].to_bits(), want[r].to_bits(), "seed {seed} row {r}");
            let x = unit(seed + 5, r as u64) - want[r];
            assert_eq!(res[r].to_bits(), x.to_bits(), "seed {seed} row {r}");
            want_max = want_max.max(x.abs());
        }
        assert_eq!(rmax, want_max);
    }
}
