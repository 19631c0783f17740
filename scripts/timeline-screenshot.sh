#!/usr/bin/env bash
# Screenshots of the timeline page, taken by headless Chromium, of a swarm
# seed and of a shrunk catalogue seed, so a person can look at what
# `leasehold replay --timeline` draws.
#
#   scripts/timeline-screenshot.sh [OUT_DIR]      (default: target/timeline-shots)
#
# Installs Debian's chromium when it is missing (needs root and apt).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/timeline-shots}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if ! command -v chromium >/dev/null; then
    apt-get install -y chromium >/dev/null
fi
cargo build -q -p leasehold-cli
bin="${CARGO_TARGET_DIR:-target}/debug/leasehold"

swarm=scenarios/swarm_of_every_fault_heals_and_every_job_finishes.toml
"$bin" replay "$swarm" --seed 3 --timeline "$out/swarm.html" >/dev/null

bug=scenarios/catalogue/release_without_token_lets_a_stale_holder_finish_the_job.toml
"$bin" shrink "$bug" --seed 0 --max-secs 120 -o "$out/shrunk.toml" >/dev/null
# A shrunk scenario still fails on replay: exit status 1 is expected.
"$bin" replay "$out/shrunk.toml" --seed 0 --timeline "$out/shrunk.html" >/dev/null || [ $? -eq 1 ]

for page in swarm shrunk; do
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=1340,1400 --screenshot="$out/$page.png" "file://$out/$page.html" 2>/dev/null
    echo "$out/$page.png"
done
