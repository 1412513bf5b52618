//! Running a `surge` child with its exit status, signal, stderr and peak resident memory
//! (`wait4`'s rusage), killed past a time limit: the hostile-input and kill tests.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::SURGE;

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
pub const MAX_RSS_KB: i64 = 200 * 1024;
/// Wall time allowed to a hostile case.
pub const MAX_SECONDS: f64 = 10.0;

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

/// A 6^3-cell native scene domain, a small box source, and a scene of the two.
pub const DOMAIN: &str =
    r#""domain": {"lower": [0, 0, 0], "cell_size": 0.1, "resolution": [6, 6, 6]}"#;
pub const BOX: &str = r#"{"type": "box", "min": [0.1, 0.1, 0.1], "max": [0.3, 0.3, 0.3]}"#;

pub fn native(body: &str) -> String {
    format!("{{{DOMAIN}, {body}}}")
}

/// Writes `scene` to `dir/NAME` and runs `surge -q run NAME -o out` there (see
/// [`run_measured`]): it must run to the end, exit 0 with no signal and no panic, and leave
/// `frames + 1` lines (frames 0 to `frames`) in `out/stats.jsonl`.
pub fn runs_to_the_end(dir: &Path, (name, scene): (&str, &str), frames: usize) {
    std::fs::write(dir.join(name), scene).unwrap();
    let o = run_measured(dir, &["-q", "run", name, "-o", "out"], &[]);
    eprintln!(
        "exit {:?} signal {:?}, {:.2} s",
        o.code, o.signal, o.seconds
    );
    assert_eq!((o.code, o.signal), (Some(0), None), "{}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    let stats = std::fs::read_to_string(dir.join("out/stats.jsonl")).unwrap();
    assert_eq!(stats.lines().count(), frames + 1, "frames 0 to {frames}");
}
