//! The original documents' tables printed beside the product scenarios
//! that repeat their experiments. The harness only names the place; the
//! paper reproductions (the `flexio-seeds` crate, above this one)
//! register the texts, so nothing here knows a document.

use std::sync::OnceLock;

/// A place in a product report with room for an original's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beside {
    /// The `meter` scenario's table.
    Meter,
    /// The `parallel` scenario's table.
    Parallel,
    /// The `schedule` scenario's (k, t) grid.
    Schedule,
    /// The server scenario's clients.
    ServeClients,
}

/// What a reproduction prints at each place.
pub type Texts = fn(Beside) -> Vec<&'static str>;

static REGISTERED: OnceLock<Texts> = OnceLock::new();

/// Registers `texts`; the first registration stays, later ones change
/// nothing.
///
/// # Examples
/// ```
/// use flexio_bench::originals::{register, texts, Beside};
/// fn mine(_: Beside) -> Vec<&'static str> {
///     vec!["an original's table"]
/// }
/// register(mine);
/// assert_eq!(texts(Beside::Meter), ["an original's table"]);
/// ```
pub fn register(texts: Texts) {
    let _ = REGISTERED.set(texts);
}

/// The texts registered for `place`; none when nothing registered.
///
/// # Examples
/// ```
/// use flexio_bench::originals::{texts, Beside};
/// assert!(texts(Beside::Parallel).is_empty());
/// ```
pub fn texts(place: Beside) -> Vec<&'static str> {
    REGISTERED.get().map_or_else(Vec::new, |texts| texts(place))
}
