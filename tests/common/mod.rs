//! Helpers shared by the integration tests (`mod common;` in each test file that uses them).

#![allow(dead_code)]

pub mod inputs;
pub mod measured;
pub mod physics;
pub mod preview;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `surge` binary under test.
pub const SURGE: &str = env!("CARGO_BIN_EXE_surge");

/// Runs `surge ARGS` in `cwd`.
pub fn surge(cwd: &Path, args: &[&str]) -> Output {
    surge_with_threads(cwd, args, None)
}

/// Runs `surge ARGS` in `cwd`, with `RAYON_NUM_THREADS=threads` when given.
pub fn surge_with_threads(cwd: &Path, args: &[&str], threads: Option<&str>) -> Output {
    let mut c = Command::new(SURGE);
    c.current_dir(cwd).args(args);
    if let Some(t) = threads {
        c.env("RAYON_NUM_THREADS", t);
    }
    c.output().expect("surge runs")
}

/// Every file under `dir`, relative path -> bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

/// Runs `f` in a rayon pool of `threads` threads (the determinism tests' 1-vs-N runs).
#[allow(dead_code)]
pub fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Asserts that two runs' [`outputs`] hold the same files with the same bytes, but for the
/// files under the `skip` prefixes (such as `checkpoints`, whose set depends on where a run
/// stopped); `what` names the comparison in the messages.
#[allow(dead_code)]
pub fn assert_same_outputs(a: &Path, b: &Path, skip: &[&str], what: &str) {
    let (mut x, mut y) = (outputs(a), outputs(b));
    x.retain(|k, _| !skip.iter().any(|s| k.starts_with(s)));
    y.retain(|k, _| !skip.iter().any(|s| k.starts_with(s)));
    assert_eq!(
        x.keys().collect::<Vec<_>>(),
        y.keys().collect::<Vec<_>>(),
        "{what}: different files"
    );
    for (k, v) in &x {
        assert!(v == &y[k], "{what}: {} differs", k.display());
    }
}

/// [`snapshot`] of a run folder where stats lines (`stats.jsonl`, `stats/`) lose their timing
/// part, so that two runs of one scene compare equal.
pub fn outputs(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = snapshot(dir);
    for (rel, bytes) in out.iter_mut() {
        if rel == Path::new("stats.jsonl") || rel.starts_with("stats") {
            // stats.jsonl and stats/frame_NNNN.json: one JSON line per frame.
            let text = String::from_utf8(std::mem::take(bytes)).unwrap();
            let lines: Vec<String> = text
                .lines()
                .map(|l| {
                    surge::output::stats::deterministic_part(l)
                        .expect("stats line is JSON")
                        .to_string()
                })
                .collect();
            *bytes = lines.join("\n").into_bytes();
        }
    }
    out
}

/// Reports that `test` did not run its check, and why: prints `SKIPPED test: reason` to stderr
/// and appends the line `test: reason` to the file named by `SURGE_SKIP_LOG` when that is set
/// (`scripts/test.sh` sets it and prints the count and the reasons at the end, so a skip is
/// never hidden behind the harness's `ok`). Every skip in the suite goes through here.
pub fn skip(test: &str, reason: &str) {
    use std::io::Write;
    eprintln!("SKIPPED {test}: {reason}");
    if let Some(log) = std::env::var_os("SURGE_SKIP_LOG") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap_or_else(|e| panic!("SURGE_SKIP_LOG {}: {e}", Path::new(&log).display()));
        // One write per line, so that lines from tests running at once do not interleave.
        f.write_all(format!("{test}: {reason}\n").as_bytes())
            .unwrap_or_else(|e| panic!("SURGE_SKIP_LOG {}: {e}", Path::new(&log).display()));
    }
}

/// Whether this is a CI run (`CI=true`, as `.ci/run` is run): there a test that can run must
/// not skip.
pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// The name of the running test (the harness names each test's thread after it).
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_string()
}

/// The venv python (`scripts/setup_python.sh`; `SURGE_PYTHON` overrides the path), or None
/// when absent outside CI, after reporting the skip through [`skip`]. With CI=true a missing
/// venv fails the test (CI's `scripts/test.sh` creates it).
pub fn venv_python() -> Option<PathBuf> {
    let p = std::env::var_os("SURGE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    if p.exists() {
        return Some(p);
    }
    assert!(
        !in_ci(),
        "CI=true but the Python venv ({}) is missing: run scripts/setup_python.sh (scripts/test.sh does)",
        p.display()
    );
    skip(
        &test_name(),
        &format!(
            "no Python venv at {}; run scripts/setup_python.sh (or scripts/test.sh)",
            p.display()
        ),
    );
    None
}

/// Runs the venv's `py` on `args` (in `cwd` when given) under a 300 s `timeout`, with a
/// TMPDIR of its own, and checks the run left nothing in it. The Blender scripts leave by
/// `os._exit` (the bpy module's interpreter shutdown can hang when stdout is a pipe), which
/// skips Blender's exit handlers and so the deletion of its session folder
/// (`$TMPDIR/blender_XXXXXX`); the scripts delete it themselves, and this checks that they do.
pub fn python(py: &Path, cwd: Option<&Path>, args: &[&std::ffi::OsStr]) -> Output {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut c = Command::new("timeout");
    c.arg("300").arg(py).args(args).env("TMPDIR", tmp.path());
    if let Some(cwd) = cwd {
        c.current_dir(cwd);
    }
    let o = c.output().expect("python runs");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("temp dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(
        left.is_empty(),
        "python {args:?} ({}) left {left:?} in its TMPDIR; stderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Writes a run folder at `root` as `surge run` leaves it for the later stages: the scene
/// (`scene.json`) and particle frames `0..=frames` simulated from its sources, except that
/// frame `empty` is written with no particles (an empty frame).
pub fn write_run(root: &Path, s: &surge::scene::Scene, frames: u32, empty: u32) {
    use surge::output::{RunLayout, frame::ParticleFrame};
    use surge::sim::{Particles, Simulation};
    let layout = RunLayout::new(root);
    surge::output::atomic_write(
        &layout.scene(),
        serde_json::to_string_pretty(s).unwrap().as_bytes(),
    )
    .unwrap();
    let mut sim = Simulation::new(s, surge::sources::seed_particles(s, &[]), 0).unwrap();
    for f in 0..=frames {
        if f > 0 {
            sim.advance_frame();
        }
        let particles = if f == empty {
            Particles::default()
        } else {
            sim.particles().clone()
        };
        let pf = ParticleFrame {
            frame: f,
            time: s.frame_time(f),
            particles,
        };
        surge::output::frame::write(&layout.particles(f), &pf).unwrap();
    }
}

/// Every file of a run folder under its real name (not a dot-prefixed temporary) is whole:
/// particle frames and checkpoints decode (the checkpoint's CRCs verify), meshes are PLY files
/// whose size is exactly what their header declares, previews decode as PNG, and every stats
/// file is one JSON line. Returns how many files were checked.
pub fn assert_all_whole(out: &Path) -> usize {
    let mut checked = 0;
    for (rel, bytes) in snapshot(out) {
        let name = rel.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue; // temporaries and the lock
        }
        let path = out.join(&rel);
        let what = rel.display().to_string();
        match rel.extension().and_then(|e| e.to_str()) {
            Some("bin") if rel.starts_with("particles") => {
                surge::output::frame::read(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            Some("bin") if rel.starts_with("checkpoints") => {
                surge::checkpoint::read(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            Some("ply") => {
                let end = bytes
                    .windows(11)
                    .position(|w| w == b"end_header\n")
                    .unwrap_or_else(|| panic!("{what}: no PLY header end"))
                    + 11;
                let header = String::from_utf8_lossy(&bytes[..end]);
                let count = |el: &str| -> usize {
                    header
                        .lines()
                        .find_map(|l| l.strip_prefix(&format!("element {el} ")))
                        .unwrap_or_else(|| panic!("{what}: no {el} count"))
                        .parse()
                        .unwrap()
                };
                assert_eq!(
                    bytes.len(),
                    end + 36 * count("vertex") + 13 * count("face"),
                    "{what}: size does not match its header"
                );
            }
            Some("png") => {
                let mut r = png::Decoder::new(std::io::Cursor::new(&bytes))
                    .read_info()
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let mut buf = vec![0; r.output_buffer_size().unwrap()];
                r.next_frame(&mut buf)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            Some("json") | Some("jsonl") => {
                let text = String::from_utf8(bytes).unwrap();
                if rel.starts_with("stats") || name == "stats.jsonl" {
                    for l in text.lines() {
                        serde_json::from_str::<serde_json::Value>(l)
                            .unwrap_or_else(|e| panic!("{what}: {e}: {l}"));
                    }
                } else {
                    serde_json::from_str::<serde_json::Value>(&text)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                }
            }
            _ => panic!("unexpected file {what}"),
        }
        checked += 1;
    }
    checked
}
