//! Re-dimensioning a level for a new window of the simulation grid (`window.rs`) inside the
//! buffers [`Level::new`] allocated for the whole grid: the old layout's values are zeroed
//! where they can be non-zero, then the lengths are set without writing.

use super::level::{Level, PAD, SOLID, row_entries};

impl Level {
    /// Gives this level `n` cells per axis, in the buffers it has (each at most as long as
    /// [`Level::new`] made them for the domain: no allocation). Every entry of `u`, `b`, `r`
    /// and the diagonals is 0 afterwards, up to the whole buffer (the rows with a span are
    /// zeroed in the old layout first: nothing else is ever written) and the spans are empty, as after
    /// [`Level::new`]; the labels and weights are left for the set-up to write.
    pub fn redim(&mut self, n: [usize; 3]) {
        if n == self.n {
            return;
        }
        let (lay, seg, vectors, count) = self.vectors();
        lay.zero(vectors.map(|v| &mut v[..]), Some(&mut count[..]), seg, true);
        let h = row_entries(n[0]);
        // An empty layout (no row stored) until the set-up plans one for its spans.
        self.lay.clear(n, h);
        let half = self.lay.half;
        let cells = n[0] * n[1] * n[2];
        // Lengths set without writing: a written page of a buffer is resident from then on, and
        // a window's rows without liquid need not be (the whole grid's layout never wrote
        // them either: `resize` here made the 8M dam break's peak 7 bytes per particle larger).
        let alloc = self.alloc;
        let (_, _, vectors, count) = self.vectors();
        for v in vectors {
            fit(v, 2 * half + h, alloc[0]);
        }
        fit(count, 2 * half + h, alloc[0]);
        for w in &mut self.w {
            fit(w, cells + 2 * PAD, alloc[1]);
        }
        assert!(cells <= self.label.capacity() && n[1] * n[2] <= self.spans.capacity());
        self.label.truncate(cells);
        self.label.resize(cells, SOLID);
        self.spans.clear();
        self.spans.resize(n[1] * n[2], [0, 0]);
        self.seg.clear(n[1] * n[2]);
        self.n = n;
        self.h = h;
        self.groups = [(0, 0, 0); 4];
    }

    /// The layout, the segments, the five `f32` vectors stored by colour (`u`, `b`, `r`, the
    /// inverse diagonal and the diagonal) and the open-face counts, stored the same way.
    fn vectors(
        &mut self,
    ) -> (
        &super::layout::Layout,
        &super::segments::Segments,
        [&mut Vec<f32>; 5],
        &mut Vec<u8>,
    ) {
        let v = [
            &mut self.u,
            &mut self.b,
            &mut self.r,
            &mut self.invd,
            &mut self.diag,
        ];
        (&self.lay, &self.seg, v, &mut self.count)
    }
}

/// Sets `v`'s length to `len` without writing (`Vec::set_len`) within the `alloc` entries
/// [`Level::new`] initialised: a written page of a buffer is resident from then on, and a
/// window's rows without liquid need not be.
pub(super) fn fit<T: Copy>(v: &mut Vec<T>, len: usize, alloc: usize) {
    assert!(
        len <= alloc && alloc <= v.capacity(),
        "multigrid: a window too large"
    );
    // SAFETY: `Level::new` initialised `alloc` entries (its length then; a shorter length
    // since keeps their values), and the entries of `u`, `b`, `r`, the diagonals and the
    // counts are all 0 (zeroed by `redim` first, or never written); the buffers hold plain
    // numbers (`f32`, `u8`), for which any bits are a value.
    unsafe { v.set_len(len) };
}
