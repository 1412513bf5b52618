//! A raw pointer shared by parallel tasks that write disjoint parts of one array.
//!
//! Several stages split an array among rayon tasks along boundaries that are not contiguous
//! chunks (cell rows of a face grid, the rows of a pressure block, the slots of a z-plane's
//! particles), so safe slice splitting does not express them. Each use states why its tasks'
//! index sets are disjoint.

/// A pointer to the first element of an array that tasks running at the same time write at
/// disjoint indices.
pub(crate) struct SyncPtr<T>(pub(crate) *mut T);

impl<T> Clone for SyncPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SyncPtr<T> {}
// SAFETY: every use writes disjoint indices from concurrently running tasks (see each use).
unsafe impl<T> Send for SyncPtr<T> {}
unsafe impl<T> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// Pointer to element `i`.
    ///
    /// # Safety
    /// `i` is in bounds of the array, and no other task accesses element `i` while the
    /// returned pointer is used.
    #[inline(always)]
    pub(crate) unsafe fn get(self, i: usize) -> *mut T {
        unsafe { self.0.add(i) }
    }
}
