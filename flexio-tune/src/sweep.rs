//! `flexio tune`: the bench's machinery pointed at one question — for each
//! flow kind and size, which mechanism with which parameters is fastest on
//! this machine — and the answer written as a [`Profile`].
//!
//! A [`TunePlan`] lists, per flow kind, the sizes to measure and the
//! candidates (every mechanism serving the kind × a few parameter
//! variants, one parameter varied at a time from the defaults). It becomes
//! an ordinary bench [`Plan`] — one cell per (kind, size), the candidates
//! as its entrants, interleaved round by round — which the [`runner`] runs.
//! [`stats::summarize`] gives median, min and max per candidate; those
//! become [`Measurement`]s, [`select`] turns them into size ranges (and
//! says where the best two were inside the noise),
//! and every candidate's points are kept as its [`Curve`].
//!
use std::io;
use std::path::Path;

use crate::load::{busy_warning, CpuSample, Load};
use crate::select::{select, Candidate, Measurement};
use flexio::format_bytes;
use flexio::profile::{Curve, CurvePoint, Fingerprint, FlowKind, FlowProfile, Profile};

use flexio_harness::{
    self as harness, Cell, Entrant, Observer, Plan, Results, RunOptions, Scenario,
};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

mod candidates;
mod measurements;
pub use candidates::{candidates, sweeps_direct};
pub use measurements::{candidate_of, conditions, measurement};

/// Candidates within this fraction of the fastest count as tied (or
/// within half the fastest's own min–max spread, when that is wider, up to
/// [`crate::select::MAX_NOISE_BAND`]); the one with less CPU per byte wins.
pub const TIE_TOLERANCE: f64 = 0.03;

/// What to measure for one flow kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuneTarget {
    /// The flow kind.
    pub kind: FlowKind,
    /// Bytes per flow, one cell each.
    pub sizes: Vec<u64>,
    /// Mechanisms with parameters, each measured at every size.
    pub candidates: Vec<Candidate>,
}

/// The whole sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunePlan {
    /// Per flow kind.
    pub targets: Vec<TuneTarget>,
    /// Warm-up rounds per cell (not counted).
    pub warmups: u32,
    /// Counted rounds per cell.
    pub rounds: u32,
    /// A second pass at larger sizes for the leaders of the first.
    pub confirm: Option<Confirm>,
}

/// A second pass of a sweep: the fastest few mechanisms of some flow kinds
/// at the largest size the first pass measured, measured again at larger
/// sizes. The quick sweep stops at 64 MiB, and what leads there does not
/// always lead at 1 GiB (splice between files swung from 0.2 to 2.0 s of
/// system time per GiB here; docs/tuning.md has the history); measuring
/// every candidate at 1 GiB would take minutes, the few that could win
/// seconds. More than one size, so that the boundary between the two
/// leaders is measured, not guessed; one pass for every kind, so that
/// kinds measured at the same size share one source file. When the tune
/// knows the `flexio` executable ([`RunOptions::flexio_exe`], as `flexio
/// tune` does), the second pass runs each leader as a `flexio copy --via
/// …` process, as `auto`'s choice will run: the ranges from its sizes on
/// are decided by what a user's copy gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confirm {
    /// The flow kinds confirmed, each with the bytes per flow of its
    /// second pass (one cell per size).
    pub kinds: Vec<(FlowKind, Vec<u64>)>,
    /// How many mechanisms go on (each with its fastest parameters).
    pub mechanisms: usize,
    /// Warm-up rounds of the second pass.
    pub warmups: u32,
    /// Counted rounds of the second pass.
    pub rounds: u32,
}

impl Confirm {
    /// The cells of the second pass: for each confirmed kind, the fastest
    /// candidate of each of the `mechanisms` fastest mechanisms at the
    /// largest size `measurements` hold for it, at each of the kind's
    /// sizes larger than that. Kinds without measurements get no cell.
    ///
    /// # Examples
    /// ```
    /// use flexio::profile::FlowKind;
    /// use flexio_tune::select::{Candidate, Measurement};
    /// use flexio::{MechanismName, Params};
    /// use flexio_tune::sweep::Confirm;
    /// let measured = |mechanism, pipe_size, mb_s: f64| Measurement {
    ///     kind: FlowKind::FileToFile,
    ///     size: 64 << 20,
    ///     candidate: Candidate { mechanism, params: Params { pipe_size, ..Params::default() } },
    ///     median_bps: mb_s * 1e6, min_bps: mb_s * 1e6, max_bps: mb_s * 1e6,
    ///     cpu_ns_per_byte: 0.3,
    /// };
    /// // 64 MiB was measured in the first pass: only 1 GiB gets a cell.
    /// let confirm = Confirm { kinds: vec![(FlowKind::FileToFile, vec![64 << 20, 1 << 30])],
    ///                         mechanisms: 2, warmups: 0, rounds: 2 };
    /// let plan = confirm.cells(&[
    ///     measured(MechanismName::Splice, 1 << 20, 3400.0),
    ///     measured(MechanismName::Splice, 256 << 10, 3500.0),
    ///     measured(MechanismName::ReadWrite, 1 << 20, 3100.0),
    ///     measured(MechanismName::Mmap, 1 << 20, 700.0),
    /// ]);
    /// assert_eq!(plan.cells.len(), 1);
    /// let cell = &plan.cells[0];
    /// assert_eq!(cell.key.size, 1 << 30);
    /// // The better splice and read-write go on, and the built-in
    /// // copy-file-range beside them; mmap does not.
    /// let who: Vec<String> = cell.entrants.iter().map(|e| e.contender().label()).collect();
    /// assert_eq!(who.len(), 3);
    /// assert!(who[0].starts_with("flexio splice") && who[0].contains("256"), "{who:?}");
    /// assert!(who[1].starts_with("flexio read-write"), "{who:?}");
    /// assert!(who[2].starts_with("flexio copy-file-range"), "{who:?}");
    /// ```
    pub fn cells(&self, measurements: &[Measurement]) -> Plan {
        let mut cells = Vec::new();
        for (kind, sizes) in &self.kinds {
            let kind = *kind;
            let Some((cache, path)) = conditions(kind) else {
                continue;
            };
            let scenario = Scenario::Flow(kind);
            let of_kind = || measurements.iter().filter(move |m| m.kind == kind);
            let Some(largest) = of_kind().map(|m| m.size).max() else {
                continue;
            };
            let mut at_largest: Vec<&Measurement> =
                of_kind().filter(|m| m.size == largest).collect();
            at_largest.sort_by(|a, b| b.median_bps.total_cmp(&a.median_bps));
            let mut leaders: Vec<Candidate> = Vec::new();
            for m in at_largest {
                if leaders.len() < self.mechanisms
                    && !leaders.iter().any(|c| c.mechanism == m.candidate.mechanism)
                {
                    leaders.push(m.candidate.clone());
                }
            }
            // What `auto` does without a profile runs beside them: a
            // leader replaces it only by a lead beyond both one's noise
            // (`select`), which needs its runs at the same size.
            let builtin = builtin_candidate(kind);
            if !leaders.contains(&builtin) {
                leaders.push(builtin);
            }
            for &size in sizes.iter().filter(|&&size| size > largest) {
                let entrants = leaders
                    .iter()
                    .map(|c| Entrant::with_params(c.mechanism, c.params.clone()))
                    .collect();
                cells.push(Cell::new(scenario, size, cache, entrants).path(path));
            }
        }
        Plan { cells }
    }
}

/// The built-in table's choice for `kind`: its mechanism with the default
/// parameters, what `auto` runs without a profile.
///
/// # Examples
/// ```
/// use flexio::profile::FlowKind;
/// let builtin = flexio_tune::sweep::builtin_candidate(FlowKind::FileToFile);
/// assert_eq!(builtin.mechanism, flexio::MechanismName::CopyFileRange);
/// assert_eq!(builtin.params, flexio::Params::default());
/// ```
pub fn builtin_candidate(kind: FlowKind) -> Candidate {
    let (source, sink) = kind.representative_pair();
    let mechanism = flexio::builtin_choice(source, sink);
    Candidate {
        mechanism,
        params: flexio::Params {
            direct: mechanism == flexio::MechanismName::Direct,
            ..flexio::Params::default()
        },
    }
}

/// The profile made by a tune, with the bench results it came from.
#[derive(Clone, Debug)]
pub struct Tuned {
    /// The decisions, not yet saved.
    pub profile: Profile,
    /// Every run, for a report.
    pub results: Results,
    /// How busy others kept the CPUs while the sweep ran (`None` where
    /// `/proc` could not say).
    pub during: Option<Load>,
}

impl TunePlan {
    /// The sweep of `flexio tune --quick`: at most a minute on a 2-core
    /// machine — two chunk sizes, two pipe sizes, io-uring at queue depth
    /// 8, O_DIRECT for the durable kind only (see [`sweeps_direct`]),
    /// sizes 4 KiB to 64 MiB, one warm-up and six counted rounds. The
    /// durable kind is measured at 4 KiB and 32 MiB only: in between its
    /// runs are an fsync's latency, which no mechanism changes. Then the
    /// two fastest mechanisms of file → file at 64 MiB and the built-in
    /// choice are measured again at 256 MiB, and those of durable file →
    /// file at 32 MiB again at 1 GiB (one warm-up and four counted rounds
    /// in rotating order; see [`Confirm`]); the last ranges start where
    /// they say.
    pub fn quick() -> Self {
        let sizes = |kind| -> Vec<u64> {
            match kind {
                // 32 MiB, not 64: at 64 MiB its cold, fsynced runs took a
                // fifth of the sweep, and its leaders go on to 1 GiB.
                FlowKind::FileToFileDurable => vec![4 * KIB, 32 * MIB],
                // 1 MiB as well: winners change between 256 KiB and
                // 16 MiB, and without a point there the boundary is a
                // guess (halfway, 2 MiB).
                _ => vec![4 * KIB, 256 * KIB, MIB, 16 * MIB, 64 * MIB],
            }
        };
        Self {
            confirm: Some(Confirm {
                kinds: vec![
                    // 256 MiB only: the time of twice the runs at 1 GiB
                    // went to the built-in choice, a warm-up and rounds,
                    // within `--quick`'s minute and a half; from 256 MiB
                    // up one range.
                    (FlowKind::FileToFile, vec![256 * MIB]),
                    // Not 256 MiB for the durable kind: there every
                    // buffered mechanism tied, while at 1 GiB splice fell
                    // to half of copy-file-range's throughput.
                    (FlowKind::FileToFileDurable, vec![GIB]),
                ],
                // Two leaders and the built-in choice: with three leaders
                // and two rounds each, the runs that decided 256 MiB were
                // two per mechanism, the same one always last in its round
                // and the first run right after the source was written,
                // and the built-in was not always measured there at all.
                mechanisms: 2,
                // One warm-up (the first copy after the source was written
                // ran slower than the rest) and four counted rounds in
                // rotating order; a median of four and their spread, which
                // the noise rule weighs.
                warmups: 1,
                rounds: 4,
            }),
            ..Self::sweep(false, sizes, 1, 6)
        }
    }

    /// The sweep of `flexio tune --full`: 4 KiB to 1 GiB, chunks 64 KiB to
    /// 8 MiB, queue depths 4 to 64, pipe sizes 64 KiB to 1 MiB, one
    /// warm-up and five counted rounds.
    pub fn full() -> Self {
        let sizes = |_| vec![4 * KIB, 64 * KIB, MIB, 16 * MIB, 256 * MIB, GIB];
        Self::sweep(true, sizes, 1, 5)
    }

    fn sweep(full: bool, sizes: impl Fn(FlowKind) -> Vec<u64>, warmups: u32, rounds: u32) -> Self {
        let targets = FlowKind::TUNED
            .into_iter()
            .map(|kind| TuneTarget {
                kind,
                sizes: sizes(kind),
                candidates: candidates(kind, full),
            })
            .collect();
        TunePlan {
            targets,
            warmups,
            rounds,
            confirm: None,
        }
    }

    /// The bench plan: one cell per (flow kind, size), the candidates as
    /// its entrants.
    pub fn cells(&self) -> Plan {
        let mut cells = Vec::new();
        for target in &self.targets {
            let Some((cache, path)) = conditions(target.kind) else {
                continue;
            };
            let scenario = Scenario::Flow(target.kind);
            for &size in &target.sizes {
                let entrants = target
                    .candidates
                    .iter()
                    .map(|c| Entrant::with_params(c.mechanism, c.params.clone()))
                    .collect();
                cells.push(Cell::new(scenario, size, cache, entrants).path(path));
            }
        }
        Plan { cells }
    }
}

/// Runs `plan` in a temporary directory under `options.dir` (whose file
/// system is the one tuned) and makes the profile; `options.warmups` and
/// `options.rounds` are taken from the plan.
///
/// # Errors
/// Only when the temporary directory cannot be made; a candidate that
/// fails is left out of its cell and named in the profile's notes.
pub fn tune(
    plan: &TunePlan,
    options: &RunOptions,
    observer: &mut dyn Observer,
) -> io::Result<Tuned> {
    let mut options = options.clone();
    options.warmups = plan.warmups;
    options.rounds = plan.rounds;
    options.profile = None;
    let started = CpuSample::now();
    let mut results = harness::run(&plan.cells(), &options, observer)?;
    let stopped = results.notes.iter().any(|n| n == harness::STOPPED_EARLY);
    if let (Some(confirm), false) = (&plan.confirm, stopped) {
        let measurements: Vec<Measurement> = harness::summarize(&results)
            .iter()
            .filter_map(measurement)
            .collect();
        let mut second = confirm.cells(&measurements);
        match &options.flexio_exe {
            // What `auto` picks runs as `flexio copy`: measured inside the
            // tune, a 1 MiB read-write buffer costs nothing (it is warm from
            // the run before), and read-write with 1 MiB chunks led warm
            // 256 MiB copies, while as a process it ran at 0.87–0.92× plain
            // splice. So the leaders are measured again as processes.
            Some(_) => {
                for cell in &mut second.cells {
                    for entrant in &mut cell.entrants {
                        if let Entrant::Flexio {
                            mechanism, params, ..
                        } = entrant
                        {
                            *entrant = Entrant::process(*mechanism, params.clone());
                        }
                    }
                }
            }
            None if !second.cells.is_empty() => results.notes.push(
                "no flexio executable given: the leaders were measured again in-process, \
                 not as flexio copy processes"
                    .to_string(),
            ),
            None => {}
        }
        if !second.cells.is_empty() {
            options.warmups = confirm.warmups;
            options.rounds = confirm.rounds;
            let mut observer = SecondPass {
                inner: observer,
                seen: results.notes.clone(),
            };
            let more = harness::run(&second, &options, &mut observer)?;
            results.runs.extend(more.runs);
            for note in more.notes {
                if !results.notes.contains(&note) {
                    results.notes.push(note);
                }
            }
        }
    }
    let during = started
        .zip(CpuSample::now())
        .and_then(|(before, after)| Load::between(before, after));
    if let Some(warning) = during.and_then(|load| busy_warning(load, "during the sweep")) {
        observer.note(&warning);
        results.notes.push(warning);
    }
    let profile = build_profile(plan, &results, &options.dir);
    Ok(Tuned {
        profile,
        results,
        during,
    })
}

/// The observer of a sweep's second pass: its cells are labelled as such,
/// and what the first pass already noted is not said twice.
struct SecondPass<'a> {
    inner: &'a mut dyn Observer,
    seen: Vec<String>,
}

impl Observer for SecondPass<'_> {
    fn cell_started(&mut self, index: usize, cells: usize, label: &str) {
        self.inner
            .cell_started(index, cells, &format!("leaders again: {label}"));
    }

    fn run_finished(&mut self, done: usize, total: usize) {
        self.inner.run_finished(done, total);
    }

    fn note(&mut self, text: &str) {
        if !self.seen.iter().any(|seen| seen == text) {
            self.inner.note(text);
        }
    }

    fn should_stop(&mut self) -> bool {
        self.inner.should_stop()
    }
}

/// The profile from a tune's results: per flow kind the ranges chosen from
/// the measurements and every candidate's curve.
pub fn build_profile(plan: &TunePlan, results: &Results, dir: &Path) -> Profile {
    let summaries = harness::summarize(results);
    // Absolute, so that the fingerprint check finds the same file system
    // from any working directory.
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut profile = Profile::new(Fingerprint::of_this_machine(&dir), &dir);
    profile.notes.extend(results.notes.iter().cloned());
    for summary in &summaries {
        if let (Some(candidate), Some(used)) = (
            candidate_of(&summary.contender),
            summary.mechanism_used.as_deref(),
        ) && used != candidate.mechanism.as_str()
        {
            profile.notes.push(format!(
                "{}: {} fell back to {used}; not a candidate there",
                harness::label(&summary.cell),
                summary.contender.label()
            ));
        }
    }
    let measurements: Vec<Measurement> = summaries.iter().filter_map(measurement).collect();
    for target in &plan.targets {
        let selection = select(&measurements, target.kind, TIE_TOLERANCE);
        profile
            .notes
            .extend(selection.ties.iter().map(|tie| tie.note()));
        let ranges = selection.ranges;
        if ranges.is_empty() {
            profile.notes.push(format!(
                "{}: nothing measured; auto uses the built-in table there",
                target.kind
            ));
            continue;
        }
        let curves = target
            .candidates
            .iter()
            .filter_map(|candidate| curve(&measurements, target.kind, candidate))
            .collect();
        profile.flows.push(FlowProfile {
            kind: target.kind,
            ranges,
            curves,
        });
    }
    profile
}

/// The measured points of one candidate, by size.
fn curve(measurements: &[Measurement], kind: FlowKind, candidate: &Candidate) -> Option<Curve> {
    let mut points: Vec<CurvePoint> = measurements
        .iter()
        .filter(|m| m.kind == kind && &m.candidate == candidate)
        .map(|m| CurvePoint {
            size: m.size,
            median_bytes_per_s: m.median_bps as u64,
            min_bytes_per_s: m.min_bps as u64,
            max_bytes_per_s: m.max_bps as u64,
            cpu_ns_per_byte: m.cpu_ns_per_byte,
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    points.sort_by_key(|p| p.size);
    let params = &candidate.params;
    Some(Curve {
        mechanism: candidate.mechanism,
        chunk: params.chunk,
        queue_depth: params.queue_depth,
        pipe_size: params.pipe_size,
        direct: params.direct,
        copy_kernel: params.copy_kernel,
        points,
    })
}

/// A one-line description of a plan: kinds, cells, runs.
pub fn describe(plan: &TunePlan) -> String {
    let cells = plan.cells();
    let kinds: Vec<String> = plan
        .targets
        .iter()
        .map(|t| {
            let sizes: Vec<String> = t.sizes.iter().map(|&s| format_bytes(s)).collect();
            format!(
                "{} ({} candidates at {})",
                t.kind,
                t.candidates.len(),
                sizes.join(", ")
            )
        })
        .collect();
    let mut text = format!(
        "{}\n{} cells, {} timed runs ({} warm-up + {} counted rounds each, interleaved)",
        kinds.join("\n"),
        cells.cells.len(),
        cells.runs(plan.warmups, plan.rounds),
        plan.warmups,
        plan.rounds
    );
    if let Some(confirm) = &plan.confirm {
        let kinds: Vec<String> = confirm
            .kinds
            .iter()
            .map(|(kind, sizes)| {
                let sizes: Vec<String> = sizes.iter().map(|&s| format_bytes(s)).collect();
                format!("{kind} at {}", sizes.join(" and "))
            })
            .collect();
        text.push_str(&format!(
            "\nthen the {} fastest mechanisms at the largest size again: {} \
             ({} warm-up + {} counted rounds each)",
            confirm.mechanisms,
            kinds.join(", "),
            confirm.warmups,
            confirm.rounds
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tuned_kind_has_a_scenario_and_is_swept() {
        let plan = TunePlan::quick();
        let kinds: Vec<FlowKind> = plan.targets.iter().map(|t| t.kind).collect();
        assert_eq!(kinds, FlowKind::TUNED);
        for kind in FlowKind::TUNED {
            assert!(conditions(kind).is_some(), "{kind}");
            assert!(Scenario::ALL.contains(&Scenario::Flow(kind)), "{kind}");
        }
        assert_eq!(conditions(FlowKind::Other), None);
    }
}
