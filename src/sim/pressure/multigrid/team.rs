//! The cycle on a team of threads: one fan-out of rayon joins per application, and between its
//! phases counters instead of forks and joins.
//!
//! With a rayon parallel loop per phase, every phase of a cycle is a fork and a join: on the
//! 1M dam break's replayed system at 2 threads 21 of them per application (the slab and
//! boundary passes of the finest and first coarse levels' smoothings, the restrictions, ...),
//! at 16 threads about 50 (the finest and first coarse levels there go stage by stage), each
//! paying a worker's wake-up where the serial work between phases (the small levels, the exact
//! solve) let the workers fall asleep. Here every thread of the pool (one member of the team
//! each, handed out by a tree of `rayon::join`s at the start) walks the same cycle
//! ([`Cycle::run`]) with the same plan, phase by phase: each phase is a list of tasks that
//! the threads claim from a counter (slabs of a wavefront, `slabs.rs`, then its boundaries;
//! rows of a stage, for a level too shallow for a slab per thread or too thin in z for slabs
//! at all: rows `(j, k)` cut where the liquid's cells fall evenly, so a flat layer of liquid
//! shares out as well as a deep one; rows of a restriction; the small levels and the exact
//! solve are one task). A task starts once every task of the phase before is done (a second
//! counter; it spins, then yields the core, for machines with more threads than free cores);
//! no thread waits for another to arrive, so one that comes late (woken late, or descheduled)
//! holds nobody up, and a run of one-task phases (a small level's whole visit) runs on one
//! thread with no wait at all.
//!
//! Every cell gets the same operations in the same order as on the rayon path (the same
//! stages, each plane or row written by one task of its phase, reading what the phases before
//! it wrote), so the bits do not depend on the schedule or the thread count (McAdams, Sifakis
//! and Teran 2010 run each pass of the cycle as a parallel loop over the grid; the team and its
//! counters are this project's).
//!
//! Tasks have owners: task `t` of a phase goes first to the member on pool thread `t`, so that
//! each thread works on the same rows, slabs or small levels from phase to phase and keeps
//! them in its own cache; the others take it only if its owner has not come a few hundred
//! spins after the phase is ready (asleep, descheduled), and the tasks past the thread count
//! go to whoever comes. Without owners the first to come took the next task, so a row's data
//! moved from core to core between the stages of a smoothing: on the lent 16-CPU Xeon the
//! 1M cycle ran 1.39-1.54x faster on 16 threads with owners, 1.06x on 2.
//!
//! How it shares the work out (owners or not, cells per task, members per level, whole coarse visits as one
//! task, the waits, the counters' spacing) are knobs (`team_knobs.rs`) for benchmarks to sweep;
//! with `--features mg-profile` each phase's times are recorded (`profile.rs`).

use super::direct::Direct;
use super::kernels::restrict_rows;
use super::level::Level;
use super::members::{Mode, Team};
#[cfg(feature = "mg-profile")]
use super::profile;
use super::slabs::{Cut, MAX_SLABS, Plan, group_size, plan_cuts, stage_groups};
use super::sweeps;
use super::team_knobs::{Kind, TeamKnobs};
use super::wavefront::{Extra, ProlongLine, Stage, Stages, Sweep, liquid_planes};
use super::{Multigrid, Settings, SyncPtr};
use std::sync::atomic::{AtomicU32, Ordering};

/// Most threads of a team (more: the rayon path).
pub(super) const MAX_THREADS: usize = 64;
/// Most levels (more: the rayon path).
pub(super) const MAX_LEVELS: usize = 16;
/// Most groups of stages of a slab wavefront (more: rows).
const MAX_GROUPS: usize = 4;

/// One slab wavefront of a group of stages: its size and slabs ([`slab_plan`](super::slabs::slab_plan)).
#[derive(Clone, Copy)]
struct Group {
    size: usize,
    slabs: usize,
    starts: [u32; MAX_SLABS + 1],
}

const EMPTY: Group = Group {
    size: 0,
    slabs: 0,
    starts: [0; MAX_SLABS + 1],
};

/// How a level's smoothing runs on the team.
#[derive(Clone, Copy)]
enum Wave {
    /// No liquid.
    Empty,
    /// One wavefront, one task (on whichever thread claims it).
    Solo,
    /// Stage by stage, each over the threads' rows.
    Rows,
    /// This many groups of stages ([`LevelPlan::groups`]), each a slab wavefront.
    Slabs(usize),
}

/// The team's plan of one level, for one thread count (decided at the first application after
/// each set-up).
#[derive(Clone, Copy)]
pub(super) struct LevelPlan {
    wave: Wave,
    groups: [Group; MAX_GROUPS],
    planes: (usize, usize),
    /// Rows `rows[t] .. rows[t + 1]` for thread `t < rows_active` of a stage run by rows.
    rows: [u32; MAX_THREADS + 1],
    rows_active: usize,
    /// The same for the restriction into this level (its rows).
    restrict: [u32; MAX_THREADS + 1],
    restrict_active: usize,
    /// Each visit of this level (the levels below included) is one task.
    visit_solo: bool,
}

/// The plans of every level into `out` (its capacity kept from one set-up to the next):
/// levels below `last` smooth with `stages` stages.
fn plan(
    levels: &mut [Level],
    last: usize,
    stages: usize,
    threads: usize,
    knobs: TeamKnobs,
    out: &mut Vec<LevelPlan>,
) {
    out.clear();
    for (l, lv) in levels.iter_mut().enumerate() {
        let mut p = LevelPlan {
            wave: Wave::Empty,
            groups: [EMPTY; MAX_GROUPS],
            planes: (0, 0),
            rows: [0; MAX_THREADS + 1],
            rows_active: 1,
            restrict: [0; MAX_THREADS + 1],
            restrict_active: 1,
            visit_solo: false,
        };
        let threads = knobs.members(l, threads);
        let cells: usize = lv
            .spans
            .iter()
            .map(|&[a, b]| b.saturating_sub(a) as usize)
            .sum();
        p.visit_solo = l > 0 && cells < knobs.solo_cells;
        p.restrict_active = partition(lv, knobs.restrict_cells, threads, &mut p.restrict);
        if l < last {
            p.rows_active = partition(lv, knobs.row_cells, threads, &mut p.rows);
            p.wave = wave(lv, stages, threads, knobs.cut(), &mut p);
        }
        out.push(p);
    }
}

/// The smoothing plan of `lv`: the rayon path's slab plan and groups where it has a slab per
/// thread, else by rows where they give each of at least 2 threads [`TeamKnobs::row_cells`],
/// else solo.
fn wave(lv: &mut Level, stages: usize, threads: usize, cut: Cut, p: &mut LevelPlan) -> Wave {
    let Some((k0, k1)) = liquid_planes(lv) else {
        return Wave::Empty;
    };
    p.planes = (k0, k1);
    let rows = if p.rows_active > 1 {
        Wave::Rows
    } else {
        Wave::Solo
    };
    let (plan, starts) = plan_cuts(lv.n, &lv.spans, (k0, k1), stages, threads, cut);
    let groups = lv.groups_memo(stages, threads, |lv| {
        stage_groups(lv.n, &lv.spans, (k0, k1), stages, threads, plan)
    });
    let gs = &mut p.groups;
    match (plan, groups) {
        (Plan::Slabs(slabs), None) => {
            gs[0] = Group {
                size: stages,
                slabs,
                starts,
            };
            Wave::Slabs(1)
        }
        (_, Some(g)) if g <= MAX_GROUPS => {
            for (i, e) in gs[..g].iter_mut().enumerate() {
                let size = group_size(stages, g, i);
                let (Plan::Slabs(slabs), starts) =
                    plan_cuts(lv.n, &lv.spans, (k0, k1), size, threads, cut)
                else {
                    return rows;
                };
                *e = Group {
                    size,
                    slabs,
                    starts,
                };
            }
            Wave::Slabs(g)
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
    let active = (total as usize / cells.max(1)).clamp(1, threads);
    let (mut r, mut acc) = (0, 0u64);
    for (t, o) in out.iter_mut().enumerate().take(active).skip(1) {
        let target = total * t as u64 / active as u64;
        while r < rows && acc < target {
            acc += cost(r);
            r += 1;
        }
        *o = r as u32;
    }
    out[0] = 0;
    out[active] = rows as u32;
    active
}

/// What every thread of the team reads: the levels, their `u`, `b`, `r` (written through
/// these pointers only, each cell by one task of a phase), the exact solve (one task's
/// alone) and the plans.
struct Cycle<'a> {
    levels: &'a [Level],
    ptrs: [[SyncPtr<f32>; 3]; MAX_LEVELS],
    direct: SyncPtr<Direct>,
    direct_level: Option<usize>,
    plans: &'a [LevelPlan],
    s: Settings,
    last: usize,
}

impl Cycle<'_> {
    /// [`Multigrid::cycle`] on level `l`, every thread of the team.
    fn run(&self, t: &Team, l: usize, from_zero: bool) {
        let s = &self.s;
        let lv = &self.levels[l];
        let [u, _, r] = self.ptrs[l];
        if t.mode != Mode::Inline && self.plans[l].visit_solo {
            // The whole visit on the member that claims it, each phase's tasks in order (the
            // phases' order, so the same bits).
            let k = &self.s.team_knobs;
            t.solo(Kind::Visit, l, || {
                self.run(&Team::new(&[], Mode::Inline, k), l, from_zero)
            });
            return;
        }
        if l == self.last && self.direct_level.is_some() {
            // SAFETY: one task alone, its phase: nothing else touches the solve or the
            // level's `u`.
            t.solo(Kind::Direct, l, || unsafe {
                (*self.direct.0).solve_into(lv, u.0)
            });
            return;
        }
        if l == self.last {
            let sw = Sweep::shared(lv, u.0, r.0);
            let planes = liquid_planes(lv);
            t.solo(Kind::Coarsest, l, || {
                for (first, zero) in [(0, true), (1, false)] {
                    let (n, w) = (s.coarsest_sweeps as usize, s.omega);
                    let st = Stages::new(n, first, zero, Extra::None, w);
                    if let Some(planes) = planes {
                        // SAFETY: one task alone.
                        unsafe { sweeps::serial(&sw, &|h| st.at(h), st.count, planes) };
                    }
                }
            });
            return;
        }
        self.sweeps(
            t,
            l,
            Stages::new(
                s.pre_sweeps as usize,
                0,
                from_zero,
                Extra::Residual,
                s.omega,
            ),
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
            Stages::new(
                s.pre_sweeps as usize,
                1,
                false,
                Extra::Prolong(coarse),
                s.omega,
            ),
        );
    }

    /// A smoothing of level `l` (its wavefront's stages `st`).
    fn sweeps(&self, t: &Team, l: usize, st: Stages) {
        let p = &self.plans[l];
        let [u, _, r] = self.ptrs[l];
        let sw = Sweep::shared(&self.levels[l], u.0, r.0);
        let planes = p.planes;
        // SAFETY (every stage call): as the rayon path's (`sweeps::run`): between two phases
        // each thread writes its own slabs' planes, boundaries' planes or rows, and reads only
        // what the phases before it wrote (a stage by rows reads the other colour,
        // or `u` for the residual, or the coarse level, which no one writes in that phase).
        match p.wave {
            Wave::Empty => {}
            Wave::Solo => t.solo(Kind::Solo, l, || unsafe {
                sweeps::serial(&sw, &|h| st.at(h), st.count, planes)
            }),
            Wave::Rows => {
                for h in 0..st.count {
                    let kind = match st.at(h) {
                        Stage::Colour(..) => Kind::Rows,
                        Stage::Residual => Kind::RowsResidual,
                        Stage::Prolong(_) => Kind::RowsProlong,
                    };
                    t.phase(kind, l, p.rows_active, |i| {
                        let rows = p.rows[i] as usize..p.rows[i + 1] as usize;
                        unsafe { sw.rows(st.at(h), rows) };
                    });
                }
            }
            Wave::Slabs(groups) => {
                let mut h0 = 0;
                for g in &p.groups[..groups] {
                    let stage = |h: usize| st.at(h0 + h);
                    let start = |s: usize| g.starts[s] as usize;
                    t.phase(Kind::Slabs, l, g.slabs, |s| {
                        let slab = (start(s), start(s + 1));
                        unsafe { sweeps::trapezoid(&sw, &stage, g.size, slab) };
                    });
                    t.phase(Kind::Boundary, l, g.slabs + 1, |s| unsafe {
                        sweeps::boundary(&sw, &stage, g.size, start(s), planes)
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
        t.phase(Kind::Restrict, l + 1, p.restrict_active, |i| {
            let rows = p.restrict[i] as usize..p.restrict[i + 1] as usize;
            // SAFETY: each task its own coarse rows; the phase reads the fine residual,
            // which the phases before it wrote.
            unsafe { restrict_rows(fine, coarse, b, rows) };
        });
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
        if rows.is_empty() {
            return;
        }
        for row in rows {
            let (j, k) = (row % ny, row / ny);
            // SAFETY: the caller's.
            unsafe {
                match stage {
                    Stage::Colour(c, zero, w) => self.row::<AVX>(row, j, k, c, zero, w),
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
        let least = s.team_knobs.min_team.max(1);
        s.team && (least..=MAX_THREADS).contains(&threads) && self.active <= MAX_LEVELS
    }

    /// One cycle ([`Self::cycle`] from level 0) on a team of all `threads` threads of the
    /// current rayon pool ([`Self::team_fits`]).
    pub(super) fn team_cycle(&mut self, s: &Settings, threads: usize) {
        let last = self.direct.level.unwrap_or(self.active - 1);
        let stages = 2 * s.pre_sweeps as usize + 1;
        let knobs = s.team_knobs;
        if self.team_key != Some((threads, stages, knobs)) {
            plan(
                &mut self.levels[..self.active],
                last,
                stages,
                threads,
                knobs,
                &mut self.team_plans,
            );
            self.team_key = Some((threads, stages, knobs));
            self.team_phases.clear();
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
        };
        if self.team_phases.is_empty() {
            // The dry run: as many counters as phases (once per set-up, thread count and
            // knobs), or `2 stride` pairs per phase.
            let t = Team::new(&[], Mode::Count, &knobs);
            cycle.run(&t, 0, true);
            let pairs = t.next.get() * (2 * knobs.stride()).max(1);
            self.team_phases
                .extend((0..pairs).map(|_| [0, 0].map(AtomicU32::new)));
        }
        let counters = &self.team_phases[..];
        for c in counters.iter().flatten() {
            c.store(0, Ordering::Relaxed);
        }
        #[cfg(feature = "mg-profile")]
        let app = profile::begin(threads, counters.len() / (2 * knobs.stride()).max(1));
        spread(threads, 0, &|_m| {
            #[allow(unused_mut)]
            let mut t = Team::new(counters, Mode::Run, &knobs);
            if knobs.affinity {
                let me = rayon::current_thread_index().unwrap_or(0) % threads;
                t.owner = Some((me, threads));
            }
            #[cfg(feature = "mg-profile")]
            {
                t.prof = app.member(_m);
            }
            cycle.run(&t, 0, true);
            #[cfg(feature = "mg-profile")]
            t.prof.finish();
        });
        #[cfg(feature = "mg-profile")]
        profile::end(app);
    }

    /// Phases per application of the team's cycle as last planned (0: none yet).
    #[cfg(feature = "mg-profile")]
    pub fn team_phase_count(&self) -> usize {
        let k = self.team_key.map_or(1, |(.., k)| (2 * k.stride()).max(1));
        self.team_phases.len() / k
    }
}

/// Runs `f(m)` for members `m` from `m0` to `m0 + n - 1`, as `rayon::join`s that idle workers
/// steal (no heap allocation, unlike `rayon::broadcast`): each run is one member of the team,
/// on whatever thread takes it. Two runs on one thread are harmless: the second finds every
/// task claimed and passes through.
fn spread(n: usize, m0: usize, f: &(impl Fn(usize) + Sync)) {
    if n <= 1 {
        return f(m0);
    }
    rayon::join(|| spread(n / 2, m0, f), || spread(n - n / 2, m0 + n / 2, f));
}
