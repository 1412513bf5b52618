//! Checkpoints and `surge resume` through the real binary: a resumed run is byte-identical to an
//! uninterrupted one (every output; stats apart from their `seconds`), whatever stopped it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{SURGE, outputs, surge};

fn tiny() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenes/tiny.json")
        .to_string_lossy()
        .into_owned()
}

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "surge failed ({:?}): {err}", o.status);
    err
}

fn assert_same(a: &Path, b: &Path) {
    assert_same_but(a, b, &[]);
}

/// [`assert_same`], leaving out files under the `skip` prefixes.
fn assert_same_but(a: &Path, b: &Path, skip: &[&str]) {
    common::assert_same_outputs(a, b, skip, "resume");
}

/// An uninterrupted reference run of the tiny scene to `last`.
fn reference(dir: &Path, last: u32) -> PathBuf {
    reference_with(dir, last, &[])
}

/// [`reference`] with `extra` arguments to `surge run`.
fn reference_with(dir: &Path, last: u32, extra: &[&str]) -> PathBuf {
    let out = dir.join("reference");
    let (last, scene) = (last.to_string(), tiny());
    let mut args = vec!["-q", "run", &scene, "-o", "reference", "--frames", &last];
    args.extend_from_slice(extra);
    ok(&surge(dir, &args));
    out
}

fn checkpoints(out: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(out.join("checkpoints"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn three_frames_then_resume_to_six_is_identical() {
    let dir = tempfile::tempdir().unwrap();
    let reference = reference(dir.path(), 6);
    ok(&surge(
        dir.path(),
        &["-q", "run", &tiny(), "-o", "r", "--frames", "3"],
    ));
    assert!(!dir.path().join("r/particles/frame_0004.bin").exists());
    let err = ok(&surge(dir.path(), &["resume", "r", "--frames", "6"]));
    assert!(err.contains("`time.frames`: 3 -> 6"), "{err}");
    assert!(err.contains("checkpoint of frame 3"), "{err}");
    assert_same(&reference, &dir.path().join("r"));
    // Timing fields are the only difference in stats.
    let a = std::fs::read_to_string(reference.join("stats.jsonl")).unwrap();
    assert!(a.contains("\"seconds\":{"));
    // Resuming a finished run does nothing and changes nothing.
    let before = outputs(&dir.path().join("r"));
    let err = ok(&surge(dir.path(), &["resume", "r"]));
    assert!(err.contains("nothing to do"), "{err}");
    assert_eq!(outputs(&dir.path().join("r")), before);
}

/// Kill points, fixed so that a failure replays: the run (then each resume) is SIGKILLed the
/// moment frame N's stats line appears, while frame N + 1 is being simulated and frame N's
/// meshes and previews written. Five kills, each after the previous resume has passed a new
/// checkpoint (tiny.json checkpoints every 2 frames), so each resume starts from a later
/// checkpoint; after every kill, every file in the folder is whole; at the end one more
/// resume finishes the run, which must equal the uninterrupted one byte for byte.
#[test]
fn sigkill_at_five_moments_then_resume_is_identical() {
    let dir = tempfile::tempdir().unwrap();
    let last = 30;
    let reference = reference(dir.path(), last);
    let out = dir.path().join("k");
    let kill_after = [1u32, 6, 11, 17, 24];
    // The newest checkpoint after the previous kill: each resume must have passed a new one.
    let mut newest_before: Option<u32> = None;
    for (i, &frame) in kill_after.iter().enumerate() {
        let args: Vec<String> = if i == 0 {
            [
                "-q",
                "run",
                &tiny(),
                "-o",
                "k",
                "--frames",
                &last.to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        } else {
            vec!["-q".into(), "resume".into(), "k".into()]
        };
        let mut child = Command::new(SURGE)
            .current_dir(dir.path())
            .args(&args)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let probe = out.join(format!("stats/frame_{frame:04}.json"));
        let deadline = Instant::now() + Duration::from_secs(120);
        while !probe.exists() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("kill {i}: surge ended ({status:?}) before frame {frame}");
            }
            assert!(
                Instant::now() < deadline,
                "kill {i}: frame {frame} never came"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(!status.success(), "kill {i} landed after the run ended");
        let files = common::assert_all_whole(&out);
        let done: Vec<String> = checkpoints(&out);
        eprintln!("kill {i} after frame {frame}: {files} whole files, checkpoints {done:?}");
        assert!(!done.is_empty(), "kill {i}: no checkpoint left");
        let newest = (done.iter())
            .filter_map(|n| {
                n.strip_prefix("checkpoint_")?
                    .strip_suffix(".bin")?
                    .parse()
                    .ok()
            })
            .max()
            .unwrap_or_else(|| panic!("kill {i}: no numbered checkpoint in {done:?}"));
        assert!(
            newest_before.is_none_or(|b| newest > b),
            "kill {i}: the newest checkpoint is still frame {newest} ({newest_before:?} before)"
        );
        newest_before = Some(newest);
    }
    ok(&surge(dir.path(), &["-q", "resume", "k"]));
    assert_same(&reference, &dir.path().join("k"));
}

#[test]
fn sigterm_writes_a_checkpoint_and_resume_is_identical() {
    let dir = tempfile::tempdir().unwrap();
    let last = 60;
    // No scheduled checkpoint before frame 1000 (only the signal's and the run's last): the
    // checkpoint found after the stop can only be the signal's.
    let every = ["--checkpoint-every", "1000"];
    let reference = reference_with(dir.path(), last, &every);
    let out = dir.path().join("t");
    // Retried if the run happens to finish before the signal arrives.
    let mut interrupted = false;
    for _ in 0..5 {
        let child = Command::new(SURGE)
            .current_dir(dir.path())
            .args([
                "-q",
                "run",
                &tiny(),
                "-o",
                "t",
                "--overwrite",
                "--frames",
                &last.to_string(),
                every[0],
                every[1],
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let probe = out.join("particles/frame_0003.bin");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !probe.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.success() {
            continue;
        }
        // SIGTERM (a scheduler's stop) exits 75, "resume me"; Ctrl-C exits 130.
        assert_eq!(o.status.code(), Some(75), "{err}");
        assert!(
            err.contains("stopped by SIGTERM after frame") && err.contains("surge resume"),
            "{err}"
        );
        // The checkpoint of the last finished frame is there.
        let newest = (0..=last)
            .rev()
            .find(|f| out.join(format!("particles/frame_{f:04}.bin")).exists())
            .unwrap();
        assert!(newest < last, "stopped early");
        assert!(
            checkpoints(&out).contains(&format!("checkpoint_{newest:04}.bin")),
            "{:?}",
            checkpoints(&out)
        );
        interrupted = true;
        break;
    }
    assert!(
        interrupted,
        "the run always finished before SIGTERM arrived"
    );
    ok(&surge(dir.path(), &["-q", "resume", "t"]));
    // The checkpoints differ by the signal's; the last one is the same.
    assert_same_but(&reference, &out, &["checkpoints"]);
    let last_checkpoint = format!("checkpoints/checkpoint_{last:04}.bin");
    assert!(
        std::fs::read(reference.join(&last_checkpoint)).unwrap()
            == std::fs::read(out.join(&last_checkpoint)).unwrap(),
        "{last_checkpoint} differs"
    );
}

#[test]
fn truncated_and_bit_flipped_checkpoints_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let reference = reference(dir.path(), 6);
    ok(&surge(
        dir.path(),
        &["-q", "run", &tiny(), "-o", "c", "--frames", "6"],
    ));
    let out = dir.path().join("c");
    assert_eq!(
        checkpoints(&out),
        ["checkpoint_0004.bin", "checkpoint_0006.bin"]
    );
    let c6 = out.join("checkpoints/checkpoint_0006.bin");
    let c4 = out.join("checkpoints/checkpoint_0004.bin");

    // Truncated: the newest is skipped, the previous one used, frames 5 and 6 redone.
    let bytes = std::fs::read(&c6).unwrap();
    std::fs::write(&c6, &bytes[..bytes.len() - 100]).unwrap();
    let err = ok(&surge(dir.path(), &["resume", "c"]));
    assert!(
        err.contains("checkpoint_0006.bin") && err.contains("truncated"),
        "{err}"
    );
    assert!(err.contains("checkpoint of frame 4"), "{err}");
    assert_same(&reference, &out);

    // Bit flip in the particle data.
    let mut bytes = std::fs::read(&c6).unwrap();
    let n = bytes.len();
    bytes[n - 7] ^= 0x04;
    std::fs::write(&c6, &bytes).unwrap();
    let err = ok(&surge(dir.path(), &["resume", "c"]));
    assert!(err.contains("checksum"), "{err}");
    assert!(err.contains("checkpoint of frame 4"), "{err}");
    assert_same(&reference, &out);

    // Every checkpoint bad: start over from frame 0, saying so.
    for p in [&c4, &c6] {
        let mut bytes = std::fs::read(p).unwrap();
        bytes[40] ^= 0xff;
        std::fs::write(p, &bytes).unwrap();
    }
    let err = ok(&surge(dir.path(), &["resume", "c"]));
    assert!(
        err.contains("no valid checkpoint") && err.contains("frame 0"),
        "{err}"
    );
    assert_same(&reference, &out);
}

#[test]
fn killed_before_the_first_checkpoint_starts_over_from_scene_json() {
    let dir = tempfile::tempdir().unwrap();
    let reference = reference(dir.path(), 6);
    ok(&surge(
        dir.path(),
        &["-q", "run", &tiny(), "-o", "e", "--frames", "6"],
    ));
    let out = dir.path().join("e");
    // What a kill during frame 1 leaves: scene.json, frame 0's outputs, a temporary file.
    std::fs::remove_dir_all(out.join("checkpoints")).unwrap();
    for f in 1..=6 {
        for (d, ext) in [("particles", "bin"), ("meshes", "ply"), ("previews", "png")] {
            std::fs::remove_file(out.join(format!("{d}/frame_{f:04}.{ext}"))).unwrap();
        }
    }
    std::fs::write(out.join("particles/.frame_0001.bin.tmp"), b"partial").unwrap();
    let err = ok(&surge(dir.path(), &["resume", "e"]));
    assert!(
        err.contains("no checkpoint yet") && err.contains("frame 0"),
        "{err}"
    );
    assert_same(&reference, &out);
}

#[test]
fn from_frame_rewinds_and_reproduces_later_frames() {
    let dir = tempfile::tempdir().unwrap();
    let reference = reference(dir.path(), 6);
    ok(&surge(
        dir.path(),
        &[
            "-q",
            "run",
            &tiny(),
            "-o",
            "f",
            "--frames",
            "6",
            "--checkpoint-every",
            "1",
        ],
    ));
    let out = dir.path().join("f");
    // keep_checkpoints is 2: frames 5 and 6.
    assert_eq!(
        checkpoints(&out),
        ["checkpoint_0005.bin", "checkpoint_0006.bin"]
    );
    // Make frame 6's outputs wrong, then rewind to 5: they must be recomputed exactly.
    std::fs::write(out.join("particles/frame_0006.bin"), b"garbage").unwrap();
    let err = ok(&surge(
        dir.path(),
        &[
            "resume",
            "f",
            "--from-frame",
            "5",
            "--checkpoint-every",
            "2",
        ],
    ));
    assert!(err.contains("checkpoint of frame 5"), "{err}");
    assert!(err.contains("output.checkpoint_every"), "{err}");
    let particles = |d: &Path| std::fs::read(d.join("particles/frame_0006.bin")).unwrap();
    assert_eq!(particles(&out), particles(&reference));
    // Everything else apart from the checkpoint cadence matches too.
    let mut a = outputs(&reference);
    let mut b = outputs(&out);
    a.retain(|k, _| !k.starts_with("checkpoints") && !k.ends_with("scene.json"));
    b.retain(|k, _| !k.starts_with("checkpoints") && !k.ends_with("scene.json"));
    assert_eq!(a, b);
    // A rewind to before every checkpoint starts over from frame 0.
    let err = ok(&surge(dir.path(), &["resume", "f", "--from-frame", "1"]));
    assert!(err.contains("frame 0"), "{err}");
    assert_same(&reference, &out);
}

#[test]
fn physics_change_is_refused_output_change_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    ok(&surge(
        dir.path(),
        &["-q", "run", &tiny(), "-o", "p", "--frames", "3"],
    ));
    let out = dir.path().join("p");
    let scene_path = out.join("scene.json");
    let original = std::fs::read_to_string(&scene_path).unwrap();
    let mut scene: serde_json::Value = serde_json::from_str(&original).unwrap();
    scene["solver"]["flip_ratio"] = 0.5.into();
    scene["gravity"][2] = (-3.0).into();
    std::fs::write(&scene_path, serde_json::to_string_pretty(&scene).unwrap()).unwrap();
    let before = outputs(&out);
    let o = surge(dir.path(), &["resume", "p", "--frames", "5"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`solver.flip_ratio`: 0.95 -> 0.5"), "{err}");
    assert!(err.contains("`gravity[2]`"), "{err}");
    assert!(err.contains("fix:"), "{err}");
    assert_eq!(outputs(&out), before, "a refused resume touches nothing");

    // Output-only change: previews off, run extended.
    let mut scene: serde_json::Value = serde_json::from_str(&original).unwrap();
    scene["output"]["previews"] = false.into();
    std::fs::write(&scene_path, serde_json::to_string_pretty(&scene).unwrap()).unwrap();
    let err = ok(&surge(dir.path(), &["resume", "p", "--frames", "5"]));
    assert!(err.contains("`output.previews`: true -> false"), "{err}");
    // An output-only change leaves the physics alone: particles, meshes and stats equal an
    // uninterrupted run to frame 5; previews stop from the next frame on (frames 0-3 keep
    // theirs, byte for byte), and the folder's scene now says so.
    let reference = reference(dir.path(), 5);
    let (got, want) = (outputs(&out), outputs(&reference));
    for f in 0..=5u32 {
        for rel in [
            format!("particles/frame_{f:04}.bin"),
            format!("meshes/frame_{f:04}.ply"),
            format!("stats/frame_{f:04}.json"),
        ] {
            let rel = PathBuf::from(rel);
            assert!(got.get(&rel) == want.get(&rel), "{} differs", rel.display());
            assert!(got.contains_key(&rel), "{} missing", rel.display());
        }
        let png = PathBuf::from(format!("previews/frame_{f:04}.png"));
        if f <= 3 {
            assert!(got[&png] == want[&png], "{} differs", png.display());
        } else {
            assert!(
                !got.contains_key(&png),
                "{} written after previews were turned off",
                png.display()
            );
        }
    }
    assert_eq!(
        got[Path::new("stats.jsonl")],
        want[Path::new("stats.jsonl")]
    );
    let now: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&scene_path).unwrap()).unwrap();
    assert_eq!(now["output"]["previews"], false);
    assert_eq!(now["time"]["frames"], 5);
}

#[test]
fn write_failure_mid_resume_loses_nothing() {
    // Tests run as root, so permissions cannot make a folder unwritable; a file-size limit
    // (`ulimit -f`, with SIGXFSZ ignored so writes fail with EFBIG) fails every write of a
    // particle frame, like a full disk.
    let dir = tempfile::tempdir().unwrap();
    let reference = reference(dir.path(), 6);
    ok(&surge(
        dir.path(),
        &["-q", "run", &tiny(), "-o", "w", "--frames", "3"],
    ));
    let out = dir.path().join("w");
    let before = outputs(&out);
    let o = Command::new("bash")
        .current_dir(dir.path())
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f 4; exec {SURGE} -q resume w --frames 6"
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("frame_0004.bin") && err.contains("surge resume"),
        "{err}"
    );
    assert!(err.contains("intact"), "{err}");
    // Finished frames and the checkpoint are intact (scene.json took the new frame count).
    let mut after = outputs(&out);
    let mut before = before;
    after.remove(Path::new("scene.json"));
    before.remove(Path::new("scene.json"));
    assert_eq!(after, before);
    ok(&surge(dir.path(), &["-q", "resume", "w", "--frames", "6"]));
    assert_same(&reference, &out);
}

#[test]
fn tutorial_input_resumes_from_another_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |args: &[&str], out: &str| {
        let o = Command::new(SURGE)
            .current_dir(root)
            .args(args)
            .arg("-o")
            .arg(dir.path().join(out))
            .output()
            .unwrap();
        ok(&o);
    };
    run(&["-q", "run", "inputs/fluid.json", "--frames", "2"], "ref");
    run(&["-q", "run", "inputs/fluid.json", "--frames", "1"], "res");
    // Resume from elsewhere, and once more from scratch (no checkpoint) to exercise start-over.
    ok(&surge(
        dir.path(),
        &["-q", "resume", "res", "--frames", "2"],
    ));
    // The checkpoint of the first run's last frame (1) is kept beside frame 2's; the reference
    // has frames 0 and 2. Everything else is identical.
    assert_same_but(
        &dir.path().join("ref"),
        &dir.path().join("res"),
        &["checkpoints"],
    );
    std::fs::remove_dir_all(dir.path().join("res/checkpoints")).unwrap();
    ok(&surge(dir.path(), &["-q", "resume", "res"]));
    assert_same(&dir.path().join("ref"), &dir.path().join("res"));
    assert!(dir.path().join("res/fluid.002.part").is_file());
}

#[test]
fn resume_of_a_folder_that_is_not_a_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("x")).unwrap();
    let o = surge(dir.path(), &["resume", "x"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a surge run folder") && err.contains("fix:"),
        "{err}"
    );
    // A folder that does not exist, and a scene file given by mistake.
    let o = surge(dir.path(), &["resume", "nowhere"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("nowhere does not exist"), "{err}");
    std::fs::write(dir.path().join("s.json"), "{}").unwrap();
    let o = surge(dir.path(), &["resume", "s.json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains("s.json is a file") && err.contains("surge run s.json"),
        "{err}"
    );
}

#[test]
fn a_second_process_on_the_same_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(SURGE)
        .current_dir(dir.path())
        .args(["-q", "run", &tiny(), "-o", "l", "--frames", "400"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let probe = dir.path().join("l/particles/frame_0001.bin");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !probe.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(probe.exists(), "the first run never wrote frame 1");
    // 400 frames of the tiny scene take seconds: the first process is still writing when the
    // second one starts, and after it was refused.
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first run ended too soon"
    );
    assert!(
        dir.path().join("l/.surge.lock").exists(),
        "no lock file while running"
    );
    let o = surge(dir.path(), &["resume", "l"]);
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().ok();
    child.wait().unwrap();
    assert!(
        still_running,
        "the first run ended while the second was refused"
    );
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("another surge process is writing"), "{err}");
    // Once the first process is gone (killed), the lock is free again.
    ok(&surge(dir.path(), &["-q", "resume", "l", "--frames", "3"]));
    let f3 = dir.path().join("l/particles/frame_0003.bin");
    assert!(surge::output::frame::read(&f3).is_ok());
}
