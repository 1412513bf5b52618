//! The physics does not depend on the frame rate (issue 19): the quasi-2D collapsing column of
//! `scripts/collapse_column.rs` (Martin & Moyce 1952, n^2 = 2, 32 cells across the column,
//! default solver: CFL 3, volume correction every substep) run at 24, 48, 120, 240 and 400 fps
//! must give the same residual height and surge front at the common times (multiples of
//! 0.125 s, to T = 3.3 as the issue asks), and the residual height must follow Martin & Moyce's
//! Table 6. `cargo bench --bench validate_physics` prints the same with the reference values;
//! `cargo bench --bench column_front` shows where the front comes from.

#[path = "../scripts/collapse_column.rs"]
mod collapse_column;

use collapse_column::*;

/// Column width, m: large enough that several multiples of 0.125 s fall before the front
/// reaches the far wall (inviscid flow is scale-free in `T = t sqrt(2 g / a)`).
const A: f64 = 1.0;

/// Tolerances, in column widths. Residual height: 0.03 (the target, two particle
/// spacings at 32 cells; it was 0.36 with the once-per-frame correction applied after
/// advection; measured 0.005). Height against Martin & Moyce Table 6: 5% (the target;
/// measured 3.3%). Front: 0.03, the target, to T = 3.3: measured 0.013 with substeps of
/// at most 0.32 `sqrt(h / |g|)` (`solver.surface_wave_step`'s default); at 0.47 the release at
/// 24 and 48 fps ran in substeps of 0.37 `sqrt(h / |g|)` and the front at T = 3.3 trailed the
/// short substeps' by 0.025 and 0.036 (it was 0.045 with symplectic Euler kicks). The front is
/// the farthest particle; no particle lies outside the liquid connected to the column at any
/// of these times (`cargo bench --bench column_front`), so it is the leading edge.
const HEIGHT_SPREAD: f64 = 0.03;
const FRONT_SPREAD: f64 = 0.03;
const HEIGHT_VS_EXPERIMENT: f64 = 0.05;

/// `(t, front Z, height H*)` at every multiple of 0.125 s up to 0.75 s (T = 3.3), at 24, 48,
/// 120, 240 and 400 fps; computed once for both tests.
fn runs() -> &'static Vec<Vec<(f64, f64, f64)>> {
    static RUNS: std::sync::OnceLock<Vec<Vec<(f64, f64, f64)>>> = std::sync::OnceLock::new();
    RUNS.get_or_init(|| {
        let t_end = 0.75;
        [24.0, 48.0, 120.0, 240.0, 400.0]
            .iter()
            .map(|&fps| {
                let (s, p) = column(A, 32, fps, (t_end * fps) as u32);
                run(&s, p, A, 0.125, t_end)
            })
            .collect()
    })
}

fn spread(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
}

#[test]
fn collapsing_column_is_independent_of_frame_rate() {
    let g = surge::scene::STANDARD_GRAVITY;
    let runs = runs();
    for k in 1..runs[0].len() {
        let t = runs[0][k].0;
        let zs: Vec<f64> = runs.iter().map(|r| r[k].1).collect();
        // In column widths: H* is over the column height 2a.
        let hs: Vec<f64> = runs.iter().map(|r| 2.0 * r[k].2).collect();
        eprintln!(
            "t {t:.3}: front {zs:.3?} (spread {:.3}), height {hs:.3?} (spread {:.3})",
            spread(&zs),
            spread(&hs)
        );
        assert!(
            spread(&hs) <= HEIGHT_SPREAD,
            "t = {t}: residual heights (column widths) at 24..400 fps differ: {hs:?}"
        );
        let tau = t * (g / A).sqrt();
        if tau >= MM_HEIGHT_TAU[0] {
            let reference = interp(&MM_HEIGHT_TAU, &MM_HEIGHT_H, tau);
            for r in runs {
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

#[test]
fn collapsing_column_front_is_independent_of_frame_rate() {
    let runs = runs();
    for k in 1..runs[0].len() {
        let zs: Vec<f64> = runs.iter().map(|r| r[k].1).collect();
        assert!(
            spread(&zs) <= FRONT_SPREAD,
            "t = {}: fronts (column widths) at 24..400 fps differ: {zs:?}",
            runs[0][k].0
        );
    }
}
