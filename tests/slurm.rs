//! The render-farm scripts (`scripts/slurm/`) against a real SLURM: a one-node cluster on this
//! machine started by `scripts/slurm/local_cluster.sh` (Debian's slurm-wlm and munge, installed
//! when missing; every daemon on localhost only), stopped at the end of the test even when it
//! fails.
//!
//! One test function runs the scenarios in sequence, so that they share the cluster without
//! colliding:
//! 1. a 12-frame run meshed (and previewed) by a 4-task array job equals `surge mesh` (and
//!    `surge preview`) run here, byte for byte;
//! 2. a bake requeued twice while running (`scontrol requeue`) ends with frames, meshes,
//!    previews and stats (without `seconds`) byte-identical to an uninterrupted run, and no
//!    frame or checkpoint is half-written at any moment the test looks;
//! 3. an array task whose particle frame is missing fails with a clear message in its log, the
//!    other tasks' meshes are intact, and re-submitting only that task completes the run.
//!
//! When SLURM cannot be set up here (not root and the packages missing, no apt-get) the test is
//! skipped with the reason printed, except with CI=true, where it must run.

mod common;

use common::{SURGE, outputs, skip, surge};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn script(name: &str) -> String {
    repo()
        .join("scripts/slurm")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The local cluster; stopped (exactly the daemons it started) when dropped, panic or not.
struct Cluster {
    state: PathBuf,
    port: u16,
    conf: PathBuf,
}

impl Cluster {
    fn script(&self, arg: &str) -> Output {
        Command::new("bash")
            .arg(script("local_cluster.sh"))
            .arg(arg)
            .env("SURGE_SLURM_DIR", &self.state)
            .env("SURGE_SLURM_PORT", self.port.to_string())
            .output()
            .expect("bash runs")
    }

    /// A SLURM client command (`sbatch`, `squeue`, `scontrol`) of this cluster, in `cwd`; jobs
    /// inherit this environment, so they find this cluster and the surge under test.
    fn cmd(&self, program: &str, cwd: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(cwd)
            .env("SLURM_CONF", &self.conf)
            .env("SURGE", SURGE)
            .env("RAYON_NUM_THREADS", "1");
        c
    }

    fn run(&self, program: &str, cwd: &Path, args: &[&str]) -> String {
        let o = self
            .cmd(program, cwd)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            o.status.success(),
            "{program} {args:?} failed: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    /// Submits a batch job, returns its id.
    fn sbatch(&self, cwd: &Path, args: &[&str]) -> String {
        let mut a = vec!["--parsable"];
        a.extend_from_slice(args);
        let out = self.run("sbatch", cwd, &a);
        out.trim().split(';').next().unwrap().to_string()
    }

    /// `scontrol show job ID` as field -> value (the first record).
    fn job(&self, cwd: &Path, id: &str) -> BTreeMap<String, String> {
        let out = self.run("scontrol", cwd, &["-o", "show", "job", id]);
        let line = out.lines().next().unwrap_or_default();
        line.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Waits until no job of this cluster is queued or running, calling `watch` every 50 ms.
    fn wait_idle(&self, cwd: &Path, limit: Duration, watch: &mut dyn FnMut()) {
        let t = Instant::now();
        loop {
            watch();
            let q = self.run("squeue", cwd, &["-h", "-o", "%i %T %r"]);
            if q.trim().is_empty() {
                return;
            }
            assert!(
                t.elapsed() < limit,
                "jobs still queued after {limit:?}:\n{q}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for name in ["slurmctld.log", "slurmd.log"] {
            let t = std::fs::read_to_string(self.state.join(name)).unwrap_or_default();
            let tail: Vec<&str> = t.lines().rev().take(15).collect();
            s += &format!("--- {name} (last lines)\n");
            for l in tail.into_iter().rev() {
                s += l;
                s += "\n";
            }
        }
        s
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let o = self.script("stop");
        eprint!("{}", text(&o.stderr));
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

/// Starts the local cluster, or returns why it cannot run here.
fn start_cluster() -> Result<Cluster, String> {
    // A state folder and ports of this test process: a cluster started by hand (default port
    // 16817) or another checkout's test is left alone.
    stop_stale_clusters();
    let pid = std::process::id();
    let cluster = Cluster {
        state: PathBuf::from(format!("/tmp/surge-slurm-test-{pid}")),
        port: 17000 + (pid % 1000) as u16 * 2,
        conf: PathBuf::from(format!("/tmp/surge-slurm-test-{pid}/slurm.conf")),
    };
    let o = cluster.script("start");
    let err = text(&o.stderr);
    match o.status.code() {
        Some(0) => Ok(cluster),
        Some(3) => {
            std::mem::forget(cluster); // nothing was started
            Err(err.trim().replace("local_cluster: ", ""))
        }
        _ => panic!("scripts/slurm/local_cluster.sh start failed:\n{err}"),
    }
}

/// Stops the clusters of earlier test processes that were killed before their guard ran
/// (their state folder names a process id that is gone).
fn stop_stale_clusters() {
    let Ok(rd) = std::fs::read_dir("/tmp") else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("surge-slurm-test-")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue; // a test running now
        }
        drop(Cluster {
            state: e.path(),
            port: 17000 + (pid % 1000) as u16 * 2,
            conf: e.path().join("slurm.conf"),
        });
    }
}

/// Every particle frame and checkpoint in `out` that exists under its final name reads back
/// whole (a file removed between listing and reading is fine: resume and pruning remove files).
fn check_whole_files(out: &Path, problems: &mut Vec<String>) {
    for (dir, is_ckpt) in [("particles", false), ("checkpoints", true)] {
        let Ok(rd) = std::fs::read_dir(out.join(dir)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !name.ends_with(".bin") {
                continue; // a temporary file being written
            }
            let err = if is_ckpt {
                surge::checkpoint::read(&p).err()
            } else {
                surge::output::frame::read(&p)
                    .err()
                    .map(|e| format!("{e:#}"))
            };
            if let Some(e) = err
                && p.exists()
            {
                problems.push(format!("{}: {e}", p.display()));
            }
        }
    }
}

/// Files under `dir` whose names are atomic_write's temporaries (`.NAME.tmp`).
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let n = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if n.starts_with('.') && n.ends_with(".tmp") {
                found.push(p);
            }
        }
    }
    found
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", text(&o.stderr));
}

fn meshes(out: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    common::snapshot(&out.join("meshes"))
}

/// Copies a run folder's scene.json and particle frames (what the mesh stage reads).
fn copy_run(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("particles")).unwrap();
    std::fs::copy(from.join("scene.json"), to.join("scene.json")).unwrap();
    for e in std::fs::read_dir(from.join("particles")).unwrap().flatten() {
        std::fs::copy(e.path(), to.join("particles").join(e.file_name())).unwrap();
    }
}

#[test]
fn slurm_render_farm() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let cluster = match start_cluster() {
        Ok(c) => c,
        Err(why) => {
            assert!(!ci, "CI=true but SLURM cannot be started here: {why}");
            skip(
                "slurm_render_farm",
                &format!("SLURM cannot be started: {why}"),
            );
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tiny = repo().join("scenes/tiny.json");
    let tiny = tiny.to_str().unwrap();
    std::fs::create_dir_all(d.join("logs")).unwrap();

    array_equals_local_mesh(&cluster, d, tiny);
    requeued_bake_equals_uninterrupted(&cluster, d, tiny);
    failed_task_fails_alone_and_resubmits(&cluster, d);
}

/// A 12-frame run (frames 0..11) meshed by a 4-task array == `surge mesh` here.
fn array_equals_local_mesh(c: &Cluster, d: &Path, tiny: &str) {
    let t = Instant::now();
    ok(&surge(d, &["-q", "run", tiny, "-o", "a", "--frames", "11"]));
    copy_run(&d.join("a"), &d.join("b"));
    // A surface flag, passed through by the array, so that the meshes differ from the run's.
    ok(&surge(d, &["-q", "mesh", "a", "--level-set-blur", "2"]));
    ok(&surge(d, &["-q", "preview", "a"]));
    let id = c.sbatch(
        d,
        &[
            "--array=0-3",
            "--output=logs/mesh-%A_%a.out",
            &script("mesh_array.sbatch"),
            "b",
            "4",
            "--preview",
            "--level-set-blur",
            "2",
        ],
    );
    c.wait_idle(d, Duration::from_secs(120), &mut || {});
    let mut logs = String::new();
    for task in 0..4 {
        let j = c.job(d, &format!("{id}_{task}"));
        let log = std::fs::read_to_string(d.join(format!("logs/mesh-{id}_{task}.out"))).unwrap();
        assert_eq!(j["JobState"], "COMPLETED", "task {task}:\n{log}");
        let range = format!("{}..{}", 3 * task, 3 * task + 2);
        assert!(
            log.contains(&format!("frames {range} of b")) && log.contains(&format!("of {range})")),
            "task {task} does not log its frame range {range}:\n{log}"
        );
        assert!(
            log.contains(&format!("surge preview: 3 frames {range} of b")),
            "task {task} does not log its previews' range:\n{log}"
        );
        assert!(!log.contains('\x1b'), "escape codes in a SLURM log:\n{log}");
        logs += &log;
    }
    let want = meshes(&d.join("a"));
    assert_eq!(want.len(), 12);
    let got = meshes(&d.join("b"));
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{logs}"
    );
    for (name, bytes) in &want {
        assert!(
            got[name] == *bytes,
            "{} differs from `surge mesh`",
            name.display()
        );
    }
    let want = common::snapshot(&d.join("a/previews"));
    assert_eq!(want.len(), 12);
    assert!(
        common::snapshot(&d.join("b/previews")) == want,
        "the array's previews differ from `surge preview`"
    );
    eprintln!("array == local mesh: {:.1} s", t.elapsed().as_secs_f64());
}

/// Waits (watching for half-written files) until `done()` or the limit.
fn wait_for(
    c: &Cluster,
    what: &str,
    limit: Duration,
    watch: &mut dyn FnMut(),
    done: &dyn Fn() -> bool,
) {
    let t = Instant::now();
    while !done() {
        watch();
        assert!(
            t.elapsed() < limit,
            "timed out waiting for {what}\n{}",
            c.logs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The newest particle frame of a run folder, if any.
fn newest_frame(out: &Path) -> Option<u32> {
    std::fs::read_dir(out.join("particles"))
        .ok()?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("frame_")?
                .strip_suffix(".bin")?
                .parse()
                .ok()
        })
        .max()
}

/// A bake requeued twice while running ends byte-identical to an uninterrupted run.
fn requeued_bake_equals_uninterrupted(c: &Cluster, d: &Path, tiny: &str) {
    let t = Instant::now();
    let frames = "36";
    ok(&surge(
        d,
        &["-q", "run", tiny, "-o", "ref", "--frames", frames],
    ));
    let out = d.join("bake");
    let id = c.sbatch(
        d,
        &[
            "--requeue",
            "--signal=B:TERM@120",
            "--output=logs/bake.out",
            "--open-mode=append",
            &script("bake.sbatch"),
            tiny,
            "bake",
            "--frames",
            frames,
        ],
    );
    let mut problems = Vec::new();
    let mut watch = || check_whole_files(&out, &mut problems);
    let mut resumed_from = 0;
    let mut stopped_at = Vec::new();
    for requeue in 1..=2 {
        // Requeue only while surge runs: once this start has written three new frames.
        let after = resumed_from;
        wait_for(
            c,
            &format!("start {requeue} of the bake to write frames"),
            Duration::from_secs(120),
            &mut watch,
            &|| newest_frame(&out).is_some_and(|f| f >= after + 3),
        );
        let at = newest_frame(&out).unwrap();
        assert!(
            at < 30,
            "the bake got to frame {at} before requeue {requeue}: the test needs a longer run"
        );
        c.run("scontrol", d, &["requeue", &id]);
        // The job stops (checkpoint of its last frame), then waits for its restart.
        wait_for(
            c,
            &format!("requeue {requeue} to stop the job"),
            Duration::from_secs(60),
            &mut watch,
            &|| c.job(d, &id)["JobState"] == "PENDING",
        );
        resumed_from = newest_frame(&out).unwrap();
        stopped_at.push(resumed_from);
        eprintln!(
            "requeue {requeue}: sent at frame {at}, stopped after frame {resumed_from} ({:.1} s)",
            t.elapsed().as_secs_f64()
        );
    }
    c.wait_idle(d, Duration::from_secs(180), &mut watch);
    let log = std::fs::read_to_string(d.join("logs/bake.out")).unwrap();
    let job = c.job(d, &id);
    assert_eq!(job["JobState"], "COMPLETED", "{log}");
    assert_eq!(job["Restarts"], "2", "{log}");
    assert_eq!(
        log.matches("stopped by SIGTERM after frame").count(),
        2,
        "surge did not checkpoint and exit 75 on each requeue:\n{log}"
    );
    assert!(
        log.contains("start 3") && log.contains("surge resume") && log.contains("bake: done"),
        "{log}"
    );
    // Each restart continued from the checkpoint the stop wrote (not from scratch).
    for f in stopped_at {
        assert!(
            log.contains(&format!("from the checkpoint of frame {f} ")),
            "no restart resumed from frame {f}:\n{log}"
        );
    }
    assert!(!log.contains('\x1b'), "escape codes in a SLURM log:\n{log}");
    assert!(
        problems.is_empty(),
        "half-written files seen: {problems:#?}"
    );
    assert_eq!(
        temp_files(&out),
        Vec::<PathBuf>::new(),
        "temporary files left"
    );
    // Frames, meshes, previews, stats (without `seconds`): as the uninterrupted run.
    let keep = |m: BTreeMap<PathBuf, Vec<u8>>| -> BTreeMap<PathBuf, Vec<u8>> {
        m.into_iter()
            .filter(|(p, _)| {
                [
                    "particles",
                    "meshes",
                    "previews",
                    "stats",
                    "stats.jsonl",
                    "scene.json",
                ]
                .iter()
                .any(|k| p.starts_with(k))
            })
            .collect()
    };
    let want = keep(outputs(&d.join("ref")));
    let got = keep(outputs(&out));
    assert!(want.len() > 3 * 37, "{}", want.len());
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &want {
        assert!(
            got[name] == *bytes,
            "{} differs from the uninterrupted run",
            name.display()
        );
    }
    eprintln!(
        "requeued bake == uninterrupted: {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// A task whose particle frame is missing fails alone, with a clear message; re-submitting only
/// that task completes the meshes.
fn failed_task_fails_alone_and_resubmits(c: &Cluster, d: &Path) {
    let t = Instant::now();
    let want = meshes(&d.join("a")); // frames 0..11, --level-set-blur 2
    copy_run(&d.join("a"), &d.join("f"));
    let f = d.join("f");
    let gone = f.join("particles/frame_0004.bin");
    let kept = d.join("frame_0004.bin");
    std::fs::rename(&gone, &kept).unwrap();
    let args = ["f", "4", "--level-set-blur", "2"];
    let submit = |array: &str| {
        let mut a = vec![
            array,
            "--output=logs/fail-%A_%a.out",
            &*script("mesh_array.sbatch"),
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        a.extend(args.iter().map(|s| s.to_string()));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        c.sbatch(d, &a)
    };
    let id = submit("--array=0-3");
    c.wait_idle(d, Duration::from_secs(120), &mut || {});
    for task in 0..4 {
        let j = c.job(d, &format!("{id}_{task}"));
        let log = std::fs::read_to_string(d.join(format!("logs/fail-{id}_{task}.out"))).unwrap();
        if task == 1 {
            assert_eq!(j["JobState"], "FAILED", "{log}");
            assert_eq!(j["ExitCode"], "1:0", "{log}");
            assert!(
                log.contains("frame_0004.bin does not exist")
                    && log.contains("task 1 of 4")
                    && log.contains("FAILED")
                    && log.contains("re-run only this task: sbatch --array=1 "),
                "the failed task's log does not say what failed and how to re-run it:\n{log}"
            );
        } else {
            assert_eq!(j["JobState"], "COMPLETED", "task {task}:\n{log}");
        }
    }
    let got = meshes(&f);
    let names = |r: std::ops::RangeInclusive<u32>| -> Vec<PathBuf> {
        r.map(|k| PathBuf::from(format!("frame_{k:04}.ply")))
            .collect()
    };
    let mut expect_names = names(0..=2);
    expect_names.extend(names(6..=11));
    assert_eq!(got.keys().cloned().collect::<Vec<_>>(), expect_names);
    for (name, bytes) in &got {
        assert!(want[name] == *bytes, "{} differs", name.display());
    }
    // Fix the cause, re-submit only task 1.
    std::fs::rename(&kept, &gone).unwrap();
    let id2 = submit("--array=1");
    c.wait_idle(d, Duration::from_secs(120), &mut || {});
    let log = std::fs::read_to_string(d.join(format!("logs/fail-{id2}_1.out"))).unwrap();
    assert_eq!(
        c.job(d, &format!("{id2}_1"))["JobState"],
        "COMPLETED",
        "{log}"
    );
    assert!(
        meshes(&f) == want,
        "the re-submitted task did not complete the meshes"
    );
    eprintln!(
        "failed task + re-submit: {:.1} s",
        t.elapsed().as_secs_f64()
    );
}
