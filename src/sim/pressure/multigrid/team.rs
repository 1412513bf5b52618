//! The cycle on a team of threads: one rayon broadcast per application, spin barriers between
//! its phases, a static share of each phase per thread.
//!
//! With a rayon parallel loop per phase, every phase of a cycle is a fork and a join: on the
//! 1M dam break's replayed system at 2 threads 21 of them per application (7 slab and boundary
//! passes of the finest and first coarse levels' smoothings, 3 restrictions, ...), at 16
//! threads about 50 (the finest and first coarse levels there go stage by stage), each paying
//! a worker's wake-up when the serial work between phases (the small levels, the exact solve)
//! let the workers fall asleep. Here every thread of the pool runs the same cycle
//! ([`Cycle::run`]) with the same plan, and takes its own share of each phase: slabs of a
//! wavefront (`slabs.rs`: a contiguous block of the plan's slabs per thread, then a block of
//! its boundaries), rows of a stage (a level too shallow for a slab per thread, or too thin
//! in z for slabs at all: rows `(j, k)` cut where the liquid's cells fall evenly, so a flat
//! layer of liquid shares out as well as a deep one), rows of a restriction; the small levels
//! and the exact solve run on thread 0 alone. A sense-reversing spin barrier (falling back to
//! yielding the core, for machines with more threads than free cores) separates two phases,
//! except two in a row that thread 0 runs alone (the whole visit of a small level: none).
//!
//! Every cell gets the same operations in the same order as on the rayon path (the same
//! stages, each plane or row written by one thread between two barriers, reading what the
//! stages before it wrote), so the bits do not depend on the schedule or the thread count
//! (McAdams, Sifakis and Teran 2010 run each pass of the cycle as a parallel loop over the
//! grid; the team and its barriers are this project's).

use super::direct::Direct;
use super::kernels::restrict_rows;
use super::level::Level;
use super::slabs::{self, MAX_SLABS, Plan, group_size, plan_spans, slab_plan, stage_groups};
use super::wavefront::{Extra, ProlongLine, Stage, Stages, Sweep, liquid_planes};
use super::{Multigrid, Settings, SyncPtr};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Most threads of a team (more: the rayon path).
pub(super) const MAX_THREADS: usize = 64;
/// Most levels (more: the rayon path).
pub(super) const MAX_LEVELS: usize = 16;
/// Most groups of stages of a slab wavefront (more: rows).
const MAX_GROUPS: usize = 4;
/// Cells (and row costs) per thread at least of a stage run by rows, and of a restriction.
const ROW_CELLS: usize = 4096;
const RESTRICT_CELLS: usize = 1024;
/// Spins of a barrier's wait before it yields the core between looks.
const SPINS: u32 = 256;

/// One slab wavefront of a group of stages: its size and slabs ([`slab_plan`]).
#[derive(Clone, Copy)]
struct Group {
    size: usize,
    slabs: usize,
    starts: [u32; MAX_SLABS + 1],
}

/// How a level's smoothing runs on the team.
#[derive(Clone, Copy)]
enum Wave {
    /// No liquid.
    Empty,
    /// One wavefront on thread 0.
    Solo,
    /// Stage by stage, each over the threads' rows.
    Rows,
    /// Groups of stages, each a slab wavefront.
    Slabs(usize, [Group; MAX_GROUPS]),
}

/// The team's plan of one level, for one thread count (decided at the first application after
/// each set-up).
#[derive(Clone, Copy)]
pub(super) struct LevelPlan {
    wave: Wave,
    planes: (usize, usize),
    /// Rows `rows[t] .. rows[t + 1]` for thread `t < rows_active` of a stage run by rows.
    rows: [u32; MAX_THREADS + 1],
    rows_active: usize,
    /// The same for the restriction into this level (its rows).
    restrict: [u32; MAX_THREADS + 1],
    restrict_active: usize,
}

/// The plans of every level into `out` (its capacity kept from one set-up to the next):
/// levels below `last` smooth with `stages` stages.
fn plan(
    levels: &mut [Level],
    last: usize,
    stages: usize,
    threads: usize,
    out: &mut Vec<LevelPlan>,
) {
    out.clear();
    for (l, lv) in levels.iter_mut().enumerate() {
        let mut p = LevelPlan {
            wave: Wave::Empty,
            planes: (0, 0),
            rows: [0; MAX_THREADS + 1],
            rows_active: 1,
            restrict: [0; MAX_THREADS + 1],
            restrict_active: 1,
        };
        p.restrict_active = partition(lv, RESTRICT_CELLS, threads, &mut p.restrict);
        if l < last {
            p.rows_active = partition(lv, ROW_CELLS, threads, &mut p.rows);
            p.wave = wave(lv, stages, threads, &mut p);
        }
        out.push(p);
    }
}

/// The smoothing plan of `lv`: the rayon path's slab plan and groups where it has a slab per
/// thread, else by rows where they give each of at least 2 threads [`ROW_CELLS`], else solo.
fn wave(lv: &mut Level, stages: usize, threads: usize, p: &mut LevelPlan) -> Wave {
    let Some((k0, k1)) = liquid_planes(lv) else {
        return Wave::Empty;
    };
    p.planes = (k0, k1);
    let rows = if p.rows_active > 1 {
        Wave::Rows
    } else {
        Wave::Solo
    };
    let (plan, starts) = slab_plan(lv, k0, k1, stages, threads);
    let groups = lv.groups_memo(stages, threads, |lv| {
        stage_groups(lv.n, &lv.spans, (k0, k1), stages, threads, plan)
    });
    let empty = Group {
        size: 0,
        slabs: 0,
        starts: [0; MAX_SLABS + 1],
    };
    let mut gs = [empty; MAX_GROUPS];
    match (plan, groups) {
        (Plan::Slabs(slabs), None) => {
            gs[0] = Group {
                size: stages,
                slabs,
                starts,
            };
            Wave::Slabs(1, gs)
        }
        (_, Some(g)) if g <= MAX_GROUPS => {
            for (i, e) in gs[..g].iter_mut().enumerate() {
                let size = group_size(stages, g, i);
                let (Plan::Slabs(slabs), starts) =
                    plan_spans(lv.n, &lv.spans, k0, k1, size, threads)
                else {
                    return rows;
                };
                *e = Group {
                    size,
                    slabs,
                    starts,
                };
            }
            Wave::Slabs(g, gs)
        }
        _ => rows,
    }
}

/// Cuts `lv`'s rows into `active` runs of about equal cost (a row's fluid span plus 8 cells),
/// `active` the threads that get at least `cells` each (at least 1): `out[t] .. out[t + 1]`.
fn partition(lv: &Level, cells: usize, threads: usize, out: &mut [u32; MAX_THREADS + 1]) -> usize {
    let cost = |r: usize| {
        let [a, b] = lv.spans[r];
        if a < b { (b - a) as u64 + 8 } else { 0 }
    };
    let rows = lv.spans.len();
    let total: u64 = (0..rows).map(cost).sum();
    let active = (total as usize / cells).clamp(1, threads);
    let (mut r, mut acc) = (0, 0u64);
    for t in 1..active {
        let target = total * t as u64 / active as u64;
        while r < rows && acc < target {
            acc += cost(r);
            r += 1;
        }
        out[t] = r as u32;
    }
    out[0] = 0;
    out[active] = rows as u32;
    active
}

/// A sense-reversing barrier of `threads` threads that spins, then yields the core.
struct Barrier {
    arrived: AtomicUsize,
    generation: AtomicUsize,
    threads: usize,
}

impl Barrier {
    fn wait(&self) {
        let g = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(g.wrapping_add(1), Ordering::Release);
            return;
        }
        let mut spins = 0;
        while self.generation.load(Ordering::Acquire) == g {
            if spins < SPINS {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// One thread of the team: its index, and what the last phase was (0: none yet, 1: thread 0
/// alone, 2: every thread), which decides whether the next phase waits at the barrier.
struct Team<'a> {
    me: usize,
    barrier: &'a Barrier,
    prev: Cell<u8>,
}

impl Team<'_> {
    /// A phase that every thread runs its share of.
    fn all(&self, f: impl FnOnce(usize)) {
        if self.prev.get() != 0 {
            self.barrier.wait();
        }
        f(self.me);
        self.prev.set(2);
    }

    /// A phase that thread 0 runs alone.
    fn solo(&self, f: impl FnOnce()) {
        if self.prev.get() == 2 {
            self.barrier.wait();
        }
        if self.me == 0 {
            f();
        }
        self.prev.set(1);
    }
}

/// What every thread of the team reads: the levels, their `u`, `b`, `r` (written through
/// these pointers only, each cell by one thread between two barriers), the exact solve (thread
/// 0's alone) and the plans.
struct Cycle<'a> {
    levels: &'a [Level],
    ptrs: [[SyncPtr<f32>; 3]; MAX_LEVELS],
    direct: SyncPtr<Direct>,
    direct_level: Option<usize>,
    plans: &'a [LevelPlan],
    s: Settings,
    last: usize,
    threads: usize,
}

impl Cycle<'_> {
    /// [`Multigrid::cycle`] on level `l`, every thread of the team.
    fn run(&self, t: &Team, l: usize, from_zero: bool) {
        let s = &self.s;
        let lv = &self.levels[l];
        let [u, _, r] = self.ptrs[l];
        if l == self.last && self.direct_level.is_some() {
            // SAFETY: thread 0 alone, between barriers: nothing else touches the solve or the
            // level's `u`.
            t.solo(|| unsafe { (*self.direct.0).solve_into(lv, u.0) });
            return;
        }
        if l == self.last {
            let sw = Sweep::shared(lv, u.0, r.0);
            let planes = liquid_planes(lv);
            t.solo(|| {
                for (first, zero) in [(0, true), (1, false)] {
                    let st = Stages::new(s.coarsest_sweeps as usize, first, zero, Extra::None);
                    if let Some(planes) = planes {
                        // SAFETY: thread 0 alone.
                        unsafe { slabs::serial(&sw, &|h| st.at(h), st.count, planes) };
                    }
                }
            });
            return;
        }
        self.sweeps(
            t,
            l,
            Stages::new(s.pre_sweeps as usize, 0, from_zero, Extra::Residual),
        );
        self.restrict(t, l);
        self.run(t, l + 1, true);
        if l + 1 < self.last {
            for _ in 1..s.coarse_cycles {
                self.run(t, l + 1, false);
            }
        }
        let coarse = &self.levels[l + 1];
        self.sweeps(
            t,
            l,
            Stages::new(s.pre_sweeps as usize, 1, false, Extra::Prolong(coarse)),
        );
    }

    /// A smoothing of level `l` (its wavefront's stages `st`).
    fn sweeps(&self, t: &Team, l: usize, st: Stages) {
        let p = &self.plans[l];
        let [u, _, r] = self.ptrs[l];
        let sw = Sweep::shared(&self.levels[l], u.0, r.0);
        let (planes, n) = (p.planes, self.threads);
        // SAFETY (every stage call): as the rayon path's (`slabs::run`): between two barriers
        // each thread writes its own slabs' planes, boundaries' planes or rows, and reads only
        // what the phases before the barrier wrote (a stage by rows reads the other colour,
        // or `u` for the residual, or the coarse level, which no one writes in that phase).
        match p.wave {
            Wave::Empty => {}
            Wave::Solo => t.solo(|| unsafe { slabs::serial(&sw, &|h| st.at(h), st.count, planes) }),
            Wave::Rows => {
                for h in 0..st.count {
                    t.all(|me| {
                        if me < p.rows_active {
                            let rows = p.rows[me] as usize..p.rows[me + 1] as usize;
                            unsafe { sw.rows(st.at(h), rows) };
                        }
                    });
                }
            }
            Wave::Slabs(groups, gs) => {
                let mut h0 = 0;
                for g in &gs[..groups] {
                    let stage = |h: usize| st.at(h0 + h);
                    let start = |s: usize| g.starts[s] as usize;
                    t.all(|me| {
                        for s in me * g.slabs / n..(me + 1) * g.slabs / n {
                            let slab = (start(s), start(s + 1));
                            unsafe { slabs::trapezoid(&sw, &stage, g.size, slab) };
                        }
                    });
                    t.all(|me| {
                        for s in me * (g.slabs + 1) / n..(me + 1) * (g.slabs + 1) / n {
                            unsafe { slabs::boundary(&sw, &stage, g.size, start(s), planes) };
                        }
                    });
                    h0 += g.size;
                }
            }
        }
    }

    /// The restriction of level `l`'s residual into level `l + 1`'s `b`.
    fn restrict(&self, t: &Team, l: usize) {
        let (fine, coarse, p) = (&self.levels[l], &self.levels[l + 1], &self.plans[l + 1]);
        let b = self.ptrs[l + 1][1].0;
        let share = |me: usize| {
            let rows = p.restrict[me] as usize..p.restrict[me + 1] as usize;
            // SAFETY: each thread its own coarse rows, between barriers.
            unsafe { restrict_rows(fine, coarse, b, rows) };
        };
        if p.restrict_active == 1 {
            t.solo(|| share(0));
        } else {
            t.all(|me| {
                if me < p.restrict_active {
                    share(me)
                }
            });
        }
    }
}

impl Sweep<'_> {
    /// Stage `stage` on rows `rows` (row `j + ny k`), compiled for AVX2 where the CPU has it.
    ///
    /// # Safety
    /// As [`Sweep::row`], [`Sweep::residual_row`] or [`Sweep::prolong_row`] for every row.
    unsafe fn rows(&self, stage: Stage, rows: std::ops::Range<usize>) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: the CPU has AVX2; the caller's.
            return unsafe { self.rows_avx2(stage, rows) };
        }
        // SAFETY: the caller's.
        unsafe { self.rows_plain::<false>(stage, rows) }
    }

    /// [`Self::rows`] with AVX2 enabled.
    ///
    /// # Safety
    /// As [`Self::rows`], and the CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn rows_avx2(&self, stage: Stage, rows: std::ops::Range<usize>) {
        // SAFETY: the caller's.
        unsafe { self.rows_plain::<true>(stage, rows) }
    }

    #[inline(always)]
    unsafe fn rows_plain<const AVX: bool>(&self, stage: Stage, rows: std::ops::Range<usize>) {
        let ny = self.n[1];
        let mut line: ProlongLine = [0.0; _];
        for row in rows {
            let (j, k) = (row % ny, row / ny);
            // SAFETY: the caller's.
            unsafe {
                match stage {
                    Stage::Colour(c, zero) => self.row::<AVX>(row, j, k, c, zero),
                    Stage::Residual => self.residual_row::<AVX>(row, j, k),
                    Stage::Prolong(coarse) => self.prolong_row::<AVX>(coarse, row, j, k, &mut line),
                }
            }
        }
    }
}

impl Multigrid {
    /// The team's smoothing plan of each level (for the tests: which paths a problem takes).
    #[cfg(test)]
    pub(super) fn team_waves(&self) -> Vec<&'static str> {
        let name = |p: &LevelPlan| match p.wave {
            Wave::Empty => "empty",
            Wave::Solo => "solo",
            Wave::Rows => "rows",
            Wave::Slabs(..) => "slabs",
        };
        self.team_plans.iter().map(name).collect()
    }

    /// Whether [`Self::vcycle`] runs on a team of `threads` threads.
    pub(super) fn team_fits(&self, s: &Settings, threads: usize) -> bool {
        s.team && (2..=MAX_THREADS).contains(&threads) && self.levels.len() <= MAX_LEVELS
    }

    /// One cycle ([`Self::cycle`] from level 0) on a team of all `threads` threads of the
    /// current rayon pool ([`Self::team_fits`]).
    pub(super) fn team_cycle(&mut self, s: &Settings, threads: usize) {
        let last = self.direct.level.unwrap_or(self.levels.len() - 1);
        let stages = 2 * s.pre_sweeps as usize + 1;
        if self.team_key != Some((threads, stages)) {
            plan(
                &mut self.levels,
                last,
                stages,
                threads,
                &mut self.team_plans,
            );
            self.team_key = Some((threads, stages));
        }
        let mut ptrs = [[SyncPtr(std::ptr::null_mut::<f32>()); 3]; MAX_LEVELS];
        for (p, lv) in ptrs.iter_mut().zip(self.levels.iter_mut()) {
            *p = [lv.u.as_mut_ptr(), lv.b.as_mut_ptr(), lv.r.as_mut_ptr()].map(SyncPtr);
        }
        let direct_level = self.direct.level;
        let cycle = Cycle {
            levels: &self.levels,
            ptrs,
            direct: SyncPtr(&mut self.direct as *mut Direct),
            direct_level,
            plans: &self.team_plans,
            s: *s,
            last,
            threads,
        };
        let barrier = Barrier {
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            threads,
        };
        rayon::broadcast(|ctx| {
            let team = Team {
                me: ctx.index(),
                barrier: &barrier,
                prev: Cell::new(0),
            };
            cycle.run(&team, 0, true);
        });
    }
}
