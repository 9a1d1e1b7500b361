//! How the start-up and OCI benchmarks print their figures: a header with the load average, then
//! one line per measurement (n, p50, p90, mean, max in milliseconds).

use std::time::Duration;

/// Starts a group of measurements, with the machine's load average beside its title.
pub fn header(title: &str) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!();
    println!("== {title}   [load average {}]", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    println!("{:<60} {:>4} {:>10} {:>10} {:>10} {:>10}", "measurement", "n", "p50", "p90", "mean", "max");
}

/// One measurement's line.
pub fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    let n = samples.len();
    let pct = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let mean = samples.iter().sum::<Duration>() / n as u32;
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    println!("{name:<60} {n:>4} {:>10} {:>10} {:>10} {:>10}", ms(pct(0.5)), ms(pct(0.9)), ms(mean), ms(samples[n - 1]));
}
