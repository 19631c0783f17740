//! The model store's rows by id, and the ids of the *open* ones: a row that
//! is pending or running, or one the model lost track of.
//!
//! A claim and a sweep are judged from the open rows alone (a finished
//! row the model knows can neither be granted nor reclaimed, and it can
//! not make either unjudged), so they look at a handful of rows instead of
//! every job the run ever enqueued.
//!
//! **Invariant:** `open` holds exactly the ids of the rows in `all` that
//! are open ([`Open::is_open`]). Every change of a row goes through
//! [`Rows::insert`], [`Rows::update`] or [`Rows::remove`], which keep it;
//! a debug build checks it after each.
//!
//! Generic over the row, which says itself whether it is open, so that
//! this file needs nothing from the model that uses it.

use leasehold_core::JobId;
use std::collections::btree_map::{Range, Values};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Index, RangeBounds};

/// A row that says whether a claim or a sweep must look at it.
pub(crate) trait Open {
    /// Pending, running, or not known.
    fn is_open(&self) -> bool;
}

/// Rows by id, with the open ones indexed.
#[derive(Clone, Debug)]
pub(crate) struct Rows<R> {
    all: BTreeMap<JobId, R>,
    open: BTreeSet<JobId>,
}

impl<R> Default for Rows<R> {
    fn default() -> Self {
        Rows {
            all: BTreeMap::new(),
            open: BTreeSet::new(),
        }
    }
}

impl<R: Open> Rows<R> {
    /// The row of `id`.
    pub fn get(&self, id: &JobId) -> Option<&R> {
        self.all.get(id)
    }

    /// Whether a row of `id` exists.
    pub fn contains_key(&self, id: &JobId) -> bool {
        self.all.contains_key(id)
    }

    /// Every row, by id.
    pub fn values(&self) -> Values<'_, JobId, R> {
        self.all.values()
    }

    /// The rows whose ids lie in `range`, by id.
    pub fn range<B: RangeBounds<JobId>>(&self, range: B) -> Range<'_, JobId, R> {
        self.all.range(range)
    }

    /// The open rows (pending, running or not known), by id.
    pub fn open(&self) -> impl Iterator<Item = &R> + '_ {
        self.open.iter().map(|id| &self.all[id])
    }

    /// Sets the row of `id` to `row`.
    pub fn insert(&mut self, id: JobId, row: R) {
        self.set_open(id, row.is_open());
        self.all.insert(id, row);
        self.check(id);
    }

    /// Changes the row of `id` in place, if there is one.
    pub fn update<T>(&mut self, id: &JobId, f: impl FnOnce(&mut R) -> T) -> Option<T> {
        let row = self.all.get_mut(id)?;
        let out = f(row);
        let open = row.is_open();
        self.set_open(*id, open);
        self.check(*id);
        Some(out)
    }

    /// Removes the row of `id`.
    pub fn remove(&mut self, id: &JobId) -> Option<R> {
        self.open.remove(id);
        self.all.remove(id)
    }

    fn set_open(&mut self, id: JobId, open: bool) {
        if open {
            self.open.insert(id);
        } else {
            self.open.remove(&id);
        }
    }

    /// The invariant, for the row just changed.
    fn check(&self, id: JobId) {
        debug_assert_eq!(
            self.open.contains(&id),
            self.all.get(&id).is_some_and(Open::is_open),
            "the open index disagrees on {id}"
        );
    }
}

impl<R> Index<&JobId> for Rows<R> {
    type Output = R;

    fn index(&self, id: &JobId) -> &R {
        &self.all[id]
    }
}
