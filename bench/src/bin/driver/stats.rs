//! Percentiles of a set of durations, in microseconds.

use std::time::Duration;

#[derive(Clone, Copy, Default)]
pub struct Summary {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub mean: Option<f64>,
    pub max: Option<f64>,
}

impl Summary {
    pub fn of(values: impl Iterator<Item = Duration>) -> Self {
        let mut us: Vec<f64> = values.map(|d| d.as_secs_f64() * 1e6).collect();
        if us.is_empty() {
            return Self::default();
        }
        us.sort_by(f64::total_cmp);
        // Nearest-rank percentile: the smallest value with at least p% of the samples at or below.
        let rank = |p: f64| {
            let index = ((p / 100.0) * us.len() as f64).ceil() as usize;
            us[index.clamp(1, us.len()) - 1]
        };
        Self {
            p50: Some(rank(50.0)),
            p99: Some(rank(99.0)),
            mean: Some(us.iter().sum::<f64>() / us.len() as f64),
            max: us.last().copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s = Summary::of((1..=100).map(Duration::from_micros));
        assert_eq!(s.p50, Some(50.0));
        assert_eq!(s.p99, Some(99.0));
        assert_eq!(s.max, Some(100.0));
    }
}
