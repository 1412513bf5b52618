//! The native scene format (`scenes/*.json`): a typed read of [`Scene`] whose errors name the
//! key inside a source, particle file paths resolved against the scene's folder, and notes for
//! sources clipped by the walls.
//!
//! Layer 4 (scene): imports error, geometry and the stages' settings through [`super`].

use super::json::{serde_error, typed};
use super::{InputError, Scene, Source};
use std::path::{Path, PathBuf};

/// The fields of each [`Source`] kind, for error messages only. `Source` is an internally
/// tagged enum, which serde reads through a buffer that loses the path inside the variant, so
/// a wrong type in `sources[1].radius` would be reported at `sources[1]`. [`check_sources`]
/// reads each source again through these mirrors to name the key. They must list the same
/// fields as the `Source` variants (the test `source_mirrors_match_the_enum` checks it).
mod source_fields {
    use serde::Deserialize;
    use std::path::PathBuf;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Box {
        min: [f64; 3],
        max: [f64; 3],
        #[serde(default)]
        velocity: [f64; 3],
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Sphere {
        center: [f64; 3],
        radius: f64,
        #[serde(default)]
        velocity: [f64; 3],
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct ParticleFile {
        path: PathBuf,
    }
}

/// Reads every source of a native scene through its kind's field list, so that an error inside
/// one names the key (`sources[1].radius`), not just the source. Sources without a known
/// `type` are left to the main read, whose message for them is already precise.
fn check_sources(text: &str, file: &Path) -> Result<(), InputError> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return Ok(());
    };
    let Some(sources) = value.get("sources").and_then(|v| v.as_array()) else {
        return Ok(());
    };
    const KINDS: &str = "`box`, `sphere` or `particle_file`";
    for (i, src) in sources.iter().enumerate() {
        let at = format!("sources[{i}]");
        let Some(obj) = src.as_object() else {
            return Err(InputError::field(
                file,
                &at,
                format!("expected a source object `{{\"type\": ..., ...}}`, found `{src}`"),
                format!("write each source as an object whose `type` is {KINDS}"),
            ));
        };
        let mut fields = obj.clone();
        let kind = fields.remove("type");
        if kind.is_none() {
            return Err(InputError::field(
                file,
                &at,
                "the source has no `type` key",
                format!("add `\"type\"`: {KINDS} (see README.md's source table)"),
            ));
        }
        let fields = serde_json::Value::Object(fields);
        let result = match kind.as_ref().and_then(|k| k.as_str()) {
            Some("box") => check_fields::<source_fields::Box>(&fields),
            Some("sphere") => check_fields::<source_fields::Sphere>(&fields),
            Some("particle_file") => check_fields::<source_fields::ParticleFile>(&fields),
            _ => Ok(()),
        };
        if let Err((path, msg)) = result {
            let at = if path == "." {
                at
            } else {
                format!("{at}.{path}")
            };
            return Err(serde_error(file, &at, msg));
        }
    }
    Ok(())
}

/// Deserialises `value` as `T`, returning the JSON path and message of the first error.
pub(crate) fn check_fields<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
) -> Result<(), (String, String)> {
    serde_path_to_error::deserialize::<_, T>(value)
        .map(|_| ())
        .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))
}

pub fn native_scene(text: &str, file: &Path, base_dir: &Path) -> Result<Scene, InputError> {
    let mut scene: Scene = match typed(text, file) {
        Ok(s) => s,
        Err(e)
            if e.at
                .as_deref()
                .is_some_and(|at| at.starts_with("field `sources[")) =>
        {
            // Name the key inside the source, keeping the position of the first report.
            let position = e.problem.rfind(" at line ").map_or("", |i| &e.problem[i..]);
            return Err(match check_sources(text, file) {
                Err(mut precise) => {
                    precise.problem.push_str(position);
                    precise
                }
                Ok(()) => e,
            });
        }
        Err(e) => return Err(e),
    };
    if scene.name.is_empty() {
        scene.name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scene".into());
    }
    for (i, src) in scene.sources.iter_mut().enumerate() {
        if let Source::ParticleFile { path } = src {
            let field = format!("sources[{i}].path");
            *path = resolve_input_path(file, &field, path, &[base_dir])?;
        }
    }
    super::obstacles::resolve_paths(&mut scene.obstacles, file, base_dir)?;
    super::regions::resolve_paths(&mut scene.emitters, &mut scene.sinks, file, base_dir)?;
    Ok(scene)
}

/// Finds an input file: absolute as it is, relative tried against each of `bases` in order.
/// Returns an absolute path.
pub fn resolve_input_path(
    file: &Path,
    field: &str,
    path: &Path,
    bases: &[&Path],
) -> Result<PathBuf, InputError> {
    if path.as_os_str().is_empty() {
        return Err(InputError::field(
            file,
            field,
            "the particle file path is empty",
            "give the path of a particle file (`N`, then N lines `x y z vx vy vz`)",
        ));
    }
    let candidates: Vec<PathBuf> = if path.is_absolute() {
        vec![path.to_path_buf()]
    } else {
        bases.iter().map(|b| b.join(path)).collect()
    };
    for c in &candidates {
        if c.is_file() {
            return std::path::absolute(c).map_err(|e| {
                InputError::field(
                    file,
                    field,
                    format!("{}: {e}", c.display()),
                    "check the path",
                )
            });
        }
    }
    if let Some(c) = candidates.iter().find(|c| c.exists()) {
        return Err(InputError::field(
            file,
            field,
            format!(
                "`{}` is not a regular file (a device, a folder or a pipe)",
                crate::error::quote(&c.display().to_string())
            ),
            "give a particle text file: the count on line 1, then one line `x y z vx vy vz` per particle",
        ));
    }
    let tried: Vec<String> = candidates
        .iter()
        .map(|c| format!("`{}`", crate::error::quote(&c.display().to_string())))
        .collect();
    Err(InputError::field(
        file,
        field,
        format!(
            "particle file `{}` not found (tried {})",
            crate::error::quote(&path.display().to_string()),
            tried.join(", ")
        ),
        "correct the path or create the file",
    ))
}

/// A note for every box or sphere source that reaches outside the domain: only the part in the
/// liquid region is filled, so the liquid is smaller than the source says. (Reaching into the
/// one-cell wall layer is the usual way to fill up to a wall, e.g. `min` at the domain's corner,
/// and is not noted.)
pub fn clipped_sources(scene: &Scene) -> Vec<String> {
    let d = &scene.domain;
    let up = d.upper();
    let tol = 1e-9 * d.cell_size;
    let mut notes = Vec::new();
    for (i, src) in scene.sources.iter().enumerate() {
        let Some([lo, hi]) = src.aabb() else {
            continue;
        };
        let axes: Vec<&str> = (0..3)
            .filter(|&a| lo[a] < d.lower[a] - tol || hi[a] > up[a] + tol)
            .map(|a| ["x", "y", "z"][a])
            .collect();
        if !axes.is_empty() {
            notes.push(format!(
                "sources[{i}] reaches outside the domain {:?}..{:?} along {}; only the part inside the walls is filled",
                d.lower,
                up.map(|v| (v * 1e9).round() / 1e9),
                axes.join(", ")
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Every key of every `Source` kind is known to its mirror in `source_fields`, with the same
    /// required/optional status, so `check_sources` never misreports a valid source.
    #[test]
    fn source_mirrors_match_the_enum() {
        let kinds = [
            Source::Box {
                min: [0.0; 3],
                max: [1.0; 3],
                velocity: [0.0, 0.0, 1.0],
            },
            Source::Sphere {
                center: [0.5; 3],
                radius: 0.1,
                velocity: [0.0; 3],
            },
            Source::ParticleFile {
                path: PathBuf::from("p.in"),
            },
        ];
        for src in kinds {
            let full = serde_json::to_value(&src).unwrap();
            let keys: Vec<String> = full.as_object().unwrap().keys().cloned().collect();
            for drop in std::iter::once(None).chain(keys.iter().map(Some)) {
                let mut v = full.clone();
                if let Some(k) = drop {
                    v.as_object_mut().unwrap().remove(k);
                }
                if drop.is_some_and(|k| k == "type") {
                    continue;
                }
                let enum_ok = serde_json::from_value::<Source>(v.clone()).is_ok();
                let mut fields = v.as_object().unwrap().clone();
                let kind = fields.remove("type").unwrap();
                let fields = serde_json::Value::Object(fields);
                let mirror_ok = match kind.as_str().unwrap() {
                    "box" => check_fields::<source_fields::Box>(&fields),
                    "sphere" => check_fields::<source_fields::Sphere>(&fields),
                    "particle_file" => check_fields::<source_fields::ParticleFile>(&fields),
                    k => panic!("kind {k} has no mirror"),
                }
                .is_ok();
                assert_eq!(enum_ok, mirror_ok, "{v}");
            }
        }
    }
}
