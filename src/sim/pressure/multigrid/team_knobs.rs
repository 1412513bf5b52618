//! The team's knobs ([`TeamKnobs`]: how `team.rs` shares the cycle's work out among its
//! members, for benchmarks to sweep; every value gives the same bits) and the kinds of its
//! phases ([`Kind`], for the profile, `profile.rs`).

use super::slabs::Cut;

/// How the team shares out its work ([`super::Settings::team_knobs`], hidden: for `cargo bench
/// --bench mg_cycle`'s sweeps). Every value gives the same bits (each only changes which
/// member runs which task, how many tasks a phase has, or how a member waits); the defaults
/// are the fastest measured on the lent 16-CPU machine (`scripts/pressure_log.md`, "Session 14").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TeamKnobs {
    /// Cells (and row costs) per member at least of a stage run by rows. 2048 (4096 until
    /// session 14): with owners, 2048 and a restriction's 512 ran the 1M cycle 3-10% faster
    /// on 8 and 16 threads of the lent Xeon and the same on 2 and 4 (device runs 15 and 16).
    pub row_cells: usize,
    /// The same of a restriction.
    pub restrict_cells: usize,
    /// Spins of a wait for a phase's done-counter before it yields the core between looks.
    pub spins: u32,
    /// Most members taking the finest level's tasks (0: all), as if the team had this many.
    pub fine_members: usize,
    /// The same on the coarse levels (their smoothings and the restrictions into them).
    pub coarse_members: usize,
    /// A coarse level with fewer fluid cells than this runs each visit, the levels below it
    /// included, as one task on one member (0: never).
    pub solo_cells: usize,
    /// Bytes from one counter to the next at least (0: a phase's claimed and done side by
    /// side, 8 bytes a phase; 64 or 128: each counter on a cache line of its own).
    pub pad: usize,
    /// Read a phase's claimed-counter before claiming: no read-modify-write of a phase whose
    /// tasks are all claimed.
    pub peek: bool,
    /// Tasks owned by members: task `t` of a phase of at most 32 tasks belongs to the member
    /// on pool thread `t` (`t` below the thread count; the tasks past it are anyone's), which
    /// takes it as soon as it comes to the phase, so that a thread keeps its rows, slabs or
    /// small levels (in its own cache) from one phase and one application to the next; another
    /// member takes a task its owner has not claimed `patience` spins after the phase is ready
    /// (the owner late: asleep or descheduled). Off: every task goes to whichever member
    /// claims it first. On by default: on the lent 16-CPU Xeon (device run 13, session 14)
    /// the 1M dam break's cycle ran 1.39-1.54x faster with it on 16 threads, 1.36-1.51x on
    /// 8, 1.29x on 4, 1.06x on 2 (`mg_cycle` with `MG_SWEEP`), the same bits.
    pub affinity: bool,
    /// Spins a member waits for a task's owner before it takes the task ([`Self::affinity`]).
    pub patience: u32,
    /// The fewest threads that run the cycle as a team (1: one thread too, walking the
    /// team's phases alone, so that its profile shows the work without the waits).
    pub min_team: usize,
    /// Cut the wavefronts' slabs where the liquid falls evenly (before session 15) instead of
    /// by the work of their first pass (`slabs.rs`).
    pub liquid_cuts: bool,
    /// Most slabs per thread of a wavefront (`slabs.rs`; 4).
    pub slabs_per_thread: usize,
    /// A row's cost in cells, on top of its span's, in the slabs' cut (`slabs.rs`).
    pub row_cost: u64,
}

impl TeamKnobs {
    /// How the wavefronts' slabs are cut ([`Self::liquid_cuts`], [`Self::slabs_per_thread`]).
    pub(super) fn cut(&self) -> Cut {
        Cut {
            by_liquid: self.liquid_cuts,
            per_thread: self.slabs_per_thread,
            row_cost: self.row_cost,
        }
    }
}

impl Default for TeamKnobs {
    fn default() -> Self {
        Self {
            row_cells: 2048,
            restrict_cells: 512,
            spins: 256,
            fine_members: 0,
            coarse_members: 0,
            solo_cells: 0,
            pad: 0,
            peek: false,
            affinity: true,
            patience: 300,
            min_team: 2,
            liquid_cuts: Cut::DEFAULT.by_liquid,
            slabs_per_thread: Cut::DEFAULT.per_thread,
            row_cost: Cut::DEFAULT.row_cost,
        }
    }
}

impl TeamKnobs {
    /// Members that take level `l`'s tasks on a team of `threads`.
    pub(super) fn members(&self, l: usize, threads: usize) -> usize {
        let cap = if l == 0 {
            self.fine_members
        } else {
            self.coarse_members
        };
        if cap == 0 { threads } else { cap.min(threads) }
    }

    /// Counters per phase (`[claimed, done]` pairs) and the stride between a phase's two
    /// (0: side by side in one pair).
    pub(super) fn stride(&self) -> usize {
        self.pad.div_ceil(8)
    }
}

/// What a phase is (for the profile, `profile.rs`; unused without the `mg-profile` feature).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// The slabs of a slab wavefront.
    Slabs,
    /// Its boundaries.
    Boundary,
    /// A red-black half-sweep by rows.
    Rows,
    /// The residual by rows.
    RowsResidual,
    /// The prolongation (and correction) by rows.
    RowsProlong,
    /// A restriction into the level.
    Restrict,
    /// A whole smoothing as one task.
    Solo,
    /// The coarsest level's sweeps.
    Coarsest,
    /// The exact solve.
    Direct,
    /// A whole visit of the level, the levels below included ([`TeamKnobs::solo_cells`]).
    Visit,
}
