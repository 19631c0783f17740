//! A part of a state that successors share until one changes it: a clone
//! is a reference count, and the first mutable use of a shared value
//! copies it (`Arc::make_mut`). A step changes one host or one row, so a
//! successor copies that one and shares the rest with its parent and its
//! siblings: cloning a state for each successor (the search's largest
//! cost) no longer copies every host's slots and tasks and every row's
//! strings. It compares, hashes and prints as the value it holds.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A value shared between states until one changes it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Shared<T>(Arc<T>);

impl<T> Shared<T> {
    /// Holds `value`.
    pub fn new(value: T) -> Self {
        Shared(Arc::new(value))
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    /// Copies the value first if another state shares it.
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}

#[cfg(test)]
mod tests {
    use super::Shared;

    #[test]
    fn a_change_copies_only_the_changed_clone() {
        let a = Shared::new(vec![1, 2]);
        let mut b = a.clone();
        b.push(3);
        assert_eq!(*a, vec![1, 2]);
        assert_eq!(*b, vec![1, 2, 3]);
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "[1, 2]");
    }
}
