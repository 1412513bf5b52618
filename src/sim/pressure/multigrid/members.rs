//! A member of the team (`team.rs`) walking the cycle's phases: claiming a phase's tasks,
//! waiting for the phase before, owners first.
//!
//! Each phase has two counters: its tasks claimed and its tasks done. A member takes a task
//! (with owners, [`TeamKnobs::affinity`]: its own task first, by setting the task's bit in the
//! claimed mask; without: the next number of the claimed counter), waits until the phase
//! before has all its tasks done, runs it and counts it done. No member waits for another to
//! arrive; a task whose owner has not come `patience` spins after the phase is ready is taken
//! by whoever finds it.

#[cfg(feature = "mg-profile")]
use super::profile;
use super::team_knobs::{Kind, TeamKnobs};
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

/// Waits until `done` reaches `n` (`spins` spins, then yields the core between looks).
fn wait_for(done: &AtomicU32, n: u32, max_spins: u32) {
    let mut spins = 0;
    while done.load(Ordering::Acquire) != n {
        if spins < max_spins {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// How a [`Team`] takes its phases.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Mode {
    /// Only count them (the plan's dry run).
    Count,
    /// Claim tasks from the counters.
    Run,
    /// Run every task in order, on this thread (inside a task that holds a whole visit).
    Inline,
}

/// One thread of the team, walking the cycle's phases in order: `counters` holds each phase's
/// tasks claimed and done (all threads'; phase `p`'s pair at `p`, or with a `stride` its
/// claimed at `2 p stride` and done at `(2 p + 1) stride`), `next` this thread's next phase,
/// `prev` the previous phase's task count.
pub(super) struct Team<'a> {
    pub(super) counters: &'a [[AtomicU32; 2]],
    pub(super) next: Cell<usize>,
    pub(super) prev: Cell<u32>,
    pub(super) mode: Mode,
    pub(super) stride: usize,
    pub(super) spins: u32,
    pub(super) peek: bool,
    /// This member's pool thread and the team's size, with the knobs' affinity (else `None`).
    pub(super) owner: Option<(usize, usize)>,
    pub(super) patience: u32,
    #[cfg(feature = "mg-profile")]
    pub(super) prof: profile::Probe,
}

impl<'a> Team<'a> {
    pub(super) fn new(counters: &'a [[AtomicU32; 2]], mode: Mode, k: &TeamKnobs) -> Self {
        Team {
            counters,
            next: Cell::new(0),
            prev: Cell::new(0),
            mode,
            stride: k.stride(),
            spins: k.spins,
            peek: k.peek,
            owner: None,
            patience: k.patience,
            #[cfg(feature = "mg-profile")]
            prof: profile::Probe::OFF,
        }
    }

    /// Phase `p`'s claimed and done counters.
    #[inline(always)]
    fn pair(&self, p: usize) -> (&AtomicU32, &AtomicU32) {
        if self.stride == 0 {
            let [c, d] = &self.counters[p];
            (c, d)
        } else {
            let s = 2 * p * self.stride;
            (&self.counters[s][0], &self.counters[s + self.stride][0])
        }
    }

    /// A phase of `tasks` tasks (a `kind` of phase of level `level`): this thread claims tasks
    /// until none is left and runs each (`f(task)`), the first once every task of the phase
    /// before is done. A phase of no task is no phase. A thread that comes late (asleep, or
    /// descheduled on a busy machine) finds the phases before it claimed and goes on; none
    /// waits for another's arrival.
    pub(super) fn phase(&self, kind: Kind, level: usize, tasks: usize, f: impl Fn(usize)) {
        if tasks == 0 {
            return;
        }
        let p = self.next.get();
        self.next.set(p + 1);
        let prev = self.prev.replace(tasks as u32);
        match self.mode {
            Mode::Count => return,
            Mode::Inline => return (0..tasks).for_each(f),
            Mode::Run => {}
        }
        let (claim, done) = self.pair(p);
        #[cfg(feature = "mg-profile")]
        let mut probe = self.prof.arrive(kind, level, tasks);
        #[cfg(not(feature = "mg-profile"))]
        let _ = (kind, level);
        let ready = Cell::new(p == 0);
        let wait = || {
            if !ready.get() {
                // Every task of phase p - 1 ran after all of p - 2's, and so on: all the
                // earlier phases' writes and reads are done.
                wait_for(self.pair(p - 1).1, prev, self.spins);
                ready.set(true);
            }
        };
        #[allow(unused_mut)]
        let mut run = |t: usize| {
            wait();
            #[cfg(feature = "mg-profile")]
            let start = profile::now();
            f(t);
            let _d = done.fetch_add(1, Ordering::AcqRel);
            #[cfg(feature = "mg-profile")]
            probe.task(start, _d + 1 == tasks as u32);
        };
        match self.owner {
            Some((me, members)) if tasks <= 32 => {
                // `claim` is the mask of the tasks claimed. Task `t < members` is member `t`'s:
                // it takes it first; the tasks past the members' count go to whoever comes,
                // and another's task to whoever finds it unclaimed `patience` spins after
                // the phase is ready.
                let full = u32::MAX >> (32 - tasks);
                let unowned = full & !(u32::MAX >> (32 - tasks.min(members)));
                if me < tasks && claim.fetch_or(1 << me, Ordering::Relaxed) & (1 << me) == 0 {
                    run(me);
                }
                let mut spins = 0;
                loop {
                    let m = claim.load(Ordering::Relaxed);
                    if m == full {
                        break;
                    }
                    let free = !m & unowned;
                    let t = if free != 0 {
                        free.trailing_zeros()
                    } else {
                        wait();
                        if spins < self.patience {
                            std::hint::spin_loop();
                            spins += 1;
                            continue;
                        }
                        (!m).trailing_zeros()
                    };
                    if claim.fetch_or(1 << t, Ordering::Relaxed) & (1 << t) == 0 {
                        run(t as usize);
                    }
                }
            }
            _ => loop {
                if self.peek && claim.load(Ordering::Relaxed) as usize >= tasks {
                    break;
                }
                let t = claim.fetch_add(1, Ordering::Relaxed) as usize;
                if t >= tasks {
                    break;
                }
                run(t);
            },
        }
        #[cfg(feature = "mg-profile")]
        self.prof.store(p, &probe);
    }

    /// A phase of one task.
    pub(super) fn solo(&self, kind: Kind, level: usize, f: impl Fn()) {
        self.phase(kind, level, 1, |_| f());
    }
}
