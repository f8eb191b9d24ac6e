//! `flexio cache sim`: replay a block trace through the block cache's
//! eviction policies and print the hit ratio of each policy at each size.
//!
//! The ARC paper's traces (`OLTP.lis.zst`, `P3.lis.zst`) come from Megiddo
//! and Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", USENIX
//! FAST 2003; when the trace is OLTP, the paper's LRU and ARC columns
//! (Table VIII) are printed beside ours. Belady's MIN, the offline
//! optimum, is replayed beside the policies, and each policy's hit ratio
//! is also given as how far it lies on the way from LRU's to MIN's.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use flexio_bench::charts::plain::{write_line_chart, LineChart, PlainSeries};
use flexio_cache::policy::PolicyName;
use flexio_cache::sim::{simulate_all, way_from_lru_to_min, SimPolicy, SimResult};
use flexio_cache::trace::{Trace, ARC_PAPER_OLTP};

use crate::error::{Error, Result};
use crate::output::{document, print_stdout};
use crate::values;

/// The block cache: simulate its eviction policies on block traces.
#[derive(Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Subcommand)]
enum CacheCommand {
    /// Replay a block trace and print hit ratios per policy and cache size.
    Sim(SimArgs),
    /// The `cache` bench scenario (an alias of `flexio bench --scenario
    /// cache` with the scenario's own knobs): S.M.A.C.K.'s cold/warm
    /// tables, single-block vs multi-block reads, hit costs, and a hot set
    /// through a scan per policy.
    Bench(CacheBenchArgs),
}

/// Arguments of `flexio cache bench`.
#[derive(Args)]
struct CacheBenchArgs {
    /// Where the data files go (its file system is the one measured; it
    /// must take O_DIRECT); removed afterwards.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Counted rounds per figure (after one warm-up round).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=values::MAX_RUNS as i64))]
    runs: u32,
    /// File sizes of the cold/warm table, in MiB.
    #[arg(long, value_delimiter = ',', default_value = "1,8,16,24")]
    files_mib: Vec<u64>,
    /// The cache size.
    #[arg(long, value_parser = values::size, default_value = "16MiB")]
    cache_size: u64,
    /// Reads per hot-set reader and phase.
    #[arg(long, default_value_t = 50_000, value_parser = values::count(100_000_000))]
    hot_reads: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Only these parts: smack (the cold/warm table), hits, hot-set,
    /// serve [default: all].
    #[arg(long, value_parser = flexio_bench::cache_bench::Parts::parse, default_value = "smack,hits,hot-set,serve")]
    parts: flexio_bench::cache_bench::Parts,
    /// Each timed window of the serve comparison.
    #[arg(long, value_parser = values::duration, default_value = "2s")]
    serve_window: std::time::Duration,
    /// The page-cache side of the hot-set experiment (internal: SHAPE PATH).
    #[arg(long, hide = true, num_args = 2, value_names = ["SHAPE", "PATH"])]
    page_cache_child: Option<Vec<String>>,
}

/// Arguments of `flexio cache sim`.
#[derive(Args)]
struct SimArgs {
    /// A `.lis` trace (`START COUNT X Y` per line, `.zst` decompressed on
    /// the fly) or a generator: `zipf:blocks=B,alpha=A,len=L,seed=S`,
    /// `scan:len=L`, `loop:blocks=B,len=L`,
    /// `zipf+scan:blocks=B,alpha=A,len=L,scan=FRACTION`.
    #[arg(long)]
    trace: String,
    /// Policies, comma-separated, or `all`: lru, clock, sieve, s3-fifo,
    /// arc, adaptive (the cache's default), lirs and w-tinylfu (LIRS and
    /// W-TinyLFU, for comparison; only when named), min (Belady's MIN,
    /// the offline optimum no cache can run: the limit) and min-per-block
    /// (offline too, only when named: MIN's choice of blocks known in
    /// advance, kept by LRU, the rest evicted first).
    #[arg(long, default_value = "all")]
    policy: String,
    /// Cache sizes in blocks, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    size: Vec<usize>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Also draw hit ratio against cache size, one line per policy, as SVG.
    #[arg(long)]
    chart: Option<PathBuf>,
}

/// JSON schema version of `flexio cache sim --json` (2: MIN among the
/// policies, and references per second in each result).
const SIM_SCHEMA_VERSION: u32 = 2;

/// Runs `flexio cache …`.
pub fn run(args: CacheArgs) -> Result<()> {
    match args.command {
        CacheCommand::Sim(args) => sim(args),
        CacheCommand::Bench(args) => bench(args),
    }
}

fn bench(args: CacheBenchArgs) -> Result<()> {
    if let Some(child) = &args.page_cache_child {
        let path = PathBuf::from(&child[1]);
        return flexio_bench::cache_bench::page_cache::child_main(&child[0], &path)
            .map_err(|source| Error::io("page-cache hot set", &path, source));
    }
    let options = flexio_bench::cache_bench::CacheBenchOptions {
        dir: args.dir.clone(),
        runs: args.runs.max(1),
        file_sizes_mib: args.files_mib,
        cache_bytes: args.cache_size,
        hot_reads: args.hot_reads.max(1),
        serve_window: args.serve_window,
        parts: args.parts,
        ..Default::default()
    };
    // The same implementation as `flexio bench --scenario cache`.
    let report = crate::cache_bench::measure(options)?;
    if args.json {
        print_stdout(&document("cache-bench", &report));
    } else {
        print_stdout(&flexio_bench::cache_bench::render(&report));
    }
    Ok(())
}

fn sim(args: SimArgs) -> Result<()> {
    let policies = parse_policies(&args.policy)?;
    if args.size.contains(&0) || args.size.is_empty() {
        return Err(Error::Usage(
            "--size: cache sizes are at least one block".into(),
        ));
    }
    let trace = Trace::open(&args.trace)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results = simulate_all(&trace.keys, &policies, &args.size, threads);
    let paper = is_oltp(&trace.name);
    if args.json {
        let value = serde_json::json!({
            "schema_version": SIM_SCHEMA_VERSION,
            "trace": trace.name,
            "references": trace.keys.len(),
            "results": results,
        });
        print_stdout(&document("cache-sim", &value));
    } else {
        print_stdout(&table(&trace, &policies, &args.size, &results, paper));
    }
    if let Some(path) = &args.chart {
        // Only over a regular file or nothing, as every file flexio writes.
        write_chart(path, &trace.name, &policies, &results)
            .map_err(|source| Error::io("write chart", path, source))?;
    }
    Ok(())
}

fn parse_policies(text: &str) -> Result<Vec<SimPolicy>> {
    if text == "all" {
        return Ok(SimPolicy::all());
    }
    text.split(',')
        .map(|name| name.trim().parse().map_err(Error::Usage))
        .collect()
}

/// Whether `name` is the ARC paper's OLTP trace, whose Table VIII row we
/// can print beside ours.
fn is_oltp(name: &str) -> bool {
    Path::new(name)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("OLTP.lis"))
}

fn table(
    trace: &Trace,
    policies: &[SimPolicy],
    sizes: &[usize],
    results: &[SimResult],
    paper: bool,
) -> String {
    let find = |size: usize, policy: SimPolicy| {
        results
            .iter()
            .find(|r| r.size_blocks == size && r.policy == policy)
    };
    let mut text = format!(
        "trace {}: {} references; hit ratio in % (default policy: {})\n",
        trace.name,
        trace.keys.len(),
        PolicyName::DEFAULT
    );
    text += &format!("{:>10}", "blocks");
    for policy in policies {
        text += &format!(" {:>1$}", policy.as_str(), width(*policy));
    }
    if paper {
        text += &format!(" {:>10} {:>10}", "paper-lru", "paper-arc");
    }
    text.push('\n');
    for &size in sizes {
        text += &format!("{size:>10}");
        for &policy in policies {
            let result = find(size, policy).expect("every pair simulated");
            text += &format!(" {:>1$.2}", result.hit_ratio_percent, width(policy));
        }
        if paper {
            match ARC_PAPER_OLTP.iter().find(|row| row.0 == size) {
                Some((_, lru, arc)) => text += &format!(" {lru:>10.2} {arc:>10.2}"),
                None => text += &format!(" {:>10} {:>10}", "-", "-"),
            }
        }
        text.push('\n');
    }
    text += &way_to_min(policies, sizes, &find);
    text += &speeds(policies, results);
    if paper {
        text += "paper: Megiddo and Modha, \"ARC: A Self-Tuning, Low Overhead Replacement Cache\", USENIX FAST 2003, Table VIII\n";
    }
    text
}

/// A table column's width for `policy`: its name, and at least 8.
fn width(policy: SimPolicy) -> usize {
    policy.as_str().len().max(8)
}

/// Each online policy's place on the way from LRU (0 %) to MIN (100 %),
/// where both were replayed.
fn way_to_min<'a>(
    policies: &[SimPolicy],
    sizes: &[usize],
    find: &dyn Fn(usize, SimPolicy) -> Option<&'a SimResult>,
) -> String {
    let lru = SimPolicy::Online(PolicyName::Lru);
    if !policies.contains(&lru) || !policies.contains(&SimPolicy::Min) {
        return String::new();
    }
    let mut text = "\nthe way from LRU (0 %) to MIN (100 %):\n".to_string();
    text += &format!("{:>10}", "blocks");
    let online: Vec<SimPolicy> = policies
        .iter()
        .copied()
        .filter(|&p| p != SimPolicy::Min && p != lru)
        .collect();
    for &policy in &online {
        text += &format!(" {:>1$}", policy.as_str(), width(policy));
    }
    text.push('\n');
    for &size in sizes {
        text += &format!("{size:>10}");
        let (Some(low), Some(high)) = (find(size, lru), find(size, SimPolicy::Min)) else {
            continue;
        };
        for &policy in &online {
            let hit = find(size, policy).map_or(0.0, |r| r.hit_ratio_percent);
            match way_from_lru_to_min(hit, low.hit_ratio_percent, high.hit_ratio_percent) {
                Some(way) => text += &format!(" {:>1$.0}%", way, width(policy) - 1),
                None => text += &format!(" {:>1$}", "-", width(policy)),
            }
        }
        text.push('\n');
    }
    text
}

/// References replayed per second by each policy, the median over the
/// sizes (pairs ran on several threads at once: compare them, no more).
fn speeds(policies: &[SimPolicy], results: &[SimResult]) -> String {
    let mut text = "\nmillions of references per second (median over the sizes):\n".to_string();
    let name_width = policies.iter().map(|p| p.as_str().len()).max().unwrap_or(0);
    for &policy in policies {
        let mut rates: Vec<f64> = results
            .iter()
            .filter(|r| r.policy == policy)
            .map(|r| r.references_per_second / 1e6)
            .collect();
        rates.sort_by(f64::total_cmp);
        if let Some(median) = rates.get(rates.len() / 2) {
            text += &format!("  {:<1$} {median:>8.1}\n", policy.as_str(), name_width);
        }
    }
    text
}

/// The hit ratio of each policy against the cache size, on a log2 size
/// axis (the sizes of a sweep grow by factors), the legend beside the plot.
fn write_chart(
    path: &Path,
    trace: &str,
    policies: &[SimPolicy],
    results: &[SimResult],
) -> std::io::Result<()> {
    let series = policies
        .iter()
        .map(|policy| {
            let mut points: Vec<(f64, f64)> = results
                .iter()
                .filter(|r| r.policy == *policy)
                .map(|r| (r.size_blocks as f64, r.hit_ratio_percent))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            PlainSeries {
                label: policy.as_str().to_string(),
                points,
                // The offline yardsticks, not policies: drawn dashed.
                dashed: matches!(policy, SimPolicy::Min | SimPolicy::MinPerBlock),
            }
        })
        .collect();
    let chart = LineChart {
        title: format!("hit ratio: {trace}"),
        x_desc: "cache size (blocks, log2 scale)".into(),
        y_desc: "hit ratio (%)".into(),
        log_x: true,
        series,
        footer: format!("flexio cache sim, trace {trace}"),
        ..LineChart::default()
    };
    write_line_chart(path, &chart)
}

#[cfg(test)]
mod tests {
    use super::{is_oltp, parse_policies};
    use flexio_cache::policy::PolicyName;
    use flexio_cache::sim::SimPolicy;

    #[test]
    fn policies_parse_and_oltp_is_recognised() {
        assert_eq!(
            parse_policies("all").unwrap().len(),
            PolicyName::ALL.len() + 1
        );
        assert_eq!(
            parse_policies("lru, s3-fifo,min,min-per-block").unwrap(),
            [
                SimPolicy::Online(PolicyName::Lru),
                SimPolicy::Online(PolicyName::S3Fifo),
                SimPolicy::Min,
                SimPolicy::MinPerBlock
            ]
        );
        assert!(parse_policies("mru").is_err());
        assert!(is_oltp("../shared/data/arc/OLTP.lis.zst"));
        assert!(!is_oltp("P3.lis.zst"));
    }
}
