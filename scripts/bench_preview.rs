//! Sphere preview benchmark: a 1M-particle frame at 960x540 (`cargo bench --bench preview`).
//!
//! The frame is a synthetic dam break caught mid-collapse: a jittered pool on the floor, a
//! column of liquid above it and a thrown sheet of spray, about 1.0M particles at the default
//! spacing (two per cell along each axis) in a 1.28 x 0.64 x 0.64 m region. It is rendered with
//! the global rayon pool (all cores, or `RAYON_NUM_THREADS`) and, as the peer measured in the same
//! run, with a one-thread pool; the figures are medians over several repeats. The target is
//! under 1 s per frame on 2 cores.
//!
//! `PREVIEW_PARTICLES=N` scales the liquid to about N particles; `PREVIEW_REPEATS=R` sets the
//! repeats (default 5).

use std::time::{Duration, Instant};
use surge::render;
use surge::scene::Scene;
use surge::sim::Particles;

fn scene() -> Scene {
    serde_json::from_str(
        r#"{"name": "bench", "domain": {"lower": [0, 0, 0], "cell_size": 0.01,
            "resolution": [130, 66, 66]},
            "sources": [{"type": "box", "min": [0.01, 0.01, 0.01], "max": [0.4, 0.65, 0.4]}]}"#,
    )
    .expect("bench scene")
}

/// A deterministic generator in [0, 1).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

fn frame(target: usize) -> Particles {
    let h = 0.005f32; // particle spacing, m
    let scale = (target as f32 / 1.0e6).cbrt();
    let mut rng = Lcg(7);
    let mut p = Particles::with_capacity(target + target / 8);
    let mut lattice =
        |p: &mut Particles, lo: [f32; 3], n: [usize; 3], v: &dyn Fn([f32; 3]) -> [f32; 3]| {
            for i in 0..n[0] {
                for j in 0..n[1] {
                    for k in 0..n[2] {
                        let x = [
                            lo[0] + h * (i as f32 + 0.25 + 0.5 * rng.next()),
                            lo[1] + h * (j as f32 + 0.25 + 0.5 * rng.next()),
                            lo[2] + h * (k as f32 + 0.25 + 0.5 * rng.next()),
                        ];
                        p.push(x, v(x));
                    }
                }
            }
        };
    let s = |n: f32| ((n * scale) as usize).max(1);
    // Pool: the whole floor, 8 cells deep, drifting to +x.
    lattice(
        &mut p,
        [0.01, 0.01, 0.01],
        [s(256.0), s(128.0), s(16.0)],
        &|x| [0.4 * (1.0 - x[0] / 1.3), 0.0, 0.0],
    );
    // Column collapsing onto the pool: faster near its foot.
    lattice(
        &mut p,
        [0.01, 0.01, 0.09],
        [s(80.0), s(128.0), s(48.0)],
        &|x| [2.0 * (0.35 - x[2]).max(0.0) * 4.0, 0.0, -1.5 * x[2]],
    );
    // Spray: a thrown sheet of loose particles.
    let spray = p.len() / 16;
    for _ in 0..spray {
        let u = rng.next();
        let x = [
            0.45 + 0.7 * u,
            0.01 + 0.63 * rng.next(),
            0.09 + 0.35 * (std::f32::consts::PI * u).sin() * (0.8 + 0.2 * rng.next()),
        ];
        p.push(x, [2.5, 0.2 * (rng.next() - 0.5), 2.0 * (0.5 - u)]);
    }
    p
}

/// CPU time this process has used (user + system), from `/proc/self/stat`; `None` off Linux.
/// On a shared machine wall time includes waiting for a core, CPU time does not.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10)) // USER_HZ is 100 on Linux
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let target: usize = std::env::var("PREVIEW_PARTICLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let repeats: usize = std::env::var("PREVIEW_REPEATS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
        .max(1);
    let sc = scene();
    let particles = frame(target);
    let view = render::View::from_scene(&sc).expect("view");
    let (w, h) = (view.camera.width, view.camera.height);
    let threads = rayon::current_num_threads();
    println!(
        "sphere preview: {} particles, {w}x{h}, radius {:.4} m, {repeats} repeats (median)",
        particles.len(),
        view.sphere_radius
    );

    let time = |pool: Option<&rayon::ThreadPool>| -> (Duration, Option<Duration>, render::Image) {
        let mut times = Vec::new();
        let mut img = None;
        let cpu0 = cpu_time();
        for _ in 0..repeats {
            let t = Instant::now();
            let i = match pool {
                Some(p) => p.install(|| render::render(&particles, &view)),
                None => render::render(&particles, &view),
            };
            times.push(t.elapsed());
            img = Some(i);
        }
        let cpu = cpu_time()
            .zip(cpu0)
            .map(|(b, a)| b.saturating_sub(a) / repeats as u32);
        (median(times), cpu, img.expect("one repeat"))
    };
    let (multi, multi_cpu, img) = time(None);
    let one_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let (single, single_cpu, img1) = time(Some(&one_pool));
    assert!(img == img1, "1-thread and {threads}-thread images differ");

    let t = Instant::now();
    let png = img.to_png().expect("png");
    let encode = t.elapsed();

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("  render, {threads} threads : {:8.1} ms", ms(multi));
    println!("  render, 1 thread   : {:8.1} ms  (peer)", ms(single));
    println!(
        "  speed-up           : {:8.2} x  ({threads} threads vs 1, same bytes)",
        single.as_secs_f64() / multi.as_secs_f64()
    );
    if let (Some(m), Some(s)) = (multi_cpu, single_cpu) {
        println!(
            "  CPU time per frame : {:8.1} ms with {threads} threads, {:.1} ms with 1 (wall time \
             above also counts waiting for a core on a busy machine)",
            ms(m),
            ms(s)
        );
    }
    println!(
        "  PNG encode         : {:8.1} ms  ({} KiB)",
        ms(encode),
        png.len() / 1024
    );
    println!(
        "  frame total        : {:8.1} ms  (target < 1000 ms on 2 cores: {})",
        ms(multi + encode),
        if multi + encode < Duration::from_secs(1) {
            "met"
        } else {
            "MISSED"
        }
    );
    if let Ok(path) = std::env::var("PREVIEW_PNG") {
        std::fs::write(&path, &png).expect("write PREVIEW_PNG");
        println!("  wrote {path}");
    }
}
