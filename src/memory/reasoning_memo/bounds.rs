//! What the memo counts against its bounds (`Usage`), the bounds (`Bounds`), and what a write
//! pushed out to stay within them (`Evicted`).

use super::REF_BYTES;

/// What entries count against a bound: their bytes (reasoning, `REF_BYTES` a call id) and rows
/// (one an answer, one a call id).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub bytes: u64,
    pub rows: u64,
}

impl Usage {
    /// One answer's usage: its reasoning once, and each of its `calls`.
    pub fn of_answer(text_bytes: usize, calls: usize) -> Self {
        Self {
            bytes: text_bytes as u64 + calls as u64 * REF_BYTES,
            rows: 1 + calls as u64,
        }
    }

    pub fn within(self, bound: Usage) -> bool {
        self.bytes <= bound.bytes && self.rows <= bound.rows
    }

    pub(super) fn plus(self, other: Usage) -> Usage {
        Usage {
            bytes: self.bytes + other.bytes,
            rows: self.rows + other.rows,
        }
    }

    pub(super) fn minus(self, other: Usage) -> Usage {
        Usage {
            bytes: self.bytes.saturating_sub(other.bytes),
            rows: self.rows.saturating_sub(other.rows),
        }
    }
}

/// A memo's bounds, enforced at every write: one caller's entries, and everyone's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub caller: Usage,
    pub total: Usage,
}

impl Bounds {
    /// `total`, a caller a quarter of it: one client filling the memo pushes out its own oldest
    /// answers, not everyone's.
    pub const fn with_caller_share(total: Usage) -> Self {
        Self {
            caller: Usage {
                bytes: total.bytes / 4,
                rows: total.rows / 4,
            },
            total,
        }
    }
}

/// How many entries a write pushed out, by the bound that was full.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// Past the caller's own bound: its oldest.
    pub caller: u64,
    /// Past the total: everyone's oldest.
    pub total: u64,
}

impl Evicted {
    /// Counts them in `harness_proxy_reasoning_memo_evicted_total{memo}`.
    pub(super) fn count(self, memo: &'static str) {
        for (bound, n) in [("caller", self.caller), ("total", self.total)] {
            if n > 0 {
                metrics::counter!("harness_proxy_reasoning_memo_evicted_total", "memo" => memo, "bound" => bound)
                    .increment(n);
            }
        }
    }
}
