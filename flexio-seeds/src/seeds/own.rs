//! The setups some exhibits measure outside the matrix (`thesis_bench`:
//! a 128 MiB memory cgroup, a socket-buffer sweep, a relay across three
//! network namespaces; `smack_bench`: S.M.A.C.K.'s reads into memory;
//! `cue_bench`: Cue's cells cold on a throttled device, Table 8 behind a
//! shared bucket), each run once however many exhibits use it, and their
//! points (or the summaries of the cells they ran) handed to the report
//! beside the matrix's.

use super::setup::Setup;
use super::{catalogue, Exhibit, Point};
use crate::thesis_bench::{self, ThesisOptions, ThesisOutcome, ThesisPoint};
use crate::{cue_bench, smack_bench};
use flexio_bench::stats::Summary;

impl Setup {
    /// Its outcome, and the summaries of the matrix's cells it ran
    /// elsewhere (Cue's on the throttled device), if any.
    fn run(self, options: &ThesisOptions) -> (ThesisOutcome, Vec<Summary>) {
        let outcome = match self {
            Setup::LowMemoryBySize => thesis_bench::by_size(options),
            Setup::LowMemoryBySizeSmallBuffers => thesis_bench::by_size_small_buffers(options),
            Setup::LowMemoryByBuffer => thesis_bench::by_buffer(options),
            Setup::SocketBuffers => thesis_bench::socket_buffers(options),
            Setup::UdpBuffers => thesis_bench::udp_buffers(options),
            Setup::Relay => thesis_bench::relay(options),
            Setup::SmackUncached => smack_bench::uncached(options, &smack_bench::SIZES_MB),
            Setup::SmackCached => smack_bench::cached(options, &smack_bench::SIZES_MB),
            Setup::SmackRaw => smack_bench::raw_read(options),
            Setup::CueSharedLink => cue_bench::shared_link(options, &catalogue::cue_servers()),
            Setup::CueDiskBound => {
                return cue_bench::disk_bound(options, catalogue::cue_disk_cells(options.quick))
            }
            Setup::DiskBoundBySize | Setup::DiskBoundBySizeExt2 | Setup::DiskBoundByBuffer => {
                return (self.disk_bound(options), Vec::new());
            }
        };
        (outcome, Vec::new())
    }

    /// FlexIO's cells on a throttled device, ours read from their
    /// summaries as the setup's points (named by file system, so that
    /// ext4's and ext2's cells, alike in the matrix's terms, stay apart).
    fn disk_bound(self, options: &ThesisOptions) -> ThesisOutcome {
        let Some(plan) = catalogue::flexio_disk_bound(self, options.quick) else {
            return ThesisOutcome {
                shortfall: Some(format!("setup {self:?} has no cells")),
                ..ThesisOutcome::default()
            };
        };
        let name = format!("thesis-{}", plan.fs.name());
        let (mut outcome, summaries) =
            thesis_bench::disk_bound(options, &name, plan.fs, plan.cells);
        outcome.points = thesis_points((plan.ours)(&summaries));
        outcome
    }
}

/// `points` as a setup's outcome holds them.
pub(super) fn thesis_points(points: Vec<Point>) -> Vec<ThesisPoint> {
    points
        .into_iter()
        .map(|p| ThesisPoint {
            spread: p
                .spread
                .zip(p.rounds)
                .map(|((low, high), n)| (low, high, n)),
            series: p.series,
            x: p.x,
            y: p.y,
        })
        .collect()
}

/// What the setups of a seeds run measured.
#[derive(Debug, Default)]
pub struct OwnRuns {
    outcomes: Vec<(Setup, ThesisOutcome)>,
    /// The summaries of cells a setup ran through the matrix's runner
    /// in a setting of its own.
    summaries: Vec<(Setup, Vec<Summary>)>,
}

impl OwnRuns {
    /// The points of `exhibit`'s setups, in the report's terms.
    pub(super) fn points(&self, exhibit: &Exhibit) -> Vec<Point> {
        self.of(exhibit)
            .flat_map(|outcome| &outcome.points)
            .map(|p| match p.spread {
                Some((low, high, rounds)) => {
                    Point::new(&p.series, p.x, p.y).with_spread(low, high, rounds)
                }
                None => Point::new(&p.series, p.x, p.y),
            })
            .collect()
    }

    /// The summaries of the cells `exhibit`'s setups ran elsewhere.
    pub(super) fn summaries(&self, exhibit: &Exhibit) -> Vec<Summary> {
        let wanted = catalogue::setups(exhibit.id);
        self.summaries
            .iter()
            .filter(|(setup, _)| wanted.contains(setup))
            .flat_map(|(_, summaries)| summaries.iter().cloned())
            .collect()
    }

    /// Why `exhibit`'s setups fell short, if one did.
    pub(super) fn shortfall(&self, exhibit: &Exhibit) -> Option<String> {
        let why: Vec<&str> = self
            .of(exhibit)
            .filter_map(|outcome| outcome.shortfall.as_deref())
            .collect();
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Each of `exhibit`'s setups that produced no point, in words.
    pub(super) fn empty(&self, exhibit: &Exhibit) -> Vec<String> {
        let wanted = catalogue::setups(exhibit.id);
        wanted
            .iter()
            .filter(|setup| {
                !self
                    .outcomes
                    .iter()
                    .any(|(s, outcome)| s == *setup && !outcome.points.is_empty())
                    && !self
                        .summaries
                        .iter()
                        .any(|(s, summaries)| s == *setup && !summaries.is_empty())
            })
            .map(|setup| format!("setup {setup:?}: no points"))
            .collect()
    }

    /// Where `exhibit`'s setups ran.
    pub(super) fn settings(&self, exhibit: &Exhibit) -> Vec<&str> {
        self.of(exhibit)
            .map(|outcome| outcome.setting.as_str())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// Runs that measured `outcome` for `setup` (tests).
    #[cfg(test)]
    pub(super) fn with(setup: Setup, outcome: ThesisOutcome) -> OwnRuns {
        OwnRuns::with_all(vec![(setup, outcome)])
    }

    /// Runs that measured each of `outcomes` (tests).
    #[cfg(test)]
    pub(super) fn with_all(outcomes: Vec<(Setup, ThesisOutcome)>) -> OwnRuns {
        OwnRuns {
            outcomes,
            summaries: Vec::new(),
        }
    }

    fn of<'a>(&'a self, exhibit: &Exhibit) -> impl Iterator<Item = &'a ThesisOutcome> {
        let wanted = catalogue::setups(exhibit.id);
        self.outcomes
            .iter()
            .filter(move |(setup, _)| wanted.contains(setup))
            .map(|(_, outcome)| outcome)
    }
}

/// Runs the setups `exhibits` need, each once, in the catalogue's order;
/// a signal (`options.stop`) ends the one running and skips the rest.
pub fn run_own(exhibits: &[&Exhibit], options: &ThesisOptions) -> OwnRuns {
    let mut runs = OwnRuns::default();
    for exhibit in exhibits {
        for &setup in catalogue::setups(exhibit.id) {
            if runs.outcomes.iter().any(|(s, _)| *s == setup) {
                continue;
            }
            let (outcome, summaries) = if options.stop.load(std::sync::atomic::Ordering::Relaxed) {
                let stopped = ThesisOutcome {
                    shortfall: Some("stopped by a signal".into()),
                    ..ThesisOutcome::default()
                };
                (stopped, Vec::new())
            } else {
                setup.run(options)
            };
            runs.outcomes.push((setup, outcome));
            runs.summaries.push((setup, summaries));
        }
    }
    runs
}

/// Whether `exhibit` has setups outside the matrix.
pub fn has_setups(exhibit: &Exhibit) -> bool {
    !catalogue::setups(exhibit.id).is_empty()
}
