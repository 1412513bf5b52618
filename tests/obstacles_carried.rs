//! Galilean invariance and free slip with moving obstacles: water at rest must stay at rest
//! relative to a solid that moves without pushing it.
//!
//! - A floor plate sliding under water at rest (free slip: it should drag nothing). Until
//!   session 33 the water moved at up to 0.95 m/s with the plate's top mid-cell: a wall face
//!   kept the plate's whole velocity, both as the projection's flux (60% of the face is plate)
//!   and as the value the particles interpolate (the water beside it is at rest), on the faces
//!   of the cells the plate partly covers and where it slides through the domain's walls. Now a
//!   wall face's flux comes from its open fraction and its value from the liquid
//!   (`sim::solids::wall_faces`), and the water stays at rest.
//! - A cylinder spinning in place about its axis: free slip, it must not set the water turning.
//! - Water carried in an open box container moving at a constant velocity, the water given
//!   that velocity from the start, must stay at rest relative to the container, as it does in
//!   the container standing still (`settles_flat` in `tests/obstacles.rs`: max speed below 1e-3
//!   m/s, surface within a quarter cell). Carried at 0.5 m/s on 1.25 cm cells it does:
//!   largest speed relative to the container 1.8e-7 m/s, surface within 1.3 mm (0.10 cell) over
//!   1 s. Until session 32 it was 0.90 m/s and 21 mm: a solid keyframed from `t = 0` stood
//!   still in the first substep's boundary condition while its pose moved
//!   (`Motion::segment`), which stopped the water against the walls. Until session 36, 0.136
//!   m/s and 11.6 mm: a slow circulation towards the leading wall, driven by the column of
//!   cells the retreating wall uncovers, left air up to the surface
//!   (`sim::solids::skin_pockets`, "up is apart"). Until session 37, 0.024 m/s and 3.5 mm (the
//!   test ignored as a known deviation): the free faces inside the walls, beyond the
//!   extrapolation's reach, kept 0, and the particles beside the leading wall, which read them,
//!   fell behind it every substep (the volume correction then lifted the crowd they made);
//!   now they keep the wall's free-slip velocity (`sim::solids::wall_faces`).
//! - The same with a curved wall: water carried in a spherical tank (free slip on faces
//!   oblique to the grid, session 37).
//! - Water in the box container accelerated from rest: its surface tilts to `a / g` and it
//!   stays against the walls (the solids' mean velocity over a substep, session 37).

mod common;

use common::physics::{column_tops, load_json, rms_speed};

use surge::scene::LoadedScene;
use surge::sim::Simulation;

/// Cell size, the container's outer side, wall thickness and water depth, m; carriage speed,
/// m/s.
const H: f64 = 0.0125;
const SIDE: f64 = 0.16;
const WALL: f64 = 0.02;
const DEPTH: f64 = 0.06;
const SPEED: f64 = 0.5;

/// Where the container's centre starts (m).
const START: [f64; 2] = [0.15, 0.1];

/// A floor and four walls (five boxes, each keyframed with `keys`, the container's centre's
/// translations) in a domain of `nx` x 18 x 18 cells, the water filling it to [`DEPTH`] at
/// `speed` (m/s, along x); `solver`: the scene's solver fields, if any.
fn container(keys: &str, nx: usize, speed: f64, solver: &str) -> LoadedScene {
    let (o, i) = (SIDE / 2.0, SIDE / 2.0 - WALL);
    let parts = [
        ([-o, -o, 0.0], [o, o, WALL]),
        ([-o, -o, 0.0], [-i, o, 0.15]),
        ([i, -o, 0.0], [o, o, 0.15]),
        ([-o, -o, 0.0], [o, -i, 0.15]),
        ([-o, i, 0.0], [o, o, 0.15]),
    ];
    let obstacles: Vec<String> = parts
        .iter()
        .map(|(lo, hi)| {
            format!(r#"{{ "type": "box", "min": {lo:?}, "max": {hi:?}, "keyframes": {keys} }}"#)
        })
        .collect();
    let [x0, y0] = START;
    let json = format!(
        r#"{{
    "domain": {{ "lower": [{l}, {l}, {l}], "cell_size": {H}, "resolution": [{nx}, 18, 18] }},
    "obstacles": [ {obstacles} ],
    "sources": [ {{ "type": "box", "min": [{a}, {b}, {WALL}], "max": [{c}, {d}, {top}],
                   "velocity": [{speed}, 0, 0] }} ],
    "solver": {{ {solver} }},
    "time": {{ "fps": 30, "frames": 30 }}
}}"#,
        l = -H,
        obstacles = obstacles.join(", "),
        a = x0 - i,
        b = y0 - i,
        c = x0 + i,
        d = y0 + i,
        top = WALL + DEPTH,
    );
    load_json(&json)
}

/// The container moving along x at [`SPEED`] for 1 s, and its water at that velocity.
fn scene() -> LoadedScene {
    let [x0, y0] = START;
    let keys = format!(
        r#"[ {{ "time": 0, "translate": [{x0}, {y0}, 0] }}, {{ "time": 1, "translate": [{x1}, {y0}, 0] }} ]"#,
        x1 = x0 + SPEED
    );
    container(&keys, 66, SPEED, "")
}

/// Over 1 s of carriage: the water's largest speed relative to the container below 1e-3 m/s
/// and every column's surface, in the container's frame, within a quarter cell of where it
/// started (the standing container's bounds: in the container's frame nothing moves, and
/// the walls crossing the grid must not change that).
#[test]
fn water_carried_in_a_moving_container_stays_at_rest_in_it() {
    let (speed, surface) = carried_drift(&scene());
    eprintln!(
        "largest speed relative to the container {speed:.2e} m/s, surface moved by up to {:.1} mm",
        1e3 * surface
    );
    assert!(speed < 1e-3, "relative speed {speed} m/s");
    assert!(surface <= 0.25 * H, "surface moved {surface} m");
}

/// Over 1 s (30 frames) of a scene whose container and water move along x at [`SPEED`]: the
/// water's largest speed relative to the container (m/s) and how far any column's surface
/// moved in the container's frame (m).
fn carried_drift(l: &LoadedScene) -> (f64, f64) {
    let start = column_tops(&l.particles, H, 0.0);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let (mut worst_speed, mut worst_surface) = (0.0f64, 0.0f64);
    for f in 1..=30u32 {
        sim.advance_frame();
        let p = sim.particles();
        for i in 0..p.len() {
            let [vx, vy, vz] = p.velocity(i);
            let rel =
                ((vx as f64 - SPEED).powi(2) + (vy as f64).powi(2) + (vz as f64).powi(2)).sqrt();
            worst_speed = worst_speed.max(rel);
        }
        let now = column_tops(p, H, SPEED * f as f64 / 30.0);
        for (c, z0) in &start {
            let z = now
                .get(c)
                .unwrap_or_else(|| panic!("frame {f}: column {c:?} holds no liquid any more"));
            worst_surface = worst_surface.max((z - z0).abs());
        }
    }
    (worst_speed, worst_surface)
}

/// The same with a curved wall: a spherical tank (`liquid: inside`, radius 9 cm, 7.2 cells)
/// half full, carried along x at [`SPEED`] with its water. The standing container's bounds.
/// Measured: 8.6e-7 m/s, 1.1 mm. Until session 37 the water circulated (here 0.60 m/s and
/// 39.6 mm; at 7.5 mm cells, carried at 0.2 m/s, up to 0.25 m/s, rms 0.05, and a cylindrical
/// can the same): a wall
/// face's free-slip value took only its own component of the liquid's velocity,
/// `(1 - n_a^2) u_a + (u_solid . n) n_a`, which for liquid moving with a wall oblique to the
/// grid gives a velocity across the motion (`u_x n_x n_y` on the y faces); now the whole
/// vector, `u_a - (u . n) n_a + (u_solid . n) n_a` (`sim::solids::wall_faces`).
#[test]
fn water_carried_in_a_moving_sphere_stays_at_rest_in_it() {
    let [x0, y0] = START;
    let (r, zc) = (0.09, 0.1);
    let json = format!(
        r#"{{
    "domain": {{ "lower": [{l}, {l}, {l}], "cell_size": {H}, "resolution": [82, 20, 20] }},
    "obstacles": [ {{ "type": "sphere", "center": [0, 0, 0], "radius": {r}, "liquid": "inside",
        "keyframes": [ {{ "time": 0, "translate": [{x0}, {y0}, {zc}] }},
                       {{ "time": 1, "translate": [{x1}, {y0}, {zc}] }} ] }} ],
    "sources": [ {{ "type": "box", "min": [{a}, {b}, 0], "max": [{c}, {d}, {zc}],
                   "velocity": [{SPEED}, 0, 0] }} ],
    "time": {{ "fps": 30, "frames": 30 }}
}}"#,
        l = -H,
        x1 = x0 + SPEED,
        a = x0 - r,
        b = y0 - r,
        c = x0 + r,
        d = y0 + r,
    );
    let l = load_json(&json);
    assert!(l.particles.len() > 2000, "{} particles", l.particles.len());
    let (speed, surface) = carried_drift(&l);
    eprintln!(
        "sphere: largest speed relative to it {speed:.2e} m/s, surface moved by up to {:.1} mm",
        1e3 * surface
    );
    assert!(speed < 1e-3, "relative speed {speed} m/s");
    assert!(surface <= 0.25 * H, "surface moved {surface} m");
}

/// Water in the container accelerated from rest along x: in the container's frame the liquid
/// at rest feels gravity and `-a`, so its surface is a plane of slope `-a / g` (Euler's
/// equations; the hydrostatics of an accelerating tank), and the pressure, positive below
/// that surface at the leading wall too, keeps the liquid against both walls. The
/// acceleration ramps linearly to 2 m/s^2 over two periods of the first sloshing mode
/// (linear theory, `w^2 = g k tanh(k h)` with `k = pi / L`: 0.409 s) and holds for two more;
/// a ramp lasting a whole number of periods leaves the mode, to first order, at rest about
/// the tilted plane. Keys every 1/240 s (a linear key segment is a constant velocity).
/// With the ghost-fluid surface (the staircase one, at ten cells across, stands a cell low
/// in the column at the leading wall, 17 mm, 7 mm at half the cell size: first order).
/// Bounds: over the hold's two periods the mean slope of the columns' tops within 5% of
/// `a / g` (the surface read on the eight 1.25 cm columns away from the walls across the
/// motion, whose tops read the skin the particles keep off a wall; the residual sloshing's
/// mean over whole periods is zero); below the surface, no particle farther than 0.4 cell
/// from the leading wall at any frame of the hold (particles keep 0.1 cell off a solid, half
/// a cell apart: liquid against the wall has one within about 0.35 cell of it in each 1 cm
/// slab). Measured: slope 0.991 a/g (1.041 with the two wall columns), the gap 3.4 mm at
/// most (0.27 cell). Before session 37 the liquid fell away from the leading wall: the free
/// faces inside the walls kept 0 (see the carried container above; the session's start build,
/// this scene at 60 fps through `surge run`, the gap 13.5 mm on average, 16.3 mm at most), and
/// the walls' boundary velocity was the solid's at the substep's start, so a wall
/// accelerating through a substep moved farther than the liquid beside it (with that alone,
/// a temporary change: the gap 12.8 mm, the slope 1.062 a/g); it is now the mean velocity
/// over the substep (`Motion::mean_velocity`).
#[test]
fn water_in_an_accelerating_container_tilts_to_a_over_g_and_stays_against_its_walls() {
    let (a, g) = (2.0f64, 9.81f64);
    let (length, k_rate) = (SIDE - 2.0 * WALL, 240.0);
    let k = std::f64::consts::PI / length;
    let period = 2.0 * std::f64::consts::PI / (g * k * (k * DEPTH).tanh()).sqrt();
    let ramp = 2.0 * period;
    let end = 2.0 * ramp;
    // The container's displacement: jerk a / ramp up to `ramp`, then acceleration a.
    let shift = |t: f64| {
        if t <= ramp {
            a * t.powi(3) / (6.0 * ramp)
        } else {
            let u = t - ramp;
            a * ramp * ramp / 6.0 + 0.5 * a * ramp * u + 0.5 * a * u * u
        }
    };
    let [x0, y0] = START;
    let keys: Vec<String> = (0..=(end * k_rate).ceil() as usize + 1)
        .map(|n| {
            let t = n as f64 / k_rate;
            format!(
                r#"{{ "time": {t}, "translate": [{}, {y0}, 0] }}"#,
                x0 + shift(t)
            )
        })
        .collect();
    let nx = ((x0 + shift(end) + SIDE) / H).ceil() as usize + 2;
    let ghost = r#""free_surface": "ghost_fluid""#;
    let l = container(&format!("[ {} ]", keys.join(", ")), nx, 0.0, ghost);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let (mut slopes, mut gap) = (Vec::new(), 0.0f64);
    for f in 1..=(end * 30.0).floor() as u32 {
        sim.advance_frame();
        let t = f as f64 / 30.0;
        if t < ramp {
            continue;
        }
        let p = sim.particles();
        let xc = x0 + shift(t);
        // Least-squares slope of the columns' tops against their centres, container frame.
        let tops = column_tops(p, H, xc);
        // The inside spans columns -5..=4 of the centre's; the two beside the walls across
        // the motion are left out (below).
        let pts: Vec<(f64, f64)> = tops
            .iter()
            .filter(|(c, _)| (-4..=3).contains(&c.0))
            .map(|(c, z)| ((c.0 as f64 + 0.5) * H, *z))
            .collect();
        let m = pts.len() as f64;
        let (sx, sz) = pts.iter().fold((0.0, 0.0), |s, (x, z)| (s.0 + x, s.1 + z));
        let (xm, zm) = (sx / m, sz / m);
        let sxx: f64 = pts.iter().map(|(x, _)| (x - xm) * (x - xm)).sum();
        let sxz: f64 = pts.iter().map(|(x, z)| (x - xm) * (z - zm)).sum();
        slopes.push(sxz / sxx);
        // The farthest particle from the leading wall's inside, in 1 cm slabs from the floor
        // to a cell below the surface's lowest point there (the surface at the leading wall
        // stands a / g * L / 2 = 12 mm below the still level, 80 mm).
        let mut front = [f64::MIN; 3];
        for i in 0..p.len() {
            let [x, _, z] = p.position(i);
            let slab = ((z as f64 - WALL) / 0.01).floor();
            if (0.0..3.0).contains(&slab) {
                let s = &mut front[slab as usize];
                *s = s.max(x as f64 - xc);
            }
        }
        for s in front {
            gap = gap.max(SIDE / 2.0 - WALL - s);
        }
    }
    let slope = -slopes.iter().sum::<f64>() / slopes.len() as f64;
    eprintln!(
        "accelerating container: mean surface slope {slope:.4} against a/g {:.4} ({:.3}x) over {} frames; the liquid {:.1} mm at most from the leading wall",
        a / g,
        slope * g / a,
        slopes.len(),
        1e3 * gap
    );
    assert!(slopes.len() >= 20, "only {} frames measured", slopes.len());
    assert!(
        (slope * g / a - 1.0).abs() < 0.05,
        "slope {slope} against a/g {}",
        a / g
    );
    assert!(
        gap < 0.4 * H,
        "the liquid stands {gap} m off the leading wall"
    );
}

/// Water at rest on a plate that slides under it at 0.5 m/s (a free-slip floor: it should drag
/// nothing), the plate spanning the domain at every moment (it slides through the domain's
/// x walls), its top at `top` in 1.25 cm cells. The water must stay at rest: its largest speed
/// below 1e-3 m/s over 1 s, the standing container's bound. Measured: 0 m/s to four decimals
/// with the plate's top 0.6 and 0.28 of a cell up; before session 33's wall faces 0.95 m/s.
fn sliding_floor_drags(top: f64) -> f32 {
    let json = format!(
        r#"{{
    "domain": {{ "lower": [{l}, {l}, {l}], "cell_size": {H}, "resolution": [66, 18, 18] }},
    "obstacles": [ {{ "type": "box", "min": [-1.0, -0.05, -0.05], "max": [0.9, 0.25, {top}],
        "keyframes": [ {{ "time": 0, "translate": [0, 0, 0] }},
                       {{ "time": 1, "translate": [0.5, 0, 0] }} ] }} ],
    "sources": [ {{ "type": "box", "min": [0, 0, {top}], "max": [0.8, 0.2, 0.08] }} ],
    "time": {{ "fps": 30, "frames": 30 }}
}}"#,
        l = -H
    );
    let l = load_json(&json);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let mut worst = 0.0f32;
    for _ in 0..30 {
        worst = worst.max(sim.advance_frame().max_speed as f32);
    }
    eprintln!("plate top {top} m: largest speed {worst:.4} m/s");
    worst
}

#[test]
fn water_on_a_sliding_floor_stays_at_rest() {
    // Tops 0.6 and 0.28 of a cell above the face at 0.0125 m.
    for top in [0.02, 0.016] {
        let worst = sliding_floor_drags(top);
        assert!(
            worst < 1e-3,
            "water on the sliding plate (top {top} m) moves at {worst} m/s"
        );
    }
}

/// A vertical cylinder (radius 6.37 cm, not aligned with the 1.25 cm cells) spinning in place about
/// its axis at 2 revolutions per second (0.80 m/s at its surface) in water at rest, for one second.
/// Its shape does not change as it turns, so with free slip (the default) it exerts no tangential
/// force and the water must stay at rest (inviscid: no boundary layer). Bounds: the water within
/// 2.5 cm of the surface co-rotates at a mean tangential speed below 1% of the surface speed, the
/// rms speed of all the water is below 1% of it, and no particle ever moves faster than a tenth of
/// it (the faces' open fractions, sampled at the grid's nodes, change by a little as the cylinder
/// turns: about 0.03 m/s at most, measured, against 0.0000 with the same cylinder keyframed but not
/// turning). Measured (session 40): 0.0000 m/s mean, rms 0.0014 m/s, fastest 0.037 m/s (an earlier
/// session: 0.0013 and 0.033). Before session 34 bursts of tens of particles reached 0.57 m/s from
/// 0.5 s on: a cell beside the surface whose centre lies in the push-out skin lost its last
/// particle and, labelled air while water and cylinder shut it in, drew the water in
/// (`sim::solids::skin_pockets` now labels such pockets fluid). Before session 33 the wall faces
/// kept the solid's tangential velocity and the water co-rotated at 0.31 m/s mean (rms 0.12 m/s,
/// about 1 m/s at most); with the solid's velocity along each face's axis weighted by `n_a^2` (the
/// first form of session 33's change, commit a378c3d) 0.24 m/s (rms 0.10), and with that weighting
/// on closed faces too 0.19 m/s (a temporary change, failing this test).
#[test]
fn spinning_cylinder_drags_no_water() {
    let (c, r, omega) = (0.2, 0.0637, 4.0 * std::f64::consts::PI);
    let keys: Vec<String> = (0..9)
        .map(|k| {
            format!(
                r#"{{ "time": {t}, "translate": [{c}, {c}, 0], "rotate": [0, 0, {deg}] }}"#,
                t = 0.125 * k as f64,
                deg = 90 * k
            )
        })
        .collect();
    let json = format!(
        r#"{{
    "domain": {{ "lower": [0, 0, 0], "cell_size": {H}, "resolution": [32, 32, 20] }},
    "obstacles": [ {{ "type": "cylinder", "start": [0, 0, 0], "end": [0, 0, 0.3], "radius": {r},
        "keyframes": [ {keys} ] }} ],
    "sources": [ {{ "type": "box", "min": [{H}, {H}, {H}], "max": [0.3875, 0.3875, 0.15] }} ],
    "time": {{ "fps": 30, "frames": 30 }}
}}"#,
        keys = keys.join(", ")
    );
    let l = load_json(&json);
    let mut sim = Simulation::new(&l.scene, l.particles.clone(), 0).unwrap();
    let surface_speed = omega * r;
    let mut fastest = 0.0f64;
    for _ in 0..30 {
        fastest = fastest.max(sim.advance_frame().max_speed as f64);
    }
    let p = sim.particles();
    let (mut sum, mut count) = (0.0f64, 0usize);
    for i in 0..p.len() {
        let ([x, y, _], [vx, vy, _]) = (p.position(i), p.velocity(i));
        let (dx, dy) = (x as f64 - c, y as f64 - c);
        let d = (dx * dx + dy * dy).sqrt();
        if d < r + 2.0 * H {
            sum += (dx * vy as f64 - dy * vx as f64) / d;
            count += 1;
        }
    }
    let corotation = sum / count as f64;
    let rms = rms_speed(p);
    eprintln!(
        "spinning cylinder ({surface_speed:.2} m/s at its surface): water within 2.5 cm co-rotates at {corotation:.4} m/s mean ({count} particles); rms speed {rms:.4} m/s, fastest {fastest:.4} m/s"
    );
    assert!(count > 1000, "only {count} particles near the cylinder");
    assert!(
        corotation.abs() < 0.01 * surface_speed,
        "the water co-rotates at {corotation} m/s"
    );
    assert!(rms < 0.01 * surface_speed, "rms speed {rms} m/s");
    assert!(
        fastest < 0.1 * surface_speed,
        "a particle moved at {fastest} m/s"
    );
}
