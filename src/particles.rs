//! Liquid particles as a struct of arrays (the data-oriented layout of the stepper's hot
//! loops), and the limits of the particle state (most particles, largest speed).
//!
//! Layer 0: imports nothing of surge.

/// Most particles a scene may seed (2^28, 6 GB of particle state): a guard against a typo
/// that would exhaust memory.
pub const MAX_PARTICLES: usize = 1 << 28;

/// Largest gravity component and initial speed a scene may give, m/s^2 and m/s. Far beyond any
/// liquid shot (the speed of sound in water is 1,500 m/s, where incompressible flow stops making
/// sense) and far below what overflows the f32 particle state (a typo like `-9.8e30` would
/// turn every particle into NaN within a frame).
pub const MAX_ACCELERATION_OR_SPEED: f64 = 1e4;

/// Particles as a struct of arrays: `pos[axis][i]`, `vel[axis][i]`.
///
/// Order is the particles' identity: every file surge writes keeps the order the particles were
/// created in (the tutorial's frames never reorder), whatever order the stepper uses inside.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Particles {
    /// Positions x, y, z, m.
    pub pos: [Vec<f32>; 3],
    /// Velocities x, y, z, m/s.
    pub vel: [Vec<f32>; 3],
    /// APIC affine velocity matrices `C` (Jiang et al. 2015), `affine[3 a + b][i]` =
    /// `d v_a / d x_b` of particle `i`, 1/s: empty (all nine) unless the run uses
    /// `solver.transfer = "apic"`, then one value per particle in each.
    pub affine: [Vec<f32>; 9],
}

impl Particles {
    /// An empty set with room for `n` particles.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            pos: std::array::from_fn(|_| Vec::with_capacity(n)),
            vel: std::array::from_fn(|_| Vec::with_capacity(n)),
            affine: Default::default(),
        }
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.pos[0].len()
    }

    /// True when there are no particles.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends one particle (with a zero affine matrix when the set carries them).
    pub fn push(&mut self, pos: [f32; 3], vel: [f32; 3]) {
        if self.has_affine() {
            for c in &mut self.affine {
                c.push(0.0);
            }
        }
        for a in 0..3 {
            self.pos[a].push(pos[a]);
            self.vel[a].push(vel[a]);
        }
    }

    /// True when the particles carry APIC affine matrices (see [`Self::affine`]).
    pub fn has_affine(&self) -> bool {
        !self.affine[0].is_empty()
    }

    /// Position of particle `i`.
    pub fn position(&self, i: usize) -> [f32; 3] {
        [self.pos[0][i], self.pos[1][i], self.pos[2][i]]
    }

    /// Velocity of particle `i`.
    pub fn velocity(&self, i: usize) -> [f32; 3] {
        [self.vel[0][i], self.vel[1][i], self.vel[2][i]]
    }

    /// Largest particle speed, m/s (0 for no particles).
    pub fn max_speed(&self) -> f32 {
        (0..self.len())
            .map(|i| {
                let v = self.velocity(i);
                (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
            })
            .fold(0.0, f32::max)
    }
}

/// Memory a run needs per grid cell and per particle, bytes: measured peaks of `surge run`
/// (58 B per cell at 200^3 cells, 196 B per particle at 3-6 M particles, meshes and previews
/// off), rounded up for the mesh and preview stages.
pub const BYTES_PER_CELL: f64 = 64.0;
pub const BYTES_PER_PARTICLE: f64 = 256.0;

/// `(MemTotal, MemAvailable)` in bytes from /proc/meminfo (Linux), if readable.
pub fn machine_memory() -> Option<(f64, f64)> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024.0)
    };
    Some((field("MemTotal:")?, field("MemAvailable:")?))
}

/// Most particles a run on a grid of `cells` cells can hold in this machine's memory (by the
/// estimate above), at most [`MAX_PARTICLES`]: checked against a particle file's count line
/// before its particles are read.
pub fn particle_budget(cells: f64) -> usize {
    match machine_memory() {
        Some((total, _)) => {
            let left = (total - cells * BYTES_PER_CELL).max(0.0);
            ((left / BYTES_PER_PARTICLE) as usize).min(MAX_PARTICLES)
        }
        None => MAX_PARTICLES,
    }
}
