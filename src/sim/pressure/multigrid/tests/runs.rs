//! The table of the CG rows' segments (`runs.rs`) against a per-row derivation: every row's
//! slot on the finest level, the drops' rows, any range of rows, and a table used with a
//! system built after it or with levels set up again.

use super::super::super::reduce::CHUNK;
use super::super::super::{Preconditioning, PressureSolver};
use super::super::runs::{Runs, each_run};
use super::drops::{dims, solver};
use super::*;

/// On problems of several chunks of rows (random balls, holes and drops, with unit and
/// fractional weights; the drops apart and every piece in the cycle), with the table and
/// without room for it (the iterator then finds the segments itself), the segments
/// over any range of rows (the tasks' chunks, and ranges starting and ending anywhere) cover
/// the range's rows once, in order; a drop's rows come as `None` and only they; every other
/// row's slot, `base[i % 2] + i / 2` at its cell `i = i0 + t`, is the one found from its own
/// cell (the window's `(i, j, k)`, the layout's range holding `i`) and, without drops, the
/// per-row index's ([`Multigrid::map_rows`]); each segment's cells follow each other along x.
#[test]
fn rows_table_gives_each_rows_slot_and_the_drops() {
    let mut with_drops = 0;
    let cases = [(21u64, false, 256), (22, true, 256), (23, false, 0)];
    for ((seed, fractional, drop_cells), room) in
        cases.into_iter().flat_map(|c| [(c, true), (c, false)])
    {
        let p = Problem::random(seed, [56, 40, 31], fractional);
        let mut s = solver(&p, fractional, drop_cells);
        if !room {
            // No room in the table: the iterator finds the segments itself.
            let Preconditioning::Multigrid(m) = &mut s.preconditioner else {
                unreachable!()
            };
            m.runs = Runs::with_room(p.labels.len(), 0);
            m.runs.build(&s.sys, &m.levels[0], &m.window, &m.drops);
        }
        let nf = s.sys.nf;
        assert!(
            nf > 3 * CHUNK,
            "seed {seed}: {nf} rows, fewer than 3 chunks"
        );
        let sys = &s.sys;
        let Preconditioning::Multigrid(m) = &mut s.preconditioner else {
            unreachable!()
        };
        // The per-row index (it needs every row inside the window, which the drops, air to
        // the cycle, need not be).
        if drop_cells == 0 {
            m.map_rows(&sys.cell_of[..nf]);
        }
        assert_eq!(m.runs.fits(), room, "seed {seed}");
        let drops = (0..nf).filter(|&r| m.drops.holds(r)).count();
        assert_eq!(drops > 0, drop_cells > 0, "seed {seed}: {drops} drop rows");
        with_drops += drops;
        let chunks: Vec<_> = (0..nf.div_ceil(CHUNK))
            .map(|c| c * CHUNK..((c + 1) * CHUNK).min(nf))
            .collect();
        let odd = [
            0..nf,
            1..nf,
            63..4097,
            4095..4096,
            CHUNK..CHUNK + 1,
            nf - 5..nf,
            7..7,
        ];
        for rows in chunks.into_iter().chain(odd) {
            let mut next = rows.start;
            let mut segs = Vec::new();
            each_run!(m.runs_of(sys, rows.clone()), |run, at| {
                segs.push((run, at));
            });
            for (run, at) in segs {
                assert!(
                    run.start == next && run.end > run.start,
                    "{rows:?}: {run:?}"
                );
                next = run.end;
                match at {
                    None => assert!(run.clone().all(|r| m.drops.holds(r)), "{run:?}"),
                    Some((i0, base)) => {
                        for (t, r) in run.clone().enumerate() {
                            let i = i0 + t;
                            assert!(!m.drops.holds(r), "row {r} is a drop's");
                            let slot = base[i % 2] + i / 2;
                            // Cell by cell: the window's (i, j, k), the layout's range.
                            let [ic, j, k] = m.window.local(sys.cell_of[r] as usize);
                            assert_eq!(ic, i, "row {r}");
                            let bases = m.levels[0].bases(j, k, i);
                            assert_eq!(slot, bases[i % 2] + i / 2, "row {r}");
                            if drop_cells == 0 {
                                assert_eq!(slot, m.split_rows[r] as usize, "row {r}");
                            }
                            assert_eq!(sys.cell_of[r], sys.cell_of[run.start] + t as u32);
                        }
                    }
                }
            }
            assert_eq!(next, rows.end, "{rows:?} not covered");
        }
    }
    assert!(with_drops > 0);
}

/// Walks every row's segment of `s`'s table (what each CG pass does).
fn walk(s: &PressureSolver) -> usize {
    let Preconditioning::Multigrid(m) = &s.preconditioner else {
        unreachable!()
    };
    let mut n = 0;
    each_run!(m.runs_of(&s.sys, 0..s.sys.nf), |_run, _at| {
        n += 1;
    });
    n
}

/// Walks the table of a set-up problem, spoils it with `spoil`, and walks it again.
fn walk_after(seed: u64, spoil: impl FnOnce(&mut PressureSolver, &Problem)) {
    let p = Problem::random(seed, [20, 17, 15], false);
    let mut s = solver(&p, false, 256);
    assert!(walk(&s) > 0);
    spoil(&mut s, &p);
    walk(&s);
}

/// A table read with the system rebuilt since its set-up (the rows may have changed) panics
/// rather than giving another system's slots.
#[test]
#[should_panic(expected = "not this system's")]
fn rows_table_of_another_system_panics() {
    walk_after(24, |s, p| s.sys.build(&dims(p.n), &p.labels));
}

/// The levels set up again (`Multigrid::setup`, as a benchmark does) without the table (the
/// slots may have moved): reading it panics.
#[test]
#[should_panic(expected = "not this system's")]
fn rows_table_of_levels_set_up_again_panics() {
    walk_after(25, |s, p| {
        let Preconditioning::Multigrid(m) = &mut s.preconditioner else {
            unreachable!()
        };
        m.setup(&p.labels, None);
    });
}
