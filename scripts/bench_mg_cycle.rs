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
//! `MG_PRE_SWEEPS`, `MG_DIRECT` (0: no exact coarse solve), `MG_TEAM` (0: a rayon loop per phase
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

use std::time::Instant;
use surge::sim::mac_grid::CellLabel;
use surge::sim::pressure::Multigrid;
use surge::sim::pressure::multigrid::Settings;
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
        let compare = env("MG_COMPARE", 0) == 1;
        let mut mg = Multigrid::new(n, settings);
        // Fastest time and result hash of each variant (team off, on).
        let mut best = [f64::INFINITY; 2];
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
                mg.setup(&labels, weights.as_ref());
                for _ in 0..apps {
                    mg.apply(&cell_of, &r, &mut z);
                }
                let v = team as usize;
                best[v] = best[v].min(t.elapsed().as_secs_f64());
                hashes[v] = z.iter().fold(0u64, |a, v| a.rotate_left(5) ^ v.to_bits());
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
        println!(
            "mg_cycle: unknowns per level {:?}, solved exactly (level, unknowns): {:?}",
            mg.unknowns(),
            mg.direct_level()
        );
        let hash = z.iter().fold(0u64, |a, v| a.rotate_left(5) ^ v.to_bits());
        println!(
            "mg_cycle: {rows} fluid cells, grid {n:?}, levels {} ({:.1} MB, {:.1} bytes per grid cell): set-up + {apps} applications, fastest of {reps}: {:.2} ms ({threads} threads); result hash {hash:016x}",
            mg.levels(),
            mg.bytes() as f64 / 1e6,
            mg.bytes() as f64 / labels.len() as f64,
            1e3 * best
        );
    }));
}

/// Runs `work` on this worker while (`on`) the pool's other workers take its jobs and spin
/// between them (the stepper's [`with_workers_awake`]).
fn awake(on: bool, work: impl FnOnce() + Send) {
    if on { with_workers_awake(work) } else { work() }
}
