//! Checkpoints: the whole simulation state at the end of one frame, for exact resume.
//!
//! PIC/FLIP keeps no state on the grid between substeps (the grid is rebuilt from the particles
//! every substep), so the state is the particles in creation order plus the frame index; the
//! clock is derived from the frame index (`sim::settings::frame_time`; the caller hands in the time) and the only
//! random draw, the jitter of seeded sources, happens once at frame 0 from the scene's `seed`.
//! The leapfrog integrator adds one number: the last substep's length (the next frame's first
//! kick lasts `(dt_prev + dt) / 2`, see `sim`), in META as `last_substep`.
//! Scratch (grids, solver vectors) is never stored, as in rapier's "state is serialised, scratch
//! is not". The stepper guarantees that `Simulation::new(scene, particles_at_k, k)` given that length
//! (`with_last_substep`) continues
//! bit-identically, so a resumed run reproduces an uninterrupted one byte for byte.
//!
//! File `OUT/checkpoints/checkpoint_NNNN.bin`, little-endian:
//!
//! | offset | type      | field                                              |
//! |--------|-----------|----------------------------------------------------|
//! | 0      | [u8; 8]   | magic `SURGECKP`                                   |
//! | 8      | u32       | format version (3; older versions are refused)     |
//! | 12     | u32       | number of sections S                               |
//! | 16     | sections  | S times: tag [u8; 4], length u64, CRC-32 u32, data |
//!
//! Sections: `META`, UTF-8 JSON ([`Meta`]: frame, time, last substep, count, seed, scene hash,
//! the resolved scene); `PART`, six f32 arrays of N values (x, y, z, vx, vy, vz), the particles in creation
//! order; `AFFN` (only for runs with `solver.transfer = "apic"`), nine f32 arrays of N
//! values, the APIC affine matrices `C` (`affine[3 a + b]`, see [`Particles::affine`]). Each
//! section carries the CRC-32 (IEEE) of its data, so a truncated or bit-flipped file is detected
//! and skipped. Later stages that add per-particle data add sections.
//!
//! Formats 1 and 2 were written before the leapfrog integrator: their particle velocities are
//! symplectic Euler's, not the half-step ones, and they lack the last substep's length, so
//! they are refused (the run is to be redone from frame 0), never resumed with mismatched
//! velocities.
//!
//! A checkpoint is written with [`crate::output::atomic_write`] (temporary file, fsync, rename),
//! and only the newest `output.keep_checkpoints` are kept.
//!
//! Layer 3: imports particles and output only. The caller hands it the resolved scene as JSON
//! with its physics hash ([`SceneRecord`], made once per run) and each frame's time.

use crate::output::RunLayout;
use crate::particles::Particles;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const MAGIC: &[u8; 8] = b"SURGECKP";
pub const VERSION: u32 = 3;
/// The oldest format version still read (see the module docs).
pub const OLDEST_VERSION: u32 = 3;
const SECTION_HEADER: usize = 16;

/// The JSON metadata section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Checkpoint format version.
    pub format_version: u32,
    /// surge version that wrote it.
    pub surge_version: String,
    /// The frame whose end the state is at.
    pub frame: u32,
    /// Simulated time of that frame, s.
    pub time: f64,
    /// Length of the frame's last substep, s (0 at frame 0): the next kick's `dt_prev`.
    pub last_substep: f64,
    /// Number of particles.
    pub particle_count: u64,
    /// The scene's seed. The stepper draws no random numbers; seeding at frame 0 is the only
    /// random draw, so the seed is the whole RNG state.
    pub seed: u64,
    /// FNV-1a 64 hash (hex) of the physics-relevant part of the resolved scene
    /// ([`physics_view`]).
    pub scene_hash: String,
    /// The resolved scene the run had when this checkpoint was written.
    pub scene: Value,
}

/// A decoded checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub meta: Meta,
    pub particles: Particles,
}

/// Scene fields that change only what is written, not the simulated motion. Everything else
/// (domain, gravity, density, sources, seed, fps, solver) is physics.
pub const OUTPUT_ONLY_FIELDS: [&str; 5] = ["name", "time.frames", "surface", "render", "output"];

/// The physics-relevant part of a scene, as JSON: the scene minus [`OUTPUT_ONLY_FIELDS`].
pub fn physics_view(scene: &Value) -> Value {
    let mut v = scene.clone();
    if let Some(m) = v.as_object_mut() {
        for f in OUTPUT_ONLY_FIELDS {
            match f.split_once('.') {
                None => {
                    m.remove(f);
                }
                Some((a, b)) => {
                    if let Some(inner) = m.get_mut(a).and_then(Value::as_object_mut) {
                        inner.remove(b);
                    }
                }
            }
        }
    }
    v
}

/// What a checkpoint records about the run's resolved scene, worked out once per run by the
/// caller (the checkpoint does not know the scene type): its JSON, the hash of its physics,
/// its seed and how many checkpoints to keep.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneRecord {
    /// The resolved scene as JSON (what `OUT/scene.json` holds).
    pub json: Value,
    /// [`scene_hash`] of `json`.
    pub hash: String,
    /// The scene's seed.
    pub seed: u64,
    /// `output.keep_checkpoints`.
    pub keep: u32,
}

impl SceneRecord {
    /// The record of a scene given as JSON.
    pub fn new(json: Value, seed: u64, keep: u32) -> Self {
        let hash = scene_hash(&json);
        Self {
            json,
            hash,
            seed,
            keep,
        }
    }
}

/// Hash of a scene's physics-relevant part (FNV-1a 64 over its canonical JSON, keys sorted).
pub fn scene_hash(scene: &Value) -> String {
    let v = physics_view(scene);
    let text = v.to_string();
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// Every leaf that differs between `old` and `new`, as `` `path`: old -> new ``.
pub fn diff(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into("", old, new, &mut out);
    out
}

fn diff_into(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let null = Value::Null;
                diff_into(
                    &join(k),
                    a.get(k).unwrap_or(&null),
                    b.get(k).unwrap_or(&null),
                    out,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff_into(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ if old == new => {}
        _ => {
            let show = |v: &Value| match v {
                Value::Null => "(absent)".to_string(),
                v => v.to_string(),
            };
            out.push(format!("`{path}`: {} -> {}", show(old), show(new)));
        }
    }
}

/// Encodes the state at the end of `frame`, at simulated time `time`, whose last substep
/// lasted `last_substep` s.
pub fn encode(
    scene: &SceneRecord,
    frame: u32,
    [time, last_substep]: [f64; 2],
    particles: &Particles,
) -> Vec<u8> {
    let meta = Meta {
        format_version: VERSION,
        surge_version: env!("CARGO_PKG_VERSION").to_string(),
        frame,
        time,
        last_substep,
        particle_count: particles.len() as u64,
        seed: scene.seed,
        scene_hash: scene.hash.clone(),
        scene: scene.json.clone(),
    };
    let meta_bytes = serde_json::to_vec_pretty(&meta).expect("metadata serialises");
    let mut part = Vec::with_capacity(24 * particles.len());
    for arr in particles.pos.iter().chain(particles.vel.iter()) {
        for v in arr {
            part.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut affine = Vec::new();
    if particles.has_affine() {
        affine.reserve(36 * particles.len());
        for arr in &particles.affine {
            for v in arr {
                affine.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    let mut sections: Vec<(&[u8; 4], &[u8])> = vec![(b"META", &meta_bytes), (b"PART", &part)];
    if particles.has_affine() {
        sections.push((b"AFFN", &affine));
    }
    let mut out = Vec::with_capacity(16 + 48 + meta_bytes.len() + part.len() + affine.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    for (tag, data) in sections {
        out.extend_from_slice(tag);
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
        out.extend_from_slice(data);
    }
    out
}

/// Decodes and verifies a checkpoint; the error says what is wrong with it.
pub fn decode(bytes: &[u8]) -> Result<Checkpoint, String> {
    if bytes.len() < 16 {
        return Err(format!(
            "truncated: {} bytes, shorter than the 16-byte header",
            bytes.len()
        ));
    }
    if &bytes[..8] != MAGIC {
        return Err("not a surge checkpoint (bad magic)".into());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if (1..OLDEST_VERSION).contains(&version) {
        return Err(format!(
            "format version {version}, written before the leapfrog integrator: its velocities \
             are not the half-step ones this surge continues from, so it cannot be resumed; \
             rerun the scene from frame 0"
        ));
    }
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(format!(
            "format version {version}; this surge reads versions {OLDEST_VERSION} to {VERSION}"
        ));
    }
    let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    let mut at = 16usize;
    let mut meta = None;
    let mut part = None;
    let mut affine = None;
    for _ in 0..count {
        if bytes.len() - at < SECTION_HEADER {
            return Err(format!(
                "truncated: {} bytes, a section header is missing",
                bytes.len()
            ));
        }
        let tag: [u8; 4] = bytes[at..at + 4].try_into().unwrap();
        let len = u64::from_le_bytes(bytes[at + 4..at + 12].try_into().unwrap());
        let crc = u32::from_le_bytes(bytes[at + 12..at + 16].try_into().unwrap());
        at += SECTION_HEADER;
        let name = String::from_utf8_lossy(&tag).into_owned();
        if ((bytes.len() - at) as u64) < len {
            return Err(format!(
                "truncated: section {name} needs {len} bytes, {} remain",
                bytes.len() - at
            ));
        }
        let data = &bytes[at..at + len as usize];
        at += len as usize;
        if crc32fast::hash(data) != crc {
            return Err(format!(
                "bad checksum in section {name}: the file is corrupt"
            ));
        }
        match &tag {
            b"META" => meta = Some(data),
            b"PART" => part = Some(data),
            b"AFFN" => affine = Some(data),
            _ => {}
        }
    }
    if at != bytes.len() {
        return Err(format!(
            "{} unexpected bytes after the last section",
            bytes.len() - at
        ));
    }
    let mut meta: Meta = serde_json::from_slice(meta.ok_or("no META section")?)
        .map_err(|e| format!("META section is not valid metadata: {e}"))?;
    if !(meta.last_substep.is_finite() && meta.last_substep >= 0.0) {
        return Err(format!(
            "META's last_substep is {}, not a length of time",
            meta.last_substep
        ));
    }
    // A run recorded without `solver.surface_wave_step` predates that substep bound and ran
    // without it: it is read as `0` (the bound off), so resuming it under today's default is
    // refused by the scene comparison, naming the field, instead of silently changing the
    // substeps mid-run. (The field is always written since the bound exists.)
    if let Some(solver) = meta.scene.get_mut("solver").and_then(Value::as_object_mut) {
        solver
            .entry("surface_wave_step")
            .or_insert_with(|| Value::from(0.0));
        // Likewise a run recorded without `solver.max_particles_per_cell` ran without the
        // thinning of crowded cells: `0`, off.
        solver
            .entry("max_particles_per_cell")
            .or_insert_with(|| Value::from(0));
    }
    let part = part.ok_or("no PART section")?;
    let n = meta.particle_count as usize;
    if n.checked_mul(24) != Some(part.len()) {
        return Err(format!(
            "PART section has {} bytes, {n} particles need {}",
            part.len(),
            n.saturating_mul(24)
        ));
    }
    let mut arrays: [Vec<f32>; 6] = std::array::from_fn(|_| Vec::with_capacity(n));
    for (k, arr) in arrays.iter_mut().enumerate() {
        arr.extend(
            part[4 * n * k..4 * n * (k + 1)]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap())),
        );
    }
    let [x, y, z, vx, vy, vz] = arrays;
    let apic = meta.scene["solver"]["transfer"] == "apic";
    let affine = match affine {
        Some(a) => {
            if n.checked_mul(36) != Some(a.len()) {
                return Err(format!(
                    "AFFN section has {} bytes, {n} particles need {}",
                    a.len(),
                    n.saturating_mul(36)
                ));
            }
            std::array::from_fn(|k| {
                a[4 * n * k..4 * n * (k + 1)]
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect()
            })
        }
        None if apic && n > 0 => {
            return Err("no AFFN section, which a run with solver.transfer \"apic\" needs".into());
        }
        None => Default::default(),
    };
    Ok(Checkpoint {
        meta,
        particles: Particles {
            pos: [x, y, z],
            vel: [vx, vy, vz],
            affine,
        },
    })
}

/// Path of the checkpoint of `frame`.
pub fn path(layout: &RunLayout, frame: u32) -> PathBuf {
    layout
        .checkpoints_dir()
        .join(format!("checkpoint_{frame:04}.bin"))
}

/// The frame of a checkpoint file name, if it is one.
fn frame_of(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("checkpoint_")?.strip_suffix(".bin")?;
    (digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The checkpoint files of a run, oldest first.
pub fn list(layout: &RunLayout) -> Vec<(u32, PathBuf)> {
    let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(layout.checkpoints_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            frame_of(&name).map(|f| (f, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Reads and verifies one checkpoint file.
pub fn read(path: &Path) -> Result<Checkpoint, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let c = decode(&bytes)?;
    if path
        .file_name()
        .and_then(|n| frame_of(&n.to_string_lossy()))
        != Some(c.meta.frame)
    {
        return Err(format!(
            "it holds frame {}, which does not match its file name",
            c.meta.frame
        ));
    }
    Ok(c)
}

/// Writes the checkpoint of `frame` (`[time, last_substep]` as in [`encode`]) atomically, then
/// removes all but the newest `scene.keep` (the scene's `output.keep_checkpoints`).
pub fn write(
    layout: &RunLayout,
    scene: &SceneRecord,
    frame: u32,
    time: [f64; 2],
    particles: &Particles,
) -> anyhow::Result<PathBuf> {
    let p = path(layout, frame);
    crate::output::atomic_write(&p, &encode(scene, frame, time, particles))
        .with_context(|| format!("writing checkpoint {}", p.display()))?;
    let all = list(layout);
    let keep = scene.keep.max(1) as usize;
    if all.len() > keep {
        for (_, old) in &all[..all.len() - keep] {
            std::fs::remove_file(old)
                .with_context(|| format!("removing old checkpoint {}", old.display()))?;
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests;
