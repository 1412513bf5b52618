//! Where a row's neighbour rows are in the level's layout (`layout.rs`): the rows of a z-plane
//! follow each other at its row length, the planes start where their own rows do, so a row's
//! starts and its z-neighbours' are computed per plane ([`Planes`]) and the other colour's
//! neighbour rows of its cells once per row ([`Nb`]), outside the chunk loops.

use super::Sweep;

/// The virtual starts of a row and of the rows below and above it along z, and the row
/// length of its plane (`layout.rs`).
pub(super) type Starts = ([usize; 3], usize);

/// The virtual starts of row `j = 0` of a z-plane and of the planes below and above it (`b`),
/// and their row lengths (`h`): row `j`'s [`Starts`] are `b + j h` (`layout.rs`), computed
/// per plane rather than read per row (a row's loop is a few vector chunks).
#[derive(Clone, Copy)]
pub(in super::super) struct Planes {
    b: [usize; 3],
    h: [usize; 3],
}

impl Planes {
    #[inline(always)]
    pub(super) fn row(&self, j: usize) -> Starts {
        let (b, h) = (self.b, self.h);
        ([b[0] + j * h[0], b[1] + j * h[1], b[2] + j * h[2]], h[0])
    }
}

/// Where the six neighbours (all of the other colour) of the cells of one colour and natural
/// parity `e` (cells `2m + e`) of a row are: the entries of compact `m = 0` of the other
/// colour's rows (virtual starts, `layout.rs`), so that cell `m`'s neighbours are at `x + m`
/// and `x + m + 1` (along x), `ym + m`, `yp + m`, `zm + m`, `zp + m`. Per row, so that a
/// chunk's loads are these bases plus the chunk's index.
#[derive(Clone, Copy)]
pub(super) struct Nb {
    pub x: usize,
    pub ym: usize,
    pub yp: usize,
    pub zm: usize,
    pub zp: usize,
}

impl Sweep<'_> {
    /// The row starts of z-plane `k` and the planes below and above it ([`Planes`]).
    #[inline(always)]
    pub(in super::super) fn planes(&self, k: usize) -> Planes {
        let (ny, nz) = (self.n[1], self.n[2]);
        let at = |k: usize| (self.rs[ny * k], self.ph[k]);
        let c = at(k);
        let m = if k > 0 { at(k - 1) } else { c };
        let p = if k + 1 < nz { at(k + 1) } else { c };
        Planes {
            b: [c.0, m.0, p.0],
            h: [c.1, m.1, p.1],
        }
    }

    /// The neighbours ([`Nb`]) in colour `oth`'s rows of the cells of natural parity `e` of the
    /// row whose [`Starts`] are `(st, h)`.
    #[inline(always)]
    pub(super) fn nb(&self, oth: usize, (st, h): Starts, e: usize) -> Nb {
        let oh = self.base(oth);
        let o = oh + st[0];
        Nb {
            x: o + e - 1,
            ym: o - h,
            yp: o + h,
            zm: oh + st[1],
            zp: oh + st[2],
        }
    }
}
