//! The check that the workload's largest messages fit one frame of the
//! simulated wire.

use super::Bad;
use crate::config::SimConfig;
use crate::wire::MAX_FRAME;

/// Every workload size whose largest message would not fit a frame.
pub(super) fn frames(cfg: &SimConfig, bad: &mut Bad) {
    for (path, need) in wire_needs(cfg) {
        if need > MAX_FRAME as u64 {
            bad(
                path,
                format!(
                    "a message would need about {need} bytes on the simulated wire, above its \
                     {MAX_FRAME} byte frame; lower the size or protocol.concurrency"
                ),
            );
        }
    }
}

/// Upper bounds of the simulated wire's largest messages for the
/// workload's sizes (JSON bodies: a byte of a byte string takes up to 4
/// characters, a byte of the simulator's payload padding (0x00..=0x09) 2, a
/// character of its printable error text 1): a claim answer carrying `concurrency`
/// leases, and a reader's row (payload, result and error), the largest of
/// all. `(field, bytes)`, only when some size is set.
fn wire_needs(cfg: &SimConfig) -> Vec<(&'static str, u64)> {
    const ROW_OVERHEAD: u64 = 4096;
    let w = &cfg.workload;
    let err = w.error_bytes.min(cfg.protocol.max_error_bytes);
    let mut out = Vec::new();
    if w.payload_bytes > 0 {
        let lease = 2 * w.payload_bytes + ROW_OVERHEAD;
        out.push((
            "workload.payload_bytes",
            lease * u64::from(cfg.protocol.concurrency.max(1)),
        ));
    }
    if w.payload_bytes > 0 || w.result_bytes > 0 || w.error_bytes > 0 {
        let row = 2 * w.payload_bytes + 4 * w.result_bytes + err + ROW_OVERHEAD;
        let field = if w.result_bytes > 0 {
            "workload.result_bytes"
        } else if w.payload_bytes > 0 {
            "workload.payload_bytes"
        } else {
            "workload.error_bytes"
        };
        out.push((field, row));
    }
    out
}
