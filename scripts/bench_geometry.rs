//! Obstacle geometry benchmark (`cargo bench --bench geometry`).
//!
//! 1. Narrow-band signed distance of a ~100k-triangle mesh (a bumpy torus, 224 x 224 quads)
//!    on a 256^3 grid with a 3-cell band: surge's [`mesh_sdf`] (BVH closest point per node in
//!    the band, three-axis ray-parity sign) with all threads and with one, against a peer
//!    measured in the same run: the brute-force band fill of Bridson's `makelevelset3` (every
//!    triangle writes the exact distance into the nodes of its bounding box grown by the band,
//!    keeping the minimum; one thread, unsigned only, so the peer does less work). The two
//!    magnitudes are compared node by node. Target: under 1 s on 2 cores.
//! 2. The cost of `Solid::signed_distance` (and its gradient and velocity) per million points
//!    for each shape: box, sphere, cylinder and the torus mesh, static and animated.
//!
//! `GEOMETRY_N=128` sets the grid size, `GEOMETRY_REPEATS=3` the repeats (median reported).

use std::sync::Arc;
use std::time::Instant;
use surge::geometry::bvh::{Bvh, closest_on_triangle};
use surge::geometry::mesh_io::IndexedMesh;
use surge::geometry::mesh_sdf::{BandMethod, GridSpec, mesh_sdf, mesh_sdf_with};
use surge::geometry::solid::{Liquid, MeshShape, Shape, Solid};
use surge::geometry::transform::{Keyframe, Motion, Pose};

/// A torus (radii 0.3 and 0.12 around the origin, in the xy plane) with small bumps, as
/// `n x n` quads split into triangles.
fn bumpy_torus(n: usize) -> IndexedMesh {
    let (big, small) = (0.3, 0.12);
    let mut positions = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            let u = i as f64 / n as f64 * std::f64::consts::TAU;
            let v = j as f64 / n as f64 * std::f64::consts::TAU;
            let r = small * (1.0 + 0.08 * (7.0 * u).sin() * (5.0 * v).cos());
            positions.push([
                (big + r * v.cos()) * u.cos(),
                (big + r * v.cos()) * u.sin(),
                r * v.sin(),
            ]);
        }
    }
    let id = |i: usize, j: usize| ((i % n) * n + j % n) as u32;
    let mut triangles = Vec::with_capacity(2 * n * n);
    for i in 0..n {
        for j in 0..n {
            let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
            triangles.push([a, b, c]);
            triangles.push([a, c, d]);
        }
    }
    IndexedMesh {
        positions,
        triangles,
    }
}

/// The peer: brute-force band fill, one thread, unsigned.
fn brute_band(mesh: &IndexedMesh, g: &GridSpec, band: f64) -> Vec<f32> {
    let mut out = vec![band as f32; g.len()];
    let mut best = vec![band * band; g.len()];
    for t in &mesh.triangles {
        let t = t.map(|i| mesh.positions[i as usize]);
        let mut lo = [0usize; 3];
        let mut hi = [0usize; 3];
        for a in 0..3 {
            let l = t[0][a].min(t[1][a]).min(t[2][a]) - band;
            let h = t[0][a].max(t[1][a]).max(t[2][a]) + band;
            lo[a] = ((l - g.origin[a]) / g.spacing).ceil().max(0.0) as usize;
            hi[a] = (((h - g.origin[a]) / g.spacing).floor() as usize).min(g.dims[a] - 1);
        }
        for k in lo[2]..=hi[2] {
            for j in lo[1]..=hi[1] {
                for i in lo[0]..=hi[0] {
                    let p = g.point(i, j, k);
                    let q = closest_on_triangle(p, &t);
                    let d2 = (0..3).map(|a| (p[a] - q[a]).powi(2)).sum::<f64>();
                    let n = g.index(i, j, k);
                    if d2 < best[n] {
                        best[n] = d2;
                    }
                }
            }
        }
    }
    for (o, b) in out.iter_mut().zip(&best) {
        *o = b.sqrt().min(band) as f32;
    }
    out
}

/// This process's CPU seconds (user + system) from /proc (Linux), or NaN.
fn cpu_seconds() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the ")" that closes the command name: utime is the 12th, stime the 13th.
    let rest = s.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (tick(11) + tick(12)) / 100.0
}

/// Runs `f` `repeats` times; median wall seconds and median CPU seconds, and the last result.
fn timed<T>(repeats: usize, mut f: impl FnMut() -> T) -> (f64, f64, T) {
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    let mut out = None;
    for _ in 0..repeats {
        let (t, c) = (Instant::now(), cpu_seconds());
        out = Some(f());
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c);
    }
    (median(wall), median(cpu), out.unwrap())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::var("GEOMETRY_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let repeats: usize = std::env::var("GEOMETRY_REPEATS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let threads = rayon::current_num_threads();
    println!(
        "geometry benchmark: {} cores available, rayon uses {threads} threads",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mesh = bumpy_torus(224);
    let g = GridSpec {
        origin: [-0.5; 3],
        spacing: 1.0 / (n - 1) as f64,
        dims: [n; 3],
    };
    let band_cells = 3.0;
    println!(
        "mesh: {} triangles; grid {n}^3 ({} nodes), band {band_cells} cells",
        mesh.triangles.len(),
        g.len()
    );
    let t = Instant::now();
    let bvh = Bvh::build(&mesh.positions, &mesh.triangles);
    let build = t.elapsed().as_secs_f64();
    let (ours, ours_cpu, sdf) = timed(repeats, || mesh_sdf(&bvh, &g, band_cells));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (ours1, ours1_cpu, sdf1) = timed(1, || one.install(|| mesh_sdf(&bvh, &g, band_cells)));
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(
        same(&sdf.values, &sdf1.values),
        "1 thread and {threads} threads differ"
    );
    let (bvhq, bvhq_cpu, sdfq) = timed(1, || {
        mesh_sdf_with(&bvh, &g, band_cells, BandMethod::BvhQueries)
    });
    let (fill, fill_cpu, sdff) = timed(1, || {
        mesh_sdf_with(&bvh, &g, band_cells, BandMethod::SlabFill)
    });
    assert!(
        same(&sdf.values, &sdfq.values) && same(&sdf.values, &sdff.values),
        "the two band methods differ"
    );
    // The sign alone (crossings, votes, output): the same call with a negligible band.
    let (sign_s, sign_cpu, _) = timed(1, || mesh_sdf(&bvh, &g, 1e-3));
    let (peer_s, peer_cpu, peer) = timed(1, || brute_band(&mesh, &g, band_cells * g.spacing));
    let mut worst: f64 = 0.0;
    let mut in_band = 0usize;
    let mut inside = 0usize;
    for (a, b) in sdf.values.iter().zip(&peer) {
        worst = worst.max((a.abs() as f64 - *b as f64).abs());
        in_band += (a.abs() < sdf.band as f32) as usize;
        inside += (*a < 0.0) as usize;
    }
    println!("BVH build: {build:.3} s");
    println!("(wall s / CPU s; CPU time is less disturbed by other processes on a shared machine)");
    println!(
        "surge mesh_sdf (band method picked by triangle size), {threads} threads (median of {repeats}): {ours:.3} / {ours_cpu:.3}"
    );
    println!("surge mesh_sdf, 1 thread: {ours1:.3} / {ours1_cpu:.3} (same bits)");
    println!(
        "  band method forced: slab fill {fill:.3} / {fill_cpu:.3}; BVH query per node {bvhq:.3} / {bvhq_cpu:.3} (same bits)"
    );
    println!(
        "  of which the sign of every node (run with a 0.001-cell band): {sign_s:.3} / {sign_cpu:.3}"
    );
    println!("peer: brute-force band fill, 1 thread, unsigned only: {peer_s:.3} / {peer_cpu:.3}");
    println!(
        "ratio peer / surge: wall {:.2}, CPU {:.2}; 1 thread vs 1 thread: {:.2}; BVH queries / slab fill (CPU): {:.2}",
        peer_s / ours,
        peer_cpu / ours_cpu,
        peer_s / ours1,
        bvhq_cpu / fill_cpu
    );
    println!(
        "target under 1 s on 2 cores: {}",
        if ours < 1.0 {
            "met"
        } else {
            "NOT met (see CPU time if the machine is shared)"
        }
    );
    println!(
        "nodes in band: {in_band}; inside: {inside}; largest |magnitude| difference vs peer: {:.3e} cells",
        worst / g.spacing
    );
    solid_queries(&mesh);
}

/// Part 2: `Solid` queries per million points, one thread (the simulation calls them inside
/// its own parallel loops). "posed": `Solid::at(t)` once, then queries without re-evaluating
/// the keyframes.
fn solid_queries(mesh: &IndexedMesh) {
    let n = 1_000_000;
    let mut seed = 99u64;
    let mut r = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let pts: Vec<[f64; 3]> = (0..n).map(|_| [r(), r(), r()]).collect();
    let still = Motion::Static(Pose::new([0.01, -0.02, 0.03], [10.0, 20.0, 30.0]));
    let moving = Motion::keyframed(vec![
        Keyframe {
            time: 0.0,
            translate: [0.0; 3],
            rotate_deg: [0.0; 3],
        },
        Keyframe {
            time: 1.0,
            translate: [0.1, 0.0, 0.0],
            rotate_deg: [0.0, 0.0, 45.0],
        },
        Keyframe {
            time: 2.0,
            translate: [0.1, 0.1, 0.0],
            rotate_deg: [0.0, 30.0, 45.0],
        },
    ])
    .unwrap();
    let t = Instant::now();
    let shape = MeshShape::build(mesh, [1.0; 3], 1.0 / 255.0, 3.0).unwrap();
    println!(
        "mesh obstacle build (body-frame grid {:?}, 1/255 m cells): {:.3} s",
        shape.sdf.grid.dims,
        t.elapsed().as_secs_f64()
    );
    let shape = Arc::new(shape);
    let shapes = [
        (
            "box",
            Shape::Box {
                min: [-0.2, -0.1, -0.3],
                max: [0.2, 0.1, 0.3],
            },
        ),
        (
            "sphere",
            Shape::Sphere {
                centre: [0.0; 3],
                radius: 0.3,
            },
        ),
        (
            "cylinder",
            Shape::Cylinder {
                a: [0.0, 0.0, -0.2],
                b: [0.0, 0.0, 0.2],
                radius: 0.2,
            },
        ),
        ("mesh", Shape::Mesh(shape)),
    ];
    println!("Solid queries, 1 thread, ns per point (1M points in a 1 m cube):");
    println!(
        "  shape      static: distance  distance+normal  velocity | animated: distance  distance+normal  posed distance"
    );
    for (name, shape) in shapes {
        let s = Solid::new(shape.clone(), [1.0; 3], still.clone(), Liquid::Outside).unwrap();
        let a = Solid::new(shape, [1.0; 3], moving.clone(), Liquid::Outside).unwrap();
        let time = |f: &dyn Fn([f64; 3]) -> f64| {
            let t = Instant::now();
            let mut acc = 0.0;
            for p in &pts {
                acc += f(*p);
            }
            std::hint::black_box(acc);
            t.elapsed().as_secs_f64() * 1e9 / n as f64
        };
        let sd = time(&|p| s.signed_distance(p, 0.5));
        let sn = time(&|p| s.distance_and_normal(p, 0.5).1[0]);
        let sv = time(&|p| s.velocity(p, 0.5)[1]);
        let ad = time(&|p| a.signed_distance(p, 1.3));
        let an = time(&|p| a.distance_and_normal(p, 1.3).1[0]);
        let posed = a.at(1.3);
        let pd = time(&|p| posed.signed_distance(p));
        println!("  {name:<9} {sd:>16.1} {sn:>16.1} {sv:>9.1} | {ad:>17.1} {an:>16.1} {pd:>15.1}");
    }
}
