#!/usr/bin/env bash
# The full test command (README): every crate, every test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets
cargo test --workspace --doc
