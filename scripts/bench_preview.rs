//! Sphere preview benchmark: a 1M-particle frame at 960x540 (`cargo bench --bench preview`).
//!
//! The frame is a synthetic dam break caught mid-collapse: a jittered pool on the floor, a
//! column of liquid above it and a thrown sheet of spray, about 1.0M particles at the default
//! spacing (two per cell along each axis) in a 1.28 x 0.64 x 0.64 m region. It is rendered with
//! the global rayon pool (all cores, or `RAYON_NUM_THREADS`) and with a one-thread pool; the
//! figures are medians over several repeats. The target is under 1 s per frame on 2 cores.
//!
//! The peer, measured in the same run, is the textbook way to ray-cast spheres on a CPU: one
//! ray per pixel marched through a uniform grid of cells one sphere across (Amanatides and Woo,
//! *A Fast Voxel Traversal Algorithm for Ray Tracing*, 1987), each sphere listed in every cell
//! its box overlaps, stopping at the first hit inside the current cell; single thread, one
//! sample per pixel (no anti-aliasing), Lambert shading, no floor, box or legend. It does less
//! than surge's renderer, so the ratio against it is conservative.
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

/// The peer: per-pixel ray casting through a uniform grid, single thread, `ss x ss` rays per
/// pixel averaged. Returns RGB bytes.
fn grid_ray_cast(particles: &Particles, view: &render::View, ss: usize) -> Vec<u8> {
    let cam = &view.camera;
    let (w, h) = (cam.width as usize, cam.height as usize);
    let r = view.sphere_radius;
    let n = particles.len();
    let pos = |i: usize| particles.position(i);
    let (mut lo, mut hi) = ([f32::MAX; 3], [f32::MIN; 3]);
    for i in 0..n {
        let p = pos(i);
        for a in 0..3 {
            lo[a] = lo[a].min(p[a] - r);
            hi[a] = hi[a].max(p[a] + r);
        }
    }
    let cell = 2.0 * r;
    let dims: [usize; 3] =
        std::array::from_fn(|a| (((hi[a] - lo[a]) / cell).ceil() as usize).max(1));
    let index = |c: [usize; 3]| c[0] + dims[0] * (c[1] + dims[1] * c[2]);
    let cell_of = |x: f32, a: usize| (((x - lo[a]) / cell) as usize).min(dims[a] - 1);
    // Each sphere in every cell its box overlaps (counting sort).
    let mut starts = vec![0u32; dims[0] * dims[1] * dims[2] + 1];
    let overlap = |i: usize| -> ([usize; 3], [usize; 3]) {
        let p = pos(i);
        (
            std::array::from_fn(|a| cell_of(p[a] - r, a)),
            std::array::from_fn(|a| cell_of(p[a] + r, a)),
        )
    };
    for i in 0..n {
        let (a, b) = overlap(i);
        for z in a[2]..=b[2] {
            for y in a[1]..=b[1] {
                for x in a[0]..=b[0] {
                    starts[index([x, y, z]) + 1] += 1;
                }
            }
        }
    }
    for k in 1..starts.len() {
        starts[k] += starts[k - 1];
    }
    let mut fill = starts.clone();
    let mut ids = vec![0u32; *starts.last().unwrap() as usize];
    for i in 0..n {
        let (a, b) = overlap(i);
        for z in a[2]..=b[2] {
            for y in a[1]..=b[1] {
                for x in a[0]..=b[0] {
                    let c = index([x, y, z]);
                    ids[fill[c] as usize] = i as u32;
                    fill[c] += 1;
                }
            }
        }
    }
    let f32x3 = |v: [f64; 3]| v.map(|x| x as f32);
    let (eye, right, up, fwd) = (
        f32x3(cam.eye),
        f32x3(cam.right),
        f32x3(cam.up),
        f32x3(cam.forward),
    );
    let light = [0.3f32, 0.5, 0.8];
    let [s0, s1] = view.speed_range;
    let mut out = vec![0u8; w * h * 3];
    for y in 0..h {
        for x in 0..w {
            let mut sum = [0u32; 3];
            for sub in 0..ss * ss {
                let (sx, sy) = ((sub % ss) as f64 + 0.5, (sub / ss) as f64 + 0.5);
                let c = cam.ray(x as f64 + sx / ss as f64, y as f64 + sy / ss as f64);
                let d: [f32; 3] = std::array::from_fn(|a| {
                    (right[a] as f64 * c[0] + up[a] as f64 * c[1] + fwd[a] as f64 * c[2]) as f32
                });
                // Slab test against the grid's box.
                let (mut t0, mut t1) = (0.0f32, f32::MAX);
                for a in 0..3 {
                    let inv = 1.0 / d[a];
                    let (ta, tb) = (
                        (lo[a] - eye[a]) * inv,
                        (lo[a] + dims[a] as f32 * cell - eye[a]) * inv,
                    );
                    t0 = t0.max(ta.min(tb));
                    t1 = t1.min(ta.max(tb));
                }
                let mut hit: Option<(f32, u32)> = None;
                if t0 <= t1 {
                    let start: [f32; 3] = std::array::from_fn(|a| eye[a] + t0 * d[a]);
                    let mut cc: [isize; 3] = std::array::from_fn(|a| cell_of(start[a], a) as isize);
                    let step: [isize; 3] =
                        std::array::from_fn(|a| if d[a] >= 0.0 { 1 } else { -1 });
                    let delta: [f32; 3] = std::array::from_fn(|a| (cell / d[a]).abs());
                    let mut next: [f32; 3] = std::array::from_fn(|a| {
                        let edge = lo[a] + (cc[a] + if step[a] > 0 { 1 } else { 0 }) as f32 * cell;
                        if d[a] == 0.0 {
                            f32::MAX
                        } else {
                            (edge - eye[a]) / d[a]
                        }
                    });
                    loop {
                        let c = index(cc.map(|v| v as usize));
                        for &i in &ids[starts[c] as usize..starts[c + 1] as usize] {
                            let p = pos(i as usize);
                            let o = [p[0] - eye[0], p[1] - eye[1], p[2] - eye[2]];
                            let b = o[0] * d[0] + o[1] * d[1] + o[2] * d[2];
                            let disc = b * b - (o[0] * o[0] + o[1] * o[1] + o[2] * o[2]) + r * r;
                            if disc >= 0.0 {
                                let t = b - disc.sqrt();
                                if t > 0.0 && hit.is_none_or(|(bt, _)| t < bt) {
                                    hit = Some((t, i));
                                }
                            }
                        }
                        let exit = next[0].min(next[1]).min(next[2]);
                        if hit.is_some_and(|(t, _)| t <= exit) {
                            break;
                        }
                        let a = if next[0] <= next[1] && next[0] <= next[2] {
                            0
                        } else if next[1] <= next[2] {
                            1
                        } else {
                            2
                        };
                        cc[a] += step[a];
                        if cc[a] < 0 || cc[a] >= dims[a] as isize {
                            break;
                        }
                        next[a] += delta[a];
                    }
                }
                let rgb = match hit {
                    Some((t, i)) => {
                        let p = pos(i as usize);
                        let nrm: [f32; 3] = std::array::from_fn(|a| (eye[a] + t * d[a] - p[a]) / r);
                        let lambert =
                            (nrm[0] * light[0] + nrm[1] * light[1] + nrm[2] * light[2]).max(0.0);
                        let v = particles.velocity(i as usize);
                        let speed = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                        let base = surge::render::colormap::viridis((speed - s0) / (s1 - s0));
                        base.map(|b| ((0.3 + 0.7 * lambert) * b * 255.0) as u8)
                    }
                    None => [230, 232, 236],
                };
                for k in 0..3 {
                    sum[k] += rgb[k] as u32;
                }
            }
            let rgb = sum.map(|v| (v / (ss * ss) as u32) as u8);
            out[3 * (y * w + x)..3 * (y * w + x) + 3].copy_from_slice(&rgb);
        }
    }
    out
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

    // The peer at 1 and at 2 x 2 rays per pixel (the least supersampling that anti-aliases).
    let peer_repeats = repeats.min(3);
    let peers: Vec<(usize, Duration, Option<Duration>, usize)> = [1usize, 2]
        .into_iter()
        .map(|ss| {
            let mut times = Vec::new();
            let mut out = Vec::new();
            let cpu0 = cpu_time();
            for _ in 0..peer_repeats {
                let t = Instant::now();
                out = grid_ray_cast(&particles, &view, ss);
                times.push(t.elapsed());
            }
            let cpu = cpu_time()
                .zip(cpu0)
                .map(|(b, a)| b.saturating_sub(a) / peer_repeats as u32);
            let liquid = out.chunks(3).filter(|c| c != &[230, 232, 236]).count();
            (ss, median(times), cpu, liquid)
        })
        .collect();

    let t = Instant::now();
    let png = img.to_png().expect("png");
    let encode = t.elapsed();

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("  render, {threads} threads : {:8.1} ms", ms(multi));
    println!("  render, 1 thread   : {:8.1} ms", ms(single));
    println!(
        "  speed-up           : {:8.2} x  ({threads} threads vs 1, same bytes)",
        single.as_secs_f64() / multi.as_secs_f64()
    );
    for &(ss, wall, cpu, liquid) in &peers {
        println!(
            "  peer, {}x{} rays/px  : {:8.1} ms  (grid ray cast, 1 thread, {liquid} liquid pixels; CPU {:.1} ms)",
            ss,
            ss,
            ms(wall),
            cpu.map_or(f64::NAN, ms)
        );
        println!(
            "    surge vs it      : {:8.2} x faster wall (1 thread), {:.2} x CPU time",
            wall.as_secs_f64() / single.as_secs_f64(),
            cpu.zip(single_cpu)
                .map_or(f64::NAN, |(p, s)| p.as_secs_f64() / s.as_secs_f64())
        );
    }
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
