//! The simulator without the CLI: `sim TRACE SIZES POLICIES [ROUNDS]`
//! (sizes and policies comma-separated, as `flexio cache sim` takes them)
//! prints each policy's hit ratio per size and its references per second,
//! the median over `ROUNDS` alternating rounds (default 1), each pair
//! replayed alone on one thread so the rates compare; then each policy's
//! time per reference against the first policy's, per size and the median
//! over the sizes.
//!
//! ```text
//! cargo build --release -p flexio-cache --example sim
//! target/release/examples/sim flexio-cache/data/arc/OLTP.lis.zst \
//!     1000,2000,5000,10000,15000 lru,arc,s3-fifo,adaptive,min 5
//! ```

use flexio_cache::sim::{simulate_all, SimPolicy};
use flexio_cache::trace::Trace;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [trace, sizes, policies, rest @ ..] = args.as_slice() else {
        return Err("usage: sim TRACE SIZES POLICIES [ROUNDS]".into());
    };
    let rounds: usize = match rest.first() {
        Some(text) => text.parse().map_err(|e| format!("rounds {text:?}: {e}"))?,
        None => 1,
    };
    let trace = Trace::open(trace).map_err(|e| e.to_string())?;
    let sizes: Vec<usize> = sizes
        .split(',')
        .map(|s| s.parse().map_err(|e| format!("size {s:?}: {e}")))
        .collect::<Result<_, _>>()?;
    let policies: Vec<SimPolicy> = policies
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    println!("{}: {} references", trace.name, trace.keys.len());
    print!("{:>8}", "blocks");
    for policy in &policies {
        print!(" {:>9}", policy.as_str());
    }
    println!();
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
    for &size in &sizes {
        print!("{size:>8}");
        let mut per_round: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
        let mut hits = vec![0.0; policies.len()];
        for _ in 0..rounds {
            for (i, &policy) in policies.iter().enumerate() {
                let result = &simulate_all(&trace.keys, &[policy], &[size], 1)[0];
                hits[i] = result.hit_ratio_percent;
                per_round[i].push(result.references_per_second / 1e6);
            }
        }
        for (i, hit) in hits.iter().enumerate() {
            print!(" {hit:>9.2}");
            rates[i].push(median(&mut per_round[i]));
        }
        println!();
    }
    println!("M references/s (median of {rounds} rounds per size):");
    for (i, policy) in policies.iter().enumerate() {
        let cells: Vec<String> = rates[i].iter().map(|r| format!("{r:.1}")).collect();
        println!("  {:<9} {}", policy.as_str(), cells.join(" "));
    }
    if let [(first, first_rates), rest @ ..] = &policies.iter().zip(&rates).collect::<Vec<_>>()[..]
    {
        println!("time per reference against {first}'s (per size; median):");
        for (policy, policy_rates) in rest {
            let mut ratios: Vec<f64> = first_rates
                .iter()
                .zip(policy_rates.iter())
                .map(|(base, rate)| base / rate)
                .collect();
            let cells: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            println!(
                "  {:<9} {}; {:.2}x",
                policy.as_str(),
                cells.join(" "),
                median(&mut ratios)
            );
        }
    }
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
