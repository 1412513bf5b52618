//! Run statistics: one JSON object per frame, kept as `OUT/stats/frame_NNNN.json` (one line
//! each) and assembled into `OUT/stats.jsonl` (the same lines, in frame order).
//!
//! ```json
//! {"frame":3,"time":0.1,"particles":51200,"max_speed":1.2,"pressure_iterations_max":41,
//!  "pressure_iterations_total":160,"pressure_residual_max":8e-7,"substeps":4,
//!  "seconds":{"advect":0.01,...,"mesh":0.2,"preview":0.05,"io":0.01,"total":0.4}}
//! ```
//!
//! `frame`, `time` and `particles` come first, then the stepper's `sim::FrameReport` fields (in
//! name order), then `seconds`: wall-clock seconds per stage. Everything outside `seconds` is
//! deterministic (identical across thread counts and across an interrupted-and-resumed run), so
//! comparisons drop that one key ([`deterministic_part`]).
//!
//! ## Why one file per frame
//!
//! Issue 5 asks that every output file be written atomically (temporary file, then rename), so
//! that a kill never leaves a half-written file. Two designs cost O(1) per frame:
//!
//! * appending each line to `stats.jsonl` and fsyncing it: cheap, but an append is not atomic.
//!   Linux stops a `write(2)` to a regular file between pages when SIGKILL arrives, so a line
//!   longer than a page (a frame with many substeps has a few kB of substep reports) can be cut,
//!   and every reader (and `surge resume`) would have to know to drop a torn last line.
//! * one small file per frame, each written with [`super::atomic_write`]: a file either exists
//!   whole or not at all, exactly like the frame's particles, mesh and preview, and `surge
//!   resume` removes a frame's stats with the frame's other outputs by the same rule.
//!
//! surge uses the second: [`StatsLog::record`] writes `stats/frame_NNNN.json` (a few kB, one
//! fsync, O(1) per frame), and [`StatsLog::assemble`] concatenates the per-frame files into
//! `stats.jsonl`, written atomically too, once when a `surge run` or `surge resume` ends (done,
//! interrupted or failed) and when a resume starts. The previous design rewrote the whole of
//! `stats.jsonl` after every frame: O(frames^2) bytes (a 1,000-frame run with 64-substep frames
//! would write about 3 GB for a 6 MB file). While a run is going, `stats.jsonl` holds the lines
//! of the previous session (if any); the live figures are in `stats/`.

use super::RunLayout;
use anyhow::Context;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// A run's stats files: `OUT/stats/frame_NNNN.json` per frame, `OUT/stats.jsonl` assembled.
#[derive(Debug, Clone)]
pub struct StatsLog {
    dir: PathBuf,
    file: PathBuf,
}

/// What [`StatsLog::assemble`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assembled {
    /// Lines written to `stats.jsonl` (one per frame file found).
    pub lines: usize,
    /// Frames below the last one found that have no stats file (their lines are missing).
    pub missing: Vec<u32>,
}

impl StatsLog {
    /// The stats of the run in `layout`.
    pub fn new(layout: &RunLayout) -> Self {
        Self {
            dir: layout.stats_dir(),
            file: layout.stats(),
        }
    }

    fn frame_path(&self, frame: u32) -> PathBuf {
        self.dir.join(super::frame_name(frame, "json"))
    }

    /// Writes `frame`'s line to `stats/frame_NNNN.json` atomically (replacing any earlier one).
    pub fn record(&self, frame: u32, line: &str) -> anyhow::Result<()> {
        let path = self.frame_path(frame);
        let mut text = String::with_capacity(line.len() + 1);
        text.push_str(line);
        text.push('\n');
        super::atomic_write(&path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }

    /// The per-frame stats files present, in frame order.
    pub fn frames(&self) -> Vec<(u32, PathBuf)> {
        let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let f = super::frame_of_name(&name, "json")?;
                Some((f, e.path()))
            })
            .collect();
        out.sort();
        out
    }

    /// Runs written before per-frame stats existed have only `stats.jsonl`: splits its lines of
    /// frames `<= last_frame` into per-frame files. Does nothing when `stats/` exists.
    pub fn split_legacy(&self, last_frame: u32) -> anyhow::Result<()> {
        if self.dir.exists() {
            return Ok(());
        }
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return Ok(());
        };
        for l in text.lines() {
            let frame = serde_json::from_str::<Value>(l)
                .ok()
                .and_then(|v| v.get("frame").and_then(Value::as_u64));
            if let Some(f) = frame
                && f <= last_frame as u64
            {
                self.record(f as u32, l)?;
            }
        }
        Ok(())
    }

    /// Writes `stats.jsonl` atomically: the per-frame files' lines in frame order. A per-frame
    /// file that is not one JSON object (edited by hand) is left out and counted as missing.
    pub fn assemble(&self) -> anyhow::Result<Assembled> {
        let mut text = String::new();
        let mut lines = 0;
        let mut present = Vec::new();
        for (f, path) in self.frames() {
            let Ok(s) = std::fs::read_to_string(&path) else {
                continue;
            };
            let line = s.trim_end_matches('\n');
            if line.contains('\n') || serde_json::from_str::<Map<String, Value>>(line).is_err() {
                continue;
            }
            text.push_str(line);
            text.push('\n');
            lines += 1;
            present.push(f);
        }
        let last = present.last().copied();
        let missing = match last {
            Some(last) => (0..last)
                .filter(|f| present.binary_search(f).is_err())
                .collect(),
            None => Vec::new(),
        };
        super::atomic_write(&self.file, text.as_bytes())
            .with_context(|| format!("writing {}", self.file.display()))?;
        Ok(Assembled { lines, missing })
    }
}

/// One frame's line. `extra_seconds` are the pipeline's own stages (mesh, preview, io...),
/// added to the stepper's `seconds`.
pub fn frame_line(
    frame: u32,
    time: f64,
    particles: usize,
    report: &impl serde::Serialize,
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
    fn per_frame_files_assemble_in_frame_order() {
        let dir = tempfile::tempdir().unwrap();
        let layout = RunLayout::new(dir.path());
        let log = StatsLog::new(&layout);
        // Out of order on purpose: the assembled file is in frame order.
        for f in [2, 0, 3, 1] {
            // The stepper's report as it serialises (a `sim::FrameReport`).
            let r = serde_json::json!({"substeps": f, "seconds": {"advect": 0.0}});
            log.record(f, &frame_line(f, f as f64 / 30.0, 10, &r, &[("mesh", 0.5)]))
                .unwrap();
        }
        assert!(!layout.stats().exists(), "assembled only on request");
        let a = log.assemble().unwrap();
        assert_eq!(
            a,
            Assembled {
                lines: 4,
                missing: vec![]
            }
        );
        let lines = read(&layout.stats()).unwrap();
        assert_eq!(lines.len(), 4);
        for (f, l) in lines.iter().enumerate() {
            assert_eq!(l["frame"], f);
            assert_eq!(l["substeps"], f);
        }
        assert_eq!(lines[2]["seconds"]["mesh"], 0.5);
        let text = std::fs::read_to_string(layout.stats()).unwrap();
        assert!(text.starts_with("{\"frame\":0,\"time\":0.0,\"particles\":10,"));
        let d = deterministic_part(text.lines().next().unwrap()).unwrap();
        assert!(d.get("seconds").is_none() && d.get("substeps").is_some());
        // Each per-frame file is the frame's line of the assembled file.
        let one = std::fs::read_to_string(layout.stats_dir().join("frame_0002.json")).unwrap();
        assert_eq!(one, format!("{}\n", text.lines().nth(2).unwrap()));
        // A gap and a hand-edited file are reported as missing, not assembled.
        std::fs::remove_file(layout.stats_dir().join("frame_0001.json")).unwrap();
        std::fs::write(layout.stats_dir().join("frame_0002.json"), "{oops\n").unwrap();
        let a = log.assemble().unwrap();
        assert_eq!(
            a,
            Assembled {
                lines: 2,
                missing: vec![1, 2]
            }
        );
        assert_eq!(read(&layout.stats()).unwrap().len(), 2);
    }

    #[test]
    fn legacy_stats_file_is_split_up_to_a_frame() {
        let dir = tempfile::tempdir().unwrap();
        let layout = RunLayout::new(dir.path());
        let lines: Vec<String> = (0..5)
            .map(|f| {
                frame_line(
                    f,
                    0.0,
                    1,
                    &serde_json::json!({"substeps": 0, "seconds": {}}),
                    &[],
                )
            })
            .collect();
        std::fs::write(layout.stats(), lines.join("\n") + "\n").unwrap();
        let log = StatsLog::new(&layout);
        log.split_legacy(2).unwrap();
        let frames: Vec<u32> = log.frames().into_iter().map(|(f, _)| f).collect();
        assert_eq!(frames, vec![0, 1, 2]);
        log.assemble().unwrap();
        assert_eq!(
            std::fs::read_to_string(layout.stats()).unwrap(),
            lines[..3].join("\n") + "\n"
        );
        // Once stats/ exists it is the truth; a second split does nothing.
        std::fs::write(layout.stats(), lines.join("\n") + "\n").unwrap();
        log.split_legacy(4).unwrap();
        assert_eq!(log.frames().len(), 3);
    }
}
