//! The standing wave of `scripts/sloshing.rs` against the substep length:
//! `cargo bench --bench sloshing_dt`. For the staircase surface, the ghost fluid and APIC with
//! the ghost fluid, at 64 and 128 cells per wavelength: one substep per frame (no
//! `surface_wave_step`), the default step, and two and four substeps per frame; each line gives
//! the period error against linear theory, the amplitude loss per period and the zero
//! crossings (README, "Sloshing"). `SLOSH_CASE` (e.g. `apic+ghost`), `SLOSH_CELLS` (e.g. `128`)
//! and `SLOSH_STEPS` (`wave:min_substeps` pairs, e.g. `0:4,0:8`) run only those;
//! `SLOSH_VOLUME_CORRECTION` sets `solver.volume_correction`; `SLOSHING_EULER=1` kicks a full substep every substep (symplectic Euler) for comparison.
#[path = "sloshing.rs"]
#[allow(dead_code)]
mod sloshing;
use surge::scene::SolverSettings;
use surge::sim::settings::FreeSurface;
fn main() {
    let only = |k: &str| std::env::var(k).ok();
    let steps: Vec<(f64, u32)> = only("SLOSH_STEPS")
        .map(|s| {
            s.split(',')
                .map(|p| {
                    let (c, m) = p.split_once(':').expect("wave:min_substeps");
                    (c.parse().unwrap(), m.parse().unwrap())
                })
                .collect()
        })
        .unwrap_or_else(|| vec![(0.0, 1u32), (0.47, 1), (0.0, 2), (0.0, 4)]);
    for (name, ghost, apic) in [
        ("staircase", false, false),
        ("ghost", true, false),
        ("apic+ghost", true, true),
    ] {
        if only("SLOSH_CASE").is_some_and(|c| c != name) {
            continue;
        }
        for cells in [64u32, 128] {
            if only("SLOSH_CELLS").is_some_and(|c| c != cells.to_string()) {
                continue;
            }
            for &(c, m) in &steps {
                let s = SolverSettings {
                    surface_wave_step: c,
                    min_substeps: m,
                    free_surface: if ghost {
                        FreeSurface::GhostFluid
                    } else {
                        FreeSurface::Staircase
                    },
                    transfer: if apic {
                        surge::sim::Transfer::Apic
                    } else {
                        surge::sim::Transfer::Flip
                    },
                    volume_correction: only("SLOSH_VOLUME_CORRECTION")
                        .map(|v| v.parse().unwrap())
                        .unwrap_or(SolverSettings::default().volume_correction),
                    ..SolverSettings::default()
                };
                let r = sloshing::run(cells, s, 3.0);
                println!(
                    "{name} {cells} cells, wave {c} min_substeps {m}: {:+.2}% loss {:.1}% crossings {}",
                    100.0 * r.period_error(),
                    100.0 * r.loss_per_period,
                    r.crossings
                );
            }
        }
    }
}
