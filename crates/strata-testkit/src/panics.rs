//! Counts panics in strata's background threads. A panic there does not reach the test thread
//! (the engine catches it and turns it into the database's background error), so without this a
//! flush that panicked under an injected fault could pass for an expected I/O failure. This
//! module only counts; it must not swallow panics.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

static PANICS: AtomicUsize = AtomicUsize::new(0);
static INSTALL: Once = Once::new();

/// Installs (once per process) a panic hook that counts panics in threads named `strata-*`,
/// then runs the previous hook so the message is still printed.
pub fn watch_background_panics() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let engine_thread = std::thread::current().name().is_some_and(|n| n.starts_with("strata-"));
            if engine_thread {
                PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
}

/// Panics counted in strata's threads since the process started.
pub fn background_panics() -> usize {
    PANICS.load(Ordering::SeqCst)
}
