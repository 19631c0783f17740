#!/usr/bin/env bash
# The full test command (README): every crate, every test, against a real
# PostgreSQL (a throwaway cluster when DATABASE_URL is not set).
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-postgres.sh bash -c 'cargo test --workspace --all-targets && cargo test --workspace --doc'
