//! The scene's `emitters` and `sinks`: their JSON form and their building into the plain
//! [`Emitter`]s and [`Sink`]s the simulation takes.
//!
//! Layer 4 (scene). An emitter or a sink is an obstacle entry without `liquid` (the same
//! `type`s `box`, `sphere`, `cylinder`, `mesh`, the same shape keys, `transform` and
//! `keyframes`, read by the one [`ObstacleSpec`] and built by the one
//! [`super::obstacles::build_solid`]), plus, for an emitter, `velocity` and the active times
//! `start` / `end` (s). Because an emitter's `start` / `end` are times, a cylinder emitter
//! names its end caps `from` / `to` (which obstacles and sinks also accept). The (de)serialisers
//! are written by hand because serde's `flatten` does not work with `deny_unknown_fields`: the
//! emitter keys are taken off the JSON object first, the rest is read as an [`ObstacleSpec`]
//! (whose `deny_unknown_fields` names a misspelt key).

use super::obstacles::{ObstacleKind, ObstacleSpec, build_solid, resolve_paths_of};
use crate::error::InputError;
use crate::error::check::err;
use crate::geometry::Domain;
use crate::geometry::solid::Solid;
use crate::sim::emit::{Emitter, Sink};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::path::Path;

/// One entry of the scene's `emitters`.
#[derive(Debug, Clone)]
pub struct EmitterSpec {
    /// The region (an obstacle entry with `liquid` outside).
    pub shape: ObstacleSpec,
    /// m/s. (default: `[0, 0, 0]`)
    pub velocity: [f64; 3],
    /// First active time, s. (default: `0`)
    pub start: f64,
    /// Last active time, s. (default: none, the whole shot)
    pub end: Option<f64>,
    /// The built region ([`build_regions`]; not part of the JSON).
    pub built: Option<Solid>,
}

/// One entry of the scene's `sinks`.
#[derive(Debug, Clone)]
pub struct SinkSpec {
    pub shape: ObstacleSpec,
    /// The built region ([`build_regions`]; not part of the JSON).
    pub built: Option<Solid>,
}

impl PartialEq for EmitterSpec {
    fn eq(&self, o: &Self) -> bool {
        self.shape == o.shape
            && self.velocity == o.velocity
            && self.start == o.start
            && self.end == o.end
    }
}

impl PartialEq for SinkSpec {
    fn eq(&self, o: &Self) -> bool {
        self.shape == o.shape
    }
}

/// Takes `key` off `map` as a `T` (`what` explains it in errors).
fn take<T: serde::de::DeserializeOwned, E: serde::de::Error>(
    map: &mut Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<T>, E> {
    match map.remove(key) {
        None => Ok(None),
        Some(v) => serde_json::from_value(v)
            .map(Some)
            .map_err(|e| E::custom(format!("`{key}` ({what}): {e}"))),
    }
}

/// The shape part of an emitter's or sink's JSON object.
fn shape_of<E: serde::de::Error>(map: Map<String, Value>, what: &str) -> Result<ObstacleSpec, E> {
    if map.contains_key("liquid") {
        return Err(E::custom(format!(
            "a {what} has no `liquid` key (its inside is the {what}'s region); remove it"
        )));
    }
    if map.contains_key("friction") {
        return Err(E::custom(format!(
            "a {what} has no `friction` key (friction belongs to obstacles and `domain`); remove it"
        )));
    }
    serde_json::from_value(Value::Object(map)).map_err(E::custom)
}

/// An [`ObstacleSpec`] as an emitter's or sink's JSON object (cylinder caps as `from`/`to`).
fn shape_json(s: &ObstacleSpec) -> Map<String, Value> {
    let Ok(Value::Object(mut map)) = serde_json::to_value(s) else {
        return Map::new();
    };
    map.remove("liquid");
    if s.kind == ObstacleKind::Cylinder {
        if let Some(a) = map.remove("start") {
            map.insert("from".into(), a);
        }
        if let Some(b) = map.remove("end") {
            map.insert("to".into(), b);
        }
    }
    map
}

impl<'de> Deserialize<'de> for EmitterSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(d)?;
        for key in ["start", "end"] {
            if map.get(key).is_some_and(|v| v.is_array()) {
                return Err(D::Error::custom(format!(
                    "an emitter's `{key}` is its {} active time in seconds; give a cylinder emitter's end caps as `from` and `to`",
                    if key == "start" { "first" } else { "last" }
                )));
            }
        }
        let velocity = take(&mut map, "velocity", "m/s, three numbers")?.unwrap_or([0.0; 3]);
        let start = take(&mut map, "start", "seconds")?.unwrap_or(0.0);
        let end = take(&mut map, "end", "seconds")?;
        Ok(EmitterSpec {
            shape: shape_of(map, "emitter")?,
            velocity,
            start,
            end,
            built: None,
        })
    }
}

impl Serialize for EmitterSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = shape_json(&self.shape);
        let num = |x: f64| serde_json::to_value(x).unwrap_or(Value::Null);
        map.insert(
            "velocity".into(),
            Value::Array(self.velocity.iter().map(|&x| num(x)).collect()),
        );
        map.insert("start".into(), num(self.start));
        if let Some(e) = self.end {
            map.insert("end".into(), num(e));
        }
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SinkSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        Ok(SinkSpec {
            shape: shape_of(map, "sink")?,
            built: None,
        })
    }
}

impl Serialize for SinkSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        shape_json(&self.shape).serialize(s)
    }
}

/// A box region (tests, benches).
pub fn box_shape(min: [f64; 3], max: [f64; 3]) -> ObstacleSpec {
    ObstacleSpec {
        kind: ObstacleKind::Box,
        min: Some(min),
        max: Some(max),
        center: None,
        radius: None,
        start: None,
        end: None,
        path: None,
        content_hash: None,
        transform: Default::default(),
        liquid: Default::default(),
        keyframes: Vec::new(),
        friction: 0.0,
    }
}

/// Resolves the mesh paths of emitters and sinks (see [`super::obstacles::resolve_paths`]).
pub fn resolve_paths(
    emitters: &mut [EmitterSpec],
    sinks: &mut [SinkSpec],
    file: &Path,
    base_dir: &Path,
) -> Result<(), InputError> {
    resolve_paths_of(
        emitters.iter_mut().map(|e| &mut e.shape),
        "emitters",
        file,
        base_dir,
    )?;
    resolve_paths_of(
        sinks.iter_mut().map(|s| &mut s.shape),
        "sinks",
        file,
        base_dir,
    )
}

/// Builds every emitter's and sink's region (reading mesh files). Errors name the field.
pub fn build_regions(
    emitters: &mut [EmitterSpec],
    sinks: &mut [SinkSpec],
    domain: &Domain,
    fps: f64,
) -> Result<(), InputError> {
    for (i, e) in emitters.iter_mut().enumerate() {
        e.built = Some(build_solid(
            &e.shape,
            &format!("emitters[{i}]"),
            domain,
            fps,
        )?);
    }
    for (i, s) in sinks.iter_mut().enumerate() {
        s.built = Some(build_solid(&s.shape, &format!("sinks[{i}]"), domain, fps)?);
    }
    Ok(())
}

/// The built emitters (after [`build_regions`]; unbuilt ones are left out).
pub fn emitters(specs: &[EmitterSpec]) -> Vec<Emitter> {
    specs
        .iter()
        .filter_map(|e| {
            Some(Emitter {
                shape: e.built.clone()?,
                velocity: e.velocity,
                start: e.start,
                end: e.end,
            })
        })
        .collect()
}

/// The built sinks (after [`build_regions`]).
pub fn sinks(specs: &[SinkSpec]) -> Vec<Sink> {
    specs
        .iter()
        .filter_map(|s| {
            Some(Sink {
                shape: s.built.clone()?,
            })
        })
        .collect()
}

/// An emitter every one of whose lattice points (the sources' 2 x 2 x 2-per-cell pattern over
/// its region at its start time, inside the liquid region) lies in an obstacle is an error
/// naming the emitter and the obstacle; so is an emitter that holds no lattice point at all.
pub fn check_emitters_free(
    emitters: &[Emitter],
    obstacles: &[Solid],
    domain: &Domain,
) -> Result<(), InputError> {
    let sp = 0.5 * domain.cell_size;
    let [lo_in, hi_in] = domain.liquid_region();
    for (i, e) in emitters.iter().enumerate() {
        let t = e.start;
        let posed = e.shape.at(t);
        let solids: Vec<_> = obstacles.iter().map(|s| s.at(t)).collect();
        let (lo, hi) = e.shape.bounds(t);
        let range: [(i64, i64); 3] = std::array::from_fn(|a| {
            let l = lo[a].max(lo_in[a]);
            let h = hi[a].min(hi_in[a]);
            (
                ((l - domain.lower[a]) / sp).floor() as i64,
                ((h - domain.lower[a]) / sp).ceil() as i64,
            )
        });
        let (mut points, mut last_cover) = (0usize, 0usize);
        'search: for k in range[2].0..range[2].1 {
            for j in range[1].0..range[1].1 {
                for m in range[0].0..range[0].1 {
                    let p = [m, j, k].map(|x| x as f64 + 0.5);
                    let p: [f64; 3] = std::array::from_fn(|a| domain.lower[a] + p[a] * sp);
                    if posed.signed_distance(p) >= 0.0 {
                        continue;
                    }
                    points += 1;
                    match solids.iter().position(|s| s.signed_distance(p) < 0.0) {
                        None => {
                            last_cover = usize::MAX;
                            break 'search;
                        }
                        Some(o) => last_cover = o,
                    }
                }
            }
        }
        if points == 0 {
            return Err(err(
                &format!("emitters[{i}]"),
                format!(
                    "the emitter holds no particle position (none of the {sp} m lattice of the sources inside its region and the liquid region)"
                ),
                "make the emitter at least half a cell across, inside the domain",
            ));
        }
        if last_cover != usize::MAX {
            return Err(err(
                &format!("emitters[{i}]"),
                format!(
                    "the emitter lies entirely inside obstacles[{last_cover}] at its start time {t} s, so it emits no liquid"
                ),
                "move the emitter out of the obstacle (with `liquid: \"inside\"`, the liquid's space is the shape's inside)",
            ));
        }
    }
    Ok(())
}

/// The bounding boxes of the emitters and sinks, the previews' faint outlines: at time `t` (s),
/// or without one at each emitter's start (sinks at 0).
pub fn region_outlines(s: &super::Scene, t: Option<f64>) -> Vec<[[f64; 3]; 2]> {
    s.emitters
        .iter()
        .filter_map(|e| e.built.as_ref().map(|b| b.bounds(t.unwrap_or(e.start))))
        .chain(
            s.sinks
                .iter()
                .filter_map(|k| k.built.as_ref().map(|b| b.bounds(t.unwrap_or(0.0)))),
        )
        .map(|(lo, hi)| [lo, hi])
        .collect()
}

/// Whether an emitter or a sink moves (keyframes): its outline then follows the frame's time.
pub fn regions_move(s: &super::Scene) -> bool {
    let moves =
        |b: &Option<crate::geometry::solid::Solid>| b.as_ref().is_some_and(|b| b.is_animated());
    s.emitters.iter().any(|e| moves(&e.built)) || s.sinks.iter().any(|k| moves(&k.built))
}

/// The emitters' and sinks' outlines for a preview at time `t` (s) where they must be drawn
/// anew: some of them move and `render.show_domain` draws outlines. `None` keeps the view's,
/// resolved once (static regions, or no outlines at all with `show_domain` off, for moving
/// regions too).
pub fn outlines_at(s: &super::Scene, t: f64) -> Option<Vec<[[f64; 3]; 2]>> {
    (s.render.show_domain && regions_move(s)).then(|| region_outlines(s, Some(t)))
}
