//! Which ticks of a log axis carry a label, and the label: every log
//! axis gets at least two whatever the range of its data, and no label
//! twice.

/// The labelled ticks of a log10 axis over `low..=high`: 1, 2 and 5 of
/// each decade (only the powers of ten past six decades); where fewer
/// than two of those fall in the range, every integer multiple of the
/// decade; where still fewer, the two ends. Each label is the value
/// written exactly, so no two are alike.
///
/// # Examples
/// ```
/// use flexio_bench::charts::ticks::log_ticks;
/// let labels: Vec<String> = log_ticks(0.3, 7.0).into_iter().map(|t| t.1).collect();
/// assert_eq!(labels, ["0.5", "1", "2", "5"]);
/// ```
pub fn log_ticks(low: f64, high: f64) -> Vec<(f64, String)> {
    if !(low > 0.0 && high >= low && high.is_finite()) {
        return Vec::new();
    }
    let decades = (high / low).log10();
    let mantissas: &[f64] = if decades > 6.0 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut ticks = multiples(low, high, mantissas);
    if ticks.len() < 2 {
        ticks = multiples(low, high, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    }
    if ticks.len() < 2 {
        ticks = vec![low, high];
    }
    let mut labelled: Vec<(f64, String)> = ticks.into_iter().map(|v| (v, exact(v))).collect();
    labelled.dedup_by(|a, b| a.1 == b.1);
    labelled
}

/// Whether `value` is one of [`log_ticks`]'s labelled ticks over
/// `low..=high`, and its label if so (empty if not): for axis label
/// formatters, which see one value at a time.
pub fn log_label(value: f64, low: f64, high: f64) -> String {
    log_ticks(low, high)
        .into_iter()
        .find(|(tick, _)| (tick - value).abs() <= 1e-9 * tick.abs())
        .map(|(_, label)| label)
        .unwrap_or_default()
}

/// Every `m × 10^k` in `low..=high`, `m` from `mantissas`, ascending.
fn multiples(low: f64, high: f64, mantissas: &[f64]) -> Vec<f64> {
    let mut values = Vec::new();
    let mut exponent = low.log10().floor() as i32;
    while 10f64.powi(exponent) <= high * 1.000_001 {
        for m in mantissas {
            let value = m * 10f64.powi(exponent);
            if value >= low * 0.999_999 && value <= high * 1.000_001 {
                values.push(value);
            }
        }
        exponent += 1;
    }
    values
}

/// `value` with as many decimals as its magnitude needs (up to 12), less
/// trailing zeros.
fn exact(value: f64) -> String {
    let decimals = (-(value.abs().log10().floor() as i32) + 2).clamp(0, 12) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// The powers of two of a log2 axis over `low..=high` that carry a label:
/// every one up to twelve, else every second, fourth… so that at most
/// twelve do.
///
/// # Examples
/// ```
/// use flexio_bench::charts::ticks::log2_ticks;
/// assert_eq!(log2_ticks(1.0, 8.0), [1.0, 2.0, 4.0, 8.0]);
/// assert!(log2_ticks(64.0, (1u64 << 30) as f64).len() <= 12);
/// ```
pub fn log2_ticks(low: f64, high: f64) -> Vec<f64> {
    if !(low > 0.0 && high >= low && high.is_finite()) {
        return Vec::new();
    }
    let first = low.log2().ceil() as i32;
    let last = high.log2().floor() as i32;
    if last < first {
        return vec![low, high];
    }
    let count = (last - first + 1) as usize;
    let step = count.div_ceil(12).next_power_of_two() as i32;
    (first..=last)
        .filter(|e| e.rem_euclid(step) == 0)
        .map(|e| 2f64.powi(e))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(low: f64, high: f64) -> Vec<String> {
        log_ticks(low, high).into_iter().map(|t| t.1).collect()
    }

    #[test]
    fn every_range_gets_two_labels_or_more_and_none_twice() {
        for (low, high) in [
            (0.3, 7.0),
            (0.3, 0.45),
            (1.1, 1.9),
            (0.011, 0.019),
            (3.0, 4.0),
            (64.0, 3.0e10),
            (0.004, 0.006),
            (12.0, 13.0),
        ] {
            let found = labels(low, high);
            assert!(found.len() >= 2, "{low}..{high}: {found:?}");
            let mut unique = found.clone();
            unique.dedup();
            assert_eq!(unique, found, "{low}..{high}");
            for (value, _) in log_ticks(low, high) {
                assert!(
                    value >= low * 0.999 && value <= high * 1.001,
                    "{low}..{high}: {value}"
                );
            }
        }
    }

    #[test]
    fn data_below_the_first_labelled_decade_still_get_labels() {
        assert_eq!(labels(0.3, 7.0), ["0.5", "1", "2", "5"]);
        assert_eq!(labels(0.3, 0.45), ["0.3", "0.4"]);
        assert_eq!(labels(0.011, 0.019), ["0.011", "0.019"]);
        assert_eq!(log_label(0.5, 0.3, 7.0), "0.5");
        assert_eq!(log_label(0.7, 0.3, 7.0), "");
    }

    #[test]
    fn long_axes_label_powers_only() {
        assert!(labels(64.0, 3.0e10).iter().all(|l| l.starts_with('1')));
        let powers = log2_ticks(64.0, (1u64 << 30) as f64);
        assert!(powers.len() <= 12 && powers.len() >= 6, "{powers:?}");
    }
}
