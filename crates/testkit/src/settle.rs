//! Bounded waiting until a router's stats reach a state. It knows the stats only as a value
//! to test, not what any field means.

use std::time::Duration;

use flysim_bus::{Router, RouterStats};

/// Waits (at most 400 polls, 5 ms apart) until the router's stats satisfy `pred`, and returns
/// the last stats seen, satisfying or not.
pub async fn settle(router: &Router, pred: impl Fn(&RouterStats) -> bool) -> RouterStats {
    for _ in 0..400 {
        let s = router.stats();
        if pred(&s) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    router.stats()
}
