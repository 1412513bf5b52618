//! Tests of the sealed pockets (`super`).

use super::super::PressureSolver;
use crate::sim::forces::classify_faces;
use crate::sim::mac_grid::{CellLabel, FaceKind, GridDims, SolidFaces};
use crate::sim::pressure::system::System;
use crate::sim::settings::PressurePreconditioner;

/// A grid of `n` cells of 0.1 m whose outer layer is solid and every other cell `inner`'s
/// label at its `[i, j, k]`.
fn walled_box(
    n: [usize; 3],
    inner: impl Fn([usize; 3]) -> CellLabel,
) -> (GridDims, Vec<CellLabel>) {
    let d = GridDims {
        n,
        h: 0.1,
        lower: [0.0; 3],
        open: [[false; 2]; 3],
    };
    let labels = (0..d.cells())
        .map(|c| {
            let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
            let wall = (0..3).any(|a| ijk[a] == 0 || ijk[a] + 1 == n[a]);
            if wall { CellLabel::Solid } else { inner(ijk) }
        })
        .collect();
    (d, labels)
}

/// A box full of liquid (no air) whose wall pushes in on a patch of four faces at 1 m/s (a
/// piston, given as the moving solid's face velocity): no pressure can keep that liquid
/// divergence-free. With the mean of the right-hand side taken off, both preconditioners'
/// CG meets its tolerance and leaves every cell the same divergence, the inflow shared out
/// (a uniform compression, the nearest solvable answer), with no velocity above the
/// piston's. Without it, CG runs to its cap (here 200 iterations) at a residual far above
/// the tolerance.
#[test]
fn a_squeezed_sealed_pocket_compresses_uniformly() {
    let n = [10, 8, 9];
    let (d, labels) = walled_box(n, |_| CellLabel::Fluid);
    let mut kinds: [Vec<FaceKind>; 3] = std::array::from_fn(|a| vec![FaceKind::Free; d.faces(a)]);
    classify_faces(&d, &labels, &mut kinds);
    let open: [Vec<f32>; 3] = std::array::from_fn(|a| vec![1.0; d.faces(a)]);
    let mut solid_vel: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; d.faces(a)]);
    let mut vel = solid_vel.clone();
    let m = d.face_n(0);
    for (j, k) in [(3, 3), (3, 4), (4, 3), (4, 4)] {
        let f = 1 + m[0] * (j + m[1] * k);
        assert_eq!(kinds[0][f], FaceKind::Wall);
        vel[0][f] = 1.0;
        solid_vel[0][f] = 1.0;
    }
    let cells = (n[0] - 2) * (n[1] - 2) * (n[2] - 2);
    let want = -4.0 / cells as f64;
    let mut runs = Vec::new();
    for (pre, budget) in [
        (PressurePreconditioner::Mic0, None),
        (PressurePreconditioner::Multigrid, None),
        (PressurePreconditioner::Multigrid, Some(usize::MAX)),
    ] {
        let mut s = PressureSolver::new(d.cells());
        s.set_preconditioning(pre, n);
        s.pockets.walk_budget = budget;
        let mut v = vel.clone();
        let faces = SolidFaces {
            open: &open,
            velocity: &solid_vel,
        };
        let st = s.project(
            &d,
            &labels,
            &kinds,
            &mut v,
            1e-8,
            200,
            0.01,
            false,
            Some(faces),
        );
        assert!(
            st.residual <= 1e-8,
            "{pre:?}: {} iterations, residual {:e}",
            st.iterations,
            st.residual
        );
        let mut worst = 0.0f64;
        for c in (0..d.cells()).filter(|&c| labels[c] == CellLabel::Fluid) {
            let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
            let div: f64 = (0..3)
                .map(|a| {
                    let m = d.face_n(a);
                    let lo = ijk[0] + m[0] * (ijk[1] + m[1] * ijk[2]);
                    let step = [1, m[0], m[0] * m[1]][a];
                    v[a][lo + step] as f64 - v[a][lo] as f64
                })
                .sum();
            worst = worst.max((div - want).abs());
        }
        assert!(
            worst < 1e-5,
            "{pre:?}: divergence off the uniform {want} by {worst}"
        );
        let fastest = v.iter().flatten().fold(0.0f32, |m, x| m.max(x.abs()));
        assert!(fastest <= 1.0 + 1e-5, "{pre:?}: {fastest} m/s");
        runs.push(v);
    }
    // The walks (no budget) and the union-find (an eighth of 336 rows: over budget) take
    // the same mean off: the same bits.
    assert!(runs[1] == runs[2], "walks and union-find differ");
}

/// A 14 x 9 x 8 box cut by solid planes at x = 4 and x = 9 into three pieces, the last with
/// air above z = 5 (`[n, d, labels]`), and its system without face weights.
fn cut_box() -> ([usize; 3], GridDims, Vec<CellLabel>, System) {
    let n = [14, 9, 8];
    let (d, labels) = walled_box(n, |ijk| {
        if ijk[0] == 4 || ijk[0] == 9 {
            CellLabel::Solid
        } else if ijk[0] > 9 && ijk[2] >= 5 {
            CellLabel::Empty
        } else {
            CellLabel::Fluid
        }
    });
    let mut sys = System::new(d.cells());
    sys.build(&d, &labels);
    (n, d, labels, sys)
}

/// The walks from the rows a moving solid touches and the union-find over every row find
/// and correct the same pieces, with the same bits: a box cut by two solid planes into a
/// sealed piece a moving solid touches (corrected), a sealed piece it does not (left), and
/// a piece with air that it touches (left), with an uneven right-hand side; budgets from
/// none (union-find at once) to unlimited.
#[test]
fn walks_and_union_find_correct_the_same_pieces() {
    let (n, d, labels, mut sys) = cut_box();
    let open: [Vec<f32>; 3] = std::array::from_fn(|a| vec![1.0; d.faces(a)]);
    let still: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; d.faces(a)]);
    sys.build_weights(&d, &labels, &open);
    // The moving solid: the x-faces of the wall layer at x = 0 (the first piece) and of
    // the plane x = 9 facing the third piece.
    let mut sv: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; d.faces(a)]);
    let m = d.face_n(0);
    for k in 1..n[2] - 1 {
        for j in 1..n[1] - 1 {
            sv[0][1 + m[0] * (j + m[1] * k)] = 0.7;
            sv[0][10 + m[0] * (j + m[1] * k)] = -0.4;
        }
    }
    // Magnitudes over six decades: a sum in another order has other bits.
    let b0: Vec<f64> = (0..sys.nf)
        .map(|r| ((r as f64 * 0.618034).fract() - 0.5) * 10f64.powi((r % 7) as i32 - 3))
        .collect();
    let mut results = Vec::new();
    for budget in [Some(0), Some(50), None, Some(usize::MAX)] {
        let mut p = super::Pockets::new(0);
        p.walk_budget = budget;
        let mut b = b0.clone();
        let changed = p.make_compatible(&d, &sys, &labels, [&open, &sv, &still], &mut b);
        assert_eq!(changed, 1, "budget {budget:?}");
        results.push(b);
    }
    assert!(results.iter().all(|b| *b == results[0]));
    // The first piece (x 1..4) sums to zero now; the others are untouched.
    let (mut sum, mut rows) = (0.0, 0);
    for r in 0..sys.nf {
        let x = sys.ijk_of[r][0];
        if x < 4 {
            sum += results[0][r];
            rows += 1;
        } else {
            assert_eq!(results[0][r], b0[r], "row {r} at x = {x} changed");
        }
    }
    assert!(rows > 0 && sum.abs() < 1e-9, "{rows} rows sum to {sum}");
}

/// The density correction's sealed pieces ([`super::Pockets::make_all_compatible`]): a box cut
/// by two solid planes into two sealed pieces and one with air on top, an uneven right-hand
/// side. Both sealed pieces get their mean taken off (each then sums to zero), the piece with
/// air is untouched, and the runs' pieces and the union-find over rows give the same bits.
/// With face weights, closed faces (weight 0) across the first piece at x = 2 cut it in two
/// pieces of the matrix, which the runs (pieces of the labels) cannot tell apart: each is
/// corrected on its own (the union-find's path).
#[test]
fn every_sealed_piece_of_the_density_correction_is_made_compatible() {
    let (n, d, labels, mut sys) = cut_box();
    let b0: Vec<f64> = (0..sys.nf)
        .map(|r| ((r as f64 * 0.618034).fract() - 0.2) * 10f64.powi((r % 7) as i32 - 3))
        .collect();
    // Each piece's sum and whether its rows changed, pieces by their x ranges.
    let check = |sys: &System, b: &[f64], pieces: &[std::ops::Range<u32>]| {
        for x in pieces {
            let rows = (0..sys.nf).filter(|&r| x.contains(&sys.ijk_of[r][0]));
            let sum: f64 = rows.clone().map(|r| b[r]).sum();
            let was: f64 = rows.clone().map(|r| b0[r]).sum::<f64>().abs();
            assert!(
                sum.abs() < 1e-12 * was.max(1.0),
                "x {x:?}: sum {sum} (was {was})"
            );
        }
        for r in (0..sys.nf).filter(|&r| sys.ijk_of[r][0] > 9) {
            assert_eq!(b[r], b0[r], "row {r} has air");
        }
    };
    let mut by_runs = b0.clone();
    let mut p = super::Pockets::new(d.cells());
    assert_eq!(p.make_all_compatible(&d, &sys, &labels, &mut by_runs), 2);
    check(&sys, &by_runs, &[1..4, 5..9]);
    p.rows_only = true;
    let mut by_rows = b0.clone();
    assert_eq!(p.make_all_compatible(&d, &sys, &labels, &mut by_rows), 2);
    assert!(by_runs == by_rows, "runs and rows differ");
    // Closed faces between x = 1 and x = 2: three sealed pieces of the matrix.
    let mut open: [Vec<f32>; 3] = std::array::from_fn(|a| vec![1.0; d.faces(a)]);
    let m = d.face_n(0);
    for k in 1..n[2] - 1 {
        for j in 1..n[1] - 1 {
            open[0][2 + m[0] * (j + m[1] * k)] = 0.0;
        }
    }
    sys.build_weights(&d, &labels, &open);
    let mut split = b0.clone();
    let mut p = super::Pockets::new(d.cells());
    assert_eq!(p.make_all_compatible(&d, &sys, &labels, &mut split), 3);
    check(&sys, &split, &[1..2, 2..4, 5..9]);
}

/// A sealed piece beside a moving obstacle that stands still at the moment (every solid
/// velocity zero), one of whose wall faces is partly outside the solids: its flux is the
/// liquid's velocity in the open part (`system::flux_divergence`), so the piece's right-hand
/// side need not sum to zero and must be made compatible; the same piece whose wall faces are
/// wholly closed or wholly open (the domain's walls) is left alone. Session 34: without the
/// partly open faces among the starts, a glass keyframed to stand still after tumbling left
/// such a piece of 1,285 rows summing to 87, and the projection ran to its cap.
#[test]
fn a_wall_face_partly_open_beside_a_standing_solid_makes_its_piece_compatible() {
    let (n, d, labels, mut sys) = cut_box();
    let mut open: [Vec<f32>; 3] = std::array::from_fn(|a| vec![1.0; d.faces(a)]);
    let sv: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; d.faces(a)]);
    let mut still: [Vec<f32>; 3] = std::array::from_fn(|a| vec![0.0; d.faces(a)]);
    // The first piece's faces on the solid plane x = 4 (x-faces 4: cell 3 to cell 4).
    let m = d.face_n(0);
    let face = |j: usize, k: usize| 4 + m[0] * (j + m[1] * k);
    for k in 1..n[2] - 1 {
        for j in 1..n[1] - 1 {
            open[0][face(j, k)] = 0.0;
        }
    }
    sys.build_weights(&d, &labels, &open);
    let b0: Vec<f64> = (0..sys.nf)
        .map(|r| ((r as f64 * 0.618034).fract() - 0.3) * 10f64.powi((r % 7) as i32 - 3))
        .collect();
    // How many pieces one call changes, and the first piece's sum after it.
    let mut p = super::Pockets::new(0);
    let mut run = |open: &[Vec<f32>; 3], still: &[Vec<f32>; 3]| {
        let mut b = b0.clone();
        let changed = p.make_compatible(&d, &sys, &labels, [open, &sv, still], &mut b);
        let first: f64 = (0..sys.nf)
            .filter(|&r| sys.ijk_of[r][0] < 4)
            .map(|r| b[r])
            .sum();
        (changed, b == b0, first)
    };
    let (changed, same, _) = run(&open, &still);
    assert!(
        changed == 0 && same,
        "closed faces, no solid velocity: nothing to correct"
    );
    // One of those faces partly open.
    open[0][face(3, 2)] = 0.4;
    let (changed, _, sum) = run(&open, &still);
    assert!(
        changed == 1 && sum.abs() < 1e-9,
        "partly open: {changed} pieces, sum {sum}"
    );
    // The same face wholly open (a wall thinner than half a cell in the solid cell beyond it):
    // its flux `o u` is the whole of the velocity it keeps.
    open[0][face(3, 2)] = 1.0;
    let (changed, same, _) = run(&open, &still);
    assert!(
        changed == 0 && same,
        "a wholly open wall face keeping 0 (a domain wall's): no flux"
    );
    still[0][face(3, 2)] = 0.2;
    let (changed, _, sum) = run(&open, &still);
    assert!(
        changed == 1 && sum.abs() < 1e-9,
        "wholly open, u = 0.2: {changed} pieces, sum {sum}"
    );
}
