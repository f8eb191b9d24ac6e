//! The twenty exhibits, in the documents' order: FlexIO (6), the OS
//! project (4), TPIL (2), Cue (5), S.M.A.C.K. (3).

use std::sync::OnceLock;

use super::Exhibit;

mod cue;
mod flexio_thesis;
mod os_project;
mod smack;
mod tpil;

/// Every exhibit, in the documents' order.
///
/// # Examples
/// ```
/// assert_eq!(flexio_seeds::seeds::catalogue().len(), 20);
/// ```
pub fn catalogue() -> &'static [Exhibit] {
    static ALL: OnceLock<Vec<Exhibit>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = flexio_thesis::exhibits();
        all.extend(os_project::exhibits());
        all.extend(tpil::exhibits());
        all.extend(cue::exhibits());
        all.extend(smack::exhibits());
        all
    })
}

/// The setups outside the matrix that exhibit `id` measures (FlexIO's
/// low-memory, socket-buffer and relay runs; S.M.A.C.K.'s reads).
pub(super) fn setups(id: &str) -> &'static [super::setup::Setup] {
    match (smack::setups(id), cue::setups(id)) {
        ([], []) => flexio_thesis::setups(id),
        ([], some) | (some, _) => some,
    }
}

/// Table 8's servers behind the shared bucket (`Setup::CueSharedLink`).
pub(super) fn cue_servers() -> Vec<crate::cue_bench::Server> {
    cue::shared_servers()
}

/// The cells Cue's exhibits run cold on the throttled device
/// (`Setup::CueDiskBound`).
pub(super) fn cue_disk_cells(quick: bool) -> Vec<flexio_bench::plan::Cell> {
    cue::disk_cells(quick)
}

/// FlexIO's disk-bound setups ([`Setup::DiskBoundBySize`] and the
/// others): the file system, the cells and ours read from their
/// summaries; `None` for every other setup.
///
/// [`Setup::DiskBoundBySize`]: super::setup::Setup::DiskBoundBySize
pub(super) fn flexio_disk_bound(
    setup: super::setup::Setup,
    quick: bool,
) -> Option<flexio_thesis::DiskBound> {
    flexio_thesis::disk_bound(setup, quick)
}

/// No cells: an exhibit this bench cannot measure.
fn no_cells(_quick: bool) -> Vec<flexio_bench::plan::Cell> {
    Vec::new()
}

/// No points of ours.
fn nothing(_: &[flexio_bench::stats::Summary]) -> Vec<super::Point> {
    Vec::new()
}

/// No transcribed points.
fn no_points() -> Vec<super::Point> {
    Vec::new()
}

/// Ours as measured: the matrix's points and the setups', unchanged.
fn as_measured(points: Vec<super::Point>) -> Vec<super::Point> {
    points
}
