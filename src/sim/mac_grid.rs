//! The staggered (MAC) grid: cell labels and face velocities in flat arrays.
//!
//! Harlow & Welch (1965), "Numerical calculation of time-dependent viscous incompressible flow of
//! fluid with free surface", Phys. Fluids 8; Bridson, *Fluid Simulation for Computer Graphics*
//! (2nd ed., 2015), ch. 2.
//!
//! Conventions (`h` = cell size, `l` = lower corner, `n = [nx, ny, nz]` cells):
//! - Cell `(i, j, k)` spans `l + [i, i+1] x [j, j+1] x [k, k+1] * h`; its flat index is
//!   `i + nx * (j + ny * k)` (x fastest, z slowest). Pressure lives at cell centres.
//! - Face velocity component `a` lives on the faces normal to axis `a`: `u` (a = 0) at
//!   `(i, j+1/2, k+1/2) * h`, `v` at `(i+1/2, j, k+1/2) * h`, `w` at `(i+1/2, j+1/2, k) * h`.
//!   Component `a`'s grid has `n + e_a` nodes (one more along its own axis), flat index
//!   `i + (nx_a) * (j + ny_a * k)`. Face `i` of `u` lies between cells `i-1` and `i`.
//! - The outermost layer of cells is solid wall; liquid lives strictly inside it.
//! - All grids are stored plane by plane along z, so a k-plane is a contiguous slice: every
//!   parallel stage works on whole planes and is therefore deterministic.

/// What a cell holds this substep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CellLabel {
    /// No particle.
    Empty = 0,
    /// At least one particle.
    Fluid = 1,
    /// Wall (the outermost cell layer).
    Solid = 2,
}

/// `labels` as their bytes (`CellLabel` is `repr(u8)`), for byte-wise scans such as the
/// pressure system's `fluid_span`.
pub fn label_bytes(labels: &[CellLabel]) -> &[u8] {
    // SAFETY: `CellLabel` is `repr(u8)`: every label is one initialised byte.
    unsafe { std::slice::from_raw_parts(labels.as_ptr().cast::<u8>(), labels.len()) }
}

/// Geometry of the grid: sizes and index arithmetic (no data).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridDims {
    /// Cells per axis.
    pub n: [usize; 3],
    /// Cell size, m.
    pub h: f32,
    /// Lower corner, m.
    pub lower: [f32; 3],
    /// Open faces (`[axis][0 lower, 1 upper]`): liquid leaves through them, so the advection
    /// stops a particle there (to be removed) instead of mirroring it back off a wall.
    pub open: [[bool; 2]; 3],
}

impl GridDims {
    /// Dimensions of a scene's grid.
    pub fn new(domain: &crate::geometry::Domain) -> Self {
        Self {
            n: domain.resolution.map(|r| r as usize),
            h: domain.cell_size as f32,
            lower: domain.lower.map(|l| l as f32),
            open: domain.boundaries.open(),
        }
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }

    /// Flat index of cell `(i, j, k)`.
    #[inline]
    pub fn cell(&self, i: usize, j: usize, k: usize) -> usize {
        i + self.n[0] * (j + self.n[1] * k)
    }

    /// Node counts of face component `a`'s grid.
    #[inline]
    pub fn face_n(&self, a: usize) -> [usize; 3] {
        let mut m = self.n;
        m[a] += 1;
        m
    }

    /// Number of faces of component `a`.
    pub fn faces(&self, a: usize) -> usize {
        let m = self.face_n(a);
        m[0] * m[1] * m[2]
    }

    /// Offset, in cells, of component `a`'s nodes from the lower corner: 0 along `a`, 1/2 across.
    #[inline]
    pub fn face_offset(a: usize) -> [f32; 3] {
        let mut o = [0.5; 3];
        o[a] = 0.0;
        o
    }

    /// True when cell `(i, j, k)` is in the wall layer.
    #[inline]
    pub fn is_wall_cell(&self, i: usize, j: usize, k: usize) -> bool {
        i == 0 || j == 0 || k == 0 || i + 1 == self.n[0] || j + 1 == self.n[1] || k + 1 == self.n[2]
    }

    /// True when a face of component `a` with index `i` along axis `a` lies on the inner side
    /// of the domain's wall layer (between the wall cell 0 and cell 1, or cells `n - 2` and
    /// `n - 1`).
    #[inline]
    pub fn is_domain_wall_face(&self, a: usize, i: usize) -> bool {
        i == 1 || i + 1 == self.n[a]
    }

    /// `keep(ijk, f, c)` of every face of component `a` between two cells of the grid (`ijk`
    /// its node, `f` its index on the component's grid, `c` the cell above it, the one below
    /// being `c` less the cell step along `a`), in face order: what a run finds once about
    /// the faces near static solids (`solids::wall_faces`, `thin_walls`). Parallel by rows.
    pub fn list_faces<T: Send>(
        &self,
        a: usize,
        keep: impl Fn([usize; 3], usize, usize) -> Option<T> + Sync,
    ) -> Vec<T> {
        use rayon::prelude::*;
        let (n, m) = (self.n, self.face_n(a));
        (0..m[1] * m[2])
            .into_par_iter()
            .flat_map_iter(|row| {
                let (j, k) = (row % m[1], row / m[1]);
                let keep = &keep;
                (0..m[0]).filter_map(move |i| {
                    let ijk = [i, j, k];
                    if ijk[a] == 0 || ijk[a] >= n[a] {
                        return None;
                    }
                    keep(ijk, i + m[0] * row, i + n[0] * (j + n[1] * k))
                })
            })
            .collect()
    }

    /// Lowest and highest coordinate a particle may take along each axis: `margin` inside the
    /// wall layer.
    pub fn interior_bounds(&self, margin: f32) -> ([f32; 3], [f32; 3]) {
        let lo = std::array::from_fn(|a| self.lower[a] + self.h + margin);
        let hi = std::array::from_fn(|a| self.lower[a] + (self.n[a] - 1) as f32 * self.h - margin);
        (lo, hi)
    }

    /// Cell containing `p` (clamped to the grid).
    #[inline]
    pub fn cell_of(&self, p: [f32; 3]) -> usize {
        let c = self.cell_ijk(p);
        self.cell(c[0], c[1], c[2])
    }

    /// `[i, j, k]` of the cell containing `p` (clamped to the grid).
    #[inline]
    pub fn cell_ijk(&self, p: [f32; 3]) -> [usize; 3] {
        let inv = 1.0 / self.h;
        std::array::from_fn(|a| {
            // Saturating float-to-int cast: negative (and NaN) give 0, i.e. floor after clamping.
            let g = ((p[a] - self.lower[a]) * inv) as usize;
            g.min(self.n[a] - 1)
        })
    }

    /// Interpolation weights of point `p` on all three face grids (clamped into the grid).
    #[inline(always)]
    pub fn stencil(&self, p: [f32; 3]) -> Stencil {
        let inv = 1.0 / self.h;
        let mut own = [(0usize, 0f32); 3];
        let mut across = [(0usize, 0f32); 3];
        for b in 0..3 {
            let g = (p[b] - self.lower[b]) * inv;
            let n = self.n[b];
            // Along its own axis a component has n + 1 nodes at offset 0; across, n nodes at
            // offset 1/2. `max` first maps NaN to 0, so both are finite and in range, and the
            // unchecked conversion (no saturation fix-ups) is sound.
            let go = g.max(0.0).min(n as f32 - 1e-3);
            let ga = (g - 0.5).max(0.0).min(n as f32 - 1.0 - 1e-3);
            // SAFETY: 0 <= go < n and 0 <= ga < n - 1, both far below i32::MAX.
            let (io, ia) = unsafe {
                (
                    go.to_int_unchecked::<i32>() as usize,
                    ga.to_int_unchecked::<i32>() as usize,
                )
            };
            own[b] = (io, go - io as f32);
            across[b] = (ia, ga - ia as f32);
        }
        let mut st = Stencil {
            base: [0; 3],
            frac: [[0.0; 3]; 3],
        };
        for a in 0..3 {
            let m = self.face_n(a);
            let mut idx = [0usize; 3];
            for b in 0..3 {
                let (i, f) = if a == b { own[b] } else { across[b] };
                idx[b] = i;
                st.frac[a][b] = f;
            }
            st.base[a] = idx[0] + m[0] * (idx[1] + m[1] * idx[2]);
        }
        st
    }

    /// Trilinear interpolation of face component `a` (values `f`) with stencil `st`.
    ///
    /// Panics if `f` is shorter than component `a`'s grid.
    #[inline(always)]
    pub fn interp(&self, st: &Stencil, a: usize, f: &[f32]) -> f32 {
        let m = self.face_n(a);
        let (sy, sz) = (m[0], m[0] * m[1]);
        let b = st.base[a];
        // The stencil clamps every index to the grid, so the farthest node is in bounds.
        assert!(b + sz + sy + 1 < f.len().max(1));
        let [fx, fy, fz] = st.frac[a];
        // SAFETY: every index is at most b + sz + sy + 1, checked above.
        let g = |i: usize| unsafe { *f.get_unchecked(i) };
        let lerp = |a0: f32, a1: f32, t: f32| a0 + (a1 - a0) * t;
        let c00 = lerp(g(b), g(b + 1), fx);
        let c10 = lerp(g(b + sy), g(b + sy + 1), fx);
        let c01 = lerp(g(b + sz), g(b + sz + 1), fx);
        let c11 = lerp(g(b + sz + sy), g(b + sz + sy + 1), fx);
        lerp(lerp(c00, c10, fy), lerp(c01, c11, fy), fz)
    }

    /// Trilinear interpolation of face component `a` (values `f`) at `p`.
    #[inline]
    pub fn sample(&self, a: usize, f: &[f32], p: [f32; 3]) -> f32 {
        self.interp(&self.stencil(p), a, f)
    }

    /// All three components of a face-grid vector field (`f[a]` component `a`) with `st`.
    #[inline(always)]
    pub fn interp3(&self, st: &Stencil, f: &[Vec<f32>; 3]) -> [f32; 3] {
        [
            self.interp(st, 0, &f[0]),
            self.interp(st, 1, &f[1]),
            self.interp(st, 2, &f[2]),
        ]
    }

    /// Velocity at `p` from the three face grids.
    #[inline(always)]
    pub fn sample_velocity(&self, vel: &[Vec<f32>; 3], p: [f32; 3]) -> [f32; 3] {
        self.interp3(&self.stencil(p), vel)
    }
}

/// Where a point falls on the three face grids: per component, the flat index of the lower
/// corner node and the fractions along x, y, z.
#[derive(Debug, Clone, Copy)]
pub struct Stencil {
    /// Flat index of the lower corner node, per component.
    pub base: [usize; 3],
    /// Fractions `[fx, fy, fz]` in [0, 1), per component.
    pub frac: [[f32; 3]; 3],
}

/// How a face takes part in the pressure projection and extrapolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FaceKind {
    /// Between two non-solid cells, at least one fluid: set by the projection.
    Fluid = 0,
    /// Exactly one side solid: a wall face, normal velocity zero.
    Wall = 1,
    /// Anything else (both sides empty, or both solid): filled by extrapolation.
    Free = 2,
}

/// Variational solid boundaries for one projection (Batty, Bertails and Bridson 2007): the
/// open fraction of every face (`open[a]` on face component `a`'s grid, in [0, 1]) and the
/// solids' velocity component on every face (0 for static ones). Without obstacles the
/// projection takes none (only the domain's walls).
#[derive(Clone, Copy)]
pub struct SolidFaces<'a> {
    pub open: &'a [Vec<f32>; 3],
    pub velocity: &'a [Vec<f32>; 3],
}
