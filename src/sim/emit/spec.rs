//! The scene side of emission: the shapes ([`Region`]), [`Emitter`]s, [`Sink`]s and
//! [`Limits`] as the scene's JSON gives them, with their checks (see the parent module for the
//! per-substep work).

use crate::error::InputError;
use crate::error::check::{bounded, err, finite3, positive};
use crate::geometry::{Ball, Cuboid, Domain, Shape};
use crate::particles::{MAX_ACCELERATION_OR_SPEED, MAX_PARTICLES};
use serde::{Deserialize, Serialize};

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
