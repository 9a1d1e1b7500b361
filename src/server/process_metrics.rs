//! The process's own figures on `/metrics`, under the names every Prometheus client library
//! gives them (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_open_fds`, …), so the dashboards and alerts written for those work unchanged; and
//! `corral_build_info`, which says which build is running.
//!
//! They are read from `/proc` at each scrape (procfs), never kept: a scrape costs a few small
//! file reads. A figure `/proc` cannot give (another kernel, a hardened mount) is left out of
//! that scrape rather than shown as zero.

use procfs::process::{LimitValue, Process};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads the process's figures at each scrape.
#[derive(Debug)]
pub(super) struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Ok(process) = Process::myself() else { return Ok(()) };
        if let Ok(stat) = process.stat() {
            let ticks = procfs::ticks_per_second() as f64;
            let cpu = ConstCounter::new((stat.utime + stat.stime) as f64 / ticks);
            cpu.encode(encoder.encode_descriptor("process_cpu_seconds", "User and system CPU time spent, in seconds", None, cpu.metric_type())?)?;
            let rss = ConstGauge::new((stat.rss * procfs::page_size()) as i64);
            rss.encode(encoder.encode_descriptor("process_resident_memory_bytes", "Resident memory size, in bytes", None, rss.metric_type())?)?;
            let virt = ConstGauge::new(stat.vsize as i64);
            virt.encode(encoder.encode_descriptor("process_virtual_memory_bytes", "Virtual memory size, in bytes", None, virt.metric_type())?)?;
            if let Ok(boot) = procfs::boot_time_secs() {
                let start = ConstGauge::new(boot as f64 + stat.starttime as f64 / ticks);
                let help = "Start time of the process since the Unix epoch, in seconds";
                start.encode(encoder.encode_descriptor("process_start_time_seconds", help, None, start.metric_type())?)?;
            }
        }
        if let Ok(fds) = process.fd_count() {
            let open = ConstGauge::new(fds as i64);
            open.encode(encoder.encode_descriptor("process_open_fds", "Open file descriptors", None, open.metric_type())?)?;
        }
        if let Ok(LimitValue::Value(max)) = process.limits().map(|l| l.max_open_files.soft_limit) {
            let max = ConstGauge::new(max as i64);
            max.encode(encoder.encode_descriptor("process_max_fds", "The most file descriptors the process may open", None, max.metric_type())?)?;
        }
        Ok(())
    }
}
