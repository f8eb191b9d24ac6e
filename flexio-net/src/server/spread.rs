//! How new connections spread over the workers. Every worker listens
//! (`EPOLLEXCLUSIVE`: a new connection wakes one that waits), but the
//! one that accepts keeps a connection only when no other worker holds
//! fewer; else it hands the connection to the worker holding the fewest,
//! through that worker's inbox and wake-up eventfd. Without it,
//! connections opened together went to whichever worker came back to
//! `epoll_wait` first: at 64 wrk connections, one worker of eight held 33
//! and three held none, and the 4 KiB p99 was nginx's several times over.
//! Even by one: a worker follows its clients' CPU ([`super::affinity`])
//! only when they share one, and handing over only at a difference of
//! two left 4 clients on 4 workers held 2, 2, 0, 0, a worker serving two
//! client threads that ran on different CPUs.

use std::net::{SocketAddr, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A connection accepted by one worker for another.
pub(crate) type Handed = (TcpStream, SocketAddr);

/// The workers' connection counts and inboxes.
pub(crate) struct Spread {
    /// Connections each worker holds, those handed to it included.
    held: Vec<AtomicUsize>,
    inbox: Vec<Mutex<Vec<Handed>>>,
    /// Each worker's wake-up eventfd, set once before any runs.
    wakes: OnceLock<Vec<Arc<OwnedFd>>>,
}

impl Spread {
    /// Counts and inboxes for `workers` workers.
    pub fn new(workers: usize) -> Spread {
        let workers = workers.max(1);
        Spread {
            held: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            inbox: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
            wakes: OnceLock::new(),
        }
    }

    /// The workers' wake-up eventfds, in worker order.
    pub fn set_wakes(&self, wakes: Vec<Arc<OwnedFd>>) {
        let _ = self.wakes.set(wakes);
    }

    /// Connections each worker holds now.
    pub fn held(&self) -> Vec<usize> {
        self.held
            .iter()
            .map(|held| held.load(Ordering::Relaxed))
            .collect()
    }

    /// Says that worker `index` holds `was` connections no more but
    /// `now` (changes, not counts: a connection handed to it is counted
    /// from when it is handed).
    pub fn count(&self, index: usize, was: usize, now: usize) {
        if let Some(held) = self.held.get(index) {
            if now > was {
                held.fetch_add(now - was, Ordering::Relaxed);
            } else {
                let _ = held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                    Some(held.saturating_sub(was - now))
                });
            }
        }
    }

    /// Where a connection worker `index` just accepted goes: `None` to
    /// keep it, else the worker holding the fewest, when that is fewer
    /// than `index` holds.
    pub fn place(&self, index: usize) -> Option<usize> {
        let mine = self.held.get(index)?.load(Ordering::Relaxed);
        let (fewest, count) = self
            .held
            .iter()
            .enumerate()
            .map(|(other, held)| (other, held.load(Ordering::Relaxed)))
            .min_by_key(|&(_, count)| count)?;
        (fewest != index && count < mine).then_some(fewest)
    }

    /// Hands `connection` to worker `to` and wakes it (kept by the caller
    /// when `to` has no inbox).
    pub fn hand(&self, to: usize, connection: Handed) -> Option<Handed> {
        let (Some(inbox), Some(held)) = (self.inbox.get(to), self.held.get(to)) else {
            return Some(connection);
        };
        inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(connection);
        held.fetch_add(1, Ordering::Relaxed);
        if let Some(wake) = self.wakes.get().and_then(|wakes| wakes.get(to)) {
            let _ = rustix::io::write(&**wake, &1u64.to_ne_bytes());
        }
        None
    }

    /// The connections handed to worker `index` since it last looked,
    /// counted no more until it says it holds them.
    pub fn take(&self, index: usize) -> Vec<Handed> {
        let handed = self.inbox.get(index).map_or_else(Vec::new, |inbox| {
            std::mem::take(&mut *inbox.lock().unwrap_or_else(|p| p.into_inner()))
        });
        self.count(index, handed.len(), 0);
        handed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_goes_to_the_worker_holding_fewest() {
        let spread = Spread::new(3);
        assert_eq!(spread.place(0), None);
        spread.count(0, 0, 1);
        assert_eq!(spread.place(0), Some(1));
        spread.count(1, 0, 1);
        spread.count(2, 0, 1);
        assert_eq!(spread.place(0), None, "all hold as many");
        spread.count(0, 1, 2);
        spread.count(1, 1, 2);
        assert_eq!(spread.place(0), Some(2));
        assert_eq!(spread.place(2), None, "it holds the fewest");
        spread.count(0, 2, 0);
        assert_eq!(spread.held(), [0, 2, 1]);
        assert_eq!(spread.place(7), None);
    }

    #[test]
    fn a_handed_connection_waits_in_its_workers_inbox_and_counts() {
        let spread = Spread::new(2);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let accepted = listener.accept().unwrap();
        assert!(spread.hand(1, accepted).is_none());
        assert_eq!(spread.held(), [0, 1]);
        assert_eq!(spread.take(1).len(), 1);
        assert_eq!(spread.held(), [0, 0], "counted again once adopted");
        assert!(spread.take(1).is_empty());
    }
}
