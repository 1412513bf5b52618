//! The plain data of emission: [`Emitter`]s and [`Sink`]s (their regions are built
//! [`Solid`]s, the obstacles' shapes; the scene layer reads their JSON) and [`Limits`], with
//! their checks (see the parent module for the per-substep work).

use crate::error::InputError;
use crate::error::check::{bounded, err, finite3};
use crate::geometry::Domain;
use crate::geometry::solid::{PosedSolid, Shape, Solid};
use crate::geometry::transform::Motion;
use crate::particles::{MAX_ACCELERATION_OR_SPEED, MAX_PARTICLES};
use serde::{Deserialize, Serialize};

/// An inflow: while active it keeps its region full of liquid moving at `velocity` plus the
/// region's own rigid motion. The region is a [`Solid`] (the obstacles' shapes, scale,
/// transform and keyframes; its inside is the emitter).
#[derive(Debug, Clone)]
pub struct Emitter {
    pub shape: Solid,
    /// m/s, world frame.
    pub velocity: [f64; 3],
    /// First active time, s. (default: `0`)
    pub start: f64,
    /// Last active time, s. (default: none, the whole shot)
    pub end: Option<f64>,
}

impl PartialEq for Emitter {
    fn eq(&self, o: &Self) -> bool {
        same_shape(&self.shape, &o.shape)
            && self.velocity == o.velocity
            && self.start == o.start
            && self.end == o.end
    }
}

/// Two regions are equal when their shapes, scales and motions are (a mesh: the same built
/// data).
fn same_shape(a: &Solid, b: &Solid) -> bool {
    let shape = match (a.shape(), b.shape()) {
        (Shape::Mesh(x), Shape::Mesh(y)) => std::sync::Arc::ptr_eq(x, y),
        (Shape::Mesh(_), _) | (_, Shape::Mesh(_)) => false,
        (x, y) => format!("{x:?}") == format!("{y:?}"),
    };
    shape && a.scale() == b.scale() && a.motion() == b.motion() && a.liquid() == b.liquid()
}

impl Emitter {
    /// Active in the substep `(t0, t]`: it overlaps `(start, end)`.
    pub fn active(&self, t0: f64, t: f64) -> bool {
        t > self.start && self.end.is_none_or(|e| t0 < e)
    }
}

/// An outflow: every particle that enters it is removed.
#[derive(Debug, Clone)]
pub struct Sink {
    pub shape: Solid,
}

impl PartialEq for Sink {
    fn eq(&self, o: &Self) -> bool {
        same_shape(&self.shape, &o.shape)
    }
}

/// Inside a region's shape at the pose `s`.
#[inline]
pub fn inside(s: &PosedSolid<'_>, p: [f64; 3]) -> bool {
    s.signed_distance(p) < 0.0
}

/// Times at which a region's pose is sampled for whole-shot checks: its keyframes, or 0.
pub fn key_times(s: &Solid) -> Vec<f64> {
    match s.motion() {
        Motion::Keyframed { keys, .. } => keys.iter().map(|k| k.time).collect(),
        Motion::Static(_) => vec![0.0],
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

/// Checks that one emitter's or sink's region (`f` its JSON path) reaches into the liquid
/// region at some time (its keyframes, or always when static).
fn check_region(d: &Domain, f: &str, r: &Solid, what: &str) -> Result<(), InputError> {
    let [lo_in, hi_in] = d.liquid_region();
    let mut seen = None;
    for t in key_times(r) {
        let (lo, hi) = r.bounds(t);
        if (0..3).all(|a| hi[a] > lo_in[a] && lo[a] < hi_in[a]) {
            return Ok(());
        }
        seen.get_or_insert((lo, hi));
    }
    let (lo, hi) = seen.unwrap_or_default();
    Err(err(
        f,
        format!(
            "the {what} [{lo:?}, {hi:?}] lies outside the domain's liquid region [{lo_in:?}, {hi_in:?}] (the domain minus its one-cell wall layer)"
        ),
        format!("move the {what} inside the domain or enlarge the domain"),
    ))
}

/// Checks the scene's `emitters` and `sinks`. Returns warnings: an emitter velocity that
/// exceeds the CFL limit even at the smallest substep the solver settings allow.
pub fn check_emitters_sinks(
    d: &Domain,
    emitters: &[Emitter],
    sinks: &[Sink],
    fps: f64,
    solver: &crate::sim::SolverSettings,
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
