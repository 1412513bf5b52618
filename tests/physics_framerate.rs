//! The physics does not depend on the frame rate (issue 19): the quasi-2D collapsing column of
//! `scripts/collapse_column.rs` (Martin & Moyce 1952, n^2 = 2, 32 cells across the column,
//! default solver: CFL 3, volume correction every substep) run at 24, 48, 120, 240 and 400 fps
//! must give the same residual height and surge front at the common times (multiples of
//! 0.125 s), and the residual height must follow Martin & Moyce's Table 6. The full form, to
//! T = 3.3 with the reference values printed, is `cargo bench --bench validate_physics`.

#[path = "../scripts/collapse_column.rs"]
mod collapse_column;

use collapse_column::*;

/// Column width, m: large enough that several multiples of 0.125 s fall before the front
/// reaches the far wall (inviscid flow is scale-free in `T = t sqrt(2 g / a)`).
const A: f64 = 1.0;

/// Tolerances, in column widths. Residual height: 0.03 (the target, two particle
/// spacings at 32 cells; measured when written: 0.008 up to 0.5 s and up to 0.75 s; it was
/// 0.36 with the once-per-frame correction applied after advection). Front: the farthest single
/// particle, which moves in steps of a particle spacing (1/64 column width) and sheds droplets,
/// so 0.045 (the target is 0.03; measured when written: 0.030 up to 0.5 s, 0.043 at 0.75 s;
/// 0.072 with symplectic-Euler advection, 0.41 with the old correction). Height against Martin
/// & Moyce Table 6: 5% (the target; measured 3.5%).
const HEIGHT_SPREAD: f64 = 0.03;
const FRONT_SPREAD: f64 = 0.045;
const HEIGHT_VS_EXPERIMENT: f64 = 0.05;

#[test]
fn collapsing_column_is_independent_of_frame_rate() {
    let t_end = 0.5;
    let g = surge::scene::STANDARD_GRAVITY;
    let runs: Vec<Vec<(f64, f64, f64)>> = [24.0, 48.0, 120.0, 240.0, 400.0]
        .iter()
        .map(|&fps| {
            let (s, p) = column(A, 32, fps, (t_end * fps) as u32);
            run(&s, p, A, 0.125, t_end)
        })
        .collect();
    for k in 1..runs[0].len() {
        let t = runs[0][k].0;
        let zs: Vec<f64> = runs.iter().map(|r| r[k].1).collect();
        // In column widths: H* is over the column height 2a.
        let hs: Vec<f64> = runs.iter().map(|r| 2.0 * r[k].2).collect();
        let spread = |v: &[f64]| {
            v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
        };
        eprintln!("t {t:.3}: front {zs:.3?}, height {hs:.3?}");
        assert!(
            spread(&hs) <= HEIGHT_SPREAD,
            "t = {t}: residual heights (column widths) at 24..400 fps differ: {hs:?}"
        );
        assert!(
            spread(&zs) <= FRONT_SPREAD,
            "t = {t}: fronts (column widths) at 24..400 fps differ: {zs:?}"
        );
        let tau = t * (g / A).sqrt();
        if tau >= MM_HEIGHT_TAU[0] {
            let reference = interp(&MM_HEIGHT_TAU, &MM_HEIGHT_H, tau);
            for r in &runs {
                let e = r[k].2 / reference - 1.0;
                assert!(
                    e.abs() <= HEIGHT_VS_EXPERIMENT,
                    "tau = {tau:.2}: residual height H* {:.3} vs Martin & Moyce {reference:.3} ({:+.1}%)",
                    r[k].2,
                    100.0 * e
                );
            }
        }
    }
}
