//! A fixed ring of time buckets: "counts over the last windowMs" in constant
//! memory, shared by the retry budget and the breaker.
//!
//! Why buckets and not a list of timestamps: a list grows with traffic, and a
//! storm is exactly when it would. Ten buckets cost the same at one call a
//! minute and at ten thousand a second; the price is a window that slides in
//! steps of `windowMs / 10`.
//!
//! Bucket `k` covers `[k * w, (k + 1) * w)` of the caller's clock, with
//! `w = windowMs / 10`. A reading earlier than the newest one written is
//! taken as the newest (the clock never runs backwards in here); a jump far
//! forward simply finds every bucket stale.

pub(crate) const BUCKETS: usize = 10;

/// Bucket numbers are clamped to +-2^53 so the float-to-int cast is exact.
const LIMIT: f64 = 9_007_199_254_740_992.0;

#[derive(Debug, Clone)]
pub(crate) struct Ring<T> {
    width_ms: f64,
    /// Newest bucket written.
    latest: i64,
    /// `(bucket number, counts)`; a slot whose number is not current is stale.
    slots: [Option<(i64, T)>; BUCKETS],
}

impl<T: Copy + Default> Ring<T> {
    /// A window under 1 ms (or NaN) is taken as 1 ms.
    pub(crate) fn new(window_ms: f64) -> Self {
        let window = if window_ms >= 1.0 { window_ms } else { 1.0 };
        Self {
            width_ms: window / BUCKETS as f64,
            latest: i64::MIN,
            slots: [None; BUCKETS],
        }
    }

    /// The bucket holding `now_ms`, as the clock reads it.
    fn raw_bucket(&self, now_ms: f64) -> i64 {
        let b = (now_ms / self.width_ms).floor();
        if b.is_nan() {
            i64::MIN
        } else {
            b.clamp(-LIMIT, LIMIT) as i64
        }
    }

    fn bucket(&self, now_ms: f64) -> i64 {
        self.raw_bucket(now_ms).max(self.latest)
    }

    /// Updates the counts of the bucket holding `now_ms`.
    pub(crate) fn add(&mut self, now_ms: f64, update: impl FnOnce(&mut T)) {
        let b = self.bucket(now_ms);
        self.latest = b;
        let index = usize::try_from(b.rem_euclid(BUCKETS as i64)).unwrap_or(0);
        if let Some(slot) = self.slots.get_mut(index) {
            match slot {
                Some((at, counts)) if *at == b => update(counts),
                _ => {
                    let mut counts = T::default();
                    update(&mut counts);
                    *slot = Some((b, counts));
                }
            }
        }
    }

    /// Updates the counts `add(at_ms, ..)` wrote to, if that bucket is
    /// still in the ring (a later one is never touched instead).
    pub(crate) fn amend(&mut self, at_ms: f64, update: impl FnOnce(&mut T)) {
        let b = self.raw_bucket(at_ms);
        let index = usize::try_from(b.rem_euclid(BUCKETS as i64)).unwrap_or(0);
        if let Some(Some((at, counts))) = self.slots.get_mut(index) {
            if *at == b {
                update(counts);
            }
        }
    }

    /// Counts by bucket age at `now_ms`: `[0]` is the current bucket, `[9]`
    /// the oldest still in the window.
    pub(crate) fn by_age(&self, now_ms: f64) -> [T; BUCKETS] {
        let b = self.bucket(now_ms);
        let mut out = [T::default(); BUCKETS];
        for &(at, counts) in self.slots.iter().flatten() {
            let age = usize::try_from(b.saturating_sub(at)).ok();
            if let Some(slot) = age.and_then(|age| out.get_mut(age)) {
                *slot = counts;
            }
        }
        out
    }

    pub(crate) fn clear(&mut self) {
        self.slots = [None; BUCKETS];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(r: &Ring<u64>, now: f64) -> u64 {
        r.by_age(now).iter().sum()
    }

    #[test]
    fn counts_slide_out_after_ten_buckets() {
        let mut r = Ring::<u64>::new(1000.0);
        r.add(0.0, |c| *c += 1);
        r.add(950.0, |c| *c += 1);
        assert_eq!(r.by_age(950.0)[9], 1);
        assert_eq!(r.by_age(950.0)[0], 1);
        assert_eq!(total(&r, 999.0), 2);
        assert_eq!(total(&r, 1000.0), 1);
        assert_eq!(total(&r, 2000.0), 0);
    }

    #[test]
    fn stale_slot_is_reset_before_reuse() {
        let mut r = Ring::<u64>::new(1000.0);
        r.add(0.0, |c| *c += 5);
        r.add(1000.0, |c| *c += 1);
        assert_eq!(total(&r, 1000.0), 1);
    }

    #[test]
    fn amend_reaches_only_the_bucket_written_while_it_lasts() {
        let mut r = Ring::<u64>::new(1000.0);
        r.add(150.0, |c| *c += 2);
        r.add(450.0, |c| *c += 1);
        r.amend(180.0, |c| *c -= 1);
        assert_eq!(r.by_age(450.0)[3], 1, "the bucket of 150..200 ms");
        assert_eq!(r.by_age(450.0)[0], 1, "a later bucket untouched");
        // once its slot is reused, the old bucket is gone: nothing changes
        r.add(1150.0, |c| *c += 7);
        r.amend(150.0, |c| *c = 0);
        assert_eq!(r.by_age(1150.0)[0], 7);
    }

    #[test]
    fn earlier_clock_reading_counts_as_latest() {
        let mut r = Ring::<u64>::new(1000.0);
        r.add(5000.0, |c| *c += 1);
        r.add(100.0, |c| *c += 1);
        assert_eq!(r.by_age(0.0)[0], 2);
    }

    #[test]
    fn odd_clock_values_do_not_panic() {
        let mut r = Ring::<u64>::new(f64::NAN);
        for t in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1e300,
            1e300,
            0.0,
        ] {
            r.add(t, |c| *c += 1);
            let _ = r.by_age(t);
        }
        r.clear();
        assert_eq!(total(&r, 1e300), 0);
    }
}
