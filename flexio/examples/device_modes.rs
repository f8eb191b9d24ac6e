//! TPIL's experiment on a GPU: each injection mode at each size, from a
//! warm file into device memory, median GB/s of five runs with the
//! slowest and fastest beside it. Run on a machine with a GPU:
//!
//! ```text
//! cargo run --release -p flexio --example device_modes [DIR]
//! ```
//!
//! DIR (default: the system's temporary directory) holds the files; the
//! largest is 1 GiB. Without a GPU it says why and exits 1.

use std::path::PathBuf;

use flexio::device::{load_file, DeviceAddress, DeviceMode, Gpu, DEFAULT_PIECE};

const SIZES: [u64; 7] = [
    4 << 10,
    64 << 10,
    1 << 20,
    16 << 20,
    64 << 20,
    256 << 20,
    1 << 30,
];
const RUNS: usize = 5;

fn main() {
    let dir: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let gpu = match Gpu::open(0) {
        Ok(gpu) => gpu,
        Err(error) => {
            eprintln!("device_modes: gpu:0: {error}");
            std::process::exit(1);
        }
    };
    let name = gpu.name().unwrap_or_else(|e| e.to_string());
    println!(
        "# {name}: file (warm page cache) -> gpu:0, GB/s, median of {RUNS} (slowest - fastest)"
    );
    println!();
    let modes = DeviceMode::ALL.map(DeviceMode::as_str).join(" | ");
    println!("| bytes | {modes} |");
    println!("|---:|{}", "---:|".repeat(DeviceMode::ALL.len()));
    for size in SIZES {
        let path = dir.join(format!("flexio-device-{size}"));
        let data: Vec<u8> = (0..size).map(|i| (i >> 12) as u8 ^ i as u8).collect();
        std::fs::write(&path, &data).expect("write the test file");
        let mut cells = Vec::new();
        for mode in DeviceMode::ALL {
            let mut rates = Vec::new();
            for _ in 0..RUNS {
                let at = DeviceAddress::parse("gpu:0").unwrap().unwrap();
                // The report's time runs from the first read to the last
                // byte on the device: the allocation is not in it.
                match load_file(&path, &gpu, at, mode, DEFAULT_PIECE) {
                    Ok((_memory, report)) => rates.push(size as f64 / report.seconds / 1e9),
                    Err(error) => {
                        eprintln!("{mode:?} at {size}: {error}");
                        break;
                    }
                }
            }
            rates.sort_by(f64::total_cmp);
            cells.push(match rates.len() {
                0 => "failed".to_string(),
                n => format!(
                    "{:.2} ({:.2} - {:.2})",
                    rates[n / 2],
                    rates[0],
                    rates[n - 1]
                ),
            });
        }
        println!("| {size} | {} |", cells.join(" | "));
        let _ = std::fs::remove_file(&path);
    }
}
