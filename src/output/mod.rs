//! The run directory and every file format surge writes.
//!
//! ```text
//! OUT/scene.json                  the fully resolved scene
//! OUT/stats.jsonl                 one JSON line per frame (assembled from stats/, see `stats`)
//! OUT/stats/frame_NNNN.json      one frame's stats line
//! OUT/particles/frame_NNNN.bin    particle frames (see `frame`), read by `mesh`, `preview`, `resume`
//! OUT/meshes/frame_NNNN.ply       surface meshes
//! OUT/previews/frame_NNNN.png     sphere previews
//! OUT/checkpoints/               checkpoints (see `crate::checkpoint`)
//! OUT/<part_pattern>             the tutorial's text frames, when asked for
//! ```
//!
//! Every file is written atomically: to a temporary name in the same folder, fsynced, then
//! renamed into place, so a killed run never leaves a half-written file behind.
//!
//! Layer 2 (a stage beside sim, surface and render, importing none of them): imports error,
//! particles, mesh, image and geometry. It encodes what the stages produce (a `TriMesh` as PLY,
//! an `Image` as PNG, particles as frames and `.part` text) and owns [`OutputSettings`].

pub mod frame;
pub mod part;
pub mod ply;
pub mod png;
pub mod settings;
pub mod stats;

pub use settings::OutputSettings;

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Paths inside one run's output folder.
#[derive(Debug, Clone)]
pub struct RunLayout {
    pub root: PathBuf,
}

impl RunLayout {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }
    pub fn scene(&self) -> PathBuf {
        self.root.join("scene.json")
    }
    pub fn stats(&self) -> PathBuf {
        self.root.join("stats.jsonl")
    }
    pub fn stats_dir(&self) -> PathBuf {
        self.root.join("stats")
    }
    pub fn particles_dir(&self) -> PathBuf {
        self.root.join("particles")
    }
    pub fn meshes_dir(&self) -> PathBuf {
        self.root.join("meshes")
    }
    pub fn previews_dir(&self) -> PathBuf {
        self.root.join("previews")
    }
    pub fn obstacles_dir(&self) -> PathBuf {
        self.root.join("obstacles")
    }
    pub fn obstacle_mesh(&self, frame: u32) -> PathBuf {
        self.obstacles_dir().join(frame_name(frame, "ply"))
    }
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.root.join("checkpoints")
    }
    pub fn particles(&self, frame: u32) -> PathBuf {
        self.particles_dir().join(frame_name(frame, "bin"))
    }
    pub fn mesh(&self, frame: u32) -> PathBuf {
        self.meshes_dir().join(frame_name(frame, "ply"))
    }
    pub fn preview(&self, frame: u32) -> PathBuf {
        self.previews_dir().join(frame_name(frame, "png"))
    }
}

/// `frame_0007.ext`.
pub fn frame_name(frame: u32, ext: &str) -> String {
    format!("frame_{frame:04}.{ext}")
}

/// The frame of a `frame_NNNN.EXT` file name (at least four digits), if it is one.
pub fn frame_of_name(name: &str, ext: &str) -> Option<u32> {
    let digits = name
        .strip_prefix("frame_")?
        .strip_suffix(ext)?
        .strip_suffix('.')?;
    if digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

/// Writes `bytes` to `path` atomically: temporary file in the same folder, fsync, rename,
/// fsync of the folder. Creates the folder if needed.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("path has no file name"))?;
    // A name of this process's own: two processes writing one file (two `surge mesh` of
    // overlapping frame ranges) each rename a whole file into place.
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Pretty JSON for files people read (`scene.json`): two-space indents, one key per line, and
/// arrays of plain values (vectors like `[0.0, 0.0, -9.80665]`) kept on one line.
pub fn pretty_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_pretty(value, 0, &mut out);
    out.push('\n');
    out
}

/// An object's members or an array's items, one per line at `indent + 1`, in `brackets`.
fn write_block<'a>(
    brackets: (char, char),
    items: impl ExactSizeIterator<Item = (Option<&'a String>, &'a serde_json::Value)>,
    indent: usize,
    out: &mut String,
) {
    let len = items.len();
    out.push(brackets.0);
    out.push('\n');
    for (i, (key, x)) in items.enumerate() {
        out.push_str(&"  ".repeat(indent + 1));
        if let Some(k) = key {
            out.push_str(&serde_json::Value::String(k.clone()).to_string());
            out.push_str(": ");
        }
        write_pretty(x, indent + 1, out);
        if i + 1 < len {
            out.push(',');
        }
        out.push('\n');
    }
    out.push_str(&"  ".repeat(indent));
    out.push(brackets.1);
}

fn write_pretty(v: &serde_json::Value, indent: usize, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Object(m) if !m.is_empty() => {
            let items = m.iter().map(|(k, x)| (Some(k), x));
            write_block(('{', '}'), items, indent, out);
        }
        Value::Array(a) if a.iter().any(|x| x.is_object() || x.is_array()) => {
            write_block(('[', ']'), a.iter().map(|x| (None, x)), indent, out);
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(|x| x.to_string()).collect();
            out.push('[');
            out.push_str(&items.join(", "));
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}
