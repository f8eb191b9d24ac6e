//! Doubly linked lists threaded through `Vec`s by `u32` index.
//!
//! Several lists may share one [`Links`] arena (ARC's four, S3-FIFO's two):
//! a node belongs to at most one list at a time, and the list header
//! ([`List`]) only knows its ends and length. Pushing, unlinking and popping
//! are O(1) and allocate nothing after the arena is made.

/// The index that means "no node".
pub(crate) const NIL: u32 = u32::MAX;

/// `prev`/`next` links of `len` nodes.
pub(crate) struct Links {
    prev: Vec<u32>,
    next: Vec<u32>,
}

impl Links {
    pub fn new(len: usize) -> Self {
        Links {
            prev: vec![NIL; len],
            next: vec![NIL; len],
        }
    }

    /// The node after `node` towards the tail (older end), or [`NIL`].
    #[cfg(test)]
    pub fn next(&self, node: u32) -> u32 {
        self.next[node as usize]
    }

    /// The node before `node` towards the head (newer end), or [`NIL`].
    pub fn prev(&self, node: u32) -> u32 {
        self.prev[node as usize]
    }
}

/// One list over a [`Links`] arena: `head` is the newest end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct List {
    head: u32,
    tail: u32,
    len: usize,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl List {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    pub fn push_head(&mut self, links: &mut Links, node: u32) {
        links.prev[node as usize] = NIL;
        links.next[node as usize] = self.head;
        if self.head != NIL {
            links.prev[self.head as usize] = node;
        } else {
            self.tail = node;
        }
        self.head = node;
        self.len += 1;
    }

    /// Unlinks `node`, which must be in this list.
    pub fn unlink(&mut self, links: &mut Links, node: u32) {
        let (prev, next) = (links.prev[node as usize], links.next[node as usize]);
        if prev != NIL {
            links.next[prev as usize] = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            links.prev[next as usize] = prev;
        } else {
            self.tail = prev;
        }
        links.prev[node as usize] = NIL;
        links.next[node as usize] = NIL;
        self.len -= 1;
    }

    pub fn pop_tail(&mut self, links: &mut Links) -> Option<u32> {
        let tail = self.tail()?;
        self.unlink(links, tail);
        Some(tail)
    }

    /// Moves `node`, already in this list, to the head.
    pub fn move_to_head(&mut self, links: &mut Links, node: u32) {
        if self.head != node {
            self.unlink(links, node);
            self.push_head(links, node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Links, List};

    fn order(list: &List, links: &Links) -> Vec<u32> {
        let mut out = Vec::new();
        let mut node = list.head;
        while node != super::NIL {
            out.push(node);
            node = links.next(node);
        }
        out
    }

    #[test]
    fn lists_push_unlink_pop_and_move() {
        let mut links = Links::new(5);
        let (mut a, mut b) = (List::default(), List::default());
        for node in 0..3 {
            a.push_head(&mut links, node);
        }
        b.push_head(&mut links, 3);
        assert_eq!(order(&a, &links), [2, 1, 0]);
        a.move_to_head(&mut links, 0);
        assert_eq!(order(&a, &links), [0, 2, 1]);
        a.unlink(&mut links, 2);
        assert_eq!(order(&a, &links), [0, 1]);
        assert_eq!(a.pop_tail(&mut links), Some(1));
        assert_eq!(a.pop_tail(&mut links), Some(0));
        assert_eq!(a.pop_tail(&mut links), None);
        assert_eq!((a.len(), b.len()), (0, 1));
        assert_eq!(b.tail(), Some(3));
    }
}
