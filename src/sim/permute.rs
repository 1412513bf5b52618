//! Permuting the particle arrays (the cell sort's gathers and the frame end's scatter back to
//! creation order, [`super::cell_sort`]): two arrays per pass, so that the permutation's index
//! array is read once for both. A pass streams the index array and the destination arrays and
//! reads (gather) or writes (scatter) the sources through the index: on 1M particles it is
//! bound by memory traffic more than by instructions. Sharing the index array's read between
//! two arrays (and reading the sources without bounds checks) cut the cell sort's instructions
//! by 27.5% (1,507M -> 1,092M) and the frame end's scatter by 37% (249M -> 157M) over the first
//! three frames of the 1M-particle dam break (`RAYON_NUM_THREADS=1 BENCH_SKIP_TUTORIAL=1
//! BENCH_DAM_PEER=0 BENCH_COMPARE_PRECONDITIONERS=0 BENCH_DAM_FRAMES=3 valgrind
//! --tool=callgrind` on `bench_stepper`, session 12, against the code before). The second
//! array's scratch is the sort's key array, free at that point, used as `f32` bits
//! ([`bits_f32`]).

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
