//! Medians and percentiles of timings.

/// Median and 90th percentile, in milliseconds.
#[derive(Clone, Copy)]
pub struct Figures {
    pub median: f64,
    pub p90: f64,
}

impl Figures {
    pub fn of(ms: &[f64]) -> Self {
        let mut ms = ms.to_vec();
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        Figures {
            median: at(0.5),
            p90: at(0.9),
        }
    }
}

/// The median of `values` (the upper one of an even count); NaN if there are none.
pub fn median(values: &[f64]) -> f64 {
    match values.is_empty() {
        true => f64::NAN,
        false => Figures::of(values).median,
    }
}
