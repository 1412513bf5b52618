//! Permuting the particle arrays (the cell sort's gathers and the frame end's scatter back to
//! creation order, [`super::cell_sort`]): two arrays per pass, so that the permutation's index
//! array is read once for both. A pass streams the index array and the destination arrays and
//! reads (gather) or writes (scatter) the sources through the index: on 1M particles it is
//! bound by memory traffic more than by instructions, so sharing the index array's read
//! between two arrays (and reading the sources without bounds checks) cut the cell sort from
//! 18.5 ms to 16.0 ms and the frame end's scatter from 9.6 ms to 8.1 ms (one thread, the best
//! of five interleaved runs of the fastest of 30, on a 2-core machine shared with other jobs:
//! this module's timing test, `T=1 cargo test --release --lib permute -- --ignored
//! --nocapture`, on the code before and after, session 12). The second array's scratch is the
//! sort's key array, free at that point, used as `f32` bits ([`bits_f32`]).

use super::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Slots per task of a gather or scatter.
const CHUNK: usize = 16 * 1024;

/// `out[s] = v[src[s]]` for every slot `s` of `src`, in parallel.
///
/// # Safety
/// Every entry of `src` is below `v.len()`.
pub(super) unsafe fn gather1<T: Copy + Send + Sync>(src: &[u32], out: &mut [T], v: &[T]) {
    assert_eq!(out.len(), src.len(), "gather: lengths differ");
    out.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(o, s)| {
            for (o, &s) in o.iter_mut().zip(s) {
                // SAFETY: `src`'s entries are below `v.len()` (the caller's contract).
                *o = unsafe { *v.get_unchecked(s as usize) };
            }
        });
}

/// [`gather1`] of two arrays in one pass over `src`: `oa[s] = va[src[s]]`, `ob[s] = vb[src[s]]`.
///
/// # Safety
/// Every entry of `src` is below `va.len()` and `vb.len()`.
pub(super) unsafe fn gather2<A: Copy + Send + Sync, B: Copy + Send + Sync>(
    src: &[u32],
    (oa, ob): (&mut [A], &mut [B]),
    (va, vb): (&[A], &[B]),
) {
    let n = src.len();
    assert!(oa.len() == n && ob.len() == n, "gather: lengths differ");
    oa.par_chunks_mut(CHUNK)
        .zip(ob.par_chunks_mut(CHUNK))
        .zip(src.par_chunks(CHUNK))
        .for_each(|((oa, ob), s)| {
            for ((a, b), &s) in oa.iter_mut().zip(ob.iter_mut()).zip(s) {
                // SAFETY: as in `gather1`.
                unsafe {
                    *a = *va.get_unchecked(s as usize);
                    *b = *vb.get_unchecked(s as usize);
                }
            }
        });
}

/// `out[k][dest[s]] = v[k][s]` for every slot `s` and each of the `K` arrays, in parallel.
///
/// # Safety
/// `dest` is a permutation of `0..dest.len()`.
pub(super) unsafe fn scatter<const K: usize>(dest: &[u32], v: [&[f32]; K], out: [&mut [f32]; K]) {
    let n = dest.len();
    assert!(
        v.iter().all(|v| v.len() == n) && out.iter().all(|o| o.len() == n),
        "scatter: lengths differ"
    );
    let out = out.map(|o| SyncPtr(o.as_mut_ptr()));
    dest.par_chunks(CHUNK).enumerate().for_each(|(c, d)| {
        let s0 = c * CHUNK;
        for (i, &t) in d.iter().enumerate() {
            for k in 0..K {
                // SAFETY: `dest` is a permutation of 0..n (the caller's contract), so no
                // two slots write one entry; `v[k]` holds n values (asserted above).
                unsafe { *out[k].get(t as usize) = *v[k].get_unchecked(s0 + i) };
            }
        }
    });
}

/// A `u32` array's buffer as an `f32` array (the bits kept), without a copy.
pub(super) fn bits_f32(v: Vec<u32>) -> Vec<f32> {
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: `u32` and `f32` have the same size and alignment (so the allocation's layout is
    // the same) and every bit pattern is a valid value of both.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut f32, v.len(), v.capacity()) }
}

/// The inverse of [`bits_f32`].
pub(super) fn bits_u32(v: Vec<f32>) -> Vec<u32> {
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: as in `bits_f32`.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut u32, v.len(), v.capacity()) }
}

#[cfg(test)]
mod tests {
    use crate::sim::cell_sort::SortedParticles;
    use crate::sim::mac_grid::GridDims;

    /// Timing, not a check (ignored): the cell sort and the frame end's scatter of 1.02M
    /// particles (8 per cell in a 160 x 40 x 20-cell pool of the 1M dam break's grid), sorted,
    /// then each moved by up to 0.4 cell per axis (a substep's motion), the fastest of 30, on
    /// `T` threads (default 1): `T=1 cargo test --release --lib permute -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore]
    fn time_sort_and_store() {
        let d = GridDims {
            n: [162, 42, 98],
            h: 0.0125,
            lower: [0.0; 3],
            open: [[false; 2]; 3],
        };
        let mut seed = 99u64;
        let mut rnd = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut p = crate::particles::Particles::default();
        for k in 1..21 {
            for j in 1..41 {
                for i in 1..161 {
                    for _ in 0..8 {
                        let c = [i, j, k].map(|x| x as f32);
                        p.push([0, 1, 2].map(|a| (c[a] + rnd()) * d.h), [rnd(); 3]);
                    }
                }
            }
        }
        let mut sp = SortedParticles::default();
        sp.load(&p, d.cells());
        sp.sort(&d);
        for a in 0..3 {
            for x in sp.pos[a].iter_mut() {
                *x += (rnd() - 0.5) * 0.8 * d.h;
            }
        }
        let threads = std::env::var("T").ok().and_then(|s| s.parse().ok());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.unwrap_or(1))
            .build()
            .unwrap();
        let (pos, vel, ids) = (sp.pos.clone(), sp.vel.clone(), sp.ids.clone());
        let (mut sort, mut store) = (f64::MAX, f64::MAX);
        let mut out = crate::particles::Particles::default();
        for _ in 0..30 {
            (sp.pos, sp.vel, sp.ids) = (pos.clone(), vel.clone(), ids.clone());
            pool.install(|| {
                let t = std::time::Instant::now();
                sp.sort(&d);
                sort = sort.min(t.elapsed().as_secs_f64());
                let t = std::time::Instant::now();
                sp.store_into(&mut out, None);
                store = store.min(t.elapsed().as_secs_f64());
            });
        }
        assert_eq!(out.pos[0].len(), pos[0].len());
        eprintln!(
            "{} particles, {} threads: sort {:.3} ms, store {:.3} ms",
            out.pos[0].len(),
            pool.current_num_threads(),
            sort * 1e3,
            store * 1e3
        );
    }
}
