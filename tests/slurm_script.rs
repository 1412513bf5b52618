//! `scripts/slurm/bake.sbatch` as a plain script (no SLURM needed; the cluster tests are in
//! `tests/slurm.rs`): a retry of a bake, which runs `surge resume`, keeps the flags of the
//! first start that `surge resume` takes.

mod common;

use std::path::Path;
use std::process::{Command, Output};

/// `bash scripts/slurm/bake.sbatch SCENE out` in `dir`, with `surge` as its surge binary and
/// no SLURM job around it.
fn bake(dir: &Path, scene: &Path, surge: &Path) -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm/bake.sbatch");
    let mut c = Command::new("bash");
    c.arg(script)
        .arg(scene)
        .arg("out")
        .current_dir(dir)
        .env("SURGE", surge)
        .env_remove("SLURM_JOB_ID")
        .env_remove("SLURM_RESTART_COUNT");
    c
}

/// The script's stdout and stderr, one after the other.
fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// A bake submitted with `--ignore-disk-check` on a disk that reports no free space, stopped
/// after its scene was written (as a preemption during start-up would), then started again:
/// the retry resumes with the same flag and finishes. Before, the retry ran `surge resume OUT`
/// without the run's flags, and its disk check refused the run, so the requeued job failed.
/// Also: retrying a finished bake leaves it as it is, whatever the disk reports.
#[test]
fn a_retried_bake_keeps_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scene = repo.join("scenes/tiny.json");
    let bake = |kill: Option<&str>, flags: &[&str]| {
        let mut c = bake(d, &scene, Path::new(env!("CARGO_BIN_EXE_surge")));
        c.args(flags).env("SURGE_TEST_FREE_BYTES", "1");
        if let Some(k) = kill {
            c.env("SURGE_TEST_KILL_AT", k);
        }
        let o = c.output().unwrap();
        (o.status.code(), text(&o))
    };
    let flags = ["--frames", "2", "--ignore-disk-check", "-q"];
    let (code, text) = bake(Some("after-scene"), &flags);
    assert_ne!(code, Some(0), "the hook must stop the first start: {text}");
    assert!(d.join("out/scene.json").is_file(), "{text}");
    let (code, text) = bake(None, &flags);
    assert_eq!(code, Some(0), "the retry: {text}");
    assert!(text.contains("surge resume out"), "{text}");
    assert!(d.join("out/particles/frame_0002.bin").is_file(), "{text}");
    common::assert_all_whole(&d.join("out"));
    // Finished: a retry without the flag changes nothing and is not refused.
    let before = common::snapshot(&d.join("out"));
    let (code, text) = bake(None, &["--frames", "2", "-q"]);
    assert_eq!(code, Some(0), "retry of a finished bake: {text}");
    let after = common::snapshot(&d.join("out"));
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "the retry changed the run's files: {text}"
    );
    for (k, v) in &before {
        assert!(after[k] == *v, "the retry rewrote {}: {text}", k.display());
    }
}

/// A SIGTERM (preemption) that reaches surge before it has started simulating, while it reads
/// the scene or its checkpoint, kills it with the default action (status 143): the job asked
/// for it and nothing but whole files is written, so the script requeues the job as for
/// surge's own "resume me" (75). A stand-in `surge` (a process that only waits) takes the
/// forwarded signal, and a stand-in `scontrol` records the requeue.
#[test]
fn a_bake_terminated_before_simulating_is_requeued() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = d.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let put = |name: &str, text: &str| {
        let p = bin.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    put("surge", "#!/bin/sh\nexec sleep 30\n");
    put(
        "scontrol",
        "#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/requeued\"\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = bake(d, Path::new("scene.json"), &bin.join("surge"))
        .env("PATH", &path)
        .env("SLURM_JOB_ID", "4242")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed().as_secs() < 20, "the script did not end");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let text = text(&o);
    assert_eq!(o.status.code(), Some(75), "{text}");
    let requeued = std::fs::read_to_string(bin.join("requeued")).unwrap_or_default();
    assert_eq!(requeued.trim(), "requeue 4242", "{text}");
}
