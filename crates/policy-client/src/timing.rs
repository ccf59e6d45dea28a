//! Saturating time arithmetic, the only way this crate adds durations to instants or scales them.
//!
//! Durations come from servers (`Retry-After: 18446744073709551615`) and from callers
//! (`FetchOptions` with `Duration::MAX`); `Instant + Duration` and `Duration * n` panic on
//! overflow, so every deadline, backoff and wait is computed here and saturates instead.

use std::time::Duration;

use tokio::time::Instant;

/// Later than any wait this crate honours (about 30 years): a deadline this far away is as good as
/// none, and adding it to a monotonic clock reading cannot overflow.
pub(crate) const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// `start + wait`, capped at [`FAR_FUTURE`] after `start`.
pub(crate) fn instant_after(start: Instant, wait: Duration) -> Instant {
    let wait = wait.min(FAR_FUTURE);
    // A monotonic clock never comes near the end of its range; should it, `start` is the one
    // instant that is surely representable.
    start.checked_add(wait).unwrap_or(start)
}

/// The backoff before retry `attempt` (1-based): `base * 2^(attempt - 1)`, saturating.
pub(crate) fn backoff(base: Duration, attempt: u32) -> Duration {
    let factor = 2u32
        .checked_pow(attempt.saturating_sub(1))
        .unwrap_or(u32::MAX);
    base.saturating_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_saturates() {
        let base = Duration::from_secs(1);
        assert_eq!(backoff(base, 1), Duration::from_secs(1));
        assert_eq!(backoff(base, 2), Duration::from_secs(2));
        assert_eq!(backoff(base, 3), Duration::from_secs(4));
        assert_eq!(backoff(base, 0), Duration::from_secs(1));
        assert_eq!(backoff(base, 40), Duration::from_secs(u64::from(u32::MAX)));
        assert_eq!(backoff(Duration::MAX, 2), Duration::MAX);
    }

    #[tokio::test]
    async fn instants_saturate_far_in_the_future() {
        let now = Instant::now();
        assert_eq!(
            instant_after(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert_eq!(instant_after(now, Duration::MAX), now + FAR_FUTURE);
        assert_eq!(
            instant_after(now, Duration::from_secs(u64::MAX)),
            now + FAR_FUTURE
        );
    }
}
