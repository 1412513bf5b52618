//! The standing wave of `scripts/sloshing.rs` against the substep length:
//! `cargo bench --bench sloshing_dt`. For the staircase surface, the ghost fluid and APIC with
//! the ghost fluid, at 64 and 128 cells per wavelength: one substep per frame (no
//! `surface_wave_step`), the default step, and two and four substeps per frame; each line gives
//! the period error against linear theory, the amplitude loss per period and the zero
//! crossings (README, "Sloshing").
#[path = "sloshing.rs"]
#[allow(dead_code)]
mod sloshing;
use surge::scene::SolverSettings;
use surge::sim::settings::FreeSurface;
fn main() {
    for (name, ghost, apic) in [
        ("staircase", false, false),
        ("ghost", true, false),
        ("apic+ghost", true, true),
    ] {
        for cells in [64u32, 128] {
            for (c, m) in [(0.0, 1u32), (0.47, 1), (0.0, 2), (0.0, 4)] {
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
