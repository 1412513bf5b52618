//! Where the collapsing column's surge front comes from at each frame rate (issue 19):
//! `cargo bench --bench column_front`. Runs `scripts/collapse_column.rs` (32 cells across,
//! a = 1 m) at `FRONT_FPS` (default `24,48,120,240,400`) to `FRONT_T_END` s (default 0.75) and
//! at every multiple of 0.125 s prints, per frame rate, the front three ways: the farthest
//! particle (the measure of `scripts/validate_physics.rs`), the leading edge of the liquid
//! connected to the column (cells holding a particle, face neighbours, from the back wall's
//! cells), and the farthest cell column whose liquid is at least `FRONT_THICK` cells thick
//! (default 1); plus the particles beyond the connected edge.
//!
//! Settings to compare (each the solver field of that name): `FRONT_FIXED_DT`,
//! `FRONT_CORRECTION` (`volume_correction`), `FRONT_INTERVAL`, `FRONT_MIN_SUBSTEPS`,
//! `FRONT_WAVE` (`surface_wave_step`), `FRONT_CFL`, `FRONT_FLIP`, `FRONT_TRANSFER`, `FRONT_TOL`
//! (`pressure_tolerance`); `FRONT_CELLS` cells across the column. `FRONT_SWITCH=t1:fps2`
//! continues from `t1` s at `fps2` (a new simulation from the particles and the last substep,
//! `FRONT_SWITCH_FLIP` with that flip ratio): which part of the run makes a difference.
//! `FRONT_DTS=1` prints every frame's substeps, `FRONT_PROFILE=1` the particle count, mean
//! horizontal velocity and top of the liquid in bins of 4 cells from x = a.
#[path = "collapse_column.rs"]
mod collapse_column;
use collapse_column::*;
use surge::sim::{Particles, Simulation};

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// (farthest, connected edge, thick edge, particles beyond the connected edge), in column widths.
/// Sets `field` from the environment variable `name` when it is set (a solver override).
fn over<T: std::str::FromStr>(name: &str, field: &mut T)
where
    T::Err: std::fmt::Debug,
{
    if let Ok(v) = std::env::var(name) {
        *field = v.parse().unwrap_or_else(|e| panic!("{name}={v}: {e:?}"));
    }
}

fn fronts(s: &surge::scene::Scene, a: f64, p: &Particles, thick: u32) -> (f64, f64, f64, usize) {
    let h = s.domain.cell_size;
    let [nx, ny, nz] = s.domain.resolution.map(|n| n as usize);
    let idx = |i: usize, j: usize, k: usize| i + nx * (j + ny * k);
    let mut occ = vec![0u32; nx * ny * nz];
    let mut xmax = f64::MIN;
    let cell = |x: f32| (x as f64 / h).floor().max(0.0) as usize;
    for q in 0..p.len() {
        let (i, j, k) = (
            cell(p.pos[0][q]).min(nx - 1),
            cell(p.pos[1][q]).min(ny - 1),
            cell(p.pos[2][q]).min(nz - 1),
        );
        occ[idx(i, j, k)] += 1;
        xmax = xmax.max(p.pos[0][q] as f64);
    }
    // Flood fill from the occupied cells in the first fluid column (i = 1).
    let mut seen = vec![false; nx * ny * nz];
    let mut stack = Vec::new();
    for k in 0..nz {
        for j in 0..ny {
            if occ[idx(1, j, k)] > 0 {
                seen[idx(1, j, k)] = true;
                stack.push((1usize, j, k));
            }
        }
    }
    let mut imax = 0;
    while let Some((i, j, k)) = stack.pop() {
        imax = imax.max(i);
        let mut push = |i: usize, j: usize, k: usize| {
            let c = idx(i, j, k);
            if occ[c] > 0 && !seen[c] {
                seen[c] = true;
                stack.push((i, j, k));
            }
        };
        if i + 1 < nx {
            push(i + 1, j, k);
        }
        if i > 0 {
            push(i - 1, j, k);
        }
        if j + 1 < ny {
            push(i, j + 1, k);
        }
        if j > 0 {
            push(i, j - 1, k);
        }
        if k + 1 < nz {
            push(i, j, k + 1);
        }
        if k > 0 {
            push(i, j, k - 1);
        }
    }
    let mut conn_x = f64::MIN;
    let mut beyond = 0;
    for q in 0..p.len() {
        let (i, j, k) = (
            cell(p.pos[0][q]).min(nx - 1),
            cell(p.pos[1][q]).min(ny - 1),
            cell(p.pos[2][q]).min(nz - 1),
        );
        if seen[idx(i, j, k)] {
            conn_x = conn_x.max(p.pos[0][q] as f64);
        } else {
            beyond += 1;
        }
    }
    // Thick edge: farthest i where some j has >= thick consecutive occupied cells in z.
    let mut thick_i = 0;
    for i in 0..nx {
        for j in 0..ny {
            let mut run = 0;
            for k in 0..nz {
                if occ[idx(i, j, k)] > 0 {
                    run += 1;
                    if run >= thick {
                        thick_i = thick_i.max(i);
                    }
                } else {
                    run = 0;
                }
            }
        }
    }
    let _ = imax;
    (
        (xmax + 0.25 * h - h) / a,
        (conn_x + 0.25 * h - h) / a,
        ((thick_i + 1) as f64 * h - h) / a,
        beyond,
    )
}

fn main() {
    let a = 1.0;
    let t_end = env_f64("FRONT_T_END", 0.75);
    let thick = env_f64("FRONT_THICK", 1.0) as u32;
    let cells = env_f64("FRONT_CELLS", 32.0) as u32;
    let fps: Vec<f64> = std::env::var("FRONT_FPS")
        .unwrap_or_else(|_| "24,48,120,240,400".into())
        .split(',')
        .map(|x| x.trim().parse().unwrap())
        .collect();
    let every = 0.125;
    let mut rows = Vec::new();
    for &f in &fps {
        let frames = (t_end * f).round() as u32;
        let (mut s, p) = column(a, cells, f, frames);
        if let Ok(v) = std::env::var("FRONT_FIXED_DT") {
            s.solver.fixed_dt = Some(v.parse().unwrap());
        }
        let sv = &mut s.solver;
        over("FRONT_CORRECTION", &mut sv.volume_correction);
        over("FRONT_INTERVAL", &mut sv.volume_correction_interval);
        over("FRONT_MIN_SUBSTEPS", &mut sv.min_substeps);
        over("FRONT_WAVE", &mut sv.surface_wave_step);
        over("FRONT_CFL", &mut sv.cfl);
        over("FRONT_FLIP", &mut sv.flip_ratio);
        over("FRONT_TOL", &mut sv.pressure_tolerance);
        if let Ok(v) = std::env::var("FRONT_TRANSFER") {
            sv.transfer = serde_json::from_value(v.as_str().into()).unwrap();
        }
        let mut sim = Simulation::new(&s, p, 0).unwrap();
        // FRONT_SWITCH=t1:fps2: from t1 on, run at fps2 (a new simulation from the particles).
        let switch: Option<(f64, f64)> = std::env::var("FRONT_SWITCH").ok().map(|v| {
            let (a, b) = v.split_once(':').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        });
        let s1 = s.clone();
        let mut t_off = 0.0;
        let mut switched = false;
        let mut out = Vec::new();
        let mut next = every;
        let mut subs = 0;
        let mut dts = Vec::new();
        while next <= t_end + 1e-9 {
            let r = sim.advance_frame();
            subs += r.substeps;
            if std::env::var("FRONT_DTS").is_ok() {
                let d: Vec<String> = r
                    .substep_reports
                    .iter()
                    .map(|x| format!("{:.4}", x.dt))
                    .collect();
                eprintln!(
                    "{f} fps frame {} max speed {:.2}: {}",
                    sim.frame(),
                    r.max_speed,
                    d.join(" ")
                );
            }
            let t = t_off + s.frame_time(sim.frame());
            if let Some((t1, f2)) = switch
                && !switched
                && (t - t1).abs() < 1e-6
            {
                {
                    switched = true;
                    let mut s2 = s1.clone();
                    s2.time.fps = f2;
                    if let Ok(v) = std::env::var("FRONT_SWITCH_FLIP") {
                        s2.solver.flip_ratio = v.parse().unwrap();
                    }
                    s2.time.frames = 100000;
                    let dt = sim.last_substep();
                    let pp = sim.particles().clone();
                    sim = Simulation::new(&s2, pp, 0)
                        .unwrap()
                        .with_last_substep(dt)
                        .unwrap();
                    s = s2;
                    t_off = t;
                }
            }
            if (t - next).abs() < 1e-6 {
                if std::env::var("FRONT_PROFILE").is_ok() {
                    let pp = sim.particles();
                    let h = s.domain.cell_size;
                    let nb = 8usize; // bins of 4 cells from x = 1.0 a
                    let mut cnt = vec![0usize; 2 * nb];
                    let mut su = vec![0f64; 2 * nb];
                    let mut sz = vec![0f64; 2 * nb];
                    for q in 0..pp.len() {
                        let x = pp.pos[0][q] as f64 - h;
                        let b = ((x - 1.0) / (4.0 * h)).floor();
                        if b >= 0.0 && (b as usize) < 2 * nb {
                            let b = b as usize;
                            cnt[b] += 1;
                            su[b] += pp.vel[0][q] as f64;
                            sz[b] = sz[b].max(pp.pos[2][q] as f64 - h);
                        }
                    }
                    let line: Vec<String> = (0..2 * nb)
                        .map(|b| {
                            format!(
                                "{}:{:.2}/{:.3}",
                                cnt[b],
                                if cnt[b] > 0 {
                                    su[b] / cnt[b] as f64
                                } else {
                                    0.0
                                },
                                sz[b]
                            )
                        })
                        .collect();
                    eprintln!(
                        "{f} fps t {t:.3} profile(count:u/ztop per 4 cells from x=1): {}",
                        line.join(" ")
                    );
                }
                out.push((
                    t,
                    fronts(&s, a, sim.particles(), thick),
                    subs,
                    sim.last_substep(),
                ));
                next += every;
                dts.push(sim.last_substep());
            } else if t > next {
                panic!(
                    "frame times {t} do not fall on multiples of {every}: use an fps that is a multiple of 8"
                );
            }
        }
        eprintln!(
            "{f} fps done: {} particles at the end, {subs} substeps",
            sim.particles().len()
        );
        rows.push((f, out));
    }
    let n = rows[0].1.len();
    for k in 0..n {
        println!("t {:.3}", rows[0].1[k].0);
        let mut v = [Vec::new(), Vec::new(), Vec::new()];
        for (f, out) in &rows {
            let (_, (far, conn, th, beyond), subs, dt) = out[k];
            println!(
                "  {f:5} fps: farthest {far:.3} connected {conn:.3} ({beyond} beyond) thick>={thick} {th:.3}  substeps so far {subs}, last dt {:.5}",
                dt
            );
            v[0].push(far);
            v[1].push(conn);
            v[2].push(th);
        }
        let sp = |x: &Vec<f64>| {
            x.iter().cloned().fold(f64::MIN, f64::max) - x.iter().cloned().fold(f64::MAX, f64::min)
        };
        println!(
            "  spread: farthest {:.3} connected {:.3} thick {:.3}",
            sp(&v[0]),
            sp(&v[1]),
            sp(&v[2])
        );
    }
}
