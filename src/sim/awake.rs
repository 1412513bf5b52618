//! Keeping the rayon pool's workers awake while a frame runs (see [`with_workers_awake`]).

/// Runs `work` on the current rayon worker while the pool's other workers stay awake.
///
/// A substep is a chain of short parallel loops (tens of microseconds each on small scenes)
/// with serial stretches between them (the sort's scan, the pressure solve's triangular
/// solves). A rayon worker that finds no work for a few tens of microseconds goes to sleep,
/// and waking it costs about as much as such a loop: measured here, a parallel loop of 2 x 10
/// us took 12 us with the other worker awake and 33-36 us after a serial gap of 20 us or more.
/// So each other worker runs a helper that keeps taking the pool's jobs (`rayon::yield_now`)
/// and spins between them until `work` returns. Results do not change (every parallel loop is
/// thread-independent); the cost is that the other cores spin during serial stretches.
pub fn with_workers_awake<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    let helpers = rayon::current_num_threads().saturating_sub(1);
    if helpers == 0 {
        return work();
    }
    let done = AtomicBool::new(false);
    let me = rayon::current_thread_index();
    rayon::scope(|s| {
        for _ in 0..helpers {
            s.spawn(|_| {
                // The calling worker itself may pick a helper up while it waits for a stolen
                // job: it must return at once (it is the one that ends the work).
                if rayon::current_thread_index() == me {
                    return;
                }
                let mut idle = 0u32;
                while !done.load(Ordering::Acquire) {
                    if rayon::yield_now() == Some(rayon::Yield::Executed) {
                        idle = 0;
                        continue;
                    }
                    for _ in 0..16 {
                        std::hint::spin_loop();
                    }
                    idle += 1;
                    // Now and then let the OS run another thread on this core (the output
                    // writer, or the stepper itself when the pool has more threads than the
                    // machine has cores); with nothing else to run this returns at once.
                    if idle.is_multiple_of(64) {
                        std::thread::yield_now();
                    }
                }
            });
        }
        // Set when `work` returns or unwinds: a panic in it must end the helpers' loops (or
        // the scope would wait for them for ever: a hung process instead of an error).
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let _done = Done(&done);
        work()
    })
}

#[cfg(test)]
mod tests {
    use super::with_workers_awake;

    /// A panic in the work comes back out of [`with_workers_awake`] (and so out of the
    /// stepper, a clear failure) instead of leaving the helpers spinning and the scope waiting
    /// for them for ever: found by fuzzing a scene (an emitter keyframed 1e30 m away overflowed
    /// its lattice range in a substep, and the run hung, deaf to SIGTERM).
    #[test]
    fn a_panic_in_the_work_ends_the_helpers() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| with_workers_awake(|| -> u32 { panic!("a panic in the work") }))
            }));
            tx.send(r.is_err()).unwrap();
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(20));
        assert_eq!(got, Ok(true), "the panic did not come back out within 20 s");
    }
}
