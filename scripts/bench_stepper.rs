//! Stepper benchmark: `cargo bench --bench bench_stepper`.
//!
//! Prints ms per substep per stage, pressure iterations and particles per second for
//!
//! 1. the tutorial input (`inputs/particles.in`, 33,389 particles, 25 x 50 x 25 cells, fixed
//!    dt 0.001111112 s) with the default rayon pool, and two peers measured in the same run:
//!    the same with 1 thread, and with unpreconditioned CG (what the tutorial's C++ uses);
//!    plus the tutorial C++'s own 15 ms per step (-O2) on this machine kind, for reference;
//! 2. a ~1M-particle dam break at CFL 3 (30 fps), ms per frame, against the same with 1 thread,
//!    and against the same with the other pressure preconditioner (MIC(0) vs multigrid):
//!    iterations per substep, pressure ms per substep and their ratios; then one pressure
//!    system (the dam break after `BENCH_REPLAY_FRAMES` frames) solved by both, the fastest of
//!    several solves with 1 thread (wall and thread CPU time) and with the pool, and the bytes
//!    a CG iteration streams (a model: each array a pass reads or writes counted once per row
//!    or grid cell) against the bandwidth of a STREAM-like triad measured in the same run.
//!
//! On a shared machine wall-clock times depend on what else runs, so every run also prints the
//! cores it actually got (process CPU time / wall time), and the 1-thread peers print the CPU
//! time of their worker thread: a per-substep cost that does not count waiting for a core.
//!
//! Environment: `BENCH_TUTORIAL_FRAMES` (default 150: the tutorial's whole 5 s run, 4,500
//! steps, as its C++ figure is; the first frames, a falling ball, are cheaper than the later
//! pool and splashes), `BENCH_DAM_FRAMES` (default 30: the first frames have fewer substeps
//! than later ones, the most, 6, come around frames 16-19),
//! `BENCH_DAM_CELL` (cell size of the dam break, m, default 0.0125: about 1.02M particles),
//! `BENCH_SCENE=scenes/dam_break.json` (that scene, e.g. the default one, in place of the
//! dam break of this bench: its runs and pressure replay),
//! `BENCH_PARTICLES` (`8M`, `1M`, `500k`, ...: the dam break's cell size for about that many
//! particles, instead of `BENCH_DAM_CELL`; after the main dam-break run the bench prints the
//! process's peak resident memory, `VmHWM`, per particle and per cell: for a clean figure run
//! it alone, e.g. `BENCH_PARTICLES=8M BENCH_SKIP_TUTORIAL=1 BENCH_PEERS=0
//! BENCH_COMPARE_PRECONDITIONERS=0 BENCH_DAM_FRAMES=3`),
//! `BENCH_OBSTACLE_TRIS=N` (also the dam break with and without a static N-triangle mesh
//! obstacle: the obstacle's cost per substep; `BENCH_OBSTACLE_MOVING=1`: also the mesh with a
//! sphere beside it, still and moving: the moving obstacle's cost),
//! `BENCH_PRECONDITIONER` (`multigrid`, the default, or `mic0`: the pressure preconditioner of
//! every run but the comparison peer), `BENCH_COMPARE_PRECONDITIONERS=0` (skip the dam-break
//! run with the other preconditioner), `BENCH_PAIRS=N` (`N` runs of each preconditioner,
//! alternating, and the median of the pairs' pressure ratios), `BENCH_REPLAY_ONLY=1` (only the pressure replay of the
//! dam break), `BENCH_REPLAY_FRAMES` (default 10), `BENCH_REPLAY_REPS` (default 5),
//! `BENCH_COMPARE_TRANSFERS=1` (only the dam break with `solver.transfer` "flip" and "apic",
//! and "flip" with `solver.free_surface = "ghost_fluid"`, 1 thread each: CPU ms per substep per
//! stage and the ratios),
//! `BENCH_REPLAY_MG_ONLY=1` (with `BENCH_REPLAY_ONLY=1`: only the multigrid's replayed
//! solves, on the default pool, and their total time: for profilers),
//! `BENCH_DUMP_LABELS=path` (with the replay: writes the replayed system's cell labels there,
//! the input of `cargo bench --bench mg_cycle`),
//! `BENCH_MAX_PARTICLES_PER_CELL` (`solver.max_particles_per_cell` of every run; 0 switches
//! the thinning of crowded cells off: the results before it),
//! `BENCH_SKIP_DAM=1`, `BENCH_SKIP_TUTORIAL=1`, `BENCH_DAM_PEER=0` (skip the 1-thread dam-break
//! peer), `BENCH_PEERS=0` (the default pool only, no warm-up and no peers: for profilers such as
//! `RAYON_NUM_THREADS=1 valgrind --tool=callgrind`).

use std::time::Instant;
use surge::scene::{Domain, PressurePreconditioner, Scene, SolverSettings, Source, TimeSettings};
use surge::sim::{FrameReport, Particles, Simulation, StageSeconds};

#[path = "bench_stepper/extra.rs"]
mod extra;
use extra::*;

/// The tutorial's C++ (incremental7, unpreconditioned CG) built with -O2, ms per step on its own
/// input on this machine kind (the founding brief's figure; an older build measured 31 ms).
const TUTORIAL_CPP_MS_PER_STEP: f64 = 15.0;
/// Issue 2's target for the tutorial input on 2 cores, ms per step.
const TUTORIAL_TARGET_MS: f64 = 3.0;

fn scene(lower: [f64; 3], h: f64, resolution: [u32; 3]) -> Scene {
    Scene {
        emitters: Vec::new(),
        sinks: Vec::new(),
        limits: Default::default(),
        name: "bench".into(),
        domain: Domain {
            lower,
            cell_size: h,
            resolution,
            boundaries: Default::default(),
            friction: Default::default(),
        },
        gravity: [0.0, 0.0, -surge::scene::STANDARD_GRAVITY],
        density: 1000.0,
        sources: vec![],
        seed: 1,
        time: TimeSettings {
            fps: 30.0,
            frames: 100,
        },
        solver: SolverSettings {
            pressure_preconditioner: preconditioner(),
            max_particles_per_cell: max_particles_per_cell(),
            ..SolverSettings::default()
        },
        surface: Default::default(),
        render: Default::default(),
        output: Default::default(),
        obstacles: Vec::new(),
        built_obstacles: Default::default(),
    }
}

fn tutorial() -> (Scene, Particles) {
    let mut s = scene([-0.125, -0.25, -0.125], 0.01, [25, 50, 25]);
    s.solver.fixed_dt = Some(0.001111112);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/inputs/particles.in");
    let text = std::fs::read_to_string(path).expect("inputs/particles.in");
    let p = surge::sources::parse_particle_text(&text, std::path::Path::new(path))
        .expect("inputs/particles.in parses");
    (s, p)
}

fn dam_break(h: f64) -> (Scene, Particles) {
    // Tank 2.0 x 0.5 x 1.2 m; column 0.5 x 0.5 x 1.0 m against the back wall.
    let res = [2.0 / h, 0.5 / h, 1.2 / h].map(|c: f64| c.round() as u32 + 2);
    let mut s = scene([0.0, 0.0, 0.0], h, res);
    s.sources = vec![Source::Box {
        min: [h, h, h],
        max: [h + 0.5, h + 0.5, h + 1.0],
        velocity: [0.0; 3],
    }];
    let p = surge::sources::seed_particles(&s, &[]);
    (s, p)
}

struct Run {
    reports: Vec<FrameReport>,
    wall: f64,
    /// CPU seconds of the calling thread (meaningful for the 1-thread pool, where all the work
    /// runs on it): unlike wall time, it does not count waiting for a core on a busy machine.
    cpu: f64,
    /// CPU seconds of the whole process during the run: `process_cpu / wall` is how many cores
    /// the run actually got (on a shared machine, fewer than the pool's threads).
    process_cpu: f64,
    particles: usize,
    /// FNV-1a hash of the final particles' bytes: equal across thread counts, and unchanged by
    /// a change that should not alter results.
    checksum: u64,
}

fn checksum(p: &Particles) -> u64 {
    let mut h = 0xcbf29ce484222325u64;
    for a in 0..3 {
        for x in p.pos[a].iter().chain(&p.vel[a]) {
            for b in x.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x100000001b3);
            }
        }
    }
    h
}

/// CPU seconds used so far by the current thread (Linux `/proc/thread-self/stat`, 10 ms ticks).
fn thread_cpu_seconds() -> f64 {
    cpu_seconds("/proc/thread-self/stat")
}

/// CPU seconds used so far by the whole process, all threads.
fn process_cpu_seconds() -> f64 {
    cpu_seconds("/proc/self/stat")
}

fn cpu_seconds(path: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(path) else {
        return f64::NAN;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        f.get(i)
            .and_then(|x| x.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / 100.0
}

impl Run {
    fn substeps(&self) -> u32 {
        self.reports.iter().map(|r| r.substeps).sum()
    }
    fn ms_per_substep(&self) -> f64 {
        1e3 * self.wall / self.substeps() as f64
    }
    fn ms_per_frame(&self) -> f64 {
        1e3 * self.wall / self.reports.len() as f64
    }
    fn particles_per_second(&self) -> f64 {
        self.particles as f64 * self.substeps() as f64 / self.wall
    }
    fn stages(&self) -> StageSeconds {
        let mut s = StageSeconds::default();
        for r in &self.reports {
            let t = &r.seconds;
            s.sort += t.sort;
            s.splat += t.splat;
            s.forces += t.forces;
            s.pressure += t.pressure;
            s.extrapolate += t.extrapolate;
            s.transfer += t.transfer;
            s.advect += t.advect;
            s.density += t.density;
        }
        s
    }
    fn print(&self, label: &str) {
        let n = self.substeps() as f64;
        let st = self.stages();
        let its: u32 = self
            .reports
            .iter()
            .map(|r| r.pressure_iterations_total)
            .sum();
        let its_max = self
            .reports
            .iter()
            .map(|r| r.pressure_iterations_max)
            .max()
            .unwrap_or(0);
        let dens: u32 = self
            .reports
            .iter()
            .flat_map(|r| r.substep_reports.iter().map(|s| s.density_iterations))
            .sum();
        println!(
            "{label}: {} frames, {} substeps, {:.3} ms/substep, {:.1} ms/frame, {:.2} M particle-steps/s",
            self.reports.len(),
            n,
            self.ms_per_substep(),
            self.ms_per_frame(),
            self.particles_per_second() / 1e6
        );
        let ms = |x: f64| 1e3 * x / n;
        println!(
            "    per substep, ms: sort {:.3}  splat {:.3}  forces {:.3}  pressure {:.3}  extrapolate {:.3}  transfer {:.3}  advect {:.3}  density {:.3}",
            ms(st.sort),
            ms(st.splat),
            ms(st.forces),
            ms(st.pressure),
            ms(st.extrapolate),
            ms(st.transfer),
            ms(st.advect),
            ms(st.density)
        );
        let total = st.sort
            + st.splat
            + st.forces
            + st.pressure
            + st.extrapolate
            + st.transfer
            + st.advect
            + st.density;
        let pc = |x: f64| 100.0 * x / total;
        println!(
            "    shares of the stages' time, %: sort {:.1}  splat {:.1}  forces {:.1}  pressure {:.1}  extrapolate {:.1}  transfer {:.1}  advect {:.1}  density {:.1}",
            pc(st.sort),
            pc(st.splat),
            pc(st.forces),
            pc(st.pressure),
            pc(st.extrapolate),
            pc(st.transfer),
            pc(st.advect),
            pc(st.density)
        );
        println!(
            "    pressure iterations: mean {:.1}, max {}; density-correction iterations: mean {:.1}; cores used (process CPU / wall) {:.2}, process CPU {:.3} ms/substep; result checksum {:016x}",
            its as f64 / n,
            its_max,
            dens as f64 / n,
            self.process_cpu / self.wall,
            1e3 * self.process_cpu / n,
            self.checksum
        );
    }
}

fn run(
    scene: &Scene,
    p: &Particles,
    frames: u32,
    threads: Option<usize>,
    precondition: bool,
) -> Run {
    run_owned(scene, p.clone(), frames, threads, precondition)
}

/// [`run`] on particles handed over (the bench keeps no copy of them: `BENCH_MEMORY=1`).
fn run_owned(
    scene: &Scene,
    p: Particles,
    frames: u32,
    threads: Option<usize>,
    precondition: bool,
) -> Run {
    let n = p.len();
    let go = move || {
        let mut sim = Simulation::new(scene, p, 0).unwrap();
        sim.set_preconditioner(precondition);
        let t = Instant::now();
        let c = thread_cpu_seconds();
        let pc = process_cpu_seconds();
        let reports: Vec<FrameReport> = (0..frames).map(|_| sim.advance_frame()).collect();
        Run {
            reports,
            wall: t.elapsed().as_secs_f64(),
            cpu: thread_cpu_seconds() - c,
            process_cpu: process_cpu_seconds() - pc,
            particles: n,
            checksum: checksum(sim.particles()),
        }
    };
    match threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
            .install(go),
        None => go(),
    }
}

/// `solver.max_particles_per_cell` of every run: `BENCH_MAX_PARTICLES_PER_CELL`, else the default.
fn max_particles_per_cell() -> u32 {
    env(
        "BENCH_MAX_PARTICLES_PER_CELL",
        SolverSettings::default().max_particles_per_cell,
    )
}

/// The preconditioner chosen by `BENCH_PRECONDITIONER`.
fn preconditioner() -> PressurePreconditioner {
    match std::env::var("BENCH_PRECONDITIONER").as_deref() {
        Ok("multigrid") => PressurePreconditioner::Multigrid,
        Ok("mic0") => PressurePreconditioner::Mic0,
        Err(_) => PressurePreconditioner::default(),
        Ok(x) => panic!("BENCH_PRECONDITIONER must be mic0 or multigrid, got {x}"),
    }
}

fn name(pc: PressurePreconditioner) -> &'static str {
    match pc {
        PressurePreconditioner::Mic0 => "MIC(0)",
        PressurePreconditioner::Multigrid => "multigrid",
    }
}

/// Bytes one CG iteration streams per fluid row (a model: every array a pass reads or writes
/// counted once per row or grid cell, neighbours' values taken as cached; the multigrid counts
/// the finest level's cells as the fluid rows, and its coarser levels as 1/7 more).
///
/// Both solvers' `A s` with the dot product streams the diagonal 8, `s` 8 and writes `A s` 8 =
/// 24: the neighbour rows are read at the start of each run of rows only (`System::runs`,
/// session 19; before, the six `u32` neighbours of every row, 48).
///
/// MIC(0) (`f64` vectors, `u32` neighbour rows): `A s` (24), the fused update and forward
/// sweep (`q`, `r` read and written 32, `s` 8, `A s` 8, neighbours 24, `precon` 8, `tmp` 8 =
/// 88), the backward sweep with `z . r` (neighbours 24, `precon` 8, `tmp` 8, `z` 8, `r` 8 =
/// 56), `s = z + beta s` (24): 192 (216 before session 19).
///
/// Multigrid (the default: a W-cycle, three red-black sweeps, unit face weights): the CG
/// vectors (`A s` 24, the `r` update and max with the scatter of `r` (`r` read and written 16,
/// `A s` 8, `b` 4) 28, `M^-1 r . r` read from the finest level's `u` (`u` 4, `r` 8) 12,
/// `q += alpha s` with `s = M^-1 r + beta s` (`q`, `s` read and written 32, `u` 4) 36 = 100:
/// each row's place on the grid follows from its run's first cell (session 19; before, a
/// 4-byte index per row and pass: 112; 136 with `A s` reading the neighbours, session 18; 152
/// in session 16 and before, with `q` updated in the step and `M^-1 r` gathered into `z`) and
/// the cycle's `f32` grids per cell of the finest level, each smoothing being one pass over
/// memory (all its half-sweeps and the residual or prolongation run as one wavefront over the
/// planes, `multigrid/wavefront.rs`),
/// with unit weights reading each cell's open-face count (1 byte) for its diagonal and
/// inverse (`multigrid/diagonal.rs`, session 18): pre-smoothing with the residual (`b` 4,
/// count 1 read, `u`, `r` written 8: 13), restriction (`r` 4), prolongation with
/// post-smoothing (`b` 4, count 1 read, `u` read and written 8: 13) = 30, times 4/3 for the
/// coarser levels (level `l` has 8^-l of the cells and the W-cycle visits it 2^l times): 40;
/// 140 in all (176 in session 18; before it, with the `f32` inverse diagonal and diagonal: 40 a
/// cell, 189).
fn bytes_per_row(pc: PressurePreconditioner) -> f64 {
    match pc {
        PressurePreconditioner::Mic0 => 192.0,
        PressurePreconditioner::Multigrid => 100.0 + 30.0 * 4.0 / 3.0,
    }
}

/// Bandwidth of a STREAM-like triad `a = b + s c` over `f64` arrays of 64 MB each on the
/// current pool (best of 5), bytes per second counted as STREAM does (24 per element).
fn triad_bandwidth() -> f64 {
    use rayon::prelude::*;
    let n = 8 << 20;
    let b = vec![1.0f64; n];
    let c = vec![2.0f64; n];
    let mut a = vec![0.0f64; n];
    let mut best = f64::INFINITY;
    for rep in 0..6 {
        let s = 0.5 + rep as f64;
        let t = Instant::now();
        a.par_chunks_mut(1 << 16)
            .zip(b.par_chunks(1 << 16).zip(c.par_chunks(1 << 16)))
            .for_each(|(a, (b, c))| {
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + s * c;
                }
            });
        let dt = t.elapsed().as_secs_f64();
        // The first pass faults the pages in.
        if rep > 0 {
            best = best.min(dt);
        }
    }
    std::hint::black_box(&a);
    24.0 * n as f64 / best
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let threads = rayon::current_num_threads();
    println!("surge stepper benchmark, rayon pool of {threads} threads\n");

    let peers = env("BENCH_PEERS", 1u32) == 1;
    if env("BENCH_SKIP_TUTORIAL", 0u32) != 1 {
        bench_tutorial(threads, peers);
    }
    if env("BENCH_SKIP_DAM", 0u32) != 1 {
        bench_dam_break(threads, peers);
    }
    let tris = env("BENCH_OBSTACLE_TRIS", 0usize);
    if tris > 0 {
        bench_obstacle(threads, tris);
    }
}

fn bench_tutorial(threads: usize, peers: bool) {
    let (s, p) = tutorial();
    let frames = env("BENCH_TUTORIAL_FRAMES", 150u32);
    println!(
        "== tutorial input: {} particles, {:?} cells, fixed dt {} s ({} steps/frame)",
        p.len(),
        s.domain.resolution,
        s.solver.fixed_dt.unwrap(),
        s.steps_per_frame()
    );
    if !peers {
        let base = run(&s, &p, frames, None, true);
        base.print(&format!("surge, {threads} threads"));
        println!(
            "target {TUTORIAL_TARGET_MS} ms/step / surge = {:.2}x",
            TUTORIAL_TARGET_MS / base.ms_per_substep()
        );
        return;
    }
    let _warm = run(&s, &p, 1, None, true);
    let base = run(&s, &p, frames, None, true);
    base.print(&format!("surge, {threads} threads"));
    let one = run(&s, &p, frames, Some(1), true);
    one.print("surge, 1 thread");
    println!(
        "    1 thread, CPU time of the worker: {:.3} ms/substep (wall {:.3}: the rest is waiting for a core)",
        1e3 * one.cpu / one.substeps() as f64,
        one.ms_per_substep()
    );
    let plain = run(&s, &p, frames, None, false);
    plain.print(&format!("surge, {threads} threads, unpreconditioned CG"));
    println!(
        "ratios: 1 thread / {threads} threads = {:.2}x; plain CG / MIC(0)-PCG = {:.2}x; tutorial C++ ({TUTORIAL_CPP_MS_PER_STEP} ms/step) / surge = {:.1}x; target {TUTORIAL_TARGET_MS} ms/step / surge = {:.2}x\n",
        one.ms_per_substep() / base.ms_per_substep(),
        plain.ms_per_substep() / base.ms_per_substep(),
        TUTORIAL_CPP_MS_PER_STEP / base.ms_per_substep(),
        TUTORIAL_TARGET_MS / base.ms_per_substep()
    );
}

/// `BENCH_PARTICLES` (`8M`, `1M`, `500k` or a plain count): the dam break's cell size for
/// about that many particles (8 per cell of the column; 0.0125 m gives 1,024,000), else
/// `BENCH_DAM_CELL`.
fn dam_cell() -> f64 {
    let Ok(v) = std::env::var("BENCH_PARTICLES") else {
        return env("BENCH_DAM_CELL", 0.0125f64);
    };
    let v = v.trim().to_ascii_lowercase();
    let (num, mul) = match v.strip_suffix('m') {
        Some(x) => (x, 1e6),
        None => match v.strip_suffix('k') {
            Some(x) => (x, 1e3),
            None => (v.as_str(), 1.0),
        },
    };
    let n: f64 = mul
        * num.parse::<f64>().unwrap_or_else(|_| {
            panic!("BENCH_PARTICLES must be a count such as 8M, 500k or 20000, got {v}")
        });
    assert!(
        n >= 1000.0,
        "BENCH_PARTICLES must be at least 1000, got {v}"
    );
    // Column 0.5 x 0.5 x 1.0 m at 8 particles per cell: 2 / h^3 particles.
    (2.0 / n).cbrt()
}

fn bench_dam_break(threads: usize, peers: bool) {
    let h = dam_cell();
    let (s, p) = match std::env::var("BENCH_SCENE") {
        Ok(path) => {
            let l = surge::scene::load(std::path::Path::new(&path))
                .unwrap_or_else(|e| panic!("BENCH_SCENE {path}: {e}"));
            let mut s = l.scene;
            s.solver.pressure_preconditioner = preconditioner();
            s.solver.max_particles_per_cell = max_particles_per_cell();
            (s, l.particles)
        }
        Err(_) => dam_break(h),
    };
    let frames = env("BENCH_DAM_FRAMES", 30u32);
    println!(
        "== {}: {} particles, {:?} cells, CFL {}, {} fps, first {frames} frames, {} preconditioner",
        std::env::var("BENCH_SCENE").unwrap_or_else(|_| "dam break".into()),
        p.len(),
        s.domain.resolution,
        s.solver.cfl,
        s.time.fps,
        name(s.solver.pressure_preconditioner)
    );
    if env("BENCH_REPLAY_ONLY", 0u32) == 1 {
        replay_pressure(&s, &p, threads);
        return;
    }
    if env("BENCH_COMPARE_TRANSFERS", 0u32) == 1 {
        compare_transfers(&s, &p, frames);
        return;
    }
    if env("BENCH_MEMORY", 0u32) == 1 {
        // Peak memory of the simulation alone: the particles are handed to it (no bench copy).
        let (n, cells) = (
            p.len(),
            s.domain.resolution.iter().map(|&x| x as usize).product(),
        );
        let before = rss_bytes().1;
        let base = run_owned(&s, p, frames, None, true);
        base.print(&format!("surge, {threads} threads (particles handed over)"));
        print_memory(n, cells, before, false);
        return;
    }
    let before = rss_bytes().1;
    let base = run(&s, &p, frames, None, true);
    base.print(&format!("surge, {threads} threads"));
    let cells = s.domain.resolution.iter().map(|&x| x as usize).product();
    print_memory(p.len(), cells, before, true);
    if env("BENCH_COMPARE_PRECONDITIONERS", 1u32) == 1 {
        compare_preconditioners(&s, &p, frames, threads, &base);
    }
    for (i, r) in base.reports.iter().enumerate() {
        println!(
            "    frame {}: {} substeps, {:.0} ms, pressure iterations max {}",
            i + 1,
            r.substeps,
            1e3 * r.seconds.total(),
            r.pressure_iterations_max
        );
    }
    if !peers || env("BENCH_DAM_PEER", 1u32) == 0 {
        println!(
            "target 1000 ms/frame / surge = {:.2}x",
            1000.0 / base.ms_per_frame()
        );
        return;
    }
    let one = run(&s, &p, frames, Some(1), true);
    one.print("surge, 1 thread");
    println!(
        "    1 thread, CPU time of the worker: {:.1} ms/frame, {:.1} ms/substep",
        1e3 * one.cpu / one.reports.len() as f64,
        1e3 * one.cpu / one.substeps() as f64
    );
    println!(
        "ratios: 1 thread / {threads} threads = {:.2}x; target 1000 ms/frame / surge = {:.2}x",
        one.ms_per_frame() / base.ms_per_frame(),
        1000.0 / base.ms_per_frame()
    );
}
