//! Particle <-> grid transfers of PIC/FLIP.
//!
//! Zhu & Bridson (2005), "Animating sand as a fluid", ACM TOG 24(3) (PIC/FLIP blend on a MAC
//! grid); Brackbill & Ruppel (1986), "FLIP: a method for adaptively zoned, particle-in-cell
//! calculations of fluid flows in two dimensions", J. Comput. Phys. 65.
//!
//! **Particle to grid.** Each face value is the trilinear-weighted average of the velocities of
//! the particles within one cell of it: `u_f = sum_p w_pf v_p / sum_p w_pf`, `w_pf` the product
//! of hat functions `max(0, 1 - |x_p - x_f| / h)` per axis (weight normalisation), 0 where no
//! particle reaches. The splat runs blocks of cell rows as tasks over the cell-sorted particles
//! (a contiguous range, see [`super::cell_sort`]), each particle adding to all three components
//! at once; the particles of a 2 x 2 block of cell rows reach 4 x 4 face rows, so blocks are
//! coloured by (block y, block z) mod 2: the blocks of one colour write disjoint rows and run
//! in parallel, and the colours run in turn. So every face's sum has a fixed order (colour,
//! block, sorted order) whatever the thread count.
//!
//! With `solver.transfer = "apic"` the particles carry affine matrices and the per-particle
//! body of the splat and the whole gather are [`super::apic`]'s.
//!
//! **Grid to particle.** `v_p <- f (v_p + dv(x_p)) + (1 - f) v_new(x_p)`, which is
//! `v_p = f (v_p - v_old) + v_new` with `dv = v_new - v_old` kept as its own (extrapolated) grid,
//! `f` = `flip_ratio`. It shares its interpolation weights, and its `v_new(x_p)`, with the
//! first stage of the advection that follows in the same pass.

use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, GridDims};
use super::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Splats particle velocities onto the three face grids (`vel`); `scratch` (at least two
/// floats per face, its contents ignored) holds the sums `[sum w v, sum w]` per face
/// (interleaved, so one cache line serves both). [`splat_sums`] then the normalisation
/// `u = sum w v / sum w` (0 where no particle reaches), which the substep fuses into the
/// forces' pass instead ([`super::forces::apply_forces_from_sums`]).
pub fn splat(
    d: &GridDims,
    sp: &SortedParticles,
    vel: &mut [Vec<f32>; 3],
    scratch: &mut [Vec<f32>; 3],
) {
    splat_sums(d, sp, scratch);
    for a in 0..3 {
        vel[a]
            .par_iter_mut()
            .zip(scratch[a].as_chunks::<2>().0.par_iter())
            .with_min_len(4096)
            .for_each(|(v, &[wv, w])| *v = normalised(wv, w));
    }
}

/// A face's splatted velocity from its sums `[wv, w]`: `wv / w`, 0 where no particle reaches.
#[inline(always)]
pub fn normalised(wv: f32, w: f32) -> f32 {
    // The quotient formed unconditionally and then selected: the form the compiler
    // vectorises (the same value wherever `w > 0`).
    let q = wv / w;
    if w > 0.0 { q } else { 0.0 }
}

/// The splat's sums `[sum w v, sum w]` per face of each component into `scratch` (at least two
/// floats per face, its contents ignored), without the normalisation (see [`splat`]).
pub fn splat_sums(d: &GridDims, sp: &SortedParticles, scratch: &mut [Vec<f32>; 3]) {
    let [s0, s1, s2] = scratch;
    let mut acc: [&mut [[f32; 2]]; 3] = [s0, s1, s2].map(|v| v.as_chunks_mut::<2>().0);
    for a in acc.iter_mut() {
        a.par_iter_mut()
            .with_min_len(4096)
            .for_each(|x| *x = [0.0; 2]);
    }
    let (ny, nz) = (d.n[1], d.n[2]);
    // Every stencil corner is inside component a's grid when each axis has two cells or more;
    // the unchecked writes below rely on the accumulators covering the grids.
    assert!(
        (0..3).all(|a| d.n[a] >= 2 && acc[a].len() >= d.faces(a)),
        "splat: accumulators smaller than the face grids"
    );
    let ap: [SyncPtr<[f32; 2]>; 3] = std::array::from_fn(|a| SyncPtr(acc[a].as_mut_ptr()));
    // The vector path computes face indices in 32-bit lanes.
    // (APIC's affine splat, `super::apic`, runs scalar.)
    #[cfg(target_arch = "x86_64")]
    let vector =
        std::is_x86_feature_detected!("avx2") && (0..3).all(|a| d.faces(a) < i32::MAX as usize);
    // Tasks are blocks of 2 x 2 cell rows: block (bj, bk) holds the rows j in 2bj..2bj+2,
    // k in 2bk..2bk+2, whose particles reach face rows 2bj-1..=2bj+2 and face planes
    // 2bk-1..=2bk+2 of every component. Blocks of one colour (bj mod 2, bk mod 2) are two
    // blocks apart in y or z, so their write sets are disjoint and they run in parallel; the
    // four colours run one after another. Each face thus receives its particles in a fixed
    // order (colour, block, sorted order) whatever the number of threads, and a liquid lying
    // in a few z-planes (a pool) still spreads over many tasks.
    let (bny, bnz) = (ny.div_ceil(2), nz.div_ceil(2));
    for colour in 0..4 {
        let (cj, ck) = (colour & 1, colour >> 1);
        let (tj, tk) = ((bny + 1 - cj) / 2, (bnz + 1 - ck) / 2);
        (0..tj * tk).into_par_iter().with_max_len(1).for_each(|t| {
            let (bj, bk) = (cj + 2 * (t / tk), ck + 2 * (t % tk));
            let block = SplatBlock {
                d,
                sp,
                ap,
                j0: 2 * bj,
                k0: 2 * bk,
            };
            #[cfg(target_arch = "x86_64")]
            if vector {
                // SAFETY: the CPU has AVX2 (checked above); see `SplatBlock::run`.
                unsafe { block.run_avx2() };
                return;
            }
            // SAFETY: blocks of one colour run at the same time (see above).
            unsafe { block.run() };
        });
    }
}

/// The particles of one 2 x 2 block of cell rows, `(j0..j0 + 2, k0..k0 + 2)`, splatted into
/// the accumulators `ap`.
struct SplatBlock<'a> {
    d: &'a GridDims,
    sp: &'a SortedParticles,
    ap: [SyncPtr<[f32; 2]>; 3],
    j0: usize,
    k0: usize,
}

impl SplatBlock<'_> {
    /// The slot ranges of the block's particles: its two cell rows in each of its planes.
    fn ranges(&self) -> [(usize, usize); 2] {
        let (d, sp) = (self.d, self.sp);
        let (ny, nz) = (d.n[1], d.n[2]);
        std::array::from_fn(|dk| {
            let kc = self.k0 + dk;
            if kc >= nz {
                return (0, 0);
            }
            let s0 = sp.cell_start[d.cell(0, self.j0, kc)] as usize;
            let s1 = sp.cell_start[d.cell(0, (self.j0 + 2).min(ny), kc)] as usize;
            (s0, s1)
        })
    }

    /// The AVX2 version (chosen at run time): groups of eight particles get their stencils and
    /// weights from [`super::gather_avx2::splat8`], the rest go through [`Self::particles`];
    /// the same bits as [`Self::run`].
    ///
    /// # Safety
    /// As [`Self::run`], and the CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2(&self) {
        for (s0, s1) in self.ranges() {
            // SAFETY: AVX2 is enabled; the block's writes are its own (see `run`); `splat`
            // checked the accumulators' sizes and two cells per axis.
            unsafe {
                let sp = self.sp;
                let aff = sp.affine.then_some(&sp.aff);
                let done =
                    super::gather_avx2::splat8(self.d, &sp.pos, &sp.vel, aff, s0, s1, self.ap);
                self.particles(s0 + done, s1);
            }
        }
    }

    /// # Safety
    /// No task running at the same time writes the face rows `j0 - 1..=j0 + 2` of the face
    /// planes `k0 - 1..=k0 + 2` of any component (another block of the same colour does not).
    #[inline(always)]
    unsafe fn run(&self) {
        for (s0, s1) in self.ranges() {
            unsafe { self.particles(s0, s1) };
        }
    }

    /// Splats the particles in slots `s0..s1` (of this block).
    ///
    /// # Safety
    /// As [`Self::run`].
    #[inline(always)]
    unsafe fn particles(&self, s0: usize, s1: usize) {
        let SplatBlock { d, sp, ap, .. } = *self;
        if sp.affine {
            // SAFETY: the same contract.
            unsafe { super::apic::splat_particles(d, sp, ap, s0, s1) };
            return;
        }
        let (pos, pv) = (&sp.pos, &sp.vel);
        for s in s0..s1 {
            let st = d.stencil([pos[0][s], pos[1][s], pos[2][s]]);
            for a in 0..3 {
                let m = d.face_n(a);
                let (sy, sz) = (m[0], m[0] * m[1]);
                let [fx, fy, fz] = st.frac[a];
                let v = pv[a][s];
                let b = st.base[a];
                for (dz, wz) in [(0, 1.0 - fz), (sz, fz)] {
                    for (dy, wy) in [(0, 1.0 - fy), (sy, fy)] {
                        for (dx, wx) in [(0, 1.0 - fx), (1, fx)] {
                            let f = b + dz + dy + dx;
                            let w = wx * wy * wz;
                            // SAFETY: the particle is in a cell row of this block and inside
                            // the wall layer, so `f` lies in face rows j0-1..=j0+2 of face
                            // planes k0-1..=k0+2, which no concurrently running block (same
                            // colour) touches; and `f` is inside the grid (the stencil clamps
                            // into it).
                            unsafe {
                                let cell = &mut *ap[a].get(f);
                                cell[0] += w * v;
                                cell[1] += w;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Cell labels: wall layer solid, a cell holding a particle fluid, the rest empty.
pub fn label_cells(d: &GridDims, sp: &SortedParticles, labels: &mut [CellLabel]) {
    let n = d.n;
    let plane = n[0] * n[1];
    labels
        .par_chunks_mut(plane)
        .enumerate()
        .for_each(|(k, lp)| {
            for (j, row) in lp.chunks_exact_mut(n[0]).enumerate() {
                if k == 0 || k + 1 == n[2] || j == 0 || j + 1 == n[1] {
                    row.fill(CellLabel::Solid);
                    continue;
                }
                let c0 = d.cell(0, j, k);
                let starts = &sp.cell_start[c0..c0 + n[0] + 1];
                for (out, s) in row.iter_mut().zip(starts.windows(2)) {
                    *out = if s[1] > s[0] {
                        CellLabel::Fluid
                    } else {
                        CellLabel::Empty
                    };
                }
                row[0] = CellLabel::Solid;
                row[n[0] - 1] = CellLabel::Solid;
            }
        });
}

/// Grid to particle and advection in one pass: the PIC/FLIP blend with FLIP share `flip`, then
/// the particle moves by one RK2 (midpoint) step of `dt` through `vel_new`, whose first stage
/// is the `v_new(x_p)` the blend already interpolated (see [`super::advect`]).
pub fn gather_and_advect(
    d: &GridDims,
    sp: &mut SortedParticles,
    vel_new: &[Vec<f32>; 3],
    delta: &[Vec<f32>; 3],
    flip: f32,
    dt: f32,
) {
    let (lo, hi) = d.interior_bounds(super::advect::WALL_MARGIN * d.h);
    let chunk = &GatherChunk {
        d,
        vel_new,
        delta,
        flip,
        dt,
        lo,
        hi,
    };
    #[cfg(target_arch = "x86_64")]
    let vector =
        std::is_x86_feature_detected!("avx2") && super::gather_avx2::fits(d, [vel_new, delta]);
    // Chunks of particles with a plain loop inside (one task call per chunk, so the whole
    // per-particle work inlines into one loop).
    const CHUNK: usize = 512;
    let [px, py, pz] = &mut sp.pos;
    let [vx, vy, vz] = &mut sp.vel;
    px.par_chunks_mut(CHUNK)
        .zip(py.par_chunks_mut(CHUNK))
        .zip(pz.par_chunks_mut(CHUNK))
        .zip(
            vx.par_chunks_mut(CHUNK)
                .zip(vy.par_chunks_mut(CHUNK))
                .zip(vz.par_chunks_mut(CHUNK)),
        )
        .with_min_len(2)
        .for_each(|(((x, y), z), ((vx, vy), vz))| {
            #[cfg(target_arch = "x86_64")]
            if vector {
                // SAFETY: the CPU has AVX2 and the grids fit (checked above).
                unsafe { chunk.run_avx2([x, y, z], [vx, vy, vz]) };
                return;
            }
            chunk.run([x, y, z], [vx, vy, vz]);
        });
}

/// What the grid-to-particle loop of one chunk of particles needs.
struct GatherChunk<'a> {
    d: &'a GridDims,
    vel_new: &'a [Vec<f32>; 3],
    delta: &'a [Vec<f32>; 3],
    flip: f32,
    dt: f32,
    lo: [f32; 3],
    hi: [f32; 3],
}

impl GatherChunk<'_> {
    /// The same loop compiled for AVX2 (chosen at run time). Rust never fuses multiplies and
    /// adds on its own, so the results are bit-identical to [`Self::run`]'s.
    ///
    /// Groups of eight particles go through the vector loop of [`super::gather_avx2`] (the
    /// same operations per lane), the rest through [`Self::run`].
    ///
    /// # Safety
    /// The CPU has AVX2 and [`super::gather_avx2::fits`] holds for the grids.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2(&self, pos: [&mut [f32]; 3], vel: [&mut [f32]; 3]) {
        let [x, y, z] = pos;
        let [vx, vy, vz] = vel;
        // SAFETY: AVX2 is enabled here and `fits` holds (the caller's contract).
        let done = unsafe {
            super::gather_avx2::gather_and_advect8(
                self.d,
                self.vel_new,
                self.delta,
                self.flip,
                self.dt,
                self.lo,
                self.hi,
                [&mut *x, &mut *y, &mut *z],
                [&mut *vx, &mut *vy, &mut *vz],
            )
        };
        self.run(
            [&mut x[done..], &mut y[done..], &mut z[done..]],
            [&mut vx[done..], &mut vy[done..], &mut vz[done..]],
        )
    }

    #[inline(always)]
    fn run(&self, pos: [&mut [f32]; 3], vel: [&mut [f32]; 3]) {
        let (d, vel_new, delta) = (self.d, self.vel_new, self.delta);
        let (flip, dt, lo, hi) = (self.flip, self.dt, self.lo, self.hi);
        #[inline(always)]
        fn clamp(p: [f32; 3], lo: [f32; 3], hi: [f32; 3]) -> [f32; 3] {
            [
                p[0].clamp(lo[0], hi[0]),
                p[1].clamp(lo[1], hi[1]),
                p[2].clamp(lo[2], hi[2]),
            ]
        }
        let [x, y, z] = pos;
        let [vx, vy, vz] = vel;
        let n = x.len();
        let (y, z, vx, vy, vz) = (
            &mut y[..n],
            &mut z[..n],
            &mut vx[..n],
            &mut vy[..n],
            &mut vz[..n],
        );
        for i in 0..n {
            let p = [x[i], y[i], z[i]];
            let st = d.stencil(p);
            let vn = d.interp3(&st, vel_new);
            let dv = d.interp3(&st, delta);
            vx[i] = flip * (vx[i] + dv[0]) + (1.0 - flip) * vn[0];
            vy[i] = flip * (vy[i] + dv[1]) + (1.0 - flip) * vn[1];
            vz[i] = flip * (vz[i] + dv[2]) + (1.0 - flip) * vn[2];
            let h = 0.5 * dt;
            let mid = clamp(
                [p[0] + h * vn[0], p[1] + h * vn[1], p[2] + h * vn[2]],
                lo,
                hi,
            );
            let um = d.sample_velocity(vel_new, mid);
            let reflect = super::advect::reflect;
            let q = [
                reflect(p[0] + dt * um[0], lo[0], hi[0], d.open[0]),
                reflect(p[1] + dt * um[1], lo[1], hi[1], d.open[1]),
                reflect(p[2] + dt * um[2], lo[2], hi[2], d.open[2]),
            ];
            (x[i], y[i], z[i]) = (q[0], q[1], q[2]);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Whether the vector paths can be compared here; when not, the skip is reported as
    /// tests/common's `skip` does (stderr and the `SURGE_SKIP_LOG` file that scripts/test.sh
    /// summarises), since a CPU without AVX2 cannot run the comparison, in CI or not.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn has_avx2() -> bool {
        let yes = std::is_x86_feature_detected!("avx2");
        if !yes {
            let line = format!(
                "{}: no AVX2 on this CPU",
                std::thread::current().name().unwrap_or("?")
            );
            eprintln!("SKIPPED {line}");
            if let Some(log) = std::env::var_os("SURGE_SKIP_LOG") {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                    .unwrap();
                f.write_all(format!("{line}\n").as_bytes()).unwrap();
            }
        }
        yes
    }

    /// A small deterministic generator of numbers in [0, 1) (so the tests need no RNG set-up).
    pub(crate) fn uniform(seed: u32) -> impl FnMut() -> f32 {
        let mut x = seed;
        move || {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            (x >> 8) as f32 / (1 << 24) as f32
        }
    }

    /// The small grid of the AVX2 gathers' bit comparisons, with the given open faces.
    pub(crate) fn gather_grid(open: [[bool; 2]; 3]) -> GridDims {
        GridDims {
            n: [9, 7, 11],
            h: 0.05,
            lower: [-0.2, 0.1, 0.3],
            open,
        }
    }

    /// Face values in [-4, 4) on every face grid of `d`.
    pub(crate) fn random_faces(d: &GridDims, rnd: &mut impl FnMut() -> f32) -> [Vec<f32>; 3] {
        std::array::from_fn(|a| (0..d.faces(a)).map(|_| 8.0 * rnd() - 4.0).collect())
    }

    /// `count` positions spread over the domain and a tenth of it beyond each side.
    pub(crate) fn scattered(
        d: &GridDims,
        rnd: &mut impl FnMut() -> f32,
        count: usize,
    ) -> [Vec<f32>; 3] {
        std::array::from_fn(|a| {
            (0..count)
                .map(|_| d.lower[a] + (d.n[a] as f32 * 1.2 * rnd() - 0.1 * d.n[a] as f32) * d.h)
                .collect()
        })
    }

    /// The AVX2 splat (vector stencils and weights for groups of eight, scalar adds in the
    /// scalar order) gives the same accumulator bits as the scalar splat, block by block.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_splat_matches_scalar_bits() {
        if !has_avx2() {
            return;
        }
        let d = GridDims {
            n: [10, 9, 8],
            h: 0.05,
            lower: [0.3, -0.2, 0.0],
            open: [[false; 2]; 3],
        };
        let mut rnd = uniform(7);
        let (lo, hi) = d.interior_bounds(0.01 * d.h);
        let mut p = crate::sim::Particles::default();
        for _ in 0..3000 {
            let pos = std::array::from_fn(|a| lo[a] + (hi[a] - lo[a]) * rnd());
            let vel = std::array::from_fn(|_| 6.0 * rnd() - 3.0);
            p.push(pos, vel);
        }
        // PIC/FLIP, then APIC with random affine matrices (the same particles).
        let mut sums = Vec::new();
        for affine in [false, true] {
            let mut sp = SortedParticles::default();
            sp.affine = affine;
            sp.load(&p, d.cells());
            for c in sp.aff.iter_mut() {
                c.iter_mut().for_each(|x| *x = 40.0 * rnd() - 20.0);
            }
            sp.sort(&d);
            sums.push(splat_both_ways(&d, &sp));
        }
        assert_ne!(sums[0], sums[1], "the affine terms changed nothing");
    }

    /// The accumulators' bits after the scalar splat and after the AVX2 one (asserted equal),
    /// every block in turn.
    #[cfg(target_arch = "x86_64")]
    fn splat_both_ways(d: &GridDims, sp: &SortedParticles) -> Vec<u32> {
        let zero = || -> [Vec<[f32; 2]>; 3] { std::array::from_fn(|a| vec![[0.0; 2]; d.faces(a)]) };
        let (mut acc1, mut acc2) = (zero(), zero());
        for (acc, vector) in [(&mut acc1, false), (&mut acc2, true)] {
            let ap: [SyncPtr<[f32; 2]>; 3] = std::array::from_fn(|a| SyncPtr(acc[a].as_mut_ptr()));
            for bk in 0..d.n[2].div_ceil(2) {
                for bj in 0..d.n[1].div_ceil(2) {
                    let block = SplatBlock {
                        d,
                        sp,
                        ap,
                        j0: 2 * bj,
                        k0: 2 * bk,
                    };
                    // SAFETY: one block at a time; AVX2 checked above.
                    unsafe {
                        if vector {
                            block.run_avx2();
                        } else {
                            block.run();
                        }
                    }
                }
            }
        }
        let bits = |acc: &[Vec<[f32; 2]>; 3]| -> Vec<u32> {
            acc.iter()
                .flatten()
                .flat_map(|c| [c[0].to_bits(), c[1].to_bits()])
                .collect()
        };
        assert_eq!(bits(&acc1), bits(&acc2), "affine: {}", sp.affine);
        // Real work was compared: most faces near the particles got weight.
        let touched = acc1.iter().flatten().filter(|c| c[1] > 0.0).count();
        assert!(touched > 1000, "only {touched} faces got weight");
        bits(&acc1)
    }

    /// The AVX2 path (vector groups of eight plus the scalar remainder) gives the same bits as
    /// the scalar loop, for particles anywhere (inside, on the clamp bounds, outside the
    /// domain, non-finite) and velocities large enough that the RK2 midpoint and end are
    /// clamped.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_path_matches_scalar_bits() {
        if !has_avx2() {
            return;
        }
        let d = gather_grid([[false; 2]; 3]);
        let mut rnd = uniform(11);
        let (vel_new, delta) = (random_faces(&d, &mut rnd), random_faces(&d, &mut rnd));
        let (lo, hi) = d.interior_bounds(0.01 * d.h);
        let count = 8 * 40 + 5;
        let mut pos = scattered(&d, &mut rnd, count);
        pos[0][3] = lo[0];
        pos[1][4] = hi[1];
        pos[2][9] = f32::NAN;
        pos[0][17] = f32::INFINITY;
        let vel: [Vec<f32>; 3] =
            std::array::from_fn(|_| (0..count).map(|_| 20.0 * rnd() - 10.0).collect());
        let chunk = GatherChunk {
            d: &d,
            vel_new: &vel_new,
            delta: &delta,
            flip: 0.95,
            dt: 0.02,
            lo,
            hi,
        };
        let (mut p1, mut v1) = (pos.clone(), vel.clone());
        let (mut p2, mut v2) = (pos.clone(), vel.clone());
        {
            let [x, y, z] = &mut p1;
            let [a, b, c] = &mut v1;
            chunk.run([x, y, z], [a, b, c]);
        }
        {
            let [x, y, z] = &mut p2;
            let [a, b, c] = &mut v2;
            // SAFETY: AVX2 is present (checked above).
            unsafe { chunk.run_avx2([x, y, z], [a, b, c]) };
        }
        let bits =
            |v: &[Vec<f32>; 3]| -> Vec<u32> { v.iter().flatten().map(|x| x.to_bits()).collect() };
        assert_eq!(bits(&p1), bits(&p2), "positions differ");
        assert_eq!(bits(&v1), bits(&v2), "velocities differ");
        // The comparison saw real work: most particles moved and changed velocity.
        let changed = |a: &[Vec<f32>; 3], b: &[Vec<f32>; 3]| {
            (0..count)
                .filter(|&i| (0..3).any(|k| a[k][i] != b[k][i]))
                .count()
        };
        assert!(
            changed(&p1, &pos) > count * 9 / 10,
            "positions barely changed"
        );
        assert!(
            changed(&v1, &vel) > count * 9 / 10,
            "velocities barely changed"
        );
    }
}
