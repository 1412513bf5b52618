//! Hostile input (issue 16): endless and huge files, deep nesting, NUL bytes, long names and
//! absurd numbers. Every case must end within a few seconds with exit status 1, a clear bounded
//! message (`error: FILE ...` then a `fix:` line, no panic, no abort), and a peak memory (the
//! child's `ru_maxrss`, read with `wait4`) under 200 MB. The figures are printed per case
//! (`cargo test --release --test hostile -- --nocapture`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::SURGE;

/// `struct rusage` of Linux (x86_64 and aarch64): two timevals, then 14 longs, maxrss first.
#[repr(C)]
struct Rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    maxrss: i64,
    rest: [i64; 13],
}

unsafe extern "C" {
    fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut Rusage) -> i32;
}

const WNOHANG: i32 = 1;
/// Peak resident memory allowed to a hostile case, kB.
const MAX_RSS_KB: i64 = 200 * 1024;
/// Wall time allowed to a hostile case.
const MAX_SECONDS: f64 = 10.0;

/// What a finished child did.
pub struct Outcome {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stderr: String,
    pub max_rss_kb: i64,
    pub seconds: f64,
}

/// Runs `surge ARGS` in `cwd` with `env`, reaps it with `wait4` (its exit status and peak RSS),
/// killing it past [`MAX_SECONDS`].
pub fn run_measured(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let err_path = cwd.join(".stderr.txt");
    let err_file = std::fs::File::create(&err_path).unwrap();
    let mut c = Command::new(SURGE);
    c.current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file);
    for (k, v) in env {
        c.env(k, v);
    }
    // Reaped below by wait4 (to read its rusage), not by `Child::wait`.
    #[allow(clippy::zombie_processes)]
    let mut child = c.spawn().expect("surge starts");
    let pid = child.id() as i32;
    let start = Instant::now();
    let mut status = 0i32;
    let mut usage = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        maxrss: 0,
        rest: [0; 13],
    };
    loop {
        // SAFETY: pid is our own child, not yet reaped (std's Child is never waited on); the
        // pointers are to live locals of the right layout.
        let r = unsafe { wait4(pid, &mut status, WNOHANG, &mut usage) };
        assert!(r >= 0, "wait4 failed");
        if r == pid {
            break;
        }
        if start.elapsed() > Duration::from_secs_f64(MAX_SECONDS) {
            let _ = child.kill();
            // SAFETY: as above; blocks until the killed child is reaped.
            unsafe { wait4(pid, &mut status, 0, &mut usage) };
            panic!(
                "surge {args:?} ran past {MAX_SECONDS} s; stderr so far: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let seconds = start.elapsed().as_secs_f64();
    let sig = status & 0x7f;
    Outcome {
        code: (sig == 0).then_some((status >> 8) & 0xff),
        signal: (sig != 0).then_some(sig),
        stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap()).into_owned(),
        max_rss_kb: usage.maxrss,
        seconds,
    }
}

/// Runs `surge run SCENE -o out -q` in `dir` and checks the hostile-input promises; `wanted`
/// fragments must appear in the message. Returns the message.
fn expect_clean_refusal(case: &str, dir: &Path, scene: &str, wanted: &[&str]) -> String {
    let o = run_measured(dir, &["run", scene, "-o", "out", "-q"], &[]);
    let err = &o.stderr;
    eprintln!(
        "{case}: exit {:?}, {:.2} s, peak RSS {:.1} MB, {} bytes of message",
        o.code,
        o.seconds,
        o.max_rss_kb as f64 / 1024.0,
        err.len()
    );
    assert_eq!(
        o.signal, None,
        "{case}: killed by signal (an abort?): {err}"
    );
    assert_eq!(o.code, Some(1), "{case}: exit status; stderr: {err}");
    assert!(!err.contains("panicked"), "{case}: {err}");
    assert!(
        o.max_rss_kb < MAX_RSS_KB,
        "{case}: peak RSS {} kB is over {MAX_RSS_KB} kB",
        o.max_rss_kb
    );
    assert!(err.starts_with("error: "), "{case}: {err}");
    assert!(
        err.len() < 1500,
        "{case}: message of {} bytes: {err}",
        err.len()
    );
    assert!(
        err.lines().all(|l| l.chars().count() < 500),
        "{case}: a message line is too long: {err}"
    );
    assert!(!err.contains('\0'), "{case}: a NUL byte was printed");
    let fix = err
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("fix: "))
        .unwrap_or_else(|| panic!("{case}: no `fix:` line: {err}"));
    assert!(fix.split_whitespace().count() >= 3, "{case}: {err}");
    for w in wanted {
        assert!(err.contains(w), "{case}: `{w}` missing from: {err}");
    }
    assert!(
        !dir.join("out").exists(),
        "{case}: the output folder was created for a refused scene"
    );
    err.clone()
}

fn tutorial(particles: &str, extra: &str) -> String {
    format!(
        r#"{{"dt": 0.01, "total_time": 0.1, "res": [6, 6, 6], "h": 0.1, "lc": [0, 0, 0], "particles": "{particles}"{extra}}}"#
    )
}

const DOMAIN: &str = r#""domain": {"lower": [0, 0, 0], "cell_size": 0.1, "resolution": [6, 6, 6]}"#;
const BOX: &str = r#"{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.3, 0.3, 0.3]}"#;

fn native(body: &str) -> String {
    format!("{{{DOMAIN}, {body}}}")
}

#[test]
fn endless_and_huge_scene_files() {
    let dir = tempfile::tempdir().unwrap();
    for dev in ["/dev/zero", "/dev/urandom"] {
        if Path::new(dev).exists() {
            expect_clean_refusal(dev, dir.path(), dev, &[dev, "4 MB", "does not end"]);
        }
    }
    // A 2 GB sparse file (all zero bytes, takes no disk space).
    let sparse = dir.path().join("big.json");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    expect_clean_refusal(
        "2 GB sparse scene",
        dir.path(),
        "big.json",
        &["big.json", "2048.0 MB"],
    );
    std::fs::remove_file(&sparse).unwrap();
    // Just over the cap: a JSON object padded with spaces.
    let mut text = vec![b' '; (4 << 20) + 1];
    text[0] = b'{';
    *text.last_mut().unwrap() = b'}';
    std::fs::write(dir.path().join("padded.json"), &text).unwrap();
    expect_clean_refusal("4 MB + 1 byte scene", dir.path(), "padded.json", &["4 MB"]);
}

#[test]
fn endless_and_huge_particle_files() {
    let dir = tempfile::tempdir().unwrap();
    for dev in ["/dev/zero", "/dev/urandom"] {
        if Path::new(dev).exists() {
            std::fs::write(dir.path().join("fluid.json"), tutorial(dev, "")).unwrap();
            expect_clean_refusal(
                &format!("particles {dev}"),
                dir.path(),
                "fluid.json",
                &[dev, "`particles`", "not a regular file"],
            );
        }
    }
    let sparse = dir.path().join("big.in");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    std::fs::write(
        dir.path().join("scene.json"),
        native(r#""sources": [{"type": "particle_file", "path": "big.in"}]"#),
    )
    .unwrap();
    // 2 GB hold at least 21 million particle lines: a machine with under ~6 GB of memory
    // refuses it by its size; others read its first line, which is too long.
    let err = expect_clean_refusal(
        "2 GB sparse particle file",
        dir.path(),
        "scene.json",
        &["big.in"],
    );
    if !err.contains("refused without reading it") {
        for w in ["line 1", "longer than 1024 bytes"] {
            assert!(err.contains(w), "`{w}` missing from: {err}");
        }
        assert!(err.contains("\\u{0}"), "NUL bytes are shown escaped: {err}");
    }
    std::fs::remove_file(&sparse).unwrap();
    // 64 GB: at least 687 million particle lines, more than any machine's budget (at most
    // 2^28 particles): refused from the file's size alone, before a byte is read.
    let f = std::fs::File::create(&sparse).unwrap();
    if f.set_len(64 << 30).is_ok() {
        drop(f);
        let err = expect_clean_refusal(
            "64 GB sparse particle file",
            dir.path(),
            "scene.json",
            &[
                "big.in",
                "64.0 GB",
                "at least 687194767 particles",
                "refused without reading it",
            ],
        );
        assert!(!err.contains("line 1"), "read before refusing: {err}");
    } else {
        common::skip(
            "hostile 64 GB sparse file",
            "the filesystem refuses a 64 GB sparse file",
        );
    }
    std::fs::remove_file(&sparse).unwrap();
    // A count line far beyond memory: refused from that line, before reading any particle.
    let mut text = String::from("1000000000000\n");
    for _ in 0..1000 {
        text.push_str("0.2 0.2 0.2 0 0 0\n");
    }
    std::fs::write(dir.path().join("many.in"), text).unwrap();
    std::fs::write(dir.path().join("fluid.json"), tutorial("many.in", "")).unwrap();
    expect_clean_refusal(
        "count 1e12",
        dir.path(),
        "fluid.json",
        &["many.in", "line 1", "more than surge handles"],
    );
    // A 5,000-character particle line (within the line cap): quoted to 80 characters.
    let long = format!("1\n0.2 0.2 0.2 0 0 0 {}\n", "7".repeat(5000));
    std::fs::write(dir.path().join("long.in"), long).unwrap();
    std::fs::write(dir.path().join("fluid.json"), tutorial("long.in", "")).unwrap();
    expect_clean_refusal(
        "long particle line",
        dir.path(),
        "fluid.json",
        &["long.in", "line 2", "7777..."],
    );
    // More particle lines than the count line says: refused at the first extra line.
    std::fs::write(
        dir.path().join("extra.in"),
        "1\n0.2 0.2 0.2 0 0 0\n0.2 0.2 0.2 0 0 0\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("fluid.json"), tutorial("extra.in", "")).unwrap();
    expect_clean_refusal(
        "extra lines",
        dir.path(),
        "fluid.json",
        &["extra.in", "more particle lines follow"],
    );
}

#[test]
fn deep_nesting_and_nul_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    std::fs::write(dir.path().join("deep.json"), deep).unwrap();
    expect_clean_refusal(
        "deep nesting",
        dir.path(),
        "deep.json",
        &["deep.json", "nested more than 128"],
    );
    let deep_obj = "{\"a\":".repeat(50_000) + "1" + &"}".repeat(50_000);
    std::fs::write(dir.path().join("deep2.json"), deep_obj).unwrap();
    expect_clean_refusal(
        "deep objects",
        dir.path(),
        "deep2.json",
        &["deep2.json", "nested more than 128"],
    );
    let nul = native(&format!(r#""sources": [{BOX}], "name": "a{}b""#, "\0"));
    std::fs::write(dir.path().join("nul.json"), nul).unwrap();
    expect_clean_refusal(
        "raw NUL byte",
        dir.path(),
        "nul.json",
        &["nul.json", "line 1"],
    );
    let escaped = native(&format!(r#""sources": [{BOX}], "name": "a\u0000b""#));
    std::fs::write(dir.path().join("nul2.json"), escaped).unwrap();
    expect_clean_refusal(
        "escaped NUL in name",
        dir.path(),
        "nul2.json",
        &["`name`", "control characters"],
    );
    std::fs::write(dir.path().join("zeros.json"), vec![0u8; 4096]).unwrap();
    expect_clean_refusal("4 kB of NULs", dir.path(), "zeros.json", &["zeros.json"]);
}

#[test]
fn long_names() {
    let dir = tempfile::tempdir().unwrap();
    let name = "n".repeat(5000);
    let scene = native(&format!(r#""sources": [{BOX}], "name": "{name}""#));
    std::fs::write(dir.path().join("long.json"), scene).unwrap();
    let err = expect_clean_refusal(
        "5000-character name",
        dir.path(),
        "long.json",
        &["`name`", "too long", "at most 100"],
    );
    assert!(
        !err.contains(&"n".repeat(81)),
        "more than 80 characters quoted: {err}"
    );
    let part = native(&format!(
        r#""sources": [{BOX}], "output": {{"part_pattern": "{}%d"}}"#,
        "p".repeat(5000)
    ));
    std::fs::write(dir.path().join("pattern.json"), part).unwrap();
    let err = expect_clean_refusal(
        "5000-character part pattern",
        dir.path(),
        "pattern.json",
        &["`output.part_pattern`"],
    );
    assert!(
        !err.contains(&"p".repeat(81)),
        "more than 80 characters quoted: {err}"
    );
    let unknown = native(&format!(r#""sources": [{BOX}], "{}": 1"#, "k".repeat(5000)));
    std::fs::write(dir.path().join("key.json"), unknown).unwrap();
    let err = expect_clean_refusal(
        "5000-character key",
        dir.path(),
        "key.json",
        &["key.json", "unknown field"],
    );
    assert!(
        !err.contains(&"k".repeat(81)),
        "more than 80 characters quoted: {err}"
    );
}

#[test]
fn giant_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, String, &[&str]); 5] = [
        (
            "frames u32::MAX",
            native(&format!(
                r#""sources": [{BOX}], "time": {{"frames": {}}}"#,
                u32::MAX
            )),
            &["`time.frames`", "100000"],
        ),
        (
            "frames 2^64",
            native(&format!(
                r#""sources": [{BOX}], "time": {{"frames": 18446744073709551616}}"#
            )),
            &["`time.frames`", "a whole number from 0 to 4294967295"],
        ),
        (
            "cfl 1e300",
            native(&format!(
                r#""sources": [{BOX}], "solver": {{"cfl": 1e300}}"#
            )),
            &["`solver.cfl`", "1e300", "100"],
        ),
        (
            "tutorial total_time 1e6",
            tutorial("p.in", r#", "total_time": 1e6"#).replace(r#""total_time": 0.1, "#, ""),
            &["`total_time`", "100000"],
        ),
        (
            "fps as a string",
            native(&format!(r#""sources": [{BOX}], "time": {{"fps": "30"}}"#)),
            &["`time.fps`", "expected a number"],
        ),
    ];
    std::fs::write(dir.path().join("p.in"), "1\n0.2 0.2 0.2 0 0 0\n").unwrap();
    for (case, text, wanted) in cases {
        std::fs::write(dir.path().join("s.json"), &text).unwrap();
        let err = expect_clean_refusal(case, dir.path(), "s.json", wanted);
        assert!(
            !err.contains("u32") && !err.contains("f64"),
            "{case}: {err}"
        );
    }
    // The command line's --frames has the same limit (a usage error, exit 2).
    let o = run_measured(
        dir.path(),
        &["run", "--frames", "4294967295", "-o", "out"],
        &[],
    );
    assert_eq!(o.code, Some(2), "{}", o.stderr);
}

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
/// run (after: scene.json is in place) or says how to start it (before, during), and with
/// `--scene` starts it.
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
        // resume
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
        let _ = run_measured(
            d,
            &["run", "--frames", "1", "-o", "again", "-q"],
            &[("SURGE_TEST_KILL_AT", point)],
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
