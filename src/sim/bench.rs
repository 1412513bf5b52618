//! Benchmark hooks of the stepper (hidden from the docs): the pressure replay of
//! `scripts/bench_stepper.rs`, which solves one substep's system with each preconditioner.
//!
//! Layer 2 (sim).

use super::settings::PressurePreconditioner;
use super::{Simulation, advect, forces, transfer, with_workers_awake};
use std::time::Instant;

impl Simulation {
    /// For benchmarks: builds the pressure system of a substep of length `dt` from the current
    /// particles (sort, splat, labels, gravity; as [`Self::advance_frame`] does) and solves it
    /// `reps` times from zero with each preconditioner of `which`, restoring the velocities
    /// before each solve. Returns per preconditioner the iterations, the fastest solve's
    /// wall-clock seconds (the fastest of several is what a shared machine measures best) and
    /// the least CPU seconds of the calling thread over the solves (Linux
    /// `/proc/thread-self/schedstat`, NaN elsewhere; with a 1-thread pool all the work runs on
    /// it, and unlike wall time it does not count waiting for a core). The particles are not
    /// changed.
    #[doc(hidden)]
    pub fn bench_pressure(
        &mut self,
        dt: f32,
        reps: u32,
        which: &[PressurePreconditioner],
    ) -> Vec<(u32, f64, f64)> {
        let scene = &self.settings;
        let particles = &self.particles;
        let ws = &mut self.ws;
        let d = ws.dims;
        rayon::scope(|_| {
            with_workers_awake(|| {
                ws.sorted.load(particles, d.cells());
                advect::clamp_inside(&d, &mut ws.sorted);
                ws.sorted.sort(&d);
                transfer::splat(&d, &ws.sorted, &mut ws.vel, &mut ws.disp);
                transfer::label_cells(&d, &ws.sorted, &mut ws.labels);
                forces::classify_faces(&d, &ws.labels, &mut ws.kinds);
                let g = scene.gravity.map(|x| x as f32);
                forces::apply_forces(&mut ws.vel, &mut ws.old, &ws.kinds, g, dt);
                let backup = ws.vel.clone();
                if let Ok(path) = std::env::var("BENCH_DUMP_LABELS") {
                    // The replayed system's cell labels, for `cargo bench --bench mg_cycle`:
                    // three little-endian u32 dimensions, then one byte per cell.
                    let mut out: Vec<u8> =
                        d.n.iter().flat_map(|&x| (x as u32).to_le_bytes()).collect();
                    out.extend(ws.labels.iter().map(|l| *l as u8));
                    if let Err(e) = std::fs::write(&path, out) {
                        eprintln!("BENCH_DUMP_LABELS: cannot write {path}: {e}");
                    }
                }
                let out = which
                    .iter()
                    .map(|&pc| {
                        ws.pressure.set_preconditioning(pc, d.n);
                        let mut best = (0, f64::INFINITY, f64::INFINITY);
                        for _ in 0..reps {
                            for (v, b) in ws.vel.iter_mut().zip(&backup) {
                                v.copy_from_slice(b);
                            }
                            let t = Instant::now();
                            let c = thread_cpu_seconds();
                            let st = ws.pressure.project(
                                &d,
                                &ws.labels,
                                &ws.kinds,
                                &mut ws.vel,
                                scene.solver.pressure_tolerance,
                                scene.solver.pressure_max_iterations,
                                dt,
                                false,
                                None,
                            );
                            best = (
                                st.iterations,
                                best.1.min(t.elapsed().as_secs_f64()),
                                best.2.min(thread_cpu_seconds() - c),
                            );
                            ws.last_solve = st;
                        }
                        best
                    })
                    .collect();
                ws.pressure
                    .set_preconditioning(scene.solver.pressure_preconditioner, d.n);
                out
            })
        })
    }
}

/// CPU seconds the calling thread has run (Linux `/proc/thread-self/schedstat`, nanoseconds;
/// NaN where it is not available). For benchmarks only.
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns * 1e-9)
}
