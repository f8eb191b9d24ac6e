//! The report of a flow: what really happened, measured.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::endpoint::EndpointKind;
use crate::measure::{Measurement, Residency, Sample};
use crate::mechanism::MechanismName;
use crate::pace::PacingReport;
use crate::params::Params;
use crate::size::{format_bytes, format_rate};

/// The version of the JSON form of [`Report`]; bumped when a field changes
/// meaning or disappears.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// A refusal by the kernel that made the engine switch mechanism.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    /// The mechanism that was refused.
    pub from: MechanismName,
    /// The mechanism that took over.
    pub to: MechanismName,
    /// The refused system call.
    pub operation: String,
    /// The kernel's reason (errno text).
    pub reason: String,
    /// Bytes of the flow already moved when it happened.
    pub at_byte: u64,
}

/// The outcome of `--verify`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verification {
    /// BLAKE3 of the source range (equal to the sink's), hex.
    pub blake3: String,
    /// Time spent hashing both sides, outside the timed window.
    pub verify_ns: u64,
}

/// What a flow did. Integer fields carry their unit in their name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The source as named.
    pub source: String,
    /// Its kind.
    pub source_kind: EndpointKind,
    /// The sink as named.
    pub sink: String,
    /// Its kind.
    pub sink_kind: EndpointKind,
    /// Bytes that reached the sink (holes of a sparse copy included), the
    /// wall time of the transfer (and of the fsync, when asked), the
    /// process's CPU and the host's over it; written as top-level fields.
    #[serde(flatten)]
    pub measured: Measurement,
    /// Bytes of source holes recreated as holes instead of copied.
    pub sparse_hole_bytes: u64,
    /// Voluntary context switches of the process.
    pub context_switches_voluntary: u64,
    /// Involuntary context switches of the process.
    pub context_switches_involuntary: u64,
    /// Minor page faults.
    pub page_faults_minor: u64,
    /// Major page faults (pages read from disk).
    pub page_faults_major: u64,
    /// System calls the mechanism issued to move data.
    pub syscalls: u64,
    /// io_uring submission queue entries.
    pub ring_entries: u64,
    /// Calls (or completions) that put bytes in the sink, each at most
    /// `--chunk` for the mechanisms that read it: the chunks of a
    /// `--schedule`, counted alike with and without one; absent in
    /// reports written before it was counted.
    #[serde(default)]
    pub chunks: u64,
    /// The mechanism asked for (`auto` included).
    pub mechanism_requested: MechanismName,
    /// The mechanism that was tried first (what `auto` chose).
    pub mechanism_first: MechanismName,
    /// What made the choice: `requested`, `built-in table`, or the profile
    /// entry (`profile PATH: file-to-file [1.00 MiB, 64.00 MiB)`).
    pub decided_by: String,
    /// The mechanism that moved the last bytes.
    pub mechanism_used: MechanismName,
    /// Every switch of mechanism, with the kernel's reason.
    pub fallbacks: Vec<Fallback>,
    /// Page-cache residency of the source range just before the flow.
    pub source_cache: Option<Residency>,
    /// The parameters in force.
    pub params: Params,
    /// Throughput, bytes per second of wall time.
    pub throughput_bytes_per_s: u64,
    /// The result of `--verify`, when asked.
    pub verify: Option<Verification>,
    /// What `--rate`, `--burst` and `--schedule` did, when asked.
    #[serde(default)]
    pub pacing: Option<PacingReport>,
    /// The socket buffers `--socket-buffer` fixed on the flow's TCP ends
    /// (absent under the kernel's autotuning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_buffers: Option<crate::endpoint::SocketBuffers>,
    /// What zero-copy send (`send-zc`) did, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_copy: Option<ZeroCopy>,
}

/// The kernel's word on a zero-copy send: one notification per request
/// when it let go of the pages, each saying whether it had to copy them
/// after all (it does for a receiver on the same host — loopback, or a
/// veth pair into another namespace — and then zero-copy saved nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZeroCopy {
    /// Notifications received.
    pub notifications: u64,
    /// Of those, how many said the bytes were copied.
    pub copied: u64,
}

impl Report {
    pub(crate) fn new(
        before: &Sample,
        after: &Sample,
        bytes: u64,
        requested: MechanismName,
        used: MechanismName,
        params: &Params,
    ) -> Self {
        let delta = after.since(before);
        let measured = Measurement::of(bytes, &delta);
        // Whole bytes per second, in integers: what the JSON has always held.
        let throughput = if delta.wall_ns == 0 {
            0
        } else {
            (bytes as u128 * 1_000_000_000 / delta.wall_ns as u128) as u64
        };
        Report {
            schema_version: REPORT_SCHEMA_VERSION,
            source: String::new(),
            source_kind: EndpointKind::File,
            sink: String::new(),
            sink_kind: EndpointKind::File,
            measured,
            sparse_hole_bytes: 0,
            context_switches_voluntary: delta.voluntary_switches,
            context_switches_involuntary: delta.involuntary_switches,
            page_faults_minor: delta.minor_faults,
            page_faults_major: delta.major_faults,
            syscalls: 0,
            ring_entries: 0,
            chunks: 0,
            mechanism_requested: requested,
            mechanism_first: used,
            decided_by: String::new(),
            mechanism_used: used,
            fallbacks: Vec::new(),
            source_cache: None,
            params: params.clone(),
            throughput_bytes_per_s: throughput,
            verify: None,
            pacing: None,
            socket_buffers: None,
            zero_copy: None,
        }
    }

    /// Process CPU seconds (user + system) per GiB moved.
    pub fn cpu_seconds_per_gib(&self) -> f64 {
        self.measured.cpu_seconds_per_gib()
    }
}

impl fmt::Display for Report {
    /// The human summary printed by `flexio copy`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.measured.wall_ns as f64 / 1e9;
        // Under a second, milliseconds; under a MiB, no rate: a tiny
        // copy's "rate" is process start-up.
        let time = if secs < 1.0 {
            format!("{:.3} ms", secs * 1e3)
        } else {
            format!("{secs:.3} s")
        };
        let rate = if self.measured.bytes >= 1 << 20 {
            format!(", {}", format_rate(self.throughput_bytes_per_s as f64))
        } else {
            String::new()
        };
        writeln!(
            f,
            "{} ({}) -> {} ({}): {} in {time}{rate}",
            self.source,
            self.source_kind,
            self.sink,
            self.sink_kind,
            format_bytes(self.measured.bytes),
        )?;
        let chosen = if self.mechanism_requested == MechanismName::Auto {
            format!("auto chose {} ({})", self.mechanism_first, self.decided_by)
        } else {
            format!("requested {}", self.mechanism_requested)
        };
        writeln!(f, "  mechanism  {} ran; {chosen}", self.mechanism_used)?;
        for fallback in &self.fallbacks {
            writeln!(
                f,
                "  fallback   {} -> {} at byte {}: {} refused ({})",
                fallback.from, fallback.to, fallback.at_byte, fallback.operation, fallback.reason
            )?;
        }
        // Below a MiB, CPU per GiB extrapolates process start-up a
        // thousandfold ("10938 CPU-s/GiB" for 6 bytes): leave it out.
        let per_gib = if self.measured.bytes >= 1 << 20 {
            format!(" ({:.2} CPU-s/GiB)", self.cpu_seconds_per_gib())
        } else {
            String::new()
        };
        writeln!(
            f,
            "  cpu        user {:.3} s, sys {:.3} s{per_gib}; host busy {:.3} s",
            self.measured.cpu_user_ns as f64 / 1e9,
            self.measured.cpu_sys_ns as f64 / 1e9,
            self.measured.host_cpu_busy_ns as f64 / 1e9
        )?;
        writeln!(
            f,
            "  kernel     {} system call{}{}, {} voluntary + {} involuntary context switches, {} minor + {} major faults",
            self.syscalls,
            if self.syscalls == 1 { "" } else { "s" },
            if self.ring_entries > 0 { format!(" ({} ring entries)", self.ring_entries) } else { String::new() },
            self.context_switches_voluntary,
            self.context_switches_involuntary,
            self.page_faults_minor,
            self.page_faults_major
        )?;
        self.write_details(f)
    }
}

impl Report {
    /// The report's optional lines: zero-copy send, the source's cache,
    /// holes kept, pacing, verification; each only where it applies.
    fn write_details(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(zc) = &self.zero_copy {
            writeln!(
                f,
                "  zero-copy  {} notification{}, {} of them copied by the kernel after all",
                zc.notifications,
                if zc.notifications == 1 { "" } else { "s" },
                zc.copied
            )?;
        }
        if let Some(cache) = &self.source_cache {
            writeln!(
                f,
                "  cache      source {:.0}% resident before the flow ({} of {}{})",
                cache.percent(),
                format_bytes(cache.resident_bytes),
                format_bytes(cache.total_bytes),
                if cache.sampled_bytes > 0 {
                    format!(
                        ", estimated from {} spread over it",
                        format_bytes(cache.sampled_bytes)
                    )
                } else {
                    String::new()
                }
            )?;
        }
        if self.sparse_hole_bytes > 0 {
            writeln!(
                f,
                "  sparse     {} of holes kept as holes",
                format_bytes(self.sparse_hole_bytes)
            )?;
        }
        if let Some(pacing) = &self.pacing {
            let target = pacing
                .target_bytes_per_s
                .map_or("no rate".to_string(), |rate| {
                    format!("target {}", format_rate(rate as f64))
                });
            writeln!(
                f,
                "  pacing     {} by {}, achieved {}; {} calls, largest {}{}, {} pauses, {} rate waits, {:.3} s waited",
                target,
                pacing.paced_by,
                format_rate(pacing.achieved_bytes_per_s as f64),
                pacing.calls,
                format_bytes(pacing.largest_call_bytes),
                pacing
                    .burst_bytes
                    .map_or(String::new(), |burst| format!(" (burst {})", format_bytes(burst))),
                pacing.pauses,
                pacing.rate_waits,
                pacing.waited_ns as f64 / 1e9
            )?;
        }
        if let Some(verify) = &self.verify {
            writeln!(
                f,
                "  verified   blake3 {} ({:.3} s)",
                verify.blake3,
                verify.verify_ns as f64 / 1e9
            )?;
        }
        Ok(())
    }
}
