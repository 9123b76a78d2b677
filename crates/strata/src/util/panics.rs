//! Turns a panic into a value: the background threads use it so that a job that panics (an
//! application's merge operator, or an engine bug) ends in the database's error state instead
//! of a dead thread that every writer then waits for; the C API uses it so that no panic
//! unwinds into C. It only catches and describes; deciding what a caught panic means is the
//! caller's business.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The message a panic was raised with (`panic!("...")` payloads are `&str` or `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs `f`; a panic inside it comes back as `Err` with its message. The payload is dropped
/// under a second `catch_unwind`, since a payload's destructor may itself panic.
///
/// `f` is asserted unwind-safe: callers must not go on using state that `f` left half-changed,
/// which is why the engine's callers put the database into its read-only error state.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let message = panic_message(&*payload);
        let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
        message
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_pass_through_and_panics_come_back_with_their_message() {
        assert_eq!(catch_panic(|| 7), Ok(7));
        assert_eq!(catch_panic(|| -> u8 { panic!("static text") }), Err("static text".to_string()));
        let n = 3;
        assert_eq!(catch_panic(|| -> u8 { panic!("formatted {n}") }), Err("formatted 3".to_string()));
        let other = catch_panic(|| -> u8 { std::panic::panic_any(42u32) });
        assert_eq!(other, Err("a panic without a message".to_string()));
    }

    #[test]
    fn a_payload_whose_drop_panics_is_still_contained() {
        struct LoudDrop;
        impl Drop for LoudDrop {
            fn drop(&mut self) {
                panic!("dropping the payload");
            }
        }
        let caught = catch_panic(|| -> u8 { std::panic::panic_any(LoudDrop) });
        assert_eq!(caught, Err("a panic without a message".to_string()));
    }
}
