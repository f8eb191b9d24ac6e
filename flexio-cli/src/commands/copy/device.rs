//! `flexio copy FILE gpu:N[@OFFSET[+LEN]]`: a file into GPU memory by one
//! of TPIL's injection modes (`--via pageable|pinned|staged|registered`,
//! or `auto`: by size), with `--verify` reading it back to compare. The
//! memory is this process's, so it is gone when the command ends: the
//! command measures and checks the load; a program keeps the memory by
//! calling `flexio::device` itself.

use std::time::Duration;

use flexio::device::{load_file, verify_load, DeviceAddress, DeviceMode, Gpu, DEFAULT_PIECE};

use super::CopyArgs;
use crate::error::{Error, Result};
use crate::output::{document, elapsed, print_err, print_out, rate, size, Telling};

/// What the JSON report of a device load holds.
#[derive(serde::Serialize)]
struct DeviceLoad<'a> {
    source: &'a str,
    sink: String,
    device: String,
    mode: &'static str,
    bytes: u64,
    seconds: f64,
    o_direct: bool,
    verified: bool,
}

/// Loads `source` into `at`.
pub(super) fn run(args: &CopyArgs, source: &str, at: DeviceAddress) -> Result<()> {
    refuse_flow_options(args)?;
    let mode = match args.via.as_str() {
        "auto" => None,
        via => Some(via.parse::<DeviceMode>()?),
    };
    let device_error = |source| flexio::Error::Device {
        endpoint: at.to_string(),
        offset: None,
        source,
    };
    let gpu = Gpu::open(at.ordinal).map_err(device_error)?;
    let length = match at.len {
        Some(len) => len,
        None => std::fs::metadata(source)
            .map_err(|e| Error::io("stat", source.as_ref(), e))?
            .len(),
    };
    let mode = mode.unwrap_or_else(|| DeviceMode::builtin_choice(length));
    let piece = args.chunk.map_or(DEFAULT_PIECE, |chunk| {
        usize::try_from(chunk).unwrap_or(usize::MAX)
    });
    let (memory, report) = load_file(source.as_ref(), &gpu, at, mode, piece)?;
    if args.verify {
        verify_load(source.as_ref(), &gpu, &memory, at, report.bytes, piece)?;
    }
    let name = gpu.name().map_err(device_error)?;
    let telling = Telling::for_this_process(args.quiet, args.json, args.report);
    let time = Duration::from_secs_f64(report.seconds);
    match telling {
        Telling::Nothing => {}
        Telling::Json => print_out(
            &document(
                "device-load",
                &DeviceLoad {
                    source,
                    sink: at.to_string(),
                    device: name,
                    mode: mode.as_str(),
                    bytes: report.bytes,
                    seconds: report.seconds,
                    o_direct: report.direct,
                    verified: args.verify,
                },
            ),
            false,
        ),
        Telling::Summary | Telling::Report => print_err(&format!(
            "{} into {at} ({name}) in {}{} by {}{}{}",
            size(report.bytes),
            elapsed(time),
            rate(report.bytes, time).map_or(String::new(), |r| format!(", {r}")),
            mode.as_str(),
            if report.direct { " (O_DIRECT)" } else { "" },
            if args.verify { ", verified" } else { "" },
        )),
    }
    Ok(())
}

/// The flags of a flow that mean nothing for a device load.
fn refuse_flow_options(args: &CopyArgs) -> Result<()> {
    let given = [
        ("--offset", args.offset != 0),
        ("--length", args.length.is_some()),
        ("--seek", args.seek != 0),
        ("--in-place", args.in_place),
        ("--fsync", args.fsync),
        ("--rate", args.rate.is_some()),
        ("--schedule", args.schedule.is_some()),
        ("--socket-buffer", args.socket_buffer.is_some()),
        ("--direct", args.direct),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(Error::Usage(format!(
            "{flag} does not apply to a GPU sink (its range is gpu:N@OFFSET+LEN; \
             --via registered reads with O_DIRECT)"
        ))),
        None => Ok(()),
    }
}
