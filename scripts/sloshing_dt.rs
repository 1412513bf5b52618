//! Sloshing period against the substep bound (experiment).
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
                let mut s = SolverSettings::default();
                s.surface_wave_step = c;
                s.min_substeps = m;
                if ghost {
                    s.free_surface = FreeSurface::GhostFluid;
                }
                if apic {
                    s.transfer = surge::sim::Transfer::Apic;
                }
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
