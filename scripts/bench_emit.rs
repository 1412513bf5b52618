//! Emission benchmark: `cargo bench --bench bench_emit`.
//!
//! A 2 x 0.5 x 0.5 m tank (1.25 cm cells, 160 x 40 x 40) holding about 0.9M particles, an
//! emitter pouring in about 1% of them per frame (1 m/s through 0.071 m^2) and a sink at the
//! far end's floor. Prints, per frame, the particles added and removed, and the time of the
//! emission stage (removal with stable compaction, the emitter velocity on its particles, the
//! new particles, the emitters' grid velocity) per substep against the whole substep, as a
//! ratio; then the totals. Issue 12's target: under 5%.
//!
//! Environment: `BENCH_EMIT_FRAMES` (default 8), `BENCH_EMIT_CELL` (default 0.0125 m).
//! Timings on a shared machine depend on what else runs.

use std::path::Path;
use std::time::Instant;
use surge::sim::Simulation;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let frames: u32 = env("BENCH_EMIT_FRAMES", 8);
    let h: f64 = env("BENCH_EMIT_CELL", 0.0125);
    let res = [(2.0 / h).round(), (0.5 / h).round(), (0.5 / h).round()];
    let text = format!(
        r#"{{
    "domain": {{ "lower": [0, 0, 0], "cell_size": {h}, "resolution": [{}, {}, {}] }},
    "sources": [ {{ "type": "box", "min": [0, 0, 0], "max": [2, 0.5, 0.25] }} ],
    "emitters": [ {{ "type": "box", "min": [0, 0, 0.3], "max": [0.1, 0.5, 0.45],
                    "velocity": [1, 0, -0.5] }} ],
    "sinks": [ {{ "type": "box", "min": [1.9, 0, 0], "max": [2, 0.5, 0.1] }} ],
    "time": {{ "fps": 30, "frames": {frames} }}
}}"#,
        res[0], res[1], res[2]
    );
    let loaded = surge::scene::load_str(&text, Path::new("bench_emit.json"), Path::new("."))
        .expect("bench scene");
    let n0 = loaded.particles.len();
    println!(
        "surge emission benchmark: {n0} particles, {:?} cells, rayon pool of {} threads\n",
        res,
        rayon::current_num_threads()
    );
    let mut sim = Simulation::new(loaded.scene.sim_settings(), loaded.particles, 0).unwrap();
    let (mut emit, mut total, mut substeps) = (0.0, 0.0, 0u32);
    println!("frame  particles  added  removed  substeps  emit ms/substep  substep ms  ratio");
    for _ in 0..frames {
        let t = Instant::now();
        let r = sim.advance_frame();
        let wall = t.elapsed().as_secs_f64();
        let added: u64 = r.emission.added.iter().sum();
        let removed: u64 = r.emission.removed_sinks.iter().sum::<u64>() + r.emission.removed_open;
        let e = r.seconds.emit;
        println!(
            "{:5}  {:9}  {:5}  {:7}  {:8}  {:15.3}  {:10.1}  {:5.2}%",
            sim.frame(),
            sim.particles().len(),
            added,
            removed,
            r.substeps,
            1e3 * e / r.substeps as f64,
            1e3 * wall / r.substeps as f64,
            100.0 * e / wall
        );
        emit += e;
        total += wall;
        substeps += r.substeps;
    }
    println!(
        "\nall frames: emission {:.3} ms per substep, substep {:.1} ms: {:.2}% of a substep",
        1e3 * emit / substeps as f64,
        1e3 * total / substeps as f64,
        100.0 * emit / total
    );
}
