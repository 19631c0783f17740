//! OS-specific filesystem extensions.
//!
//! Provides trait implementations for Unix-specific filesystem operations.

pub mod unix;
