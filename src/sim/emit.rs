//! Liquid that enters and leaves the shot: [`Emitter`]s (inflow), [`Sink`]s (outflow), open
//! domain faces, and the particle cap `limits.max_particles`.
//!
//! Layer 2 (sim): imports error, particles and geometry. Owns the scene types of `emitters`
//! and `sinks` ([`Emitter`], [`Sink`], their shape [`Region`]) with their checks, and the
//! per-substep work ([`Emission`]), which runs at the end of every substep, after the
//! advection (and the density correction), on the cell-sorted particles:
//!
//! 1. removal: every particle inside a sink, or pinned by the advection's clamp against an open
//!    face (it would have left the domain), is removed by a stable in-place compaction, so the
//!    survivors keep their relative order;
//! 2. emission, for each emitter active at the substep's end time, in scene order: the
//!    particles inside the emitter's shape take its velocity, and every empty sub-cell of the
//!    2 x 2 x 2 pattern of the sources in the emitter's cells gets a particle, jittered inside
//!    its sub-cell by a counter-based hash of (seed, emitter index, frame, substep, cell,
//!    sub-cell) (no shared random stream: the result does not depend on thread count, and a
//!    resumed run re-derives it); new particles are appended in (emitter, cell, sub-cell) order
//!    with fresh creation indices, and at the end of the frame [`Emission::store`] writes the
//!    survivors in creation order followed by the new ones. Emission stops at
//!    `max_particles`.
//!
//! The grid velocity inside an active emitter is set to its velocity after the pressure
//! projection ([`Emission::impose_velocity`]), so the liquid leaves the emitter at `v` and
//! the flow rate is `v x` open area. On an open face the boundary cell layer is labelled air
//! ([`Emission::open_faces`]): pressure 0 there (free outflow) instead of a wall.
//!
//! Memory: at each frame's start the particle arrays reserve room for one full refill of every
//! emitter (8 per covered cell); beyond that `Vec` grows geometrically (amortised, rare).

use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, GridDims};
use crate::error::InputError;
use crate::error::check::{bounded, err, finite3, positive};
use crate::geometry::{Ball, Boundaries, Cuboid, Domain, Shape};
use crate::particles::{MAX_ACCELERATION_OR_SPEED, MAX_PARTICLES, Particles};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Particles per parallel job of the removal and velocity passes.
const CHUNK: usize = 16384;

/// The shape of an emitter or sink. Cylinders and meshes slot in as new variants (with their
/// keys in [`RegionFields`]) when the obstacle shapes land in `geometry`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Region {
    Box(Cuboid),
    Sphere(Ball),
}

impl Region {
    pub fn contains(&self, p: [f64; 3]) -> bool {
        match self {
            Region::Box(s) => s.contains(p),
            Region::Sphere(s) => s.contains(p),
        }
    }
    pub fn aabb(&self) -> [[f64; 3]; 2] {
        match self {
            Region::Box(s) => s.aabb(),
            Region::Sphere(s) => s.aabb(),
        }
    }
}

/// The kinds of shape, as the JSON `type` names them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionKind {
    Box,
    Sphere,
}

/// The shape keys of an emitter or sink (the same as the sources'), each optional: which are
/// required depends on the `type`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionFields {
    pub min: Option<[f64; 3]>,
    pub max: Option<[f64; 3]>,
    pub center: Option<[f64; 3]>,
    pub radius: Option<f64>,
}

impl RegionFields {
    fn region(&self, kind: RegionKind) -> Result<Region, String> {
        let need = |name: &str, v: bool| {
            if v {
                Ok(())
            } else {
                Err(format!("a {} needs `{name}`", kind_name(kind)))
            }
        };
        let forbid = |name: &str, v: bool| {
            if v {
                Err(format!("a {} has no `{name}` key", kind_name(kind)))
            } else {
                Ok(())
            }
        };
        match kind {
            RegionKind::Box => {
                need("min", self.min.is_some())?;
                need("max", self.max.is_some())?;
                forbid("center", self.center.is_some())?;
                forbid("radius", self.radius.is_some())?;
                Ok(Region::Box(Cuboid {
                    min: self.min.unwrap(),
                    max: self.max.unwrap(),
                }))
            }
            RegionKind::Sphere => {
                need("center", self.center.is_some())?;
                need("radius", self.radius.is_some())?;
                forbid("min", self.min.is_some())?;
                forbid("max", self.max.is_some())?;
                Ok(Region::Sphere(Ball {
                    center: self.center.unwrap(),
                    radius: self.radius.unwrap(),
                }))
            }
        }
    }

    fn of(region: &Region) -> (RegionKind, Self) {
        match region {
            Region::Box(b) => (
                RegionKind::Box,
                Self {
                    min: Some(b.min),
                    max: Some(b.max),
                    ..Default::default()
                },
            ),
            Region::Sphere(s) => (
                RegionKind::Sphere,
                Self {
                    center: Some(s.center),
                    radius: Some(s.radius),
                    ..Default::default()
                },
            ),
        }
    }
}

fn kind_name(k: RegionKind) -> &'static str {
    match k {
        RegionKind::Box => "box (`\"type\": \"box\"`)",
        RegionKind::Sphere => "sphere (`\"type\": \"sphere\"`)",
    }
}

/// An inflow: while active it keeps its region full of liquid moving at `velocity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "EmitterJson", into = "EmitterJson")]
pub struct Emitter {
    pub shape: Region,
    /// m/s.
    pub velocity: [f64; 3],
    /// First active time, s. (default: `0`)
    pub start: f64,
    /// Last active time, s. (default: none, the whole shot)
    pub end: Option<f64>,
}

impl Emitter {
    /// Active in the substep `(t0, t]`: it overlaps `(start, end)`.
    pub fn active(&self, t0: f64, t: f64) -> bool {
        t > self.start && self.end.is_none_or(|e| t0 < e)
    }
}

/// An emitter as JSON has it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmitterJson {
    #[serde(rename = "type")]
    pub kind: RegionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub center: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius: Option<f64>,
    #[serde(default)]
    pub velocity: [f64; 3],
    #[serde(default)]
    pub start: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<f64>,
}

impl TryFrom<EmitterJson> for Emitter {
    type Error = String;
    fn try_from(j: EmitterJson) -> Result<Self, String> {
        Ok(Emitter {
            shape: RegionFields {
                min: j.min,
                max: j.max,
                center: j.center,
                radius: j.radius,
            }
            .region(j.kind)?,
            velocity: j.velocity,
            start: j.start,
            end: j.end,
        })
    }
}

impl From<Emitter> for EmitterJson {
    fn from(e: Emitter) -> Self {
        let (kind, shape) = RegionFields::of(&e.shape);
        EmitterJson {
            kind,
            min: shape.min,
            max: shape.max,
            center: shape.center,
            radius: shape.radius,
            velocity: e.velocity,
            start: e.start,
            end: e.end,
        }
    }
}

/// An outflow: every particle that enters it is removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SinkJson", into = "SinkJson")]
pub struct Sink {
    pub shape: Region,
}

/// A sink as JSON has it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkJson {
    #[serde(rename = "type")]
    pub kind: RegionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub center: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius: Option<f64>,
}

impl TryFrom<SinkJson> for Sink {
    type Error = String;
    fn try_from(j: SinkJson) -> Result<Self, String> {
        Ok(Sink {
            shape: RegionFields {
                min: j.min,
                max: j.max,
                center: j.center,
                radius: j.radius,
            }
            .region(j.kind)?,
        })
    }
}

impl From<Sink> for SinkJson {
    fn from(s: Sink) -> Self {
        let (kind, shape) = RegionFields::of(&s.shape);
        SinkJson {
            kind,
            min: shape.min,
            max: shape.max,
            center: shape.center,
            radius: shape.radius,
        }
    }
}

/// The scene's `limits` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Most particles at any time; emitters stop adding at it (warned once). (default: none,
    /// [`MAX_PARTICLES`])
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_particles: Option<u64>,
}

impl Limits {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
    /// The cap in force.
    pub fn cap(&self) -> usize {
        self.max_particles
            .map_or(MAX_PARTICLES, |m| (m as usize).min(MAX_PARTICLES))
    }
    pub fn check(&self) -> Result<(), InputError> {
        if let Some(m) = self.max_particles
            && (m < 1 || m > MAX_PARTICLES as u64)
        {
            return Err(err(
                "limits.max_particles",
                format!("{m} is outside [1, {MAX_PARTICLES}]"),
                "give the most particles the shot may hold, e.g. 2000000",
            ));
        }
        Ok(())
    }
}

/// Checks one emitter's or sink's shape (`f` its JSON path): finite, not empty, and reaching
/// into the liquid region.
fn check_region(d: &Domain, f: &str, r: &Region, what: &str) -> Result<(), InputError> {
    match r {
        Region::Box(b) => {
            finite3(
                &format!("{f}.min"),
                &b.min,
                "give three finite numbers in metres",
            )?;
            finite3(
                &format!("{f}.max"),
                &b.max,
                "give three finite numbers in metres",
            )?;
            for a in 0..3 {
                if b.min[a] >= b.max[a] {
                    return Err(err(
                        &format!("{f}.max[{a}]"),
                        format!(
                            "the {what} box has zero size: max {} is not above min {}",
                            b.max[a], b.min[a]
                        ),
                        "make every max coordinate larger than the min one",
                    ));
                }
            }
        }
        Region::Sphere(s) => {
            finite3(
                &format!("{f}.center"),
                &s.center,
                "give three finite numbers in metres",
            )?;
            positive(
                &format!("{f}.radius"),
                s.radius,
                "give the radius in metres (> 0)",
            )?;
        }
    }
    let [lo, hi] = r.aabb();
    let [lo_in, hi_in] = d.liquid_region();
    if (0..3).any(|a| hi[a] <= lo_in[a] || lo[a] >= hi_in[a]) {
        return Err(err(
            f,
            format!(
                "the {what} [{lo:?}, {hi:?}] lies outside the domain's liquid region [{lo_in:?}, {hi_in:?}] (the domain minus its one-cell wall layer)"
            ),
            format!("move the {what} inside the domain or enlarge the domain"),
        ));
    }
    Ok(())
}

/// Checks the scene's `emitters` and `sinks`. Returns warnings: an emitter velocity that
/// exceeds the CFL limit even at the smallest substep the solver settings allow.
pub fn check_emitters_sinks(
    d: &Domain,
    emitters: &[Emitter],
    sinks: &[Sink],
    fps: f64,
    solver: &super::SolverSettings,
) -> Result<Vec<String>, InputError> {
    let mut warnings = Vec::new();
    for (i, e) in emitters.iter().enumerate() {
        let f = format!("emitters[{i}]");
        check_region(d, &f, &e.shape, "emitter")?;
        finite3(
            &format!("{f}.velocity"),
            &e.velocity,
            "give three finite numbers in m/s",
        )?;
        bounded(
            &format!("{f}.velocity"),
            &e.velocity,
            MAX_ACCELERATION_OR_SPEED,
            "m/s",
            "check the exponent; give the inflow velocity in m/s",
        )?;
        if !(e.start.is_finite() && e.start >= 0.0) {
            return Err(err(
                &format!("{f}.start"),
                format!("must be a finite time >= 0 s, got {}", e.start),
                "give the time the emitter starts, in seconds (0 for the start of the shot)",
            ));
        }
        if let Some(end) = e.end
            && !(end.is_finite() && end >= e.start)
        {
            return Err(err(
                &format!("{f}.end"),
                format!("{end} s is before start ({} s)", e.start),
                "make end at least start, or remove it to keep the emitter on for the whole shot",
            ));
        }
        // The first substep's length: the fixed step, or the smallest adaptive one (a frame
        // over max_substeps); if the emitter's particles move more than cfl cells even then,
        // the CFL condition cannot hold.
        let dt = solver
            .fixed_dt
            .unwrap_or(1.0 / (fps * solver.max_substeps.max(1) as f64));
        let speed = e.velocity.iter().map(|v| v * v).sum::<f64>().sqrt();
        let cells = speed * dt / d.cell_size;
        if cells > solver.cfl {
            warnings.push(format!(
                "{f}.velocity: {speed:.4} m/s moves {cells:.2} cells in a substep of {dt:.3e} s, over the CFL limit solver.cfl = {} (raise solver.max_substeps, lower the velocity or use larger cells)",
                solver.cfl
            ));
        }
    }
    for (i, s) in sinks.iter().enumerate() {
        check_region(d, &format!("sinks[{i}]"), &s.shape, "sink")?;
    }
    Ok(warnings)
}

/// Per-frame figures of emission and removal (stats).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct EmissionReport {
    /// Particles added by each emitter.
    pub added: Vec<u64>,
    /// Particles removed by each sink.
    pub removed_sinks: Vec<u64>,
    /// Particles removed by the open faces.
    pub removed_open: u64,
    /// True when emission stopped at `limits.max_particles` during this frame.
    pub capped: bool,
}

impl EmissionReport {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed_sinks.is_empty() && self.removed_open == 0
    }
}

/// One emitter's grid footprint: its cell range.
struct EmitterCells {
    lo: [usize; 3],
    hi: [usize; 3],
    cells: usize,
}

/// The runtime state of emission and removal (allocated once with the simulation).
pub struct Emission {
    emitters: Vec<(Emitter, EmitterCells)>,
    sinks: Vec<Sink>,
    open: [[bool; 2]; 3],
    cap: usize,
    seed: u64,
    /// Creation index of the next emitted particle (reset at each frame's start).
    next_id: u32,
    /// Scratch of [`Emission::store`].
    rank: Vec<u32>,
    /// Removal flag per particle (scratch of a substep's removal).
    flags: Vec<u8>,
    warned_cap: bool,
    report: EmissionReport,
}

impl Emission {
    /// Nothing to do: no emitter, sink or open face.
    pub fn idle(&self) -> bool {
        self.emitters.is_empty() && self.sinks.is_empty() && !self.open.iter().flatten().any(|&o| o)
    }

    pub fn new(
        d: &GridDims,
        emitters: &[Emitter],
        sinks: &[Sink],
        boundaries: &Boundaries,
        cap: usize,
        seed: u64,
    ) -> Self {
        let emitters = emitters
            .iter()
            .map(|e| {
                let [lo, hi] = e.shape.aabb();
                let lo: [usize; 3] = std::array::from_fn(|a| {
                    (((lo[a] - d.lower[a] as f64) / d.h as f64).floor().max(1.0) as usize)
                        .min(d.n[a] - 1)
                });
                let hi: [usize; 3] = std::array::from_fn(|a| {
                    (((hi[a] - d.lower[a] as f64) / d.h as f64).ceil() as usize)
                        .min(d.n[a] - 1)
                        .max(lo[a])
                });
                let cells = (0..3).map(|a| hi[a] - lo[a]).product();
                (e.clone(), EmitterCells { lo, hi, cells })
            })
            .collect();
        Self {
            emitters,
            sinks: sinks.to_vec(),
            open: boundaries.open(),
            cap,
            seed,
            next_id: 0,
            rank: Vec::new(),
            flags: Vec::new(),
            warned_cap: false,
            report: EmissionReport::default(),
        }
    }

    /// Most particles one refill of every emitter adds.
    fn refill(&self) -> usize {
        self.emitters.iter().map(|(_, c)| 8 * c.cells).sum()
    }

    /// At a frame's start, after `sp.load`: creation indices continue after the loaded
    /// particles; room is reserved for one refill of every emitter.
    pub fn begin_frame(&mut self, sp: &mut SortedParticles) {
        self.next_id = sp.len() as u32;
        self.report = EmissionReport {
            added: vec![0; self.emitters.len()],
            removed_sinks: vec![0; self.sinks.len()],
            removed_open: 0,
            capped: false,
        };
        if !self.emitters.is_empty() {
            sp.reserve(self.refill());
        }
        if !self.idle() {
            self.flags.reserve(sp.len() + self.refill());
        }
    }

    /// The frame's figures.
    pub fn take_report(&mut self) -> EmissionReport {
        if self.idle() {
            return EmissionReport::default();
        }
        std::mem::take(&mut self.report)
    }

    /// True once emission has stopped at the cap (the warning is given once per run).
    pub fn take_cap_warning(&mut self) -> bool {
        if self.report.capped && !self.warned_cap {
            self.warned_cap = true;
            return true;
        }
        false
    }

    /// Labels the boundary cell layer of every open face air (pressure 0), except cells also
    /// in a wall face's layer (edges and corners with a wall stay solid).
    pub fn open_faces(&self, d: &GridDims, labels: &mut [CellLabel]) {
        if !self.open.iter().flatten().any(|&o| o) {
            return;
        }
        let n = d.n;
        let layer = |c: [usize; 3], a: usize, s: usize| c[a] == if s == 0 { 0 } else { n[a] - 1 };
        for a in 0..3 {
            for s in 0..2 {
                if !self.open[a][s] {
                    continue;
                }
                // Walk the face's layer.
                let (b, c) = ((a + 1) % 3, (a + 2) % 3);
                for v in 0..n[c] {
                    for u in 0..n[b] {
                        let mut idx = [0; 3];
                        idx[a] = if s == 0 { 0 } else { n[a] - 1 };
                        idx[b] = u;
                        idx[c] = v;
                        let walled = (0..3)
                            .any(|a2| (0..2).any(|s2| !self.open[a2][s2] && layer(idx, a2, s2)));
                        if !walled {
                            labels[d.cell(idx[0], idx[1], idx[2])] = CellLabel::Empty;
                        }
                    }
                }
            }
        }
    }

    /// Sets the grid velocity of every face inside an emitter active in `(t0, t]` to its
    /// velocity.
    pub fn impose_velocity(&self, d: &GridDims, vel: &mut [Vec<f32>; 3], t0: f64, t: f64) {
        for (e, cells) in &self.emitters {
            if !e.active(t0, t) {
                continue;
            }
            for (a, va) in vel.iter_mut().enumerate() {
                let m = d.face_n(a);
                for k in cells.lo[2]..=cells.hi[2].min(m[2] - 1) {
                    for j in cells.lo[1]..=cells.hi[1].min(m[1] - 1) {
                        for i in cells.lo[0]..=cells.hi[0].min(m[0] - 1) {
                            let idx = [i, j, k];
                            let p: [f64; 3] = std::array::from_fn(|b| {
                                let off = if b == a { 0.0 } else { 0.5 };
                                d.lower[b] as f64 + (idx[b] as f64 + off) * d.h as f64
                            });
                            if e.shape.contains(p) {
                                va[i + m[0] * (j + m[1] * k)] = e.velocity[a] as f32;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Removal and emission after the substep `(t0, t]`.
    pub fn after_substep(&mut self, d: &GridDims, sp: &mut SortedParticles, t0: f64, t: f64) {
        if self.idle() {
            return;
        }
        self.remove(d, sp);
        if self.emitters.iter().any(|(e, _)| e.active(t0, t)) {
            self.emit(d, sp, t0, t);
        }
    }

    /// Stable compaction of the particles in sinks and against open faces: a parallel pass
    /// flags them (0 keep, 1 open face, 2 + k sink k), then, only if any is flagged, a
    /// sequential count per sink and [`SortedParticles::retain_unflagged`].
    fn remove(&mut self, d: &GridDims, sp: &mut SortedParticles) {
        let any_open = self.open.iter().flatten().any(|&o| o);
        if self.sinks.is_empty() && !any_open {
            return;
        }
        // The advection clamps positions to these bounds: a particle on an open face's bound
        // was moving out of the domain.
        let (lo, hi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
        let n = sp.len();
        self.flags.resize(n, 0);
        let (open, sinks) = (self.open, &self.sinks);
        let [px, py, pz] = &sp.pos;
        let flagged: usize = self
            .flags
            .par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, fl)| {
                let mut count = 0;
                for (k, f) in fl.iter_mut().enumerate() {
                    let i = c * CHUNK + k;
                    let p = [px[i], py[i], pz[i]];
                    *f = 0;
                    if (0..3)
                        .any(|a| (open[a][0] && p[a] <= lo[a]) || (open[a][1] && p[a] >= hi[a]))
                    {
                        *f = 1;
                    } else if !sinks.is_empty() {
                        let q = p.map(|x| x as f64);
                        if let Some(k) = sinks.iter().position(|s| s.shape.contains(q)) {
                            *f = 2 + k.min(253) as u8;
                        }
                    }
                    count += (*f != 0) as usize;
                }
                count
            })
            .sum();
        if flagged == 0 {
            return;
        }
        for &f in &self.flags[..n] {
            match f {
                0 => {}
                1 => self.report.removed_open += 1,
                k => self.report.removed_sinks[(k - 2) as usize] += 1,
            }
        }
        sp.retain_unflagged(&self.flags);
    }

    /// Emission of the substep `(t0, t]`. Each emitter carries a lattice of the sources'
    /// 2 x 2 x 2-per-cell pattern (spacing half a cell, aligned with the domain at its start
    /// time, each point jittered inside its sub-cell by [`hash`] of (seed, emitter, lattice
    /// index)) that moves at the emitter's velocity; a lattice point becomes a particle in the
    /// substep in which it enters the emitter's shape (at the emitter's first active substep,
    /// every point inside). So the region stays full of liquid moving at `v`, and the flow is
    /// `v x` open area particles' worth per second whatever the substeps.
    fn emit(&mut self, d: &GridDims, sp: &mut SortedParticles, t0: f64, t: f64) {
        let h = d.h as f64;
        let sp_h = 0.5 * h;
        let lower = d.lower.map(|x| x as f64);
        // The emitter's velocity on the particles inside its shape.
        for (e, _) in &self.emitters {
            if !e.active(t0, t) {
                continue;
            }
            let v = e.velocity.map(|x| x as f32);
            let [lo, hi] = e.shape.aabb();
            let (lo, hi) = (lo.map(|x| x as f32), hi.map(|x| x as f32));
            let [px, py, pz] = &sp.pos;
            let [vx, vy, vz] = &mut sp.vel;
            vx.par_chunks_mut(CHUNK)
                .zip(vy.par_chunks_mut(CHUNK))
                .zip(vz.par_chunks_mut(CHUNK))
                .enumerate()
                .for_each(|(c, ((vx, vy), vz))| {
                    for k in 0..vx.len() {
                        let i = c * CHUNK + k;
                        let p = [px[i], py[i], pz[i]];
                        if (0..3).all(|a| p[a] >= lo[a] && p[a] <= hi[a])
                            && e.shape.contains(p.map(|x| x as f64))
                        {
                            (vx[k], vy[k], vz[k]) = (v[0], v[1], v[2]);
                        }
                    }
                });
        }
        let (blo, bhi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
        // Inside the emitter's shape and the advection's clamp bounds (the shape clipped to
        // the liquid region).
        let inside = |e: &Emitter, p: [f64; 3]| {
            e.shape.contains(p)
                && (0..3).all(|a| {
                    let x = p[a] as f32;
                    x >= blo[a] && x <= bhi[a]
                })
        };
        for (ei, (e, _)) in self.emitters.iter().enumerate() {
            if !e.active(t0, t) {
                continue;
            }
            let first = t0 <= e.start;
            let v = e.velocity;
            let vf = v.map(|x| x as f32);
            let shift =
                |time: f64| -> [f64; 3] { std::array::from_fn(|a| v[a] * (time - e.start)) };
            let (now, before) = (shift(t), shift(t0));
            let [lo, hi] = e.shape.aabb();
            let range: [(i64, i64); 3] = std::array::from_fn(|a| {
                (
                    ((lo[a] - lower[a] - now[a]) / sp_h).floor() as i64 - 1,
                    ((hi[a] - lower[a] - now[a]) / sp_h).ceil() as i64 + 1,
                )
            });
            for mk in range[2].0..=range[2].1 {
                for mj in range[1].0..=range[1].1 {
                    for mi in range[0].0..=range[0].1 {
                        let m = [mi, mj, mk];
                        let r = hash(&[self.seed, ei as u64, mi as u64, mj as u64, mk as u64]);
                        let base: [f64; 3] = std::array::from_fn(|a| {
                            let u =
                                ((r >> (21 * a)) & ((1 << 21) - 1)) as f64 / (1u64 << 21) as f64;
                            lower[a] + (m[a] as f64 + 0.5 + 0.8 * (u - 0.5)) * sp_h
                        });
                        let p: [f64; 3] = std::array::from_fn(|a| base[a] + now[a]);
                        if !inside(e, p) {
                            continue;
                        }
                        if !first {
                            let q: [f64; 3] = std::array::from_fn(|a| base[a] + before[a]);
                            if inside(e, q) {
                                continue;
                            }
                        }
                        let pf = p.map(|x| x as f32);
                        if sp.len() >= self.cap {
                            self.report.capped = true;
                            return;
                        }
                        sp.push(pf, vf, self.next_id);
                        self.next_id += 1;
                        self.report.added[ei] += 1;
                    }
                }
            }
        }
    }

    /// At the frame's end: writes the particles in creation order (survivors of the frame's
    /// start, then the emitted ones) into `out`, resized to the count.
    pub fn store(&mut self, sp: &SortedParticles, out: &mut Particles) {
        let n = sp.len();
        let ids_total = self.next_id.max(out.len() as u32) as usize;
        if n == ids_total && out.len() == n {
            sp.store(out);
            return;
        }
        // rank[id] = position of creation index `id` among the survivors.
        self.rank.clear();
        self.rank.resize(ids_total, u32::MAX);
        for &id in &sp.ids {
            self.rank[id as usize] = 0;
        }
        let mut r = 0u32;
        for x in self.rank.iter_mut() {
            if *x == 0 {
                *x = r;
                r += 1;
            }
        }
        for a in 0..3 {
            out.pos[a].resize(n, 0.0);
            out.vel[a].resize(n, 0.0);
        }
        for (s, &id) in sp.ids.iter().enumerate() {
            let o = self.rank[id as usize] as usize;
            for a in 0..3 {
                out.pos[a][o] = sp.pos[a][s];
                out.vel[a][o] = sp.vel[a][s];
            }
        }
    }
}

/// A 64-bit hash of `words` (SplitMix64's finaliser chained over the words): the counter-based
/// jitter of emitted particles.
pub fn hash(words: &[u64]) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for &w in words {
        x ^= w
            .wrapping_add(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(x << 6)
            .wrapping_add(x >> 2);
        x = mix(x);
    }
    x
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emitter_json_round_trips_and_names_missing_keys() {
        let e: Emitter = serde_json::from_str(
            r#"{"type":"box","min":[0,0,0],"max":[1,1,1],"velocity":[1,0,0],"end":2}"#,
        )
        .unwrap();
        assert_eq!(e.start, 0.0);
        assert!(e.active(0.0, 0.1) && e.active(1.9, 2.1) && !e.active(2.0, 2.5));
        let back: Emitter = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
        assert_eq!(back, e);
        let bad = serde_json::from_str::<Emitter>(r#"{"type":"sphere","center":[0,0,0]}"#);
        assert!(bad.unwrap_err().to_string().contains("`radius`"));
        let bad = serde_json::from_str::<Sink>(
            r#"{"type":"box","min":[0,0,0],"max":[1,1,1],"velocity":[0,0,0]}"#,
        );
        assert!(bad.unwrap_err().to_string().contains("velocity"));
    }
}
