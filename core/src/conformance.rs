//! The adapter conformance suite (placeholder; filled in by the adapters work).
