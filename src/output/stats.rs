//! `OUT/stats.jsonl`: one JSON object per line, one line per frame, in frame order.
//!
//! ```json
//! {"frame":3,"time":0.1,"particles":51200,"max_speed":1.2,"pressure_iterations_max":41,
//!  "pressure_iterations_total":160,"pressure_residual_max":8e-7,"substeps":4,
//!  "seconds":{"advect":0.01,...,"mesh":0.2,"preview":0.05,"io":0.01,"frame":0.4}}
//! ```
//!
//! `frame`, `time` and `particles` come first, then the stepper's [`FrameReport`] fields (in
//! name order), then `seconds`: wall-clock seconds per stage. Everything outside `seconds` is
//! deterministic (identical across thread counts and across an interrupted-and-resumed run), so
//! comparisons drop that one key ([`deterministic_part`]).
//!
//! The file is rewritten atomically after every frame (it is small), so it always ends with a
//! complete line.

use crate::sim::FrameReport;
use anyhow::Context;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The stats of a run, kept in memory and mirrored to `OUT/stats.jsonl`.
#[derive(Debug, Clone)]
pub struct StatsLog {
    path: PathBuf,
    lines: Vec<(u32, String)>,
}

impl StatsLog {
    /// An empty log writing to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lines: Vec::new(),
        }
    }

    /// The existing log at `path`, keeping only the lines of frames `<= last_frame` (a missing
    /// file or unreadable line is dropped: the frames it described are re-simulated).
    pub fn read_up_to(path: impl Into<PathBuf>, last_frame: u32) -> Self {
        let path = path.into();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut lines: Vec<(u32, String)> = Vec::new();
        for l in text.lines() {
            let frame = serde_json::from_str::<Value>(l)
                .ok()
                .and_then(|v| v.get("frame").and_then(Value::as_u64));
            if let Some(f) = frame
                && f <= last_frame as u64
                && lines.last().is_none_or(|(p, _)| (*p as u64) < f)
            {
                lines.push((f as u32, l.to_string()));
            }
        }
        Self { path, lines }
    }

    /// Frames logged.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when nothing is logged.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Rewrites the file atomically with the current lines.
    pub fn flush(&self) -> anyhow::Result<()> {
        let mut text = String::new();
        for (_, l) in &self.lines {
            text.push_str(l);
            text.push('\n');
        }
        super::atomic_write(&self.path, text.as_bytes())
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Appends (or replaces) `frame`'s line and rewrites the file.
    pub fn record(&mut self, frame: u32, line: String) -> anyhow::Result<()> {
        self.lines.retain(|(f, _)| *f < frame);
        self.lines.push((frame, line));
        self.flush()
    }
}

/// One frame's line. `extra_seconds` are the pipeline's own stages (mesh, preview, io...),
/// added to the stepper's `seconds`.
pub fn frame_line(
    frame: u32,
    time: f64,
    particles: usize,
    report: &FrameReport,
    extra_seconds: &[(&str, f64)],
) -> String {
    let mut fields = match serde_json::to_value(report) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut seconds = match fields.remove("seconds") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for (k, v) in extra_seconds {
        seconds.insert((*k).to_string(), json_f64(*v));
    }
    let mut out = format!(
        "{{\"frame\":{frame},\"time\":{},\"particles\":{particles}",
        json_f64(time)
    );
    for (k, v) in &fields {
        out.push_str(&format!(",{}:{}", Value::String(k.clone()), v));
    }
    out.push_str(&format!(",\"seconds\":{}}}", Value::Object(seconds)));
    out
}

/// A number as JSON (non-finite values, which JSON lacks, become `null`).
fn json_f64(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// A stats line without its wall-clock `seconds`: the part that must be reproducible.
pub fn deterministic_part(line: &str) -> Option<Value> {
    let mut v: Value = serde_json::from_str(line).ok()?;
    v.as_object_mut()?.remove("seconds");
    Some(v)
}

/// Reads a stats file's lines as JSON values (for tests and tools).
pub fn read(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}: line {} is not JSON", path.display(), i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_layout_and_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.jsonl");
        let mut log = StatsLog::new(&path);
        for f in 0..4 {
            let r = FrameReport {
                substeps: f,
                ..Default::default()
            };
            log.record(f, frame_line(f, f as f64 / 30.0, 10, &r, &[("mesh", 0.5)]))
                .unwrap();
        }
        let lines = read(&path).unwrap();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[2]["frame"], 2);
        assert_eq!(lines[2]["substeps"], 2);
        assert_eq!(lines[2]["seconds"]["mesh"], 0.5);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("{\"frame\":0,\"time\":0.0,\"particles\":10,"));
        let d = deterministic_part(text.lines().next().unwrap()).unwrap();
        assert!(d.get("seconds").is_none() && d.get("substeps").is_some());
        let log = StatsLog::read_up_to(&path, 1);
        assert_eq!(log.len(), 2);
        log.flush().unwrap();
        assert_eq!(read(&path).unwrap().len(), 2);
    }
}
