//! The multigrid preconditioner alone on a dumped system: `cargo bench --bench mg_cycle`.
//!
//! Reads the cell labels that `BENCH_DUMP_LABELS=path` makes `cargo bench --bench
//! bench_stepper` write at its pressure replay (`MG_LABELS=path`, default
//! `/tmp/surge_mg_labels.bin`: three little-endian u32 dimensions, then one label byte per
//! cell), numbers the fluid cells as the pressure solver does (`MG_FRACTIONAL=1`: with every
//! face weight given, all 1, the obstacles' fractional-weight path), and on `MG_THREADS` threads
//! (default 1) runs one
//! set-up of the levels and `MG_APPLICATIONS` (default 12, about one solve's) applications of
//! the cycle to a fixed pseudo-random residual, `MG_REPS` times (default 5), with the default
//! `Settings` but `MG_COARSE_CYCLES` (1: a V-cycle, 2: the default W-cycle) and
//! `MG_PRE_SWEEPS`, `MG_DIRECT` (0: no exact coarse solve), `MG_WINDOW` (0: the levels cover
//! the whole grid, not the liquid's box, `multigrid/window.rs`), `MG_TEAM` (0: a rayon loop per phase
//! instead of the team of threads, `multigrid/team.rs`) where set; `MG_COMPARE=1` runs the
//! team and the rayon loops alternately in each repetition and prints both (same process, so
//! that a shared machine's load falls on both alike); `MG_AWAKE=1` keeps the pool's other
//! workers awake meanwhile, spinning between jobs as the stepper's do (`src/sim/awake.rs`);
//! prints the unknowns per level
//! and the level solved exactly, the
//! hierarchy's bytes ([`Multigrid::bytes`]), the fastest wall time and a hash of the last
//! result's bits (the same hash means the same
//! bits). Small and without the simulation, so that `valgrind --tool=callgrind` can count its
//! instructions (repeatable on a shared machine, where times are not), e.g.
//! `valgrind --tool=callgrind target/release/deps/mg_cycle-*` on the built binary.
//!
//! The team's knobs (`TeamKnobs`, `multigrid/team_knobs.rs`; every value gives the same bits),
//! default today's: `MG_ROW_CELLS` (2048: cells per member at least of a stage by rows),
//! `MG_RESTRICT_CELLS` (512: of a restriction), `MG_SPINS` (256: spins of a wait before it
//! yields), `MG_FINE_MEMBERS`, `MG_COARSE_MEMBERS` (0: all; most members taking the finest,
//! the coarse levels' tasks), `MG_SOLO_CELLS` (0: off; a coarse level with fewer fluid cells
//! runs each visit, the levels below included, as one task), `MG_PAD` (0: bytes between the
//! team's counters at least; 128: each on a line of its own), `MG_PEEK` (0; 1: read a phase's
//! claimed-counter before claiming), `MG_AFFINITY` (1: a phase's task `t` first offered to the
//! member on pool thread `t`, below the thread count; 0: to whoever claims it), `MG_PATIENCE` (300: spins before another member
//! takes a task its owner has not claimed), `MG_MIN_TEAM` (2; 1: one thread runs the team's cycle too,
//! for its profile), `MG_LIQUID_CUTS` (0; 1: the wavefronts' slabs cut where the liquid falls
//! evenly, as before session 15, rather than by the work of their first pass),
//! `MG_SLABS_PER_THREAD` (4: most slabs per thread of a wavefront). `MG_SWEEP="spins=64,pad=128;coarse_members=4;..."` (the same names,
//! lower case without `MG_`, and `window=0|1`; `;` between configurations) times the base configuration (the
//! knobs above) and each of these, in turn in each repetition (the order rotating), and prints
//! each one's fastest and median time (and median set-up time) and result hash.
//!
//! Built with `--features mg-profile`, `MG_PROFILE=1` then records `MG_PROFILE_REPS` (default
//! 3) more repetitions of the base configuration (each configuration's with `MG_PROFILE_ALL=1`)
//! and prints where the team's cycle spent its time (`multigrid/profile.rs`: per level and kind
//! of phase, per application, the first repetition left out), `MG_PROFILE=2` with the phases
//! of the median application one a line.

use std::time::Instant;
use surge::sim::mac_grid::CellLabel;
use surge::sim::pressure::Multigrid;
use surge::sim::pressure::multigrid::{Settings, TeamKnobs};
use surge::sim::with_workers_awake;

fn env(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|x| x.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let path = std::env::var("MG_LABELS").unwrap_or_else(|_| "/tmp/surge_mg_labels.bin".into());
    let data = match std::fs::read(&path) {
        Ok(d) if d.len() >= 12 => d,
        _ => {
            eprintln!(
                "mg_cycle: no labels at {path}; write them with BENCH_DUMP_LABELS={path} \
                 BENCH_SKIP_TUTORIAL=1 BENCH_REPLAY_ONLY=1 BENCH_REPLAY_MG_ONLY=1 cargo bench --bench bench_stepper"
            );
            std::process::exit(1);
        }
    };
    let dim = |a: usize| u32::from_le_bytes(data[4 * a..4 * a + 4].try_into().unwrap()) as usize;
    let n = [dim(0), dim(1), dim(2)];
    if data.len() != 12 + n[0] * n[1] * n[2] {
        eprintln!("mg_cycle: {path} does not hold {n:?} labels");
        std::process::exit(1);
    }
    let labels: Vec<CellLabel> = data[12..]
        .iter()
        .map(|&x| match x {
            0 => CellLabel::Empty,
            1 => CellLabel::Fluid,
            _ => CellLabel::Solid,
        })
        .collect();
    let cell_of: Vec<u32> = (0..labels.len())
        .filter(|&c| labels[c] == CellLabel::Fluid)
        .map(|c| c as u32)
        .collect();
    let rows = cell_of.len();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let r: Vec<f64> = (0..rows)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect();
    let mut z = vec![0.0; rows];
    // MG_FRACTIONAL=1: every face weight passed explicitly (all 1), so the levels take the
    // fractional-weight (obstacle) path of the set-up and the sweeps.
    let weights: Option<[Vec<f32>; 3]> = (env("MG_FRACTIONAL", 0) == 1).then(|| {
        std::array::from_fn(|a| {
            let mut m = n;
            m[a] += 1;
            vec![1.0; m[0] * m[1] * m[2]]
        })
    });
    let (apps, reps) = (env("MG_APPLICATIONS", 12), env("MG_REPS", 5));
    let threads = env("MG_THREADS", 1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| awake(env("MG_AWAKE", 0) == 1, || {
        let mut settings = Settings::default();
        settings.coarse_cycles = env("MG_COARSE_CYCLES", settings.coarse_cycles as usize) as u32;
        settings.pre_sweeps = env("MG_PRE_SWEEPS", settings.pre_sweeps as usize) as u32;
        settings.direct = env("MG_DIRECT", settings.direct as usize) == 1;
        settings.team = env("MG_TEAM", settings.team as usize) == 1;
        settings.team_knobs = knobs_from_env();
        settings.window = env("MG_WINDOW", settings.window as usize) == 1;
        let compare = env("MG_COMPARE", 0) == 1;
        let mut mg = Multigrid::new(n, settings);
        // The result's hash, and the set-up's seconds.
        let mut run = |mg: &mut Multigrid| {
            let t = Instant::now();
            mg.setup(&labels, weights.as_ref());
            let setup = t.elapsed().as_secs_f64();
            for _ in 0..apps {
                mg.apply(&cell_of, &r, &mut z);
            }
            (z.iter().fold(0u64, |a, v| a.rotate_left(5) ^ v.to_bits()), setup)
        };
        if let Ok(sweep) = std::env::var("MG_SWEEP") {
            return sweep_knobs(&mut mg, &sweep, reps, threads, &mut run);
        }
        // Fastest time and result hash of each variant (team off, on).
        let mut best = [f64::INFINITY; 2];
        let mut best_setup = f64::INFINITY;
        let mut hashes = [0u64; 2];
        for rep in 0..reps {
            let variants: &[bool] = match (compare, rep % 2) {
                (false, _) => &[settings.team],
                (true, 0) => &[false, true],
                (true, _) => &[true, false],
            };
            for &team in variants {
                mg.settings.team = team;
                let t = Instant::now();
                let (hash, setup) = run(&mut mg);
                best_setup = best_setup.min(setup);
                let v = team as usize;
                best[v] = best[v].min(t.elapsed().as_secs_f64());
                hashes[v] = hash;
            }
        }
        if compare {
            println!(
                "mg_cycle: rayon loops {:.2} ms (hash {:016x}), team {:.2} ms (hash {:016x}): {:.3}x ({threads} threads, fastest of {reps} alternating)",
                1e3 * best[0],
                hashes[0],
                1e3 * best[1],
                hashes[1],
                best[0] / best[1]
            );
        }
        let best = best[settings.team as usize].min(best[1 - settings.team as usize]);
        let w = mg.window();
        println!(
            "mg_cycle: unknowns per level {:?}, solved exactly (level, unknowns): {:?}; window {:?} from {:?}",
            mg.unknowns(),
            mg.direct_level(),
            w.n,
            w.lo
        );
        let hash = hashes[settings.team as usize];
        println!(
            "mg_cycle: {rows} fluid cells, grid {n:?}, levels {} ({:.1} MB, {:.1} bytes per grid cell): set-up + {apps} applications, fastest of {reps}: {:.2} ms ({threads} threads; set-up alone {:.2} ms, fastest); result hash {hash:016x}",
            mg.levels(),
            mg.bytes() as f64 / 1e6,
            mg.bytes() as f64 / labels.len() as f64,
            1e3 * best,
            1e3 * best_setup
        );
        mg.settings = settings;
        profile(&mut mg, "base", threads, &mut run);
    }));
}

/// The knobs from the environment (`MG_ROW_CELLS`, ...; the defaults where unset).
fn knobs_from_env() -> TeamKnobs {
    let mut k = TeamKnobs::default();
    for key in KNOBS {
        let var = format!("MG_{}", key.to_uppercase());
        if let Ok(v) = std::env::var(&var) {
            set_knob(&mut k, key, &v).unwrap_or_else(|e| panic!("{var}: {e}"));
        }
    }
    k
}

const KNOBS: [&str; 14] = [
    "row_cells",
    "restrict_cells",
    "spins",
    "fine_members",
    "coarse_members",
    "solo_cells",
    "pad",
    "peek",
    "affinity",
    "patience",
    "min_team",
    "liquid_cuts",
    "slabs_per_thread",
    "row_cost",
];

fn set_knob(k: &mut TeamKnobs, key: &str, v: &str) -> Result<(), String> {
    let n: usize = v
        .trim()
        .parse()
        .map_err(|_| format!("{v:?} is no number"))?;
    match key.trim() {
        "row_cells" => k.row_cells = n,
        "restrict_cells" => k.restrict_cells = n,
        "spins" => k.spins = n as u32,
        "fine_members" => k.fine_members = n,
        "coarse_members" => k.coarse_members = n,
        "solo_cells" => k.solo_cells = n,
        "pad" => k.pad = n,
        "peek" => k.peek = n == 1,
        "affinity" => k.affinity = n == 1,
        "patience" => k.patience = n as u32,
        "min_team" => k.min_team = n,
        "liquid_cuts" => k.liquid_cuts = n == 1,
        "slabs_per_thread" => k.slabs_per_thread = n,
        "row_cost" => k.row_cost = n as u64,
        other => return Err(format!("no knob {other:?} (knobs: {KNOBS:?})")),
    }
    Ok(())
}

/// `MG_SWEEP`: the base knobs and each configuration of `sweep` in turn, `reps` times.
fn sweep_knobs(
    mg: &mut Multigrid,
    sweep: &str,
    reps: usize,
    threads: usize,
    run: &mut impl FnMut(&mut Multigrid) -> (u64, f64),
) {
    let base = mg.settings;
    let mut configs = vec![("base".to_string(), base)];
    for c in sweep.split(';').map(str::trim).filter(|c| !c.is_empty()) {
        let mut s = base;
        for kv in c.split(',') {
            let (key, v) = kv
                .split_once('=')
                .unwrap_or_else(|| panic!("MG_SWEEP: {kv:?}"));
            if key.trim() == "window" {
                // Not a team knob: the levels over the liquid's box (1) or the whole grid (0).
                s.window = v.trim() == "1";
                continue;
            }
            set_knob(&mut s.team_knobs, key, v).unwrap_or_else(|e| panic!("MG_SWEEP: {e}"));
        }
        configs.push((c.to_string(), s));
    }
    let nc = configs.len();
    let mut times = vec![Vec::new(); nc];
    let mut setups = vec![Vec::new(); nc];
    let mut hashes = vec![0u64; nc];
    for rep in 0..reps {
        for i in 0..nc {
            let c = (i + rep) % nc;
            mg.settings = configs[c].1;
            let t = Instant::now();
            let setup;
            (hashes[c], setup) = run(mg);
            times[c].push(t.elapsed().as_secs_f64());
            setups[c].push(setup);
        }
    }
    let median = |t: &mut Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let base_median = median(&mut times[0]);
    for (c, (name, _)) in configs.iter().enumerate() {
        let m = median(&mut times[c]);
        let setup = median(&mut setups[c]);
        println!(
            "mg_cycle sweep {threads:>2} threads: {name:<40} fastest {:.3} ms, median {:.3} ms ({:.3}x base; set-up {:.3}), hash {:016x}{}",
            1e3 * times[c][0],
            1e3 * m,
            base_median / m,
            1e3 * setup,
            hashes[c],
            if hashes[c] == hashes[0] {
                ""
            } else {
                " DIFFERS"
            }
        );
    }
    let all = std::env::var("MG_PROFILE_ALL").is_ok_and(|v| v == "1");
    for (name, s) in configs.iter().take(if all { nc } else { 1 }) {
        mg.settings = *s;
        profile(mg, name, threads, run);
    }
}

/// `MG_PROFILE`: where the team's cycle spends its time (`--features mg-profile`).
#[cfg(feature = "mg-profile")]
fn profile(
    mg: &mut Multigrid,
    name: &str,
    threads: usize,
    run: &mut impl FnMut(&mut Multigrid) -> (u64, f64),
) {
    use surge::sim::pressure::multigrid::profile;
    let level = env("MG_PROFILE", 0);
    if level == 0 {
        return;
    }
    let (apps, reps) = (env("MG_APPLICATIONS", 12), env("MG_PROFILE_REPS", 3));
    run(mg);
    let phases = mg.team_phase_count();
    if phases == 0 {
        println!("mg_cycle profile [{name}]: the cycle does not run on a team ({threads} thread)");
        return;
    }
    let tick = profile::ticks_per_us();
    profile::arm(threads, phases, apps * reps);
    let t = Instant::now();
    let mut setup = 0.0;
    for _ in 0..reps {
        setup += run(mg).1;
    }
    let wall = t.elapsed().as_secs_f64() / reps as f64;
    let setup = setup / reps as f64;
    let rec = profile::disarm().expect("armed");
    let (cycles, ticks) = rec.cycles();
    println!(
        "mg_cycle profile [{name}], {threads} threads, {:.2} ms per set-up + {apps} applications while recording: set-up {:.2} ms, the team's cycles {:.2} ms, the rest (scatter, gather, ...) {:.2} ms ({tick:.0} ticks per µs):",
        1e3 * wall,
        1e3 * setup,
        ticks as f64 / tick / 1e3 / (cycles as f64 / apps as f64),
        1e3 * (wall - setup) - ticks as f64 / tick / 1e3 / (cycles as f64 / apps as f64)
    );
    if let Err(e) = rec.check() {
        println!("mg_cycle profile [{name}]: the records are inconsistent: {e}");
    }
    print!("{}", profile::report(&rec, apps, tick, level >= 2));
}

#[cfg(not(feature = "mg-profile"))]
fn profile(_: &mut Multigrid, _: &str, _: usize, _: &mut impl FnMut(&mut Multigrid) -> (u64, f64)) {
    if env("MG_PROFILE", 0) != 0 {
        println!("mg_cycle: MG_PROFILE needs `--features mg-profile`");
    }
}

/// Runs `work` on this worker while (`on`) the pool's other workers take its jobs and spin
/// between them (the stepper's [`with_workers_awake`]).
fn awake(on: bool, work: impl FnOnce() + Send) {
    if on { with_workers_awake(work) } else { work() }
}
