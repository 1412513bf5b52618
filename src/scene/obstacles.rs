//! The scene's `obstacles` list: solid boxes, spheres, cylinders and triangle meshes, each with
//! a transform, a liquid side and optional rigid keyframes, read into the plain
//! [`crate::geometry::solid::Solid`]s that the simulation takes.
//!
//! Layer 4 (scene): the JSON form lives here; the simulation only sees the built solids
//! ([`crate::sim::solids::Obstacles`]). Mesh paths resolve against the scene file's folder and
//! are stored absolute in the resolved scene together with a content hash of the file, so the
//! physics hash of a run changes when the mesh file does.
//!
//! Keyframes, when given, replace `transform.translate` / `transform.rotate` (the pose is the
//! keyframes' interpolation, exact in time; see [`crate::geometry::transform`]); the scale
//! still applies in the body frame.

use crate::error::InputError;
use crate::geometry::Domain;
use crate::geometry::mesh_io::read_mesh;
use crate::geometry::solid::{Liquid, MeshShape, Shape, Solid};
use crate::geometry::transform::{Keyframe, Motion, Pose};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Cells of exact mesh distance around the surface of a mesh obstacle's body-frame grid.
pub const MESH_BAND_CELLS: f64 = 3.0;
/// How much finer than the simulation grid a mesh obstacle's distance grid is.
pub const MESH_REFINE: f64 = 4.0;

/// Obstacle shape kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObstacleKind {
    Box,
    Sphere,
    Cylinder,
    Mesh,
}

/// Which side of the shape the liquid is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LiquidSide {
    #[default]
    Outside,
    Inside,
}

/// A scale: one number or one per axis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scale {
    Uniform(f64),
    PerAxis([f64; 3]),
}

impl Default for Scale {
    fn default() -> Self {
        Scale::Uniform(1.0)
    }
}

impl Scale {
    pub fn axes(&self) -> [f64; 3] {
        match *self {
            Scale::Uniform(s) => [s; 3],
            Scale::PerAxis(s) => s,
        }
    }
}

/// A static transform: scale (body frame), then rotate (XYZ Euler degrees), then translate.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformSpec {
    #[serde(default)]
    pub translate: [f64; 3],
    #[serde(default)]
    pub rotate: [f64; 3],
    #[serde(default)]
    pub scale: Scale,
}

/// One rigid keyframe: at `time` seconds (or at the start of video frame `frame`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyframeSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<u32>,
    #[serde(default)]
    pub translate: [f64; 3],
    #[serde(default)]
    pub rotate: [f64; 3],
}

/// One entry of the scene's `obstacles`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObstacleSpec {
    #[serde(rename = "type")]
    pub kind: ObstacleKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub center: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius: Option<f64>,
    /// A cylinder's first end cap (also read as `from`, the name emitters use).
    #[serde(default, alias = "from", skip_serializing_if = "Option::is_none")]
    pub start: Option<[f64; 3]>,
    /// A cylinder's second end cap (also read as `to`).
    #[serde(default, alias = "to", skip_serializing_if = "Option::is_none")]
    pub end: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// FNV-1a 64 hash of the mesh file's bytes (filled in when the scene is resolved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(default)]
    pub transform: TransformSpec,
    #[serde(default)]
    pub liquid: LiquidSide,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keyframes: Vec<KeyframeSpec>,
    /// Tangential friction of the obstacle's surface: 0 or `"slip"` (free slip, the default)
    /// to 1 or `"no_slip"`.
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        deserialize_with = "crate::geometry::wall_friction::one"
    )]
    pub friction: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Resolves mesh paths (absolute, against `base_dir`) and records each mesh file's hash.
pub fn resolve_paths(
    specs: &mut [ObstacleSpec],
    file: &Path,
    base_dir: &Path,
) -> Result<(), InputError> {
    resolve_paths_of(specs.iter_mut(), "obstacles", file, base_dir)
}

/// [`resolve_paths`] for the shapes of any list (`list` names it in errors: `emitters`).
pub fn resolve_paths_of<'a>(
    specs: impl Iterator<Item = &'a mut ObstacleSpec>,
    list: &str,
    file: &Path,
    base_dir: &Path,
) -> Result<(), InputError> {
    for (i, o) in specs.enumerate() {
        let Some(p) = &o.path else { continue };
        let field = format!("{list}[{i}].path");
        let full = if p.is_absolute() {
            p.clone()
        } else {
            base_dir.join(p)
        };
        let bytes = std::fs::read(&full).map_err(|e| {
            InputError::field(
                file,
                &field,
                format!("cannot read the mesh file `{}`: {e}", full.display()),
                "check the path (relative paths resolve against the scene file's folder) and that the file is readable",
            )
        })?;
        o.content_hash = Some(format!("{:016x}", fnv1a(&bytes)));
        o.path = Some(std::path::absolute(&full).unwrap_or(full));
    }
    Ok(())
}

fn need<T: Copy>(v: Option<T>, field: &str, what: &str) -> Result<T, InputError> {
    v.ok_or_else(|| {
        crate::error::check::err(
            field,
            format!("is missing ({what})"),
            format!(
                "add `{}` to it (README.md's Obstacles section lists each shape's keys)",
                field.rsplit('.').next().unwrap_or(field)
            ),
        )
    })
}

/// Time of a keyframe in seconds: `time`, or `frame / fps`.
fn key_time(k: &KeyframeSpec, fps: f64, field: &str) -> Result<f64, InputError> {
    match (k.time, k.frame) {
        (Some(t), None) => Ok(t),
        (None, Some(f)) => Ok(f as f64 / fps),
        _ => Err(crate::error::check::err(
            field,
            "needs exactly one of `time` (seconds) or `frame` (video frame index)",
            "give each keyframe either `time` or `frame`",
        )),
    }
}

fn mesh_error(e: crate::geometry::mesh_io::MeshError, field: &str) -> InputError {
    let msg = e.to_string();
    let (problem, fix) = match msg.split_once("; fix: ") {
        Some((p, f)) => (p.to_string(), f.to_string()),
        None => (msg, "re-export the mesh".to_string()),
    };
    crate::error::check::err(field, problem, fix)
}

/// Builds one shape entry (`prefix` names it in errors: `obstacles[2]`, `emitters[0]`): the
/// shape, its scale, transform or keyframes and liquid side, every field checked. Obstacles,
/// emitters and sinks share it.
pub fn build_solid(
    o: &ObstacleSpec,
    prefix: &str,
    domain: &Domain,
    fps: f64,
) -> Result<Solid, InputError> {
    use crate::error::check::err;
    let f = |name: &str| format!("{prefix}.{name}");
    let scale = o.transform.scale.axes();
    if !scale.iter().all(|s| s.is_finite() && *s > 0.0) {
        return Err(err(
            &f("transform.scale"),
            format!("{scale:?} is not positive"),
            "give a positive scale (a number or [x, y, z])",
        ));
    }
    let shape = match o.kind {
        ObstacleKind::Box => Shape::Box {
            min: need(o.min, &f("min"), "a box needs `min` and `max` corners")?,
            max: need(o.max, &f("max"), "a box needs `min` and `max` corners")?,
        },
        ObstacleKind::Sphere => Shape::Sphere {
            centre: need(
                o.center,
                &f("center"),
                "a sphere needs `center` and `radius`",
            )?,
            radius: need(
                o.radius,
                &f("radius"),
                "a sphere needs `center` and `radius`",
            )?,
        },
        ObstacleKind::Cylinder => Shape::Cylinder {
            a: need(
                o.start,
                &f("start"),
                "a cylinder needs `start`, `end` and `radius`",
            )?,
            b: need(
                o.end,
                &f("end"),
                "a cylinder needs `start`, `end` and `radius`",
            )?,
            radius: need(
                o.radius,
                &f("radius"),
                "a cylinder needs `start`, `end` and `radius`",
            )?,
        },
        ObstacleKind::Mesh => {
            let path = o.path.as_ref().ok_or_else(|| {
                err(
                    &f("path"),
                    "is missing (a mesh obstacle needs the path of an .obj, .ply or .stl file)",
                    "add `path`, relative to the scene file",
                )
            })?;
            let mesh = read_mesh(path).map_err(|e| mesh_error(e, &f("path")))?;
            // The body-frame grid is MESH_REFINE times finer than the simulation's, down
            // to the simulation's own when that would exceed the node limit: a wall thinner
            // than a simulation cell must still show negative distance between two nodes.
            let mut built = None;
            for refine in [MESH_REFINE, 2.0, 1.0] {
                match MeshShape::build(
                    &mesh,
                    scale,
                    domain.cell_size / refine,
                    MESH_BAND_CELLS * refine,
                ) {
                    Ok(m) => {
                        built = Some(m);
                        break;
                    }
                    Err(e) if refine == 1.0 => return Err(solid_error(e, &f("path"))),
                    Err(_) => {}
                }
            }
            let shape = built.ok_or_else(|| {
                err(
                    &f("path"),
                    "the mesh's distance grid could not be built",
                    "scale the mesh down",
                )
            })?;
            Shape::Mesh(Arc::new(shape))
        }
    };
    let motion = if o.keyframes.is_empty() {
        let t = &o.transform;
        if !t.translate.iter().chain(&t.rotate).all(|v| v.is_finite()) {
            return Err(err(
                &f("transform"),
                "has a value that is not finite",
                "give finite numbers",
            ));
        }
        Motion::Static(Pose::new(t.translate, t.rotate))
    } else {
        let mut keys = Vec::with_capacity(o.keyframes.len());
        for (k, ks) in o.keyframes.iter().enumerate() {
            keys.push(Keyframe {
                time: key_time(ks, fps, &f(&format!("keyframes[{k}]")))?,
                translate: ks.translate,
                rotate_deg: ks.rotate,
            });
        }
        Motion::keyframed(keys).map_err(|e| solid_error(e, &f("keyframes")))?
    };
    let liquid = match o.liquid {
        LiquidSide::Outside => Liquid::Outside,
        LiquidSide::Inside => Liquid::Inside,
    };
    // The size checks that name their key (Solid::new checks the rest).
    match &shape {
        Shape::Box { min, max } => {
            for a in 0..3 {
                if min[a].is_finite() && max[a].is_finite() && min[a] >= max[a] {
                    return Err(err(
                        &f(&format!("max[{a}]")),
                        format!(
                            "the box has zero size: max {} is not above min {}",
                            max[a], min[a]
                        ),
                        "make every max coordinate larger than the min one",
                    ));
                }
            }
        }
        Shape::Sphere { radius, .. } | Shape::Cylinder { radius, .. }
            if !(radius.is_finite() && *radius > 0.0) =>
        {
            return Err(err(
                &f("radius"),
                format!("must be a finite number > 0, got {radius}"),
                "give the radius in metres (> 0)",
            ));
        }
        _ => {}
    }
    Solid::new(shape, scale, motion, liquid).map_err(|e| solid_error(e, &f("type")))
}

/// Builds the solids of `specs` (mesh paths already resolved) for `domain`, checking every
/// field. Errors name the field (`obstacles[i]...`) and the fix; the caller places them in the
/// scene file.
pub fn build_solids(
    specs: &[ObstacleSpec],
    domain: &Domain,
    fps: f64,
) -> Result<Vec<Solid>, InputError> {
    use crate::error::check::err;
    let mut out = Vec::with_capacity(specs.len());
    for (i, o) in specs.iter().enumerate() {
        let f = |name: &str| format!("obstacles[{i}].{name}");
        if !(0.0..=1.0).contains(&o.friction) {
            return Err(err(
                &f("friction"),
                format!("{} is not between 0 and 1", o.friction),
                "give 0 or \"slip\" (free slip, the default) up to 1 or \"no_slip\"",
            ));
        }
        let solid = build_solid(o, &format!("obstacles[{i}]"), domain, fps)?
            .with_friction(o.friction as f32);
        let liquid = solid.liquid();
        // Entirely outside the domain (at every keyframe for animated ones).
        let times: Vec<f64> = match solid.motion() {
            Motion::Keyframed { keys, .. } => keys.iter().map(|k| k.time).collect(),
            Motion::Static(_) => vec![0.0],
        };
        let (dlo, dhi) = (domain.lower, domain.upper());
        let inside_somewhere = times.iter().any(|&t| {
            let (lo, hi) = solid.bounds(t);
            (0..3).all(|a| lo[a] < dhi[a] && hi[a] > dlo[a])
        });
        if liquid == Liquid::Outside && !inside_somewhere {
            return Err(err(
                &format!("obstacles[{i}]"),
                format!(
                    "the obstacle lies entirely outside the domain [{:?}, {:?}]",
                    dlo, dhi
                ),
                "move it into the domain (check its transform and units), or remove it",
            ));
        }
        out.push(solid);
    }
    Ok(out)
}

fn solid_error(e: impl std::fmt::Display, field: &str) -> InputError {
    let msg = e.to_string();
    let (problem, fix) = match msg.split_once("; fix: ") {
        Some((p, f)) => (p.to_string(), f.to_string()),
        None => (msg, "see the obstacles section of README.md".to_string()),
    };
    crate::error::check::err(field, problem, fix)
}

/// Removes the seeded particles that lie in an obstacle at time 0 (closer to its surface than
/// the stepper's push-out distance), per source. A source that had particles and loses all of
/// them is an error naming the source and the obstacle that covers it.
pub fn remove_covered(
    particles: crate::particles::Particles,
    counts: Vec<usize>,
    scene: &super::Scene,
    file: &Path,
) -> Result<(crate::particles::Particles, Vec<usize>), InputError> {
    let solids = &scene.built_obstacles.solids;
    if solids.is_empty() {
        return Ok((particles, counts));
    }
    let eps = crate::sim::solids::PUSHOUT_CELLS as f64 * scene.domain.cell_size;
    let posed: Vec<_> = solids.iter().map(|s| s.at(0.0)).collect();
    let mut kept = crate::particles::Particles::with_capacity(particles.len());
    let mut new_counts = Vec::with_capacity(counts.len());
    let mut start = 0;
    for (si, &n) in counts.iter().enumerate() {
        let mut keep = 0;
        let mut last_cover = 0;
        for i in start..start + n {
            let p = particles.position(i).map(|c| c as f64);
            let hit = posed.iter().position(|s| s.signed_distance(p) < eps);
            match hit {
                None => {
                    kept.push(particles.position(i), particles.velocity(i));
                    keep += 1;
                }
                Some(o) => last_cover = o,
            }
        }
        if n > 0 && keep == 0 {
            return Err(InputError::field(
                file,
                &format!("sources[{si}]"),
                format!(
                    "the source lies entirely inside obstacles[{last_cover}], so it seeds no liquid"
                ),
                "move the source out of the obstacle (with `liquid: \"inside\"`, the liquid's space is the shape's inside)",
            ));
        }
        new_counts.push(keep);
        start += n;
    }
    Ok((kept, new_counts))
}
