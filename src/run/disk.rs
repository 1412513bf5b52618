//! The disk check before a run: an estimate of what the run will write (particle frames,
//! `.part` files, meshes, previews, stats, checkpoints) against the free space of the output
//! folder's file system (`statvfs`). A run that cannot fit is refused before anything is
//! written (`--ignore-disk-check` overrides); the estimate is printed either way.
//!
//! The estimate is rough by design: particle frames and checkpoints are sized exactly from the
//! particle count; a mesh is sized from the surface of the liquid's volume taken as a cube, at
//! the mesh cell size (about 124 bytes per square mesh cell: two vertices of 36 bytes and four
//! triangles of 13); a preview at 0.4 bytes per pixel. On the built-in dam break (3 frames) it
//! says 43 MB where the run writes 34 MB.
//!
//! Layer 5 (run): imports scene and error.

use crate::error::fail;
use crate::scene::Scene;
use std::path::Path;

/// What a run will write, bytes, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DiskEstimate {
    pub particles: f64,
    pub meshes: f64,
    pub previews: f64,
    pub checkpoints: f64,
    /// Stats and `.part` files.
    pub other: f64,
}

impl DiskEstimate {
    pub fn total(&self) -> f64 {
        self.particles + self.meshes + self.previews + self.checkpoints + self.other
    }

    /// `about 1.2 GB (particles 0.8 GB, meshes 0.3 GB, ...)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (name, b) in [
            ("particle frames", self.particles),
            ("meshes", self.meshes),
            ("previews", self.previews),
            ("checkpoints", self.checkpoints),
            ("stats and .part files", self.other),
        ] {
            if b >= 0.05 * (1u64 << 20) as f64 {
                parts.push(format!("{name} {}", size(b)));
            }
        }
        format!("about {} ({})", size(self.total()), parts.join(", "))
    }
}

/// `12.3 MB`, `1.2 GB`.
pub fn size(bytes: f64) -> String {
    let mb = bytes / (1u64 << 20) as f64;
    if mb < 0.1 {
        format!("{:.0} kB", bytes / 1024.0)
    } else if mb >= 1024.0 {
        format!("{:.1} GB", mb / 1024.0)
    } else {
        format!("{mb:.1} MB")
    }
}

/// The disk use of frames `first + 1 ..= scene.time.frames` (and frame 0 when `first` is
/// None) of a run of `particles` particles.
pub fn estimate(scene: &Scene, particles: usize, first: Option<u32>) -> DiskEstimate {
    let n = particles as f64;
    let frames = (scene.time.frames as f64) - first.map_or(-1.0, |f| f as f64);
    let frames = frames.max(0.0);
    let o = &scene.output;
    let d = &scene.domain;
    let cells: f64 = d.resolution.iter().map(|&r| r as f64).product();
    let mut e = DiskEstimate {
        particles: if o.particles {
            frames * (40.0 + 24.0 * n)
        } else {
            0.0
        },
        ..Default::default()
    };
    if o.meshes {
        let volume = n * d.particle_spacing().powi(3);
        let area = 6.0 * volume.powf(2.0 / 3.0);
        let h = d.cell_size * scene.surface.cell_size_factor.max(1e-3);
        e.meshes = frames * 124.0 * area / (h * h);
    }
    if o.previews {
        e.previews = frames * 0.4 * scene.render.width as f64 * scene.render.height as f64;
    }
    // Positions and velocities, plus the nine affine floats of APIC runs.
    let per_particle = match scene.solver.transfer {
        crate::sim::Transfer::Apic => 60.0,
        crate::sim::Transfer::Flip => 24.0,
    };
    let checkpoint = 256.0 + per_particle * n + 4.0 * cells;
    e.checkpoints = checkpoint * (o.keep_checkpoints.max(1) as f64 + 0.5);
    e.other = frames * 1024.0
        + if o.part_pattern.is_some() {
            frames * 60.0 * n
        } else {
            0.0
        };
    e
}

/// Test hook (README.md, "Test hooks"): `SURGE_TEST_FREE_BYTES=N` makes every file system
/// report N bytes free, so the refusal can be tested without a tiny file system.
pub const FREE_BYTES_HOOK: &str = "SURGE_TEST_FREE_BYTES";

#[repr(C)]
struct StatVfs {
    // f_bsize, f_frsize, f_blocks, f_bfree, f_bavail, ... (glibc on 64-bit Linux: unsigned
    // longs), with room to spare for the rest of the struct.
    words: [u64; 32],
}

unsafe extern "C" {
    fn statvfs(path: *const std::ffi::c_char, buf: *mut StatVfs) -> std::ffi::c_int;
}

/// Free bytes for an unprivileged writer on the file system holding `path` (or its nearest
/// existing ancestor); None when unknown.
pub fn free_bytes(path: &Path) -> Option<f64> {
    if let Ok(v) = std::env::var(FREE_BYTES_HOOK) {
        return v.parse().ok();
    }
    let abs = std::path::absolute(path).ok()?;
    let existing = abs.ancestors().find(|p| p.exists())?;
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    let mut buf = StatVfs { words: [0; 32] };
    // SAFETY: `c` is a NUL-terminated path; `buf` is larger than struct statvfs.
    let r = unsafe { statvfs(c.as_ptr(), &mut buf) };
    if r != 0 || !cfg!(target_pointer_width = "64") {
        return None;
    }
    Some(buf.words[1] as f64 * buf.words[4] as f64)
}

/// Says the estimate and refuses a run whose outputs will not fit in `out`'s free space
/// (unless `ignore`).
pub fn check_disk(
    scene: &Scene,
    particles: usize,
    first: Option<u32>,
    out: &Path,
    ignore: bool,
    say: &dyn Fn(&str),
) -> anyhow::Result<()> {
    let e = estimate(scene, particles, first);
    let free = free_bytes(out);
    say(&format!(
        "disk: this run will write {}{}",
        e.describe(),
        free.map_or(String::new(), |f| format!("; {} free", size(f)))
    ));
    if let Some(f) = free
        && e.total() > f
        && !ignore
    {
        return Err(fail(
            format!(
                "the output folder {} has {} free and this run will write {}",
                out.display(),
                size(f),
                e.describe()
            ),
            "free some space, pick another folder with -o, write fewer outputs (`output.previews`/`output.meshes` false, fewer frames), or pass --ignore-disk-check if the estimate is wrong",
        ));
    }
    Ok(())
}
