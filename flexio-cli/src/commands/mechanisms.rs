//! `flexio mechanisms`: the support matrix, as a table or JSON.

use clap::Args;
use flexio::{builtin_choice, CopyKernel, EndpointKind, MechanismName, Params};

use crate::error::Result;
use crate::output::print_stdout;
use serde_json::json;

/// Arguments of `flexio mechanisms`.
#[derive(Args)]
pub struct MechanismsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// The (source, sink) pairs a command-line user can name (memory endpoints
/// exist only in the library and are listed in JSON).
fn pairs(include_memory: bool) -> impl Iterator<Item = (EndpointKind, EndpointKind)> {
    let kinds: Vec<_> = EndpointKind::ALL
        .into_iter()
        .filter(move |k| include_memory || *k != EndpointKind::Memory)
        .collect();
    let sinks = kinds.clone();
    kinds
        .into_iter()
        .flat_map(move |s| sinks.clone().into_iter().map(move |d| (s, d)))
}

/// Runs `flexio mechanisms`.
pub fn run(args: MechanismsArgs) -> Result<()> {
    if args.json {
        let rows: Vec<_> = pairs(true)
            .map(|(source, sink)| {
                json!({
                    "source": source,
                    "sink": sink,
                    "mechanisms": MechanismName::serving(source, sink),
                    "auto": builtin_choice(source, sink),
                })
            })
            .collect();
        let mechanisms: Vec<_> = MechanismName::CONCRETE
            .into_iter()
            .filter_map(MechanismName::descriptor)
            .map(|d| {
                json!({
                    "name": d.name,
                    "reads": d.reads,
                    "falls_back_to": d.fallbacks,
                    "direct_io": (d.writes_direct)(&Params { direct: true, ..Params::default() }),
                    "available": d.name.available().is_ok(),
                    "unavailable_because": d.name.available().err(),
                })
            })
            .collect();
        let kernels: Vec<_> = CopyKernel::ALL
            .into_iter()
            .map(|k| json!({ "name": k, "available": k.is_available(), "missing": k.missing() }))
            .collect();
        let document = json!({
            "schema_version": 1,
            "pairs": rows,
            "mechanisms": mechanisms,
            "copy_kernels": kernels,
        });
        print_stdout(&crate::output::document("mechanisms", &document));
        return Ok(());
    }
    let names = MechanismName::CONCRETE;
    let mut table = format!("{:<13} {:<13}", "source", "sink");
    for name in names {
        table += &format!(" {:>width$}", name.as_str(), width = name.as_str().len());
    }
    table += "  auto (built-in)\n";
    for (source, sink) in pairs(true) {
        table += &format!("{:<13} {:<13}", source.as_str(), sink.as_str());
        for name in names {
            let mark = if name.supports(source, sink) {
                "yes"
            } else {
                "-"
            };
            table += &format!(" {mark:>width$}", width = name.as_str().len());
        }
        table += &format!("  {}\n", builtin_choice(source, sink));
    }
    table += "\n";
    for descriptor in names.into_iter().filter_map(MechanismName::descriptor) {
        let reads = descriptor.reads;
        let read: Vec<&str> = [
            (reads.chunk, "--chunk"),
            (reads.queue_depth, "--queue-depth"),
            (reads.pipe_size, "--pipe-size"),
            (reads.direct, "--direct"),
            (reads.copy_kernel, "copy-kernel"),
        ]
        .into_iter()
        .filter_map(|(read, flag)| read.then_some(flag))
        .collect();
        let fallbacks: Vec<&str> = descriptor.fallbacks.iter().map(|m| m.as_str()).collect();
        table += &format!(
            "{:<16} reads {:<30} falls back to {}\n",
            descriptor.name.as_str(),
            if read.is_empty() {
                "nothing".to_string()
            } else {
                read.join(" ")
            },
            if fallbacks.is_empty() {
                "nothing (it is the last)".to_string()
            } else {
                fallbacks.join(", ")
            },
        );
        if let Err(why) = descriptor.name.available() {
            table += &format!("{:<16} unavailable here: {why}\n", "");
        }
    }
    table += &copy_kernels();
    print_stdout(&table);
    Ok(())
}

/// The copy kernels of memory -> memory flows, and which this CPU has.
fn copy_kernels() -> String {
    let kernels: Vec<String> = CopyKernel::ALL
        .into_iter()
        .map(|k| match k.missing() {
            None => format!("{k} yes"),
            Some(why) => format!("{k} - ({why})"),
        })
        .collect();
    format!(
        "\ncopy kernels of memory -> memory (read-write's copy-kernel; library and \
         profiles, chosen per size by tune): {}\n",
        kernels.join(", ")
    )
}
