//! The team of threads (`team.rs`) against the rayon loops: the same bits.

use super::*;

/// Labels of an `n` grid (outer layer solid): fluid where `fluid(i, j, k)`, else air; and
/// the fluid cells in order (the rows).
fn grid(n: [usize; 3], fluid: impl Fn(usize, usize, usize) -> bool) -> (Vec<CellLabel>, Vec<u32>) {
    let mut labels = vec![Empty; n[0] * n[1] * n[2]];
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                let c = i + n[0] * (j + n[1] * k);
                let wall = [i, j, k].iter().zip(n).any(|(&x, m)| x == 0 || x + 1 == m);
                labels[c] = if wall {
                    Solid
                } else if fluid(i, j, k) {
                    Fluid
                } else {
                    Empty
                };
            }
        }
    }
    let rows = (0..labels.len()).filter(|&c| labels[c] == Fluid);
    let cell_of = rows.map(|c| c as u32).collect();
    (labels, cell_of)
}

/// Every cycle the team runs (W- and V-cycle, with the exact coarse solve or the coarsest
/// level's sweeps) gives the bits of the rayon loops on 1 thread, with 1, 2, 3, 5 and 16
/// threads, over two applications, on: a thin layer of liquid (3 planes in z: too few for
/// slabs, so its stages run by rows), a deep column (slab wavefronts, groups of stages), and
/// the random free-surface problem with fractional weights. Bit equality, no tolerance: the
/// team changes which thread computes a cell, never its operations. The plans are checked to
/// take the rows, slabs and solo paths, so that each is compared. The same with the team's
/// knobs away from their defaults ([`TeamKnobs`]): tiny stages and restrictions by rows,
/// padded counters, peeking, no spins, tasks owned by members stolen at once (no patience) or
/// claimed by whoever comes (no affinity), at most 2 members on the coarse levels or 1 on the
/// finest, the coarse levels' visits as one task each (run by one member, phase by phase), and
/// a team of one thread.
#[test]
fn team_cycle_equals_rayon_loops() {
    let thin = grid([120, 100, 12], |_, j, k| k <= 3 && j < 90);
    let deep = grid([40, 30, 90], |i, _, k| i < 22 && k < 80);
    let p = Problem::random(9, [70, 60, 40], true);
    let random = (p.labels.clone(), p.cell_of.clone());
    let mut paths = std::collections::BTreeSet::new();
    for (name, (labels, cell_of), n, fractional) in [
        ("thin", &thin, [120, 100, 12], false),
        ("deep", &deep, [40, 30, 90], false),
        ("random", &random, p.n, true),
    ] {
        let r: Vec<f64> = (0..cell_of.len()).map(|i| rnd(3, i as u64) - 0.5).collect();
        let odd = TeamKnobs {
            row_cells: 64,
            restrict_cells: 32,
            spins: 0,
            coarse_members: 2,
            solo_cells: 2000,
            pad: 128,
            peek: true,
            affinity: true,
            patience: 0,
            min_team: 1,
            liquid_cuts: true,
            slabs_per_thread: 1,
            row_cost: 1024,
            ..TeamKnobs::default()
        };
        let solo = TeamKnobs {
            fine_members: 1,
            solo_cells: usize::MAX,
            affinity: false,
            ..TeamKnobs::default()
        };
        for (coarse_cycles, direct) in [(2, true), (1, true), (2, false)] {
            let run = |threads: usize, team: bool, team_knobs: TeamKnobs| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    let s = Settings {
                        coarse_cycles,
                        direct,
                        team,
                        team_knobs,
                        ..Settings::default()
                    };
                    let mut mg = Multigrid::new(n, s);
                    mg.setup(labels, fractional.then_some(&p.weights));
                    let mut z = vec![0.0; cell_of.len()];
                    let mut z2 = vec![0.0; cell_of.len()];
                    mg.apply(cell_of, &r, &mut z);
                    mg.apply(cell_of, &z, &mut z2);
                    let bits = z.iter().chain(&z2).map(|x| x.to_bits()).collect::<Vec<_>>();
                    (bits, mg.team_waves())
                })
            };
            let (want, _) = run(1, false, TeamKnobs::default());
            assert!(want.iter().any(|&x| f64::from_bits(x) != 0.0));
            for threads in [1, 2, 3, 5, 16] {
                for knobs in [TeamKnobs::default(), odd, solo] {
                    let (got, waves) = run(threads, true, knobs);
                    let what = format!("{name}, {coarse_cycles} coarse cycles, direct {direct}");
                    assert!(
                        got == want,
                        "{what}: team on {threads} threads, {knobs:?} differs"
                    );
                    paths.extend(waves);
                }
            }
        }
    }
    for path in ["rows", "slabs", "solo"] {
        assert!(
            paths.contains(path),
            "no level took the team's {path} path: {paths:?}"
        );
    }
}

/// The profile (`--features mg-profile`) records every phase of every application of a team of
/// 3 on the random problem: each phase's done-counter time, its members' tasks adding up to
/// its tasks; nothing once disarmed, nor a team of another size.
#[cfg(feature = "mg-profile")]
#[test]
fn profile_records_every_phase() {
    use super::super::profile;
    let p = Problem::random(9, [70, 60, 40], true);
    let r: Vec<f64> = (0..p.cell_of.len())
        .map(|i| rnd(3, i as u64) - 0.5)
        .collect();
    let mut z = vec![0.0; p.cell_of.len()];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    pool.install(|| {
        let mut mg = Multigrid::new(p.n, Settings::default());
        mg.setup(&p.labels, Some(&p.weights));
        mg.apply(&p.cell_of, &r, &mut z);
        let phases = mg.team_phase_count();
        assert!(phases > 3, "{phases} phases");
        profile::arm(4, phases, 2);
        mg.apply(&p.cell_of, &r, &mut z);
        assert_eq!(
            profile::disarm().unwrap().check(),
            Ok(0),
            "another team size"
        );
        profile::arm(3, phases, 2);
        for _ in 0..3 {
            mg.apply(&p.cell_of, &r, &mut z);
        }
        let rec = profile::disarm().unwrap();
        assert_eq!(rec.check(), Ok(2 * phases));
        assert_eq!(rec.cycles().0, 2);
    });
}
