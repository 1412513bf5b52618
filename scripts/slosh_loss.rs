//! Where the standing wave of `scripts/sloshing.rs` loses its amplitude (issue 19):
//! `cargo bench --bench slosh_loss`. One line per run: the amplitude loss per period from the
//! centre-of-mass signal (the tests' measure) and from the particles' kinetic energy, whose
//! peaks (flat surface, `t = n T / 2`) give the amplitude ratio as the square root of their
//! ratio, independent of where the particles sit (so jitter in the centre of mass does not
//! enter); `ke0` uses the peaks from `t = 0` (the seeded field, before any projection), `ke1`
//! those from `t = T / 2` on.
//!
//! Settings: `SOLVER` (JSON members of the scene's `solver` section laid over
//! `"free_surface": "ghost_fluid", "transfer": "apic"`, e.g.
//! `SOLVER='"volume_correction": 0'`), `CELLS` (cells per wavelength, default `64`), `SEEDS`
//! (jitter seeds, default `1,2,3,4,5`), `PERIODS` (default 3). Prints each seed and the mean.
//! `scripts/sloshing.rs` also reads `SLOSHING_AMP` (amplitude factor), `SLOSHING_JITTER` (seeding
//! jitter factor, 0 a regular lattice) and `SLOSHING_PPC_SPACING` (finer seeding).
#[path = "sloshing.rs"]
#[allow(dead_code)]
mod sloshing;
use surge::scene::SolverSettings;
use surge::sim::Simulation;

fn main() {
    let env = |k: &str| std::env::var(k).ok();
    let extra = env("SOLVER").unwrap_or_default();
    let mut members: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"free_surface": "ghost_fluid", "transfer": "apic"}"#).unwrap();
    let over: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&format!("{{{extra}}}")).expect("SOLVER members");
    members.extend(over);
    let solver: SolverSettings =
        serde_json::from_value(serde_json::Value::Object(members)).expect("solver settings");
    let cells: u32 = env("CELLS").map(|c| c.parse().unwrap()).unwrap_or(64);
    let periods: f64 = env("PERIODS").map(|c| c.parse().unwrap()).unwrap_or(3.0);
    let seeds: Vec<u64> = env("SEEDS")
        .map(|s| s.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_else(|| (1..=5).collect());
    let mut sums = [0.0f64; 5];
    for &seed in &seeds {
        let per_period = 40.0;
        let (s, p, theory) = sloshing::tank(cells, solver.clone(), per_period, periods, seed);
        let mut sim = Simulation::new(&s, p, 0).expect("sloshing scene");
        let x0 = sloshing::centre_x(sim.particles());
        let ke = |sim: &Simulation| {
            let p = sim.particles();
            let mut e = 0.0f64;
            for i in 0..p.len() {
                for a in 0..3 {
                    let v = p.vel[a][i] as f64;
                    e += 0.5 * v * v;
                }
            }
            e / p.len() as f64
        };
        // The particles' velocity projected on the mode's shape (least squares): the mode's
        // velocity amplitude, blind to grid-scale noise that the kinetic energy counts.
        let (h, k) = (s.domain.cell_size, std::f64::consts::PI);
        let depth = 0.5;
        let mode = |sim: &Simulation| {
            let p = sim.particles();
            let (mut num, mut den) = (0.0f64, 0.0f64);
            for i in 0..p.len() {
                let x = p.pos[0][i] as f64 - h;
                let z = p.pos[2][i] as f64 - h;
                let sh = (k * depth).sinh();
                let fu = -(k * x).sin() * (k * z).cosh() / sh;
                let fw = (k * x).cos() * (k * z).sinh() / sh;
                num += p.vel[0][i] as f64 * fu + p.vel[2][i] as f64 * fw;
                den += fu * fu + fw * fw;
            }
            num / den
        };
        let mut xs = vec![(0.0, 0.0)];
        let mut kes = vec![(0.0, ke(&sim))];
        let mut modes = vec![(0.0, mode(&sim))];
        for _ in 0..s.time.frames {
            sim.advance_frame();
            let t = s.frame_time(sim.frame());
            xs.push((t, sloshing::centre_x(sim.particles()) - x0));
            kes.push((t, ke(&sim)));
            modes.push((t, mode(&sim)));
        }
        let r = sloshing::analyse(theory, &xs);
        // Kinetic-energy peaks near t = n T / 2 (parabola through the largest sample of each
        // window of half a period and its neighbours).
        let half = 0.5 * r.period;
        let peaks = peaks_at_half_periods(half, &kes);
        let k = peaks.len() - 1;
        let loss = |a: usize| 1.0 - (peaks[k] / peaks[a]).powf(1.0 / (k - a) as f64);
        let (ke0, ke1) = (loss(0), loss(1));
        let mabs: Vec<(f64, f64)> = modes.iter().map(|&(t, q)| (t, q.abs())).collect();
        let mp = peaks_at_half_periods(half, &mabs);
        let km = mp.len() - 1;
        let mode_loss = 1.0 - (mp[km] / mp[1]).powf(2.0 / (km - 1) as f64);
        println!(
            "seed {seed}: period {:+.2}%  loss/period: centre of mass {:.2}%  ke0 {:.2}%  ke1 {:.2}%  mode {:.2}%  (mode peaks {:?})",
            100.0 * r.period_error(),
            100.0 * r.loss_per_period,
            100.0 * ke0,
            100.0 * ke1,
            100.0 * mode_loss,
            mp.iter().map(|p| format!("{:.4}", p)).collect::<Vec<_>>()
        );
        for (s, v) in
            sums.iter_mut()
                .zip([r.period_error(), r.loss_per_period, ke0, ke1, mode_loss])
        {
            *s += v;
        }
    }
    let n = seeds.len() as f64;
    println!(
        "MEAN {cells} cells SOLVER=[{extra}]: period {:+.2}%  loss/period: centre of mass {:.2}%  ke0 {:.2}%  ke1 {:.2}%  mode {:.2}%",
        100.0 * sums[0] / n,
        100.0 * sums[1] / n,
        100.0 * sums[2] / n,
        100.0 * sums[3] / n,
        100.0 * sums[4] / n
    );
}

/// The peaks of `sig` near `t = n half` (`n = 0, 1, ...`): the sample at `t = 0`, then a
/// parabola through the largest sample within half a `half` of each `n half` and its
/// neighbours.
fn peaks_at_half_periods(half: f64, sig: &[(f64, f64)]) -> Vec<f64> {
    let mut peaks = vec![sig[0].1];
    let mut n = 1.0;
    while (n + 0.5) * half <= sig[sig.len() - 1].0 {
        let inside: Vec<usize> = (1..sig.len() - 1)
            .filter(|&i| (sig[i].0 - n * half).abs() < 0.5 * half)
            .collect();
        let m = *inside
            .iter()
            .max_by(|&&i, &&j| sig[i].1.total_cmp(&sig[j].1))
            .unwrap();
        peaks.push(sloshing::parabolic_peak(
            sig[m - 1].1,
            sig[m].1,
            sig[m + 1].1,
        ));
        n += 1.0;
    }
    peaks
}
