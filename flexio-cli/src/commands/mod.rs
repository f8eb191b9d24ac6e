//! One module per subcommand; none imports another (what several share
//! lives beside `commands`, named for what it is).

pub(crate) mod bench;
pub(crate) mod cache;
pub(crate) mod completions;
pub(crate) mod copy;
pub(crate) mod get;
pub(crate) mod man;
pub(crate) mod mechanisms;
pub(crate) mod plan;
pub(crate) mod profile;
pub(crate) mod put;
pub(crate) mod serve;
pub(crate) mod tune;
