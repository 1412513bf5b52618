//! Where the team's cycle spends its time (`--features mg-profile` only; `team.rs`).
//!
//! [`arm`] allocates a recorder for a team of `members` threads, a cycle of `phases` phases
//! and `apps` applications; each application of the team's cycle after it
//! ([`super::Multigrid::vcycle`] on more than one thread) then records, until the recorder is
//! full: the application's start (before the fan-out) and end (after its join), and for each
//! phase, per member that ran at least one of its tasks, when the member came to the phase,
//! when it started its first task (after the wait for the phase before), when it finished its
//! last, the time inside its tasks and their number; per phase, its kind, level and tasks, and
//! when its done-counter filled (the end of its last task; the next phase is ready then). Each
//! member writes only its own slots (member-major, so no two members write one cache line),
//! with no lock and no allocation; [`disarm`] hands the recorder back and [`report`] turns it
//! into a table. Times are the time-stamp counter's ticks on x86_64 (`rdtsc`, a few tens of
//! cycles), else nanoseconds since the first look; [`ticks_per_us`] calibrates them. One
//! cycle at a time: two multigrids cycling at once on different pools would mix their records.
//!
//! Per phase `p` of an application: `ready` is when phase `p - 1`'s done-counter filled (the
//! application's start for the first phase), `crit = filled - ready` (its share of the
//! critical path: these sum to the application's time from its start to its last phase's
//! end), `latency = first start - ready` (how long after it became ready a member started it:
//! the hand-off, or the fan-out for the first phase), `busy` the members' time in its tasks
//! (`max`: the busiest member's, `mean` over the members that ran tasks), and the rest,
//! `crit - latency - max busy`, is time where the busiest member was not yet started or the
//! phase waited for a late member (`late`).

use super::team_knobs::Kind;
use std::fmt::Write;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// The time stamp now, in ticks ([`ticks_per_us`]).
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc is available on every x86_64 CPU.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        EPOCH
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
            + 1
    }
}

/// Ticks per microsecond (measured over 20 ms against the clock).
pub fn ticks_per_us() -> f64 {
    let (t0, c0) = (std::time::Instant::now(), now());
    while t0.elapsed().as_millis() < 20 {
        std::hint::spin_loop();
    }
    (now() - c0) as f64 / (t0.elapsed().as_secs_f64() * 1e6)
}

/// One member's record of one phase (all zero: it ran none of its tasks).
#[derive(Clone, Copy, Default)]
struct Slot {
    arrive: u64,
    start: u64,
    end: u64,
    busy: u64,
    tasks: u32,
}

/// One phase's record.
#[derive(Clone, Copy)]
struct Meta {
    kind: Kind,
    level: u8,
    tasks: u32,
    filled: u64,
    filler: u16,
}

const NO_META: Meta = Meta {
    kind: Kind::Visit,
    level: 0,
    tasks: 0,
    filled: 0,
    filler: 0,
};

/// The records of up to `apps` applications of a `phases`-phase cycle on `members` members.
pub struct Recorder {
    members: usize,
    phases: usize,
    apps: usize,
    used: AtomicUsize,
    /// `[member][app][phase]`.
    slots: Vec<Slot>,
    /// `[app][phase]`.
    meta: Vec<Meta>,
    /// `[app]`: start, end.
    spans: Vec<[u64; 2]>,
    /// `[member][app]`: when the member began its walk of the phases (the fan-out reached
    /// it), when it ended it.
    walks: Vec<[u64; 2]>,
}

static RECORDER: AtomicPtr<Recorder> = AtomicPtr::new(std::ptr::null_mut());

/// Records the next `apps` applications of a team of `members` on a cycle of `phases` phases
/// (`Multigrid::team_phase_count`); others (another team size or cycle) are not recorded.
pub fn arm(members: usize, phases: usize, apps: usize) {
    // Every page written now (not `vec!`'s zeroed pages, faulted in during the cycle; `arrive`
    // 1 so that no `calloc` stands in for the writes).
    fn filled<T: Clone>(n: usize, x: T) -> Vec<T> {
        let mut v = Vec::with_capacity(n);
        v.extend(std::iter::repeat_n(x, n));
        v
    }
    let unused = Slot {
        arrive: 1,
        ..Slot::default()
    };
    let r = Box::new(Recorder {
        members,
        phases,
        apps,
        used: AtomicUsize::new(0),
        slots: filled(members * apps * phases, unused),
        meta: filled(apps * phases, NO_META),
        spans: vec![[0; 2]; apps],
        walks: filled(members * apps, [1, 1]),
    });
    drop(disarm());
    RECORDER.store(Box::into_raw(r), Ordering::Release);
}

/// Stops recording; the recorder, if one was armed.
pub fn disarm() -> Option<Box<Recorder>> {
    let r = RECORDER.swap(std::ptr::null_mut(), Ordering::AcqRel);
    // SAFETY: made by `Box::into_raw` in `arm`, and swapped out once.
    (!r.is_null()).then(|| unsafe { Box::from_raw(r) })
}

/// One application being recorded (a null `rec`: none).
#[derive(Clone, Copy)]
pub(super) struct App {
    rec: *mut Recorder,
    app: usize,
}

// SAFETY: the members write disjoint slots through it (their own), the filler of a phase its
// phase's record alone.
unsafe impl Send for App {}
unsafe impl Sync for App {}

/// Starts recording an application of a team of `members` on `phases` phases, if armed for it.
pub(super) fn begin(members: usize, phases: usize) -> App {
    let off = App {
        rec: std::ptr::null_mut(),
        app: 0,
    };
    let rec = RECORDER.load(Ordering::Acquire);
    if rec.is_null() {
        return off;
    }
    // SAFETY: armed and not disarmed while cycles run (the bench's order).
    let r = unsafe { &*rec };
    if r.members != members || r.phases != phases {
        return off;
    }
    let app = r.used.fetch_add(1, Ordering::Relaxed);
    if app >= r.apps {
        return off;
    }
    // SAFETY: this application's span, written by this thread alone.
    unsafe { (*(r.spans.as_ptr() as *mut [u64; 2]).add(app))[0] = now() };
    App { rec, app }
}

/// Ends the application's record (after the team's join).
pub(super) fn end(a: App) {
    if !a.rec.is_null() {
        // SAFETY: as in `begin`.
        unsafe { (*((*a.rec).spans.as_ptr() as *mut [u64; 2]).add(a.app))[1] = now() };
    }
}

impl App {
    /// Member `m`'s probe.
    pub(super) fn member(self, m: usize) -> Probe {
        if self.rec.is_null() {
            return Probe::OFF;
        }
        // SAFETY: the recorder lives until disarmed; `m < members` (the team's size).
        let r = unsafe { &*self.rec };
        // SAFETY: this member's walk, written by this member alone.
        let walk = unsafe { (r.walks.as_ptr() as *mut [u64; 2]).add(m * r.apps + self.app) };
        unsafe { (*walk)[0] = now() };
        Probe {
            walk,
            slots: unsafe {
                (r.slots.as_ptr() as *mut Slot).add((m * r.apps + self.app) * r.phases)
            },
            meta: unsafe { (r.meta.as_ptr() as *mut Meta).add(self.app * r.phases) },
            phases: r.phases,
            member: m as u16,
        }
    }
}

/// A member's pointers into one application's records (null: not recording).
pub(super) struct Probe {
    walk: *mut [u64; 2],
    slots: *mut Slot,
    meta: *mut Meta,
    phases: usize,
    member: u16,
}

/// A member's record of the phase it is in.
pub(super) struct Visit {
    slot: Slot,
    meta: Meta,
}

impl Probe {
    pub(super) const OFF: Probe = Probe {
        walk: std::ptr::null_mut(),
        slots: std::ptr::null_mut(),
        meta: std::ptr::null_mut(),
        phases: 0,
        member: 0,
    };

    /// The member comes to a phase.
    #[inline(always)]
    pub(super) fn arrive(&self, kind: Kind, level: usize, tasks: usize) -> Visit {
        Visit {
            slot: Slot {
                arrive: now(),
                ..Slot::default()
            },
            meta: Meta {
                kind,
                level: level as u8,
                tasks: tasks as u32,
                filled: 0,
                filler: self.member,
            },
        }
    }

    /// The member has walked every phase.
    pub(super) fn finish(&self) {
        if !self.walk.is_null() {
            // SAFETY: as in `App::member`.
            unsafe { (*self.walk)[1] = now() };
        }
    }

    /// Stores the member's record of phase `p`.
    #[inline(always)]
    pub(super) fn store(&self, p: usize, v: &Visit) {
        if self.slots.is_null() || p >= self.phases {
            return;
        }
        // SAFETY: this member's slot of phase `p`; the phase's record written by its filler
        // alone.
        unsafe {
            if v.slot.tasks > 0 {
                *self.slots.add(p) = v.slot;
            }
            if v.meta.filled != 0 {
                *self.meta.add(p) = v.meta;
            }
        }
    }
}

impl Visit {
    /// A task that started at `start` is done; `last`: it filled the phase's done-counter.
    #[inline(always)]
    pub(super) fn task(&mut self, start: u64, last: bool) {
        let end = now();
        let s = &mut self.slot;
        if s.tasks == 0 {
            s.start = start;
        }
        s.tasks += 1;
        s.busy += end - start;
        s.end = end;
        if last {
            self.meta.filled = end;
        }
    }
}

impl Recorder {
    /// Applications recorded, and their time in all (from the start of each one's fan-out to
    /// the end of its join), in ticks.
    pub fn cycles(&self) -> (usize, u64) {
        let used = self.used.load(Ordering::Relaxed).min(self.apps);
        (used, self.spans[..used].iter().map(|[a, b]| b - a).sum())
    }

    /// Checks the records: every phase of every recorded application has its done-counter's
    /// time, its members' tasks add up to its tasks, and each member's first task started
    /// before its last ended. The phases checked, or what is wrong.
    pub fn check(&self) -> Result<usize, String> {
        let (used, np) = (
            self.used.load(Ordering::Relaxed).min(self.apps),
            self.phases,
        );
        for a in 0..used {
            for (p, x) in self.meta[a * np..(a + 1) * np].iter().enumerate() {
                let slots = (0..self.members).map(|m| self.slots[(m * self.apps + a) * np + p]);
                let tasks: u32 = slots.clone().map(|s| s.tasks).sum();
                if x.filled == 0 || tasks != x.tasks || slots.clone().any(|s| s.start > s.end) {
                    return Err(format!(
                        "application {a}, phase {p}: filled at {}, {tasks} of {} tasks",
                        x.filled, x.tasks
                    ));
                }
            }
        }
        Ok(used * np)
    }
}

/// Sums of one (level, kind) row of the table, in ticks.
#[derive(Default, Clone, Copy)]
struct Row {
    phases: u64,
    tasks: u64,
    members: u64,
    crit: f64,
    latency: f64,
    max_busy: f64,
    mean_busy: f64,
    busy: f64,
    hops: u64,
    early: u64,
}

/// The table of the recorded applications after the first `skip` (`tick`: ticks per µs):
/// per (level, kind) of phase, per application, and the totals; with `phases_of` the
/// per-phase list of the application of median wall time too.
pub fn report(rec: &Recorder, skip: usize, tick: f64, phases_of: bool) -> String {
    let used = rec.used.load(Ordering::Relaxed).min(rec.apps);
    let apps: Vec<usize> = (skip.min(used.saturating_sub(1))..used).collect();
    let mut o = String::new();
    if apps.is_empty() {
        return "profile: no application recorded\n".into();
    }
    let (m, np) = (rec.members, rec.phases);
    let na = apps.len() as f64;
    let us = |t: f64| t / tick / na;
    let mut rows = std::collections::BTreeMap::<(u8, Kind), Row>::new();
    let (mut wall, mut join, mut fan, mut late) = (0.0, 0.0, 0.0, 0.0);
    let mut member_busy = vec![0.0; m];
    let mut walls = Vec::new();
    let mut incomplete = 0;
    for &a in &apps {
        let [s0, s1] = rec.spans[a];
        let meta = &rec.meta[a * np..(a + 1) * np];
        if meta.iter().any(|x| x.filled == 0) {
            incomplete += 1;
            continue;
        }
        wall += (s1 - s0) as f64;
        walls.push((s1 - s0, a));
        join += s1.saturating_sub(meta[np - 1].filled) as f64;
        for p in 0..np {
            let x = meta[p];
            let ready = if p == 0 { s0 } else { meta[p - 1].filled };
            let slots = (0..m).map(|i| (i, rec.slots[(i * rec.apps + a) * np + p]));
            let (mut first, mut runner, mut busy, mut max_busy, mut members) =
                (u64::MAX, 0, 0, 0, 0);
            let mut arrived = 0;
            for (i, s) in slots.filter(|(_, s)| s.tasks > 0) {
                if s.start < first {
                    (first, runner, arrived) = (s.start, i, s.arrive);
                }
                busy += s.busy;
                max_busy = max_busy.max(s.busy);
                members += 1;
                member_busy[i] += s.busy as f64;
            }
            let crit = x.filled.saturating_sub(ready) as f64;
            let latency = first.saturating_sub(ready) as f64;
            if p == 0 {
                fan += latency;
            }
            late += (crit - latency - max_busy as f64).max(0.0);
            let r = rows.entry((x.level, x.kind)).or_default();
            r.phases += 1;
            r.tasks += x.tasks as u64;
            r.members += members;
            r.crit += crit;
            r.latency += latency;
            r.max_busy += max_busy as f64;
            r.mean_busy += busy as f64 / members.max(1) as f64;
            r.busy += busy as f64;
            r.early += (arrived <= ready) as u64;
            r.hops += (x.tasks == 1 && p > 0 && runner as u16 != meta[p - 1].filler) as u64;
        }
    }
    let na = na - incomplete as f64;
    if na < 1.0 {
        return "profile: no complete application recorded\n".into();
    }
    let us = |t: f64| us(t) * apps.len() as f64 / na;
    let per = |n: u64| n as f64 / na;
    let _ = writeln!(
        o,
        "profile: {m} members, {np} phases, {} applications (of {used}), µs per application",
        na
    );
    let _ = writeln!(
        o,
        "{:>3} {:<13} {:>7} {:>6} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>5} {:>6}",
        "lvl",
        "kind",
        "ph/app",
        "tasks",
        "memb",
        "crit",
        "latency",
        "maxbusy",
        "meanbusy",
        "imbal",
        "busysum",
        "hops",
        "early%"
    );
    let mut t = Row::default();
    let (mut solo_crit, mut level_crit) = (0.0, [0.0; 16]);
    for (&(l, k), r) in &rows {
        let _ = writeln!(
            o,
            "{l:>3} {:<13} {:>7.1} {:>6.1} {:>5.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>5.1} {:>6.0}",
            format!("{k:?}"),
            per(r.phases),
            r.tasks as f64 / r.phases as f64,
            r.members as f64 / r.phases as f64,
            us(r.crit),
            us(r.latency),
            us(r.max_busy),
            us(r.mean_busy),
            us(r.max_busy - r.mean_busy),
            us(r.busy),
            per(r.hops),
            100.0 * r.early as f64 / r.phases as f64
        );
        t.phases += r.phases;
        t.crit += r.crit;
        t.latency += r.latency;
        t.max_busy += r.max_busy;
        t.mean_busy += r.mean_busy;
        t.busy += r.busy;
        t.hops += r.hops;
        if r.tasks == r.phases {
            solo_crit += r.crit;
        }
        level_crit[(l as usize).min(15)] += r.crit;
    }
    let _ = writeln!(
        o,
        "    {:<13} {:>7.1} {:>6} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>5.1}",
        "total",
        per(t.phases),
        "",
        "",
        us(t.crit),
        us(t.latency),
        us(t.max_busy),
        us(t.mean_busy),
        us(t.max_busy - t.mean_busy),
        us(t.busy),
        per(t.hops)
    );
    let levels: Vec<String> = level_crit
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c > 0.0)
        .map(|(l, &c)| format!("L{l} {:.1} ({:.0}%)", us(c), 100.0 * c / t.crit))
        .collect();
    let _ = writeln!(
        o,
        "wall {:.1}; fan-out (start -> first task) {:.1}, join (last done -> end) {:.1}; critical path {:.1}: by level {}; one-task phases {:.1} ({:.0}%); latency {:.1} + late {:.1} + imbalance {:.1} + join {:.1} = sync {:.1} ({:.0}% of wall); busy / members {:.1}",
        us(wall),
        us(fan),
        us(join),
        us(t.crit),
        levels.join(", "),
        us(solo_crit),
        100.0 * solo_crit / t.crit,
        us(t.latency),
        us(late),
        us(t.max_busy - t.mean_busy),
        us(join),
        us(t.latency + late + t.max_busy - t.mean_busy + join),
        100.0 * (t.latency + late + t.max_busy - t.mean_busy + join) / wall,
        us(t.busy) / m as f64
    );
    let busy: Vec<String> = member_busy
        .iter()
        .map(|&b| format!("{:.0}", us(b)))
        .collect();
    let _ = writeln!(o, "busy per member: {}", busy.join(" "));
    for (i, what) in ["began", "ended"].iter().enumerate() {
        let at: Vec<String> = (0..m)
            .map(|k| {
                let sum: u64 = (apps.iter())
                    .filter(|&&a| rec.meta[a * np..(a + 1) * np].iter().all(|x| x.filled != 0))
                    .map(|&a| rec.walks[k * rec.apps + a][i].saturating_sub(rec.spans[a][0]))
                    .sum();
                format!("{:.1}", us(sum as f64))
            })
            .collect();
        let _ = writeln!(
            o,
            "member {what} its walk (after the start): {}",
            at.join(" ")
        );
    }
    if phases_of && !walls.is_empty() {
        walls.sort();
        let (w, a) = walls[walls.len() / 2];
        phase_list(&mut o, rec, a, w, tick);
    }
    o
}

/// The phases of application `a` (wall `w` ticks), one a line.
fn phase_list(o: &mut String, rec: &Recorder, a: usize, w: u64, tick: f64) {
    let np = rec.phases;
    let s0 = rec.spans[a][0];
    let meta = &rec.meta[a * np..(a + 1) * np];
    let _ = writeln!(
        o,
        "phases of the median application ({:.1} µs): p lvl kind tasks | ready latency crit maxbusy (µs) | members (member:tasks/busy µs)",
        w as f64 / tick
    );
    for (p, x) in meta.iter().enumerate() {
        let ready = if p == 0 { s0 } else { meta[p - 1].filled };
        let mut first = u64::MAX;
        let mut max_busy = 0;
        let mut who = String::new();
        for i in 0..rec.members {
            let s = rec.slots[(i * rec.apps + a) * np + p];
            if s.tasks > 0 {
                first = first.min(s.start);
                max_busy = max_busy.max(s.busy);
                let _ = write!(who, " {i}:{}/{:.1}", s.tasks, s.busy as f64 / tick);
            }
        }
        let _ = writeln!(
            o,
            "{p:>4} {:>2} {:<13} {:>3} | {:>7.1} {:>6.1} {:>6.1} {:>6.1} |{who}",
            x.level,
            format!("{:?}", x.kind),
            x.tasks,
            ready.saturating_sub(s0) as f64 / tick,
            first.saturating_sub(ready) as f64 / tick,
            x.filled.saturating_sub(ready) as f64 / tick,
            max_busy as f64 / tick,
        );
    }
}
