//! The `surge` binary's memory allocator: the system allocator, asking Linux for transparent
//! huge pages (`madvise(MADV_HUGEPAGE)`) on the whole 2 MiB pages inside each allocation of at
//! least [`MIN_HUGE`] bytes.
//!
//! Why: the surface stage of a million particles reads its big arrays (positions and
//! velocities through the binning's permutation, kernels, the sampled grid) in scattered
//! order, and fills fresh ones of tens of MB; with 4 KiB pages most scattered reads miss the
//! TLB, and every page costs a page fault on first touch. Distributions ship
//! `transparent_hugepage` as `madvise`, so the process must ask. This is what glibc's
//! `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` does for its mmapped chunks, done in the process so
//! that no environment is needed. Measured (session 9, a 2-core machine shared with other
//! jobs, `RAYON_NUM_THREADS=2 surge mesh RUN --frames 20 -q` on frame 20 of the 1M-particle dam
//! break of `scripts/bench_surface.sh --dam-break`, user + system CPU under `/usr/bin/time`,
//! eight rounds alternating with the binary before): median 0.925 -> 0.855 s and 0.850 ->
//! 0.795 s in two series; same PLY bytes. Only the memory's backing changes, never a value.
//! Elsewhere (or where the kernel says no) the advice is a no-op.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations from this size on are advised (a smaller one spans at most one huge page).
pub const MIN_HUGE: usize = 4 << 20;
/// The huge page size of x86-64 and most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// [`System`] with huge pages advised on large allocations (see the module docs).
pub struct HugePages;

#[cfg(target_os = "linux")]
fn advise(p: *mut u8, size: usize) {
    const MADV_HUGEPAGE: i32 = 14;
    unsafe extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    if p.is_null() || size < MIN_HUGE {
        return;
    }
    let start = (p as usize).next_multiple_of(HUGE_PAGE);
    let end = (p as usize + size) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside the allocation just made, which is mapped; the
        // advice changes how pages are backed, never their contents. Failure is harmless.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_p: *mut u8, _size: usize) {}

// SAFETY: every call is forwarded to `System` unchanged; `advise` only adds a hint.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}
