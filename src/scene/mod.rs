//! Shot descriptions: the native scene format (`scenes/*.json`) and the tutorial's `fluid.json`.
//!
//! Layer 4: the only module that knows the JSON input formats. It imports the layers below
//! (error, particles, geometry, the stages' settings types, output's particle-file reader) and
//! is imported only by `run` and `cli`. Every input becomes one [`Scene`], fully resolved
//! (defaults filled in), which is what `OUT/scene.json` stores and what a resume reads. A
//! [`Scene`] is a bundle of the stages' own settings types ([`Domain`], [`SolverSettings`],
//! [`TimeSettings`], [`Source`], `SurfaceSettings`, `RenderSettings`, [`OutputSettings`]);
//! each type checks its own section and this module checks only what crosses sections, then
//! places the error in its file. [`native`] reads native scenes, [`tutorial`] the tutorial's
//! file, [`json`] holds the shared JSON error reporting.
//!
//! Units: metres, seconds, kilograms. Axes: z is up by default (Blender's convention); gravity
//! is a vector, so a y-up scene just sets `gravity: [0, -9.80665, 0]`.
//!
//! Grid convention: see [`crate::geometry::domain`].

pub mod json;
pub mod native;
pub mod obstacles;
pub mod regions;
pub mod tutorial;

pub use crate::error::{InputError, show};
pub use crate::geometry::Domain;
pub use crate::geometry::domain::{MIN_CELL_SIZE, POSITION_RESOLUTION_CELLS};
pub use crate::output::OutputSettings;
pub use crate::particles::{MAX_ACCELERATION_OR_SPEED, MAX_PARTICLES};
pub use crate::sim::emit::{Emitter, Limits, Sink};
pub use crate::sim::seeding::Source;
pub use crate::sim::settings::{
    MAX_SUBSTEPS, PressurePreconditioner, STANDARD_GRAVITY, SimSettings, SolverSettings,
    TimeSettings,
};
pub use regions::{EmitterSpec, SinkSpec, outlines_at, region_outlines, regions_move};
pub use tutorial::{TUTORIAL_FPS, tutorial_last_frame};

use crate::particles::Particles;
use json::{json_syntax_error, strip_comment_lines, typed};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A fully described shot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    /// Shot name; the default output folder is `out/<name>/`. (default: the scene file's stem)
    #[serde(default)]
    pub name: String,
    /// The simulation box and its grid.
    pub domain: Domain,
    /// Gravity vector, m/s^2. (default: `[0, 0, -9.80665]`, z up)
    #[serde(default = "default_gravity")]
    pub gravity: [f64; 3],
    /// Liquid density, kg/m^3. Scales pressure only; the motion does not depend on it.
    /// (default: `1000`)
    #[serde(default = "default_density")]
    pub density: f64,
    /// Where the liquid starts. At least one source, unless the scene has emitters (its liquid
    /// may then all come from them).
    pub sources: Vec<Source>,
    /// Seed of the jitter used when seeding sources. (default: `0`)
    #[serde(default)]
    pub seed: u64,
    /// Frames and frame rate.
    #[serde(default)]
    pub time: TimeSettings,
    /// Stepper settings.
    #[serde(default)]
    pub solver: SolverSettings,
    /// Surface reconstruction settings (meshes).
    #[serde(default)]
    pub surface: crate::surface::SurfaceSettings,
    /// Sphere preview settings.
    #[serde(default)]
    pub render: crate::render::RenderSettings,
    /// What to write.
    #[serde(default)]
    pub output: OutputSettings,
    /// Inflows: regions kept full of liquid moving at a velocity while active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emitters: Vec<EmitterSpec>,
    /// Outflows: regions that remove every particle entering them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sinks: Vec<SinkSpec>,
    /// Limits (`max_particles`).
    #[serde(default, skip_serializing_if = "Limits::is_default")]
    pub limits: Limits,
    /// Solid obstacles (see README "Obstacles"). (default: none)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub obstacles: Vec<obstacles::ObstacleSpec>,
    /// The obstacles built from `obstacles` by [`build_obstacles`] (not part of the JSON).
    #[serde(skip)]
    pub built_obstacles: crate::sim::solids::Obstacles,
}

impl Scene {
    /// Simulated time at the end of `frame`, s. Derived from the frame index, never accumulated.
    pub fn frame_time(&self, frame: u32) -> f64 {
        crate::sim::settings::frame_time(&self.time, &self.solver, frame)
    }

    /// With a fixed step: steps per frame (at least 1). With adaptive steps: 0.
    pub fn steps_per_frame(&self) -> u32 {
        crate::sim::settings::steps_per_frame(&self.time, &self.solver)
    }

    /// The physics part, as the stepper takes it.
    pub fn sim_settings(&self) -> SimSettings {
        SimSettings::from(self)
    }
}

impl From<&Scene> for SimSettings {
    fn from(s: &Scene) -> Self {
        SimSettings {
            domain: s.domain.clone(),
            gravity: s.gravity,
            density: s.density,
            sources: s.sources.clone(),
            seed: s.seed,
            time: s.time.clone(),
            solver: s.solver.clone(),
            emitters: regions::emitters(&s.emitters),
            sinks: regions::sinks(&s.sinks),
            limits: s.limits.clone(),
            obstacles: s.built_obstacles.clone(),
        }
    }
}

/// Builds the scene's obstacles, emitters and sinks (reads mesh files) into
/// `scene.built_obstacles` and each emitter's and sink's `built`, and checks the emitters and
/// sinks against the domain and the obstacles. Returns the warnings (an emitter over the CFL
/// limit). Errors are placed in `file`.
pub fn build_obstacles(scene: &mut Scene, file: &Path) -> Result<Vec<String>, InputError> {
    let fps = scene.time.fps;
    let built = (|| {
        if scene.obstacles.is_empty() {
            scene.built_obstacles = Default::default();
        } else {
            let solids = obstacles::build_solids(&scene.obstacles, &scene.domain, fps)?;
            let key = serde_json::to_string(&scene.obstacles).unwrap_or_default();
            scene.built_obstacles = crate::sim::solids::Obstacles::new(solids, key);
        }
        regions::build_regions(&mut scene.emitters, &mut scene.sinks, &scene.domain, fps)?;
        let emitters = regions::emitters(&scene.emitters);
        let warnings = crate::sim::emit::check_emitters_sinks(
            &scene.domain,
            &emitters,
            &regions::sinks(&scene.sinks),
            fps,
            &scene.solver,
        )?;
        regions::check_emitters_free(&emitters, &scene.built_obstacles.solids, &scene.domain)?;
        Ok(warnings)
    })();
    built.map_err(|e: InputError| e.in_file(file))
}

impl<'a> From<&'a Scene> for crate::render::ViewInput<'a> {
    fn from(s: &'a Scene) -> Self {
        crate::render::ViewInput {
            settings: &s.render,
            domain: &s.domain,
            gravity: s.gravity,
            source_speed: fastest_source_speed(&s.sources),
            outlines: region_outlines(s, None),
        }
    }
}

/// The fastest initial speed of a box or sphere source, m/s (0 without any): it feeds the
/// preview's default colour range.
pub fn fastest_source_speed(sources: &[Source]) -> f64 {
    sources
        .iter()
        .map(|s| match s {
            Source::Box { velocity, .. } | Source::Sphere { velocity, .. } => {
                velocity.iter().map(|c| c * c).sum::<f64>().sqrt()
            }
            Source::ParticleFile { .. } => 0.0,
        })
        .fold(0.0, f64::max)
}

fn default_gravity() -> [f64; 3] {
    [0.0, 0.0, -STANDARD_GRAVITY]
}
fn default_density() -> f64 {
    1000.0
}

/// Which input format a scene file was in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SceneFormat {
    /// A native scene (`scenes/*.json`).
    Native,
    /// The tutorial's `fluid.json`.
    Tutorial,
}

/// A scene read, resolved, validated and seeded: everything a run needs to start.
#[derive(Debug, Clone)]
pub struct LoadedScene {
    /// The resolved scene: defaults filled in, particle file paths absolute.
    pub scene: Scene,
    /// The initial particles, in creation order (source order, then seeding order).
    pub particles: Particles,
    /// The file it came from.
    pub file: PathBuf,
    /// Its format.
    pub format: SceneFormat,
    /// Things worth telling the user that are not errors (a source clipped by the walls).
    pub notes: Vec<String>,
}

/// The largest scene file surge reads, bytes (4 MiB): a scene is a few kB of JSON; anything
/// near this size is not a scene (`/dev/zero`, a particle dump), and the cap keeps memory
/// bounded whatever file is given.
pub const MAX_SCENE_BYTES: u64 = 4 << 20;

/// The longest scene `name`, characters: it names the default output folder `out/<name>/`,
/// and file systems allow 255 bytes per name.
pub const MAX_NAME_CHARS: usize = 100;

/// Keys of the tutorial's `fluid.json`.
const TUTORIAL_KEYS: [&str; 9] = [
    "dt",
    "total_time",
    "density",
    "res",
    "h",
    "lc",
    "flipRatio",
    "particles",
    "output_fname",
];

/// Reads a scene file (native or the tutorial's `fluid.json`, told apart by their keys),
/// validates every field and seeds its particles. Nothing is written.
pub fn load(path: &Path) -> Result<LoadedScene, InputError> {
    if path.is_dir() {
        let p = path.display();
        let run_folder = path.join("scene.json").is_file()
            && ["particles", "checkpoints", "stats"]
                .iter()
                .any(|d| path.join(d).is_dir());
        let jsons: Vec<String> = std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        return Err(if run_folder {
            InputError::file(
                path,
                "is the output folder of a run, not a scene file",
                format!(
                    "continue that run with `surge resume {p}`, or run its scene again with `surge run {} -o NEW_FOLDER`",
                    path.join("scene.json").display()
                ),
            )
        } else if jsons.len() == 1 {
            InputError::file(
                path,
                "is a folder, not a scene file",
                format!(
                    "give the scene file itself: `{}`",
                    path.join(&jsons[0]).display()
                ),
            )
        } else {
            InputError::file(
                path,
                "is a folder, not a scene file",
                "give the scene's .json file, e.g. scenes/dam_break.json (or inputs/fluid.json)",
            )
        });
    }
    let bytes = json::read_capped(path, MAX_SCENE_BYTES).map_err(|e| {
        if let Some(size) = json::too_large(&e) {
            return InputError::file(
                path,
                format!(
                    "the file is larger than a scene file can be ({size}; surge reads at most {} MB of scene JSON)",
                    MAX_SCENE_BYTES >> 20
                ),
                "give the scene's .json file (a few kB); particles belong in a particle file (`particle_file` source), not in the scene",
            );
        }
        let fix = if e.kind() == std::io::ErrorKind::NotFound {
            "check the path; shipped scenes are in `scenes/`, the tutorial's input is `inputs/fluid.json`"
        } else {
            "make the file readable"
        };
        InputError::file(path, format!("cannot read the scene file: {e}"), fix)
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let b = e.as_bytes();
        let utf16 = b.starts_with(&[0xff, 0xfe]) || b.starts_with(&[0xfe, 0xff]);
        InputError::file(
            path,
            if utf16 {
                "the file is UTF-16 text, not UTF-8".to_string()
            } else {
                format!(
                    "not UTF-8 text (invalid byte at offset {}): is it a scene file?",
                    e.utf8_error().valid_up_to()
                )
            },
            "save the scene as UTF-8 JSON text (in most editors: Save with Encoding > UTF-8)",
        )
    })?;
    if text.trim_start_matches('\u{feff}').trim().is_empty() {
        return Err(InputError::file(
            path,
            "the file is empty",
            "write the scene as one JSON object; README.md's scene reference has a minimal example",
        ));
    }
    let base = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = std::path::absolute(&base).unwrap_or(base);
    load_str(&text, path, &base)
}

/// [`load`] from text: `file` names it in errors (and gives the default name), relative particle
/// file paths of native scenes are taken from `base_dir`.
pub fn load_str(text: &str, file: &Path, base_dir: &Path) -> Result<LoadedScene, InputError> {
    let clean = strip_comment_lines(text);
    let value: serde_json::Value =
        serde_json::from_str(&clean).map_err(|e| json_syntax_error(file, &clean, e))?;
    let Some(obj) = value.as_object() else {
        return Err(InputError::file(
            file,
            "the top level is not a JSON object `{ ... }`",
            "write the scene as one JSON object; see README.md's scene reference",
        ));
    };
    let is_tutorial = !obj.contains_key("domain")
        && !obj.contains_key("sources")
        && TUTORIAL_KEYS
            .iter()
            .any(|k| *k != "density" && obj.contains_key(*k));
    let (mut scene, format) = if is_tutorial {
        (
            tutorial::tutorial_scene(&clean, file, base_dir)?,
            SceneFormat::Tutorial,
        )
    } else {
        (
            native::native_scene(&clean, file, base_dir)?,
            SceneFormat::Native,
        )
    };
    validate(&scene, file).map_err(|e| match format {
        SceneFormat::Tutorial => tutorial::tutorial_names(e),
        SceneFormat::Native => e,
    })?;
    // Emitter velocities beyond the CFL limit come back as warnings.
    let cfl_notes = build_obstacles(&mut scene, file)?;
    let particles = initial_particles(&scene, file)?;
    let mut notes = native::clipped_sources(&scene);
    notes.extend(overlapping_sources(&scene.sources));
    notes.extend(cfl_notes);
    Ok(LoadedScene {
        scene,
        particles,
        file: file.to_path_buf(),
        format,
        notes,
    })
}

/// Checks a resolved scene: each section by its own type's check, in the order of the file
/// (name, domain, gravity and density, sources, time, solver, surface, render, output); the
/// first problem found is returned, placed in `file`. Run once per run, and once per
/// `surge mesh` / `surge preview` (never per frame).
pub fn validate(scene: &Scene, file: &Path) -> Result<(), InputError> {
    check_sections(scene).map_err(|e| e.in_file(file))
}

fn check_sections(scene: &Scene) -> Result<(), InputError> {
    use crate::error::check::err;
    if scene.name.contains('/')
        || scene.name.contains('\\')
        || scene.name == ".."
        || scene.name == "."
    {
        return Err(err(
            "name",
            format!("`{}` is not a plain name", crate::error::quote(&scene.name)),
            "use a name without path separators; it names the default output folder out/<name>/",
        ));
    }
    let chars = scene.name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(err(
            "name",
            format!(
                "`{}` is too long ({chars} characters; at most {MAX_NAME_CHARS})",
                crate::error::quote(&scene.name)
            ),
            "use a short name; it names the default output folder out/<name>/",
        ));
    }
    if scene.name.chars().any(char::is_control) {
        return Err(err(
            "name",
            format!(
                "`{}` holds control characters (a NUL byte, a newline, an escape)",
                crate::error::quote(&scene.name)
            ),
            "use letters, digits, `-`, `_` and spaces only; it names the default output folder out/<name>/",
        ));
    }
    scene.domain.check()?;
    crate::sim::settings::check_gravity_density(&scene.gravity, scene.density)?;
    // A scene whose liquid all comes from emitters may start empty.
    if !scene.sources.is_empty() || scene.emitters.is_empty() {
        crate::sim::seeding::check_sources(&scene.domain, &scene.sources)?;
    }
    scene.time.check()?;
    scene.solver.check(scene.time.fps)?;
    // Emitters and sinks are checked when they are built (build_obstacles).
    scene.limits.check()?;
    // Crosses sections: the surface's sampling grid depends on the domain.
    if let Err(e) = scene.surface.validate_for(&scene.domain) {
        return Err(err("surface", e.message, e.fix));
    }
    if let Err(e) = scene.render.validate() {
        return Err(err(
            "render",
            e.to_string(),
            "see the preview section of README.md",
        ));
    }
    scene.output.check()
}

/// A warning for every pair of box/sphere sources that overlap: each source is seeded on its
/// own, so the overlap gets the particles of both (twice the density there, which the first
/// pressure solve pushes apart as a small burst). Sources are not merged into their union.
pub fn overlapping_sources(sources: &[Source]) -> Vec<String> {
    enum Shape {
        Box([f64; 3], [f64; 3]),
        Ball([f64; 3], f64),
    }
    let shape = |s: &Source| match s {
        Source::Box { min, max, .. } => Some(Shape::Box(*min, *max)),
        Source::Sphere { center, radius, .. } => Some(Shape::Ball(*center, *radius)),
        _ => None,
    };
    let box_ball = |lo: &[f64; 3], hi: &[f64; 3], c: &[f64; 3], r: f64| {
        let d2: f64 = (0..3)
            .map(|a| {
                let q = c[a].clamp(lo[a], hi[a]);
                (c[a] - q) * (c[a] - q)
            })
            .sum();
        d2 < r * r
    };
    let mut out = Vec::new();
    for i in 0..sources.len() {
        for j in i + 1..sources.len() {
            let (Some(a), Some(b)) = (shape(&sources[i]), shape(&sources[j])) else {
                continue;
            };
            let overlap = match (&a, &b) {
                (Shape::Box(l1, h1), Shape::Box(l2, h2)) => {
                    (0..3).all(|k| l1[k].max(l2[k]) < h1[k].min(h2[k]))
                }
                (Shape::Ball(c1, r1), Shape::Ball(c2, r2)) => {
                    let d2: f64 = (0..3).map(|k| (c1[k] - c2[k]).powi(2)).sum();
                    d2 < (r1 + r2) * (r1 + r2)
                }
                (Shape::Box(l, h), Shape::Ball(c, r)) | (Shape::Ball(c, r), Shape::Box(l, h)) => {
                    box_ball(l, h, c, *r)
                }
            };
            if overlap {
                out.push(format!(
                    "warning: sources[{i}] and sources[{j}] overlap; each is seeded on its own, so the overlap holds the particles of both (twice the density there). Make them touch without overlapping if that is not meant"
                ));
            }
        }
    }
    out
}

/// Seeds the initial particles of a validated scene: box and sphere sources are seeded, particle
/// files read (their paths relative to the working directory unless absolute). Checks that every
/// source gives particles and that every particle lies in the liquid region.
pub fn initial_particles(scene: &Scene, file: &Path) -> Result<Particles, InputError> {
    let mut files = Vec::new();
    for src in &scene.sources {
        if let Source::ParticleFile { path } = src {
            files.push(crate::output::part::read_particle_file(
                path,
                &scene.domain,
            )?);
        }
    }
    let (particles, counts) =
        crate::sim::seeding::seed_sources(&scene.domain, &scene.sources, scene.seed, &files);
    let (particles, counts) = obstacles::remove_covered(particles, counts, scene, file)?;
    for (i, (n, src)) in counts.iter().zip(&scene.sources).enumerate() {
        if *n == 0 {
            let fix = match src {
                Source::ParticleFile { .. } => "put at least one particle in the file".to_string(),
                _ => format!(
                    "make it cover at least one particle spacing ({} m, half a cell) inside the domain's liquid region",
                    scene.domain.particle_spacing()
                ),
            };
            return Err(InputError::field(
                file,
                &format!("sources[{i}]"),
                "this source seeds no particles",
                fix,
            ));
        }
    }
    Ok(particles)
}

/// Reads a resolved scene (`OUT/scene.json`, as `surge run` writes it) and validates it.
pub fn read_resolved(path: &Path) -> Result<Scene, InputError> {
    let bytes = json::read_capped(path, MAX_SCENE_BYTES).map_err(|e| {
        InputError::file(
            path,
            format!("cannot read the resolved scene: {e}"),
            "give the output folder of a `surge run`; it holds scene.json",
        )
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        InputError::file(
            path,
            "not UTF-8 text: the resolved scene is damaged",
            "re-run the shot (`surge run SCENE -o FOLDER --overwrite`), or give the scene with `--scene FILE`",
        )
    })?;
    let clean = strip_comment_lines(&text);
    serde_json::from_str::<serde_json::Value>(&clean)
        .map_err(|e| json_syntax_error(path, &clean, e))?;
    let mut scene: Scene = typed(&clean, path)?;
    validate(&scene, path)?;
    let hashes = |s: &Scene| -> Vec<(String, Option<String>)> {
        let list = |name: &str, v: Vec<&obstacles::ObstacleSpec>| {
            v.into_iter()
                .enumerate()
                .map(|(i, o)| (format!("{name}[{i}].path"), o.content_hash.clone()))
                .collect::<Vec<_>>()
        };
        let mut out = list("obstacles", s.obstacles.iter().collect());
        out.extend(list(
            "emitters",
            s.emitters.iter().map(|e| &e.shape).collect(),
        ));
        out.extend(list("sinks", s.sinks.iter().map(|k| &k.shape).collect()));
        out
    };
    let recorded = hashes(&scene);
    obstacles::resolve_paths(&mut scene.obstacles, path, Path::new("."))?;
    regions::resolve_paths(&mut scene.emitters, &mut scene.sinks, path, Path::new("."))?;
    for ((field, r), (_, now)) in recorded.iter().zip(&hashes(&scene)) {
        if r.is_some() && r != now {
            return Err(InputError::field(
                path,
                field,
                "the mesh file changed since the run started",
                "restore the mesh file, or start a new run with `surge run`",
            ));
        }
    }
    build_obstacles(&mut scene, path)?;
    Ok(scene)
}
