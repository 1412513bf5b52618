//! Small-amplitude sloshing against linear theory (`scripts/sloshing.rs`; the full study at
//! 32/64/128 cells per wavelength is in `cargo bench --bench validate_physics`), with the
//! staircase free surface (the default) and the ghost-fluid one.

#[path = "../scripts/sloshing.rs"]
mod sloshing;

use surge::scene::SolverSettings;
use surge::sim::settings::FreeSurface;

/// A standing wave (wavelength 2 m, depth 0.5 m, amplitude 0.025 m: `k A = 0.079`) against
/// linear theory, `omega^2 = g k tanh(k depth)` (period 1.182 s), at 64 and 128 cells per
/// wavelength for three periods, with the default transfer (PIC/FLIP).
///
/// What this stepper gives (issue 19's target, 1% at 64 cells and under 1% loss per period,
/// needs a second-order free surface, which surge does not have): measured on this scene at
/// the default step (two substeps per 1/40 period frame, bound by `solver.surface_wave_step`),
/// +15.7% and 89% amplitude loss per period at 64 cells per wavelength (the amplitude is 0.8
/// of a cell, so the staircase surface barely sees the wave), +0.74% and 30% at 128 (at one
/// substep per frame, before that bound: +12.1%/83% and +2.9%/25%; at four, +6.4% and +0.98%).
/// With the leapfrog kicks (session 7): +15.01% / 89% and +0.91% / 29%; with
/// `solver.surface_wave_step` 0.32 (session 8: three substeps per frame at 128 cells, two at 64
/// as before): +15.01% / 89.2% and +1.53% / 29.3%.
/// Session 9, this test's `--nocapture` line with the multigrid default: +5.92% / 92.8% and
/// +1.37% / 27.2% (the staircase does not use the ghost fluid's fill fractions).
/// Session 40 (README, "Sloshing"): +5.53% / 93.0% and +0.94% / 28.5%.
/// The bounds were set from the one-substep figures with margins of about a third, and the
/// later figures meet them: at 128 cells the period within 4.5% of theory and the loss under
/// 35% per period; the error shrinks by at least a factor of 3 from 64 to 128 cells (measured
/// 5.9 in session 40, 4.3 in session 9, 4.2 at one substep: converging, faster than first
/// order here); at least
/// five zero crossings (the wave oscillates, not merely settles). A wrong gravity or a lost
/// free-surface condition moves the period by far more (the period goes as g^-1/2: 4.5% is a
/// 9% error in g).
#[test]
fn sloshing_period_converges_to_linear_theory() {
    let solver = SolverSettings::default();
    let coarse = sloshing::run(64, solver.clone(), 3.0);
    let fine = sloshing::run(128, solver, 3.0);
    eprintln!(
        "sloshing, theory {:.4} s: 64 cells per wavelength {:.4} s ({:+.2}%, loss {:.1}% per period), 128 cells {:.4} s ({:+.2}%, loss {:.1}% per period, {} zero crossings)",
        fine.theory,
        coarse.period,
        100.0 * coarse.period_error(),
        100.0 * coarse.loss_per_period,
        fine.period,
        100.0 * fine.period_error(),
        100.0 * fine.loss_per_period,
        fine.crossings
    );
    assert!(fine.crossings >= 5, "{fine:?}");
    assert!(
        fine.period_error().abs() < 0.045,
        "period {:.4} s vs theory {:.4} s",
        fine.period,
        fine.theory
    );
    assert!(
        fine.loss_per_period < 0.35,
        "amplitude loss {:.1}% per period",
        100.0 * fine.loss_per_period
    );
    assert!(
        fine.period_error().abs() * 3.0 < coarse.period_error().abs(),
        "period error does not converge: {:+.2}% at 64, {:+.2}% at 128 cells per wavelength",
        100.0 * coarse.period_error(),
        100.0 * fine.period_error()
    );
}

/// The same standing wave with `solver.free_surface = "ghost_fluid"` (Gibou et al. 2002): the
/// surface's `p = 0` where the particles' level set puts it, not at the air cells' centres.
/// Measured here at the default step: -1.01% and 9.5% amplitude loss per period at 64 cells
/// per wavelength, -0.09% and 3.5% at 128 (at one substep per frame, before
/// `solver.surface_wave_step`: -1.07%/8.7% and -0.12%/4.1%, and -8.0% at 32: the error falls
/// by 7.5 and then 8.9 per halving, about third order in this range). Issue 19's targets are
/// 1% at 64 cells (just missed: 1.01%), second order (met) and under 1% loss per period (not
/// met). The test holds what is measured with margins of about a third: within 1.5% at 64
/// cells and 0.3% at 128, the error at least 4 times smaller at 128 (second order), loss under
/// 12% and 6% per period; and the ghost-fluid period is at least 5 times closer to theory than
/// the staircase's at 128 cells (measured 8.2x: 0.09% against the staircase's 0.74%; 24x at one
/// substep per frame, where the staircase was 2.9% off), so a ghost-fluid option that did
/// nothing fails. With `ghost_fluid::THETA_MIN` 0.001 instead of 0.05 (session 7; the clamp
/// damped the wave), this test's `--nocapture` line: +0.73% with 5.9% loss at 64 cells, -0.09%
/// with 3.0% at 128 (before, with the leapfrog kicks: -1.05% / 11.2% and -0.07% / 3.3%).
/// With `solver.surface_wave_step` 0.32 (session 8; three substeps per frame at 128 cells
/// instead of two, 64 cells unchanged): -0.15% with 2.1% at 128, the staircase +1.53%.
/// With `theta` from the cells' fill fractions and the surface's slivers labelled air (session
/// 9, `sim::ghost_fluid`; before, a particle level set): +0.33% with 0.9% loss per period at 64
/// cells, +0.02% with 0.3% at 128 (the staircase +1.37%). Bounds tightened to what that
/// measures, with margins of about a half to two thirds on the losses (one seed's draw: the
/// jitter moves a run's loss by about 0.2% per period at 64 cells, see the APIC test): the
/// issue's 1% on the period at 64 cells (was 1.5%), 0.3% at 128, loss under 1.5% at 64 and
/// 0.6% at 128 per period (were 12% and 6%).
#[test]
fn ghost_fluid_sloshing_converges_at_second_order() {
    let staircase = sloshing::run(128, SolverSettings::default(), 3.0);
    let solver = SolverSettings {
        free_surface: FreeSurface::GhostFluid,
        ..SolverSettings::default()
    };
    let coarse = sloshing::run(64, solver.clone(), 3.0);
    let fine = sloshing::run(128, solver, 3.0);
    eprintln!(
        "ghost fluid sloshing, theory {:.4} s: 64 cells per wavelength {:+.2}% (loss {:.1}% per period), 128 cells {:+.2}% (loss {:.1}%); staircase at 128 cells {:+.2}%",
        fine.theory,
        100.0 * coarse.period_error(),
        100.0 * coarse.loss_per_period,
        100.0 * fine.period_error(),
        100.0 * fine.loss_per_period,
        100.0 * staircase.period_error()
    );
    assert!(
        coarse.crossings >= 5 && fine.crossings >= 5,
        "{coarse:?} {fine:?}"
    );
    assert!(coarse.period_error().abs() < 0.01, "{coarse:?}");
    assert!(fine.period_error().abs() < 0.003, "{fine:?}");
    assert!(
        fine.period_error().abs() * 4.0 < coarse.period_error().abs(),
        "not second order: {coarse:?} {fine:?}"
    );
    assert!(coarse.loss_per_period < 0.015, "{coarse:?}");
    assert!(fine.loss_per_period < 0.006, "{fine:?}");
    assert!(
        fine.period_error().abs() * 5.0 < staircase.period_error().abs(),
        "ghost fluid {fine:?} vs staircase {staircase:?}"
    );
}

/// APIC transfers with the ghost-fluid surface, the combination closest to issue 19's
/// sloshing targets on this wave. The particles' jitter moves a single run's period by about
/// 0.06% and its loss by about 0.8% per period at 128 cells (over seeds 1-5 with the leapfrog
/// kicks: -0.19, -0.34, -0.31, -0.26, -0.32%; losses 2.2-4.1%; `SLOSHING_SEED=s cargo bench
/// --bench sloshing_dt`), as much as the margins of bounds set on one seed's draw, so each
/// figure here is the mean over seeds 1-5. Means measured at the default step (this test's
/// `--nocapture` line): leapfrog kicks -0.60% with 7.45% amplitude loss per period at 64 cells
/// per wavelength, -0.28% with 3.15% at 128; symplectic Euler kicks (`SLOSHING_EULER=1`)
/// -0.53% / 7.04% and -0.32% / 3.02%. PIC/FLIP with the ghost fluid loses 3.5% per period at
/// 128 on seed 5: its PIC share damps the wave. So the period target (1% at 64 cells) was met
/// and the loss target (1% per period) was not (until session 9, below). Bounds then: the
/// issue's 1% at 64 cells; 0.3% at
/// 128 (the measured means with a margin of a tenth to a fifth); loss under 8% at 64 and 4% at
/// 128 per period, the symplectic Euler means with a margin of a third (the 128-cell bound was
/// 2.7% from seed 5's low draw, 2.0%, which the mean of either integrator exceeds). With
/// `ghost_fluid::THETA_MIN` 0.001 instead of 0.05 (session 7): +0.26% / 4.40% at 64 cells and
/// -0.25% / 1.75% at 128 (bounds unchanged). With `solver.surface_wave_step` 0.32 (session 8;
/// three substeps per frame at 128 cells instead of two): 64 cells unchanged, -0.23% / 2.14%
/// at 128. With the multigrid preconditioner, the default since session 8: +0.24% / 5.06% and
/// -0.11% / 3.13% (with `pressure_tolerance` 1e-9 the multigrid gives 5.12% / 2.62%, MIC(0)
/// 4.40% / 2.09%: not the pressure's accuracy but the volume correction's solve, capped at 8
/// iterations to a relative 1e-3, which the multigrid converges further, damping the wave more).
/// Session 9: most of the loss was the ghost fluid's surface, not the volume correction: its
/// particle level set moved the surface the pressure sees by a quarter cell whenever a
/// particle crossed a face, and each such change of the projection's domain removed kinetic
/// energy. With `theta` from the cells' fill fractions (`sim::ghost_fluid`; the multigrid's
/// finest level with the ghost fluid's air terms): +0.24% with 0.43% loss per period at 64
/// cells (seeds 0.25-0.68%), +0.05% with 0.13% at 128, and the same with MIC(0) (+0.24% /
/// 0.43% at 64 cells: the preconditioner no longer shows; `SOLVER='"pressure_preconditioner":
/// "mic0"' cargo bench --bench slosh_loss`). Bounds: the issue's
/// targets at 64 cells, the period within 1% and the loss under 1% per period (was 8%);
/// at 128 cells the period within 0.3% and the loss under 0.5% (was 4%; the measured mean
/// 0.13% with margin for a half of the 64-cell seeds' spread). Since session 41 every seed
/// must meet the same bounds, not only the mean (each seed, session 41: 64 cells +0.03% to
/// +0.38%, loss 0.24-0.66%; 128 cells -0.02% to +0.19%, loss 0.09-0.16%). The volume correction now
/// helps the wave: with it off (`'"volume_correction": 0'`) the loss is 2.49% at 64 cells (the
/// particles bunch, and the fill fractions the surface is read from get noisier).
#[test]
fn apic_ghost_fluid_sloshing_meets_the_targets() {
    let solver = SolverSettings {
        free_surface: FreeSurface::GhostFluid,
        transfer: surge::sim::Transfer::Apic,
        ..SolverSettings::default()
    };
    let seeds = 1..=5u64;
    let mean = |cells: u32| {
        let runs: Vec<_> = seeds
            .clone()
            .map(|seed| sloshing::run_seeded(cells, solver.clone(), 3.0, seed))
            .collect();
        for r in &runs {
            assert!(r.crossings >= 5, "{cells} cells: {r:?}");
            eprintln!(
                "  {cells} cells, a seed: period {:+.2}%, loss {:.2}% per period",
                100.0 * r.period_error(),
                100.0 * r.loss_per_period
            );
        }
        let n = runs.len() as f64;
        (
            runs.iter().map(|r| r.period_error()).sum::<f64>() / n,
            runs.iter().map(|r| r.loss_per_period).sum::<f64>() / n,
            // The worst seed: each must meet the targets too (the mean of signed errors could
            // hide seeds at +2% and -2%).
            runs.iter()
                .map(|r| r.period_error().abs())
                .fold(0.0, f64::max),
            runs.iter().map(|r| r.loss_per_period).fold(0.0, f64::max),
        )
    };
    let (coarse, coarse_loss, coarse_worst, coarse_worst_loss) = mean(64);
    let (fine, fine_loss, fine_worst, fine_worst_loss) = mean(128);
    eprintln!(
        "APIC + ghost fluid sloshing, mean of seeds 1-5: 64 cells per wavelength {:+.2}% (loss {:.2}% per period), 128 cells {:+.2}% (loss {:.2}%)",
        100.0 * coarse,
        100.0 * coarse_loss,
        100.0 * fine,
        100.0 * fine_loss
    );
    assert!(coarse.abs() < 0.01, "64 cells: {coarse}");
    assert!(fine.abs() < 0.003, "128 cells: {fine}");
    assert!(coarse_loss < 0.01, "64 cells: loss {coarse_loss}");
    assert!(fine_loss < 0.005, "128 cells: loss {fine_loss}");
    assert!(
        coarse_worst < 0.01,
        "64 cells: a seed's period {coarse_worst}"
    );
    assert!(
        coarse_worst_loss < 0.01,
        "64 cells: a seed's loss {coarse_worst_loss}"
    );
    assert!(
        fine_worst < 0.003,
        "128 cells: a seed's period {fine_worst}"
    );
    assert!(
        fine_worst_loss < 0.005,
        "128 cells: a seed's loss {fine_worst_loss}"
    );
}
