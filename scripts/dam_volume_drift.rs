//! How much volume the uncorrected dam break of `tests/physics_dam_break.rs` loses, and how
//! much of that is chance (issue 19): `cargo bench --bench dam_volume_drift`.
//!
//! The test's scene (a 0.15 m x 0.3 m column, 8 cells deep, in a 0.3 m tank, h = 0.01 m,
//! 30 fps, 3 s, density correction off) seeded with each jitter seed of `SEEDS` (default
//! `7`, the test's; e.g. `SEEDS=1,2,3,4,5,6,7,8`), with `EULER=1` for symplectic Euler kicks,
//! `FRAME_START_DT=1` for a full kick at every frame start (the rule before `dt_prev` crossed
//! frames), `CORRECT=1` with the density correction, `WAVE=w` with `solver.surface_wave_step`
//! `w` (default 0.47, the test's). Printed per seed: the volume change
//! (`scripts/volume_measure.rs`) at 1.5 s and 3 s, the worst, and the substeps.
#[path = "volume_measure.rs"]
mod volume_measure;
use surge::scene::load_str;
use surge::sim::{KickRule, Simulation};

fn main() {
    let seeds: Vec<u64> = std::env::var("SEEDS")
        .unwrap_or_else(|_| "7".into())
        .split(',')
        .map(|s| s.parse().expect("SEEDS: comma-separated integers"))
        .collect();
    let on = |k: &str| std::env::var(k).is_ok();
    let h = 0.01;
    let mut all = Vec::new();
    for seed in seeds {
        // The scene as JSON, its numbers printed exactly (shortest round trip) as the test's.
        let json = format!(
            r#"{{"domain": {{"lower": [0, 0, 0], "cell_size": {h}, "resolution": [32, 10, 37]}},
                "sources": [{{"type": "box", "min": [{h}, {h}, {h}], "max": [{}, {}, {}]}}],
                "seed": {seed}, "time": {{"fps": 30, "frames": 90}}}}"#,
            h + 0.15,
            9.0 * h,
            h + 0.3
        );
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut s = load_str(&json, &dir.join("dam.json"), dir)
            .expect("scene loads")
            .scene;
        // As in the test: no thinning of crowded cells (it is no volume control).
        s.solver.max_particles_per_cell = 0;
        // As in the test: the substep bound its band was measured at (0.47, the default until
        // session 8; `WAVE` sets another, e.g. today's default 0.32).
        s.solver.surface_wave_step = std::env::var("WAVE")
            .map(|v| v.parse().expect("WAVE: a number"))
            .unwrap_or(0.47);
        let p = surge::sources::seed_particles(&s, &[]);
        s.sources.clear();
        let v0 = volume_measure::measure(&s, &p).volume;
        let mut sim = Simulation::new(&s, p, 0).unwrap();
        sim.set_density_correction(on("CORRECT"));
        if on("EULER") {
            sim.set_kick_rule(KickRule::SymplecticEuler);
        } else if on("FRAME_START_DT") {
            sim.set_kick_rule(KickRule::FrameStartDt);
        }
        let (mut worst, mut half, mut subs) = (0.0f64, 0.0, 0);
        let mut last = 0.0;
        for f in 1..=90 {
            subs += sim.advance_frame().substeps;
            last = volume_measure::measure(&s, sim.particles()).volume / v0 - 1.0;
            worst = worst.min(last);
            if f == 45 {
                half = last;
            }
        }
        all.push(last);
        println!(
            "seed {seed}: volume change at 1.5 s {:+.2}%, at 3 s {:+.2}%, worst {:+.2}%, {subs} substeps",
            100.0 * half,
            100.0 * last,
            100.0 * worst
        );
    }
    let n = all.len() as f64;
    let mean = all.iter().sum::<f64>() / n;
    let sd = (all.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    println!(
        "RESULT euler={} frame_start_dt={} correct={}: at 3 s mean {:+.2}%, sd {:.2}% over {} seeds",
        on("EULER"),
        on("FRAME_START_DT"),
        on("CORRECT"),
        100.0 * mean,
        100.0 * sd,
        all.len()
    );
}
