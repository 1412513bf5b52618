//! Where a segment's neighbour rows are in the level's layout (`layout.rs`): each row stores
//! its own ranges, so a segment's row and its four neighbour rows' virtual starts in the range
//! that holds it are kept per segment (`segments.rs`), and the other colour's neighbours of its
//! cells are computed from them once per segment ([`Nb`]), outside the chunk loops.

use super::Sweep;

/// Where the six neighbours (all of the other colour) of the cells of one colour and natural
/// parity `e` (cells `2m + e`) of a segment are: the entries of compact `m = 0` of the other
/// colour's rows (virtual starts, `layout.rs`), so that cell `m`'s neighbours are at `x + m`
/// and `x + m + 1` (along x), `ym + m`, `yp + m`, `zm + m`, `zp + m`. Per segment, so that a
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
    /// The neighbours ([`Nb`]) in colour `oth`'s rows of the cells of natural parity `e` of a
    /// segment whose row's and neighbour rows' virtual starts are `st` (the row, `row - 1`,
    /// `row + 1`, `row - ny`, `row + ny`: `segments.rs`).
    #[inline(always)]
    pub(super) fn nb(&self, oth: usize, st: &[usize; 5], e: usize) -> Nb {
        let oh = self.base(oth);
        Nb {
            x: oh + st[0] + e - 1,
            ym: oh + st[1],
            yp: oh + st[2],
            zm: oh + st[3],
            zp: oh + st[4],
        }
    }
}
