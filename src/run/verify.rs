//! `surge verify OUT`: checks a whole run folder and says what to re-run. Every particle frame
//! `0..=time.frames` is read (its CRC-32 and finiteness checked, see [`crate::output::frame`]);
//! every mesh the scene asks for must be present and exactly as long as its PLY header says,
//! every preview a whole PNG (signature and final `IEND` chunk); every checkpoint must read back
//! with valid checksums. Each problem is reported with the command that re-creates it: a
//! corrupt or missing particle frame F by `surge resume OUT --from-frame F-1` (which rewrites
//! every frame after the checkpoint it uses), meshes by `surge mesh OUT --frames A..B`,
//! previews by `surge preview OUT --frames A..B`.
//!
//! Layer 5 (run): imports scene, checkpoint, output and error.

use super::Observer;
use crate::checkpoint;
use crate::error::fail;
use crate::output::{RunLayout, frame};
use crate::scene;
use std::path::Path;

/// What [`verify`] found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Report {
    /// Frames whose particle frame is missing or unreadable.
    pub bad_particles: Vec<u32>,
    /// Frames whose mesh is missing or damaged.
    pub bad_meshes: Vec<u32>,
    /// Frames whose preview is missing or damaged.
    pub bad_previews: Vec<u32>,
    /// Checkpoints that do not read back.
    pub bad_checkpoints: Vec<String>,
    /// Files checked.
    pub checked: usize,
}

/// `[1, 2, 3, 7]` -> `["1..3", "7"]`.
pub fn ranges(frames: &[u32]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < frames.len() {
        let mut j = i;
        while j + 1 < frames.len() && frames[j + 1] == frames[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            frames[i].to_string()
        } else {
            format!("{}..{}", frames[i], frames[j])
        });
        i = j + 1;
    }
    out
}

fn ply_whole(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(11).position(|w| w == b"end_header\n") else {
        return false;
    };
    let header = String::from_utf8_lossy(&bytes[..end]);
    let count = |el: &str| -> Option<usize> {
        header
            .lines()
            .find_map(|l| l.strip_prefix(&format!("element {el} ")))?
            .trim()
            .parse()
            .ok()
    };
    match (count("vertex"), count("face")) {
        (Some(v), Some(f)) => bytes.len() == end + 11 + 36 * v + 13 * f,
        _ => false,
    }
}

fn png_whole(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x89PNG\r\n\x1a\n")
        && bytes.len() >= 12
        && &bytes[bytes.len() - 8..bytes.len() - 4] == b"IEND"
}

/// Checks the run folder `out`, reporting every problem (and the command that fixes it) to
/// `observer`; an error when anything is wrong.
pub fn verify(out: &Path, observer: &dyn Observer) -> anyhow::Result<Report> {
    let layout = RunLayout::new(out);
    let p = out.display();
    if !layout.scene().is_file() {
        return Err(fail(
            format!("{p} is not a surge run folder (no scene.json)"),
            "give the output folder of a `surge run`",
        ));
    }
    let scene = scene::read_resolved(&layout.scene())?;
    let o = &scene.output;
    let last = scene.time.frames;
    let mut r = Report::default();
    // The last frame written: a run still going or stopped early is incomplete, not corrupt.
    let mut written = None;
    for f in 0..=last {
        let present = layout.particles(f).is_file() || layout.mesh(f).is_file();
        if present {
            written = Some(f);
        }
    }
    let written = written.unwrap_or(0);
    // The frame a kill interrupted: its files are written in order (particles, mesh, preview,
    // then its checkpoint), each whole or absent, so the newest frame without its checkpoint may
    // lack its last files; `surge resume` writes them (it recomputes every frame after its
    // checkpoint). Absent there means unfinished; a damaged file is damage anywhere.
    let unfinished = |f: u32, e: &std::io::Error| {
        f == written
            && e.kind() == std::io::ErrorKind::NotFound
            && !checkpoint::path(&layout, f).is_file()
    };
    let mut partial = false;
    for f in 0..=written {
        if o.particles {
            r.checked += 1;
            match frame::read(&layout.particles(f)) {
                Ok(pf) if pf.frame == f => {}
                Ok(pf) => {
                    observer.log(&format!(
                        "particles/frame_{f:04}.bin: holds frame {}, not {f}",
                        pf.frame
                    ));
                    r.bad_particles.push(f);
                }
                Err(e) => {
                    observer.log(&format!("{e:#}"));
                    r.bad_particles.push(f);
                }
            }
        }
        if o.meshes {
            r.checked += 1;
            let path = layout.mesh(f);
            match std::fs::read(&path) {
                Ok(b) if ply_whole(&b) => {}
                Ok(_) => {
                    observer.log(&format!(
                        "{}: damaged (size does not match its header)",
                        path.display()
                    ));
                    r.bad_meshes.push(f);
                }
                Err(e) if unfinished(f, &e) => partial = true,
                Err(e) => {
                    observer.log(&format!("{}: {e}", path.display()));
                    r.bad_meshes.push(f);
                }
            }
        }
        if o.previews {
            r.checked += 1;
            let path = layout.preview(f);
            match std::fs::read(&path) {
                Ok(b) if png_whole(&b) => {}
                Ok(_) => {
                    observer.log(&format!("{}: damaged (not a whole PNG)", path.display()));
                    r.bad_previews.push(f);
                }
                Err(e) if unfinished(f, &e) => partial = true,
                Err(e) => {
                    observer.log(&format!("{}: {e}", path.display()));
                    r.bad_previews.push(f);
                }
            }
        }
    }
    for (_, path) in checkpoint::list(&layout) {
        r.checked += 1;
        if let Err(why) = checkpoint::read(&path) {
            observer.log(&format!("{}: unusable ({why})", path.display()));
            r.bad_checkpoints.push(path.display().to_string());
        }
    }
    let mut todo = Vec::new();
    if let Some(&first) = r.bad_particles.first() {
        todo.push(if first == 0 {
            format!("particle frame 0 is bad: re-run the shot with `surge run SCENE -o {p} --overwrite`")
        } else {
            format!(
                "particle frames {} are bad: `surge resume {p} --from-frame {}` re-creates them (and every frame after the checkpoint it uses)",
                ranges(&r.bad_particles).join(", "),
                first - 1
            )
        });
    }
    // Meshes and previews of bad particle frames come back with the resume.
    let mesh_only: Vec<u32> = r
        .bad_meshes
        .iter()
        .copied()
        .filter(|f| !r.bad_particles.contains(f))
        .collect();
    for range in ranges(&mesh_only) {
        todo.push(format!("`surge mesh {p} --frames {range}`"));
    }
    let preview_only: Vec<u32> = r
        .bad_previews
        .iter()
        .copied()
        .filter(|f| !r.bad_particles.contains(f))
        .collect();
    for range in ranges(&preview_only) {
        todo.push(format!("`surge preview {p} --frames {range}`"));
    }
    if !r.bad_checkpoints.is_empty() {
        todo.push(format!(
            "{} unusable: `surge resume` skips and removes them",
            crate::error::count(r.bad_checkpoints.len(), "checkpoint is", "checkpoints are")
        ));
    }
    let complete = written == last && !partial;
    if todo.is_empty() {
        observer.log(&format!(
            "{p}: {} checked, all whole; frames 0..={written} of 0..={last}{}{}",
            crate::error::count(r.checked, "file", "files"),
            if partial {
                format!(" (frame {written} stopped while its outputs were written)")
            } else {
                String::new()
            },
            if complete {
                String::new()
            } else {
                format!(" (incomplete: continue with `surge resume {p}`)")
            }
        ));
        return Ok(r);
    }
    Err(fail(
        format!(
            "{p}: {} of {} checked are missing or damaged",
            r.bad_particles.len()
                + r.bad_meshes.len()
                + r.bad_previews.len()
                + r.bad_checkpoints.len(),
            crate::error::count(r.checked, "file", "files")
        ),
        todo.join("; then "),
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn frame_ranges() {
        assert_eq!(
            super::ranges(&[1, 2, 3, 7, 9, 10]),
            vec!["1..3", "7", "9..10"]
        );
        assert!(super::ranges(&[]).is_empty());
    }
}
