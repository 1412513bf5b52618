//! Hostile runs (issue 16): a disk too small for the run, a kill during start-up, a flipped bit
//! in a frame, locks and foreign checkpoints, and the command-line conventions. Each case runs a
//! `surge` child through `common::measured::run_measured`, as the hostile-input cases of
//! `tests/hostile.rs` do: its exit status and message are checked, and a run past
//! `common::measured::MAX_SECONDS` fails (its peak RSS is not bounded here: these are
//! hostile states of a run folder, not hostile inputs sized to exhaust memory).

use std::path::Path;
use std::process::{Command, Stdio};

mod common;
use common::SURGE;
use common::measured::{BOX, native, run_measured};

// ---- the disk estimate ----

/// Mounts a 1 MB tmpfs at `dir` (as root; CI runs as root); false where that is not allowed.
fn mount_tiny(dir: &Path) -> bool {
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_run_that_does_not_fit_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = dir.path().join("tiny");
    std::fs::create_dir(&tiny).unwrap();
    let mounted = mount_tiny(&tiny);
    let (out, env): (String, Vec<(&str, &str)>) = if mounted {
        ("tiny/out".into(), vec![])
    } else {
        // Test hook (README.md, "Test hooks"): the free space every file system reports.
        common::skip(
            "a_run_that_does_not_fit_is_refused_before_writing (tmpfs part)",
            "cannot mount a tmpfs (not root); using the SURGE_TEST_FREE_BYTES hook",
        );
        ("out".into(), vec![("SURGE_TEST_FREE_BYTES", "1048576")])
    };
    let o = run_measured(dir.path(), &["run", "--frames", "3", "-o", &out], &env);
    let err = o.stderr.clone();
    let cleanup = || {
        if mounted {
            let _ = Command::new("umount").arg(&tiny).status();
        }
    };
    let listing: Vec<_> = std::fs::read_dir(dir.path().join(&out))
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    cleanup();
    assert_eq!(o.code, Some(1), "{err}");
    assert!(
        err.contains("surge: disk: this run will write about"),
        "{err}"
    );
    assert!(err.contains("free and this run will write"), "{err}");
    assert!(err.contains("--ignore-disk-check"), "{err}");
    assert!(listing.is_empty(), "files written: {listing:?}");
    // With the override it starts (and, through the hook, the fake free space is ignored).
    let o = run_measured(
        dir.path(),
        &[
            "run",
            "--frames",
            "1",
            "-o",
            "big",
            "--ignore-disk-check",
            "-q",
        ],
        &[("SURGE_TEST_FREE_BYTES", "1048576")],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // And with room, the estimate is said and the run goes ahead.
    let o = run_measured(
        dir.path(),
        &["run", "--frames", "1", "-o", "roomy"],
        &[("SURGE_TEST_FREE_BYTES", "100000000000")],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stderr.contains("93.1 GB free"), "{}", o.stderr);
}

// ---- kills during start-up ----

/// A kill before, during and after the write of OUT/scene.json (the `SURGE_TEST_KILL_AT` hook
/// aborts there, as `kill -9` would stop the process): afterwards `surge run` into the same
/// folder works without `--overwrite` and without the user deleting anything (before and during:
/// the folder holds only surge's lock and temporaries), and `surge resume` either finishes the
/// run (after: scene.json is in place; starting it over checks the disk first, as `surge run`
/// does) or says how to start it (before, during), and with `--scene` starts it.
#[test]
fn a_kill_during_start_up_leaves_a_folder_run_and_resume_handle() {
    for point in ["before-scene", "during-scene", "after-scene"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let o = run_measured(
            d,
            &["run", "--frames", "1", "-o", "out", "-q"],
            &[("SURGE_TEST_KILL_AT", point)],
        );
        assert_eq!(
            o.signal,
            Some(6),
            "{point}: the hook did not abort: {}",
            o.stderr
        );
        let names: Vec<String> = std::fs::read_dir(d.join("out"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if point == "during-scene" {
            assert!(
                names.contains(&".scene.json.tmp".to_string()),
                "{point}: {names:?}"
            );
        }
        assert_eq!(
            names.contains(&"scene.json".to_string()),
            point == "after-scene",
            "{point}: {names:?}"
        );
        // resume (starting over checks the disk as `surge run` does)
        if point == "after-scene" {
            let tiny = [("SURGE_TEST_FREE_BYTES", "1")];
            let o = run_measured(d, &["resume", "out", "-q"], &tiny);
            assert_eq!(
                o.code,
                Some(1),
                "{point}: resume on a full disk: {}",
                o.stderr
            );
            assert!(o.stderr.contains("free"), "{point}: {}", o.stderr);
        }
        let o = run_measured(d, &["resume", "out", "-q"], &[]);
        if point == "after-scene" {
            assert_eq!(o.code, Some(0), "{point}: resume: {}", o.stderr);
            common::assert_all_whole(&d.join("out"));
            assert!(d.join("out/particles/frame_0001.bin").is_file());
            continue;
        }
        assert_eq!(o.code, Some(1), "{point}: resume: {}", o.stderr);
        assert!(
            o.stderr.contains("holds no run yet"),
            "{point}: {}",
            o.stderr
        );
        assert!(
            o.stderr.contains("surge run SCENE -o out"),
            "{point}: {}",
            o.stderr
        );
        // run into the same folder, no --overwrite
        let o = run_measured(d, &["run", "--frames", "1", "-o", "out", "-q"], &[]);
        assert_eq!(o.code, Some(0), "{point}: run again: {}", o.stderr);
        assert!(
            !d.join("out/.scene.json.tmp").exists(),
            "{point}: leftover kept"
        );
        common::assert_all_whole(&d.join("out"));
        // and resume --scene on a fresh killed folder
        let o = run_measured(
            d,
            &["run", "--frames", "1", "-o", "again", "-q"],
            &[("SURGE_TEST_KILL_AT", point)],
        );
        assert_eq!(
            o.signal,
            Some(6),
            "{point}: the hook did not abort the second run: {}",
            o.stderr
        );
        let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/dam_break.json");
        let o = run_measured(
            d,
            &[
                "resume",
                "again",
                "--scene",
                scene.to_str().unwrap(),
                "--frames",
                "1",
                "-q",
            ],
            &[],
        );
        assert_eq!(o.code, Some(0), "{point}: resume --scene: {}", o.stderr);
        assert!(
            d.join("again/particles/frame_0001.bin").is_file(),
            "{point}"
        );
    }
}

// ---- corrupted frames ----

/// One flipped bit in a particle frame is refused by `surge mesh`, `surge preview` and
/// `surge verify`, each naming the frame; `verify` says what to re-run, and after doing it the
/// folder verifies clean. A damaged mesh is reported with its `surge mesh` command.
#[test]
fn a_flipped_bit_in_a_frame_is_caught_and_verify_says_what_to_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run_measured(
        d,
        &[
            "run",
            "--frames",
            "2",
            "--checkpoint-every",
            "1",
            "-o",
            "out",
            "-q",
        ],
        &[],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let o = run_measured(d, &["verify", "out"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stderr.contains("all whole"), "{}", o.stderr);
    let frame = d.join("out/particles/frame_0001.bin");
    let mut bytes = std::fs::read(&frame).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&frame, &bytes).unwrap();
    for args in [
        vec!["mesh", "out", "--frames", "1"],
        vec!["preview", "out", "--frames", "1"],
        vec!["verify", "out"],
    ] {
        let o = run_measured(d, &args, &[]);
        assert_eq!(o.code, Some(1), "{args:?}: {}", o.stderr);
        assert!(!o.stderr.contains("panicked"), "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.contains("frame_0001.bin"),
            "{args:?}: {}",
            o.stderr
        );
        assert!(
            o.stderr.contains("checksum mismatch"),
            "{args:?}: {}",
            o.stderr
        );
    }
    let o = run_measured(d, &["verify", "out"], &[]);
    assert!(
        o.stderr.contains("surge resume out --from-frame 0"),
        "{}",
        o.stderr
    );
    let o = run_measured(d, &["resume", "out", "--from-frame", "0", "-q"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let o = run_measured(d, &["verify", "out"], &[]);
    assert_eq!(o.code, Some(0), "after the resume: {}", o.stderr);
    // A truncated mesh: re-mesh that frame.
    let mesh = d.join("out/meshes/frame_0002.ply");
    let bytes = std::fs::read(&mesh).unwrap();
    std::fs::write(&mesh, &bytes[..bytes.len() - 5]).unwrap();
    let o = run_measured(d, &["verify", "out"], &[]);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stderr.contains("surge mesh out --frames 2"),
        "{}",
        o.stderr
    );
    let o = run_measured(d, &["mesh", "out", "--frames", "2", "-q"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let o = run_measured(d, &["verify", "out"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

/// A kill while a frame's outputs are written (particles, then mesh, then preview, then the
/// checkpoint) leaves that newest frame without its last files: `surge verify` reports the run
/// as incomplete (exit 0, `surge resume`), not as damaged, and the resume completes it; the same
/// file missing from an earlier frame is damage (exit 1, its `surge preview` command).
#[test]
fn a_frame_stopped_while_written_is_incomplete_not_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/tiny.json");
    let args = [
        "run",
        scene,
        "--frames",
        "4",
        "--checkpoint-every",
        "2",
        "-o",
        "out",
        "-q",
    ];
    let o = run_measured(d, &args, &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // Frame 3 stopped after its particles: no mesh, preview, stats or checkpoint of its own.
    let out = d.join("out");
    for f in [3, 4] {
        std::fs::remove_file(out.join(format!("previews/frame_{f:04}.png"))).ok();
        std::fs::remove_file(out.join(format!("stats/frame_{f:04}.json"))).ok();
        for c in std::fs::read_dir(out.join("checkpoints")).unwrap() {
            let c = c.unwrap().path();
            if c.to_string_lossy().contains(&format!("{f:04}")) {
                std::fs::remove_file(c).unwrap();
            }
        }
    }
    std::fs::remove_file(out.join("meshes/frame_0003.ply")).unwrap();
    for f in ["particles/frame_0004.bin", "meshes/frame_0004.ply"] {
        std::fs::remove_file(out.join(f)).unwrap();
    }
    let o = run_measured(d, &["verify", "out"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stderr.contains("incomplete") && o.stderr.contains("surge resume out"),
        "{}",
        o.stderr
    );
    let o = run_measured(d, &["resume", "out", "-q"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let o = run_measured(d, &["verify", "out"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(!o.stderr.contains("incomplete"), "{}", o.stderr);
    // An earlier frame's missing preview is damage.
    std::fs::remove_file(out.join("previews/frame_0001.png")).unwrap();
    let o = run_measured(d, &["verify", "out"], &[]);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(
        o.stderr.contains("surge preview out --frames 1"),
        "{}",
        o.stderr
    );
}

// ---- locks and checkpoints of another scene ----

/// `surge mesh` and `surge preview` take the run folder's lock shared: refused while a
/// `surge run`/`resume` holds it (exclusively), allowed beside each other. A valid checkpoint of
/// another scene copied into the folder is skipped by `resume` with a warning, and the newest
/// matching one is used.
#[test]
fn mesh_and_preview_lock_and_foreign_checkpoints_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run_measured(
        d,
        &[
            "run",
            "--frames",
            "2",
            "--checkpoint-every",
            "1",
            "-o",
            "out",
            "-q",
        ],
        &[],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("out/.surge.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    for cmd in ["mesh", "preview"] {
        let o = run_measured(d, &[cmd, "out", "--frames", "1"], &[]);
        assert_eq!(o.code, Some(1), "{cmd} beside a run: {}", o.stderr);
        assert!(o.stderr.contains("is writing"), "{cmd}: {}", o.stderr);
    }
    lock.unlock().unwrap();
    lock.try_lock_shared().unwrap();
    let o = run_measured(d, &["mesh", "out", "--frames", "1", "-q"], &[]);
    assert_eq!(o.code, Some(0), "mesh beside another mesh: {}", o.stderr);
    lock.unlock().unwrap();
    drop(lock);

    // Another scene (stronger gravity), its checkpoint of frame 3 copied in.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/dam_break.json"),
    )
    .unwrap()
    .replace("\"seed\": 1,", "\"seed\": 1, \"gravity\": [0, 0, -20],");
    std::fs::write(d.join("other.json"), text).unwrap();
    let o = run_measured(
        d,
        &[
            "run",
            "other.json",
            "--frames",
            "3",
            "--checkpoint-every",
            "3",
            "-o",
            "other",
            "-q",
        ],
        &[],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    std::fs::copy(
        d.join("other/checkpoints/checkpoint_0003.bin"),
        d.join("out/checkpoints/checkpoint_0003.bin"),
    )
    .unwrap();
    let o = run_measured(d, &["resume", "out", "--frames", "3"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stderr.contains("checkpoint_0003.bin is of another scene"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("from the checkpoint of frame 2"),
        "{}",
        o.stderr
    );
}

// ---- the command line ----

/// Broken pipe, exit codes, grammar and overlap warnings.
#[test]
fn command_line_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // `surge run 2>&1 | head -1`: stderr closed after the first line; no panic (exit 101).
    let o = Command::new("bash")
        .current_dir(d)
        .arg("-c")
        .arg(format!(
            "{SURGE} run --frames 1 -o piped 2>&1 | head -1; exit ${{PIPESTATUS[0]}}"
        ))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    assert!(d.join("piped/particles/frame_0001.bin").is_file());
    // Usage errors exit 2 everywhere.
    for args in [
        vec!["mesh", "piped", "--frames", "0-4"],
        vec!["preview", "piped", "--frames", "0-4"],
        vec!["run", "--frames", "0"],
        vec!["resume", "piped", "--frames", "x"],
        vec!["verify"],
        vec!["nosuchcommand"],
    ] {
        let o = run_measured(d, &args, &[]);
        assert_eq!(o.code, Some(2), "{args:?}: {}", o.stderr);
    }
    // Runtime errors exit 1.
    let o = run_measured(d, &["mesh", "nothere"], &[]);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    // A non-empty folder that is not a run: no resume advice, and "1 entry".
    std::fs::create_dir(d.join("mine")).unwrap();
    std::fs::write(d.join("mine/notes.txt"), "x").unwrap();
    let o = run_measured(d, &["run", "--frames", "1", "-o", "mine"], &[]);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(o.stderr.contains("it holds 1 entry:"), "{}", o.stderr);
    assert!(!o.stderr.contains("surge resume"), "{}", o.stderr);
    // A run folder does get it.
    let o = run_measured(d, &["run", "--frames", "1", "-o", "piped"], &[]);
    assert!(o.stderr.contains("surge resume piped"), "{}", o.stderr);
    // Plain log lines (stderr is a file here): singular substep, an ETA.
    let o = run_measured(d, &["run", "--frames", "2", "-o", "log"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stderr.contains(", ETA 0:"), "{}", o.stderr);
    assert!(!o.stderr.contains(" 1 substeps"), "{}", o.stderr);
    let done = o
        .stderr
        .lines()
        .find(|l| l.contains("surge: done"))
        .unwrap();
    assert!(done.starts_with("surge: done"), "{done}");
    // Overlapping sources are warned about.
    let scene = native(&format!(
        r#""sources": [{BOX}, {{"type": "sphere", "center": [0.3, 0.3, 0.3], "radius": 0.1}}], "time": {{"frames": 1}}"#
    ));
    std::fs::write(d.join("overlap.json"), scene).unwrap();
    let o = run_measured(d, &["run", "overlap.json", "-o", "ov"], &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("surge: warning: overlap.json: sources[0] and sources[1] overlap"),
        "{}",
        o.stderr
    );
    assert!(
        !o.stderr.contains("note: overlap.json: warning"),
        "{}",
        o.stderr
    );
}
