//! The metrics provider keys (`metricsProvider.*`), as ZooKeeper 3.9 reads them
//! (`MetricsProviderBootstrap`, `PrometheusMetricsProvider.configure`).
//!
//! Only ZooKeeper's Prometheus provider has a meaning for meerkat; the default provider
//! (`org.apache.zookeeper.metrics.impl.DefaultMetricsProvider`) is what `mntr` always shows.

use std::net::{IpAddr, Ipv4Addr};

use super::values;

/// The class name that turns the Prometheus endpoint on.
pub const PROMETHEUS_PROVIDER: &str =
    "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";
const DEFAULT_PROVIDER: &str = "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider";
/// `PrometheusMetricsProvider`'s defaults.
pub const DEFAULT_METRICS_PORT: u16 = 7000;

/// The Prometheus `/metrics` endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSettings {
    /// `metricsProvider.className` is the Prometheus provider.
    pub prometheus: bool,
    /// `metricsProvider.httpHost` (default 0.0.0.0).
    pub http_host: IpAddr,
    /// `metricsProvider.httpPort` (default 7000).
    pub http_port: u16,
    /// `metricsProvider.exportJvmInfo` (default true): there is no JVM; read and ignored.
    pub export_jvm_info: bool,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self {
            prometheus: false,
            http_host: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            http_port: DEFAULT_METRICS_PORT,
            export_jvm_info: true,
        }
    }
}

/// What reading a key did: `None` when it is not a metrics key, else whether it was read
/// (`true`) or accepted without effect (`false`, a warning follows).
pub(super) fn read(
    settings: &mut MetricsSettings,
    key: &str,
    value: &str,
) -> Result<Option<bool>, String> {
    let Some(name) = key.strip_prefix("metricsProvider.") else {
        return Ok(None);
    };
    match name {
        "className" => match value {
            PROMETHEUS_PROVIDER => settings.prometheus = true,
            DEFAULT_PROVIDER => settings.prometheus = false,
            _ => {
                return Err(format!(
                    "meerkat offers {PROMETHEUS_PROVIDER} and {DEFAULT_PROVIDER}"
                ))
            }
        },
        "httpHost" => settings.http_host = values::ip_address(value)?,
        "httpPort" => settings.http_port = values::port(value)?,
        "exportJvmInfo" => settings.export_jvm_info = values::java_bool(value)?,
        // Tuning of the Java provider's reporting threads: nothing to tune here.
        "numWorkerThreads" | "maxQueueSize" | "workerShutdownTimeoutMs" => {}
        _ => return Ok(Some(false)),
    }
    Ok(Some(true))
}
