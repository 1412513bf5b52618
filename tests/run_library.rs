//! A whole shot through the library (`surge::run`), without the binary: the same bytes as
//! `surge run`, a raised stop flag ending the run with `Interrupted` after a checkpoint, and
//! `run::resume` continuing it to the same bytes as an uninterrupted run.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use surge::run::{self, FrameDone, Observer, ResumeOptions, RunOptions};

/// Every file under `dir` with its bytes (stats lines without their wall-clock `seconds`).
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name == ".surge.lock" {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_path_buf();
                let bytes = std::fs::read(&p).unwrap();
                let stats = rel.starts_with("stats") || name == "stats.jsonl";
                let bytes = if stats {
                    let text = String::from_utf8(bytes).unwrap();
                    let lines: Vec<String> = text
                        .lines()
                        .map(|l| {
                            surge::output::stats::deterministic_part(l)
                                .unwrap()
                                .to_string()
                        })
                        .collect();
                    lines.join("\n").into_bytes()
                } else {
                    bytes
                };
                out.push((rel, bytes));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn assert_same(a: &Path, b: &Path) {
    let (fa, fb) = (files(a), files(b));
    let names = |f: &[(PathBuf, Vec<u8>)]| f.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&fa), names(&fb), "different files");
    assert!(fa.len() > 10, "only {} files", fa.len());
    for ((p, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(x == y, "{} differs", p.display());
    }
}

/// Counts what it hears, and raises the stop flag after `stop_after` frames.
struct Recorder<'a> {
    frames: Mutex<Vec<u32>>,
    said: Mutex<Vec<String>>,
    stop: &'a AtomicBool,
    stop_after: Option<u32>,
}

impl Observer for Recorder<'_> {
    fn say(&self, text: &str) {
        self.said.lock().unwrap().push(text.to_string());
    }
    fn frame(&self, d: &FrameDone) {
        self.frames.lock().unwrap().push(d.frame);
        if self.stop_after.is_some_and(|n| d.frame >= n) {
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.json")
}

#[test]
fn a_library_run_writes_the_bytes_of_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, bin) = (dir.path().join("lib"), dir.path().join("bin"));
    let stop = AtomicBool::new(false);
    let rec = Recorder {
        frames: Mutex::new(Vec::new()),
        said: Mutex::new(Vec::new()),
        stop: &stop,
        stop_after: None,
    };
    let options = RunOptions {
        out: Some(lib.clone()),
        frames: Some(4),
        ..Default::default()
    };
    let out = run::run(Some(&tiny()), &options, &stop, &rec).unwrap();
    assert_eq!(out, lib);
    assert_eq!(*rec.frames.lock().unwrap(), vec![1, 2, 3, 4]);
    assert!(
        rec.said
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.contains("777 particles"))
    );
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_surge"))
        .args(["-q", "run"])
        .arg(tiny())
        .arg("-o")
        .arg(&bin)
        .args(["--frames", "4"])
        .status()
        .unwrap();
    assert!(status.success());
    assert_same(&lib, &bin);
}

#[test]
fn a_raised_stop_flag_interrupts_and_resume_finishes_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let (cut, straight) = (dir.path().join("cut"), dir.path().join("straight"));
    let options = |out: &Path| RunOptions {
        out: Some(out.to_path_buf()),
        frames: Some(5),
        checkpoint_every: Some(1),
        ..Default::default()
    };
    let stop = AtomicBool::new(false);
    let rec = Recorder {
        frames: Mutex::new(Vec::new()),
        said: Mutex::new(Vec::new()),
        stop: &stop,
        stop_after: Some(2),
    };
    let e = run::run(Some(&tiny()), &options(&cut), &stop, &rec).unwrap_err();
    let interrupted = e
        .downcast_ref::<run::Interrupted>()
        .expect("an Interrupted error");
    // The flag is seen between frames: the writer raised it after frame 2, while the stepper
    // may have simulated up to two frames more (one waiting for the writer, one under way);
    // the run must stop before its last frame (5).
    assert!((2..=4).contains(&interrupted.frame), "{interrupted:?}");
    assert!(
        cut.join(format!(
            "checkpoints/checkpoint_{:04}.bin",
            interrupted.frame
        ))
        .is_file()
    );
    let go = AtomicBool::new(false);
    run::resume(&cut, &ResumeOptions::default(), &go, &run::Silent).unwrap();
    run::run(Some(&tiny()), &options(&straight), &go, &run::Silent).unwrap();
    assert_same(&cut, &straight);
}
