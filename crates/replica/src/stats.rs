//! Counters behind srvr, stat, cons and mntr (`ServerStats`, `ServerCnxn` stats).

/// Latency bookkeeping in ms, as ZooKeeper reports it (min/avg/max).
#[derive(Debug, Clone, Default)]
pub struct Latency {
    pub min_ms: u64,
    pub max_ms: u64,
    pub total_ms: u64,
    pub count: u64,
}

impl Latency {
    pub fn record(&mut self, ms: u64) {
        if self.count == 0 || ms < self.min_ms {
            self.min_ms = ms;
        }
        self.max_ms = self.max_ms.max(ms);
        self.total_ms += ms;
        self.count += 1;
    }

    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_ms as f64 / self.count as f64
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ServerStats {
    pub packets_received: u64,
    pub packets_sent: u64,
    pub latency: Latency,
}

/// Per-connection statistics for `cons` and `stat`.
#[derive(Debug, Clone)]
pub struct ConnStats {
    /// When the connection was established ([`crate::Now::mono_ms`]).
    pub established_ms: u64,
    pub established_wall_ms: i64,
    pub packets_received: u64,
    pub packets_sent: u64,
    pub last_op: &'static str,
    pub last_cxid: i32,
    pub last_zxid: i64,
    pub last_response_wall_ms: i64,
    pub last_latency_ms: u64,
    pub latency: Latency,
}

impl ConnStats {
    pub fn new(now_ms: u64, wall_ms: i64) -> ConnStats {
        ConnStats {
            established_ms: now_ms,
            established_wall_ms: wall_ms,
            packets_received: 0,
            packets_sent: 0,
            last_op: "NA",
            last_cxid: -1,
            last_zxid: -1,
            last_response_wall_ms: 0,
            last_latency_ms: 0,
            latency: Latency::default(),
        }
    }

    pub fn reset(&mut self) {
        self.packets_received = 0;
        self.packets_sent = 0;
        self.last_op = "NA";
        self.last_cxid = -1;
        self.last_zxid = -1;
        self.last_response_wall_ms = 0;
        self.last_latency_ms = 0;
        self.latency = Latency::default();
    }
}
