//! `flexio plan SRC DST`: the decision `auto` would make, and why, without
//! moving data.

use clap::Args;
use flexio::{format_bytes, format_rate, Address, Flow, Sink, Source};

use crate::error::Result;
use crate::output::{document, print_stdout};
use crate::profile_choice::ProfileChoice;
use crate::values;

/// Arguments of `flexio plan`.
#[derive(Args)]
pub struct PlanArgs {
    /// Source, as for `flexio copy`.
    source: String,
    /// Sink, as for `flexio copy`.
    sink: String,
    /// First source byte.
    #[arg(long, value_parser = values::size, default_value = "0")]
    offset: u64,
    /// Bytes to move (needed for a stream source).
    #[arg(long, value_parser = values::size)]
    length: Option<u64>,
    /// Plan a durable flow (fsync inside the flow).
    #[arg(long)]
    fsync: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    choice: ProfileChoice,
}

/// Runs `flexio plan`.
pub fn run(args: PlanArgs) -> Result<()> {
    let profile = args.choice.load_with_curves();
    let mut flow = Flow::new(
        Source::Address(Address::parse(&args.source)?),
        Sink::Address(Address::parse(&args.sink)?),
    )
    .offset(args.offset)
    .fsync(args.fsync)
    .profile(profile.as_ref());
    if let Some(length) = args.length {
        flow = flow.length(length);
    }
    let decision = flow.plan()?;
    if args.json {
        let text = document("plan", &decision);
        print_stdout(&text);
        return Ok(());
    }
    let mut text = format!(
        "flow       {} -> {}: {}, {}\n",
        args.source,
        args.sink,
        decision.flow_kind,
        decision
            .size
            .map_or_else(|| "size unknown".into(), format_bytes)
    );
    text += &format!(
        "mechanism  {} (chunk {}, queue depth {}, pipe {}, direct {})\n",
        decision.mechanism,
        format_bytes(decision.params.chunk as u64),
        decision.params.queue_depth,
        format_bytes(decision.params.pipe_size as u64),
        if decision.params.direct { "on" } else { "off" }
    );
    text += &format!("decided by {}\n", decision.decided_by);
    match (&profile, decision.size) {
        (Some(profile), Some(size)) => {
            let age = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
                .saturating_sub(profile.created_unix);
            text += &format!(
                "profile    {} (made {} ago)\n",
                args.choice.path().display(),
                human_age(age)
            );
            let points = profile.nearest_points(decision.flow_kind, size);
            if points.is_empty() {
                text += "why        the profile has no measurements for this flow kind\n";
            }
            for (rank, (curve, point)) in points.iter().take(3).enumerate() {
                // The tuner varies pipe size, queue depth and O_DIRECT too:
                // name them where they differ from the defaults, or two
                // curves of one mechanism read alike.
                let defaults = flexio::Params::default();
                let mut params = format!("chunk {:>9}", format_bytes(curve.chunk as u64));
                if curve.pipe_size != defaults.pipe_size {
                    params += &format!(" pipe {}", format_bytes(curve.pipe_size as u64));
                }
                if curve.queue_depth != defaults.queue_depth {
                    params += &format!(" qd {}", curve.queue_depth);
                }
                if curve.direct && curve.mechanism != flexio::MechanismName::Direct {
                    params += " direct";
                }
                text += &format!(
                    "{}  {:<16} {params}: {:>12} at {} ({:.2} ns CPU/byte)\n",
                    if rank == 0 {
                        "why       "
                    } else {
                        "          "
                    },
                    curve.mechanism.as_str(),
                    format_rate(point.median_bytes_per_s as f64),
                    format_bytes(point.size),
                    point.cpu_ns_per_byte
                );
            }
        }
        (None, _) => {
            text += &format!(
                "profile    none in force ({}); run `flexio tune` to measure this machine\n",
                args.choice.path().display()
            );
        }
        (Some(_), None) => {
            text += "why        the size is unknown (a stream); pass --length to look it up\n"
        }
    }
    print_stdout(&text);
    Ok(())
}

fn human_age(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}
