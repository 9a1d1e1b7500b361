//! Large results kept by reference: a result too large to send inline is stored in pages, with
//! its task (or, for a plain call, for the task TTL), and read back a page at a time.
//!
//! The engine does not know what a result is: a [`ResultPart`] is a run of bytes (the UTF-8 of
//! a text, or the base64 of a binary) under an id and a part number. The store splits it into
//! pages of at most [`RESULT_PAGE_BYTES`], cut where a page is valid on its own (a UTF-8 character
//! boundary; base64 in whole groups of four), so every page can be sent as it is.
//!
//! What is kept is bounded per owner and in all ([`ResultQuota`]): without a bound one client
//! looping on a large tool fills the disk for the whole TTL. The store checks it as it writes,
//! so the bound holds across replicas sharing a store, and a keep past it writes nothing.

/// The most bytes of one part a page holds (text: UTF-8 bytes; binary: base64 characters).
pub const RESULT_PAGE_BYTES: usize = 256 * 1024;

/// What a part holds, which decides where a page may be cut and how it is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartKind {
    /// UTF-8 text.
    Text,
    /// Base64 of binary data.
    Blob,
}

impl PartKind {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Text => "text",
            PartKind::Blob => "blob",
        }
    }

    /// The kind stored as `s`.
    pub fn parse(s: &str) -> Option<PartKind> {
        [PartKind::Text, PartKind::Blob].into_iter().find(|k| k.as_str() == s)
    }
}

/// The bounds on the bytes of kept results (`--max-result-bytes-per-client`,
/// `--max-result-bytes`). They count what is stored: the bytes of every kept part, expired or
/// not, until the reaper purges it, because that is what the disk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultQuota {
    /// The most bytes of results one owner may have kept.
    pub per_owner: u64,
    /// The most bytes of results kept for every owner together (across every host of a shared
    /// store).
    pub total: u64,
}

impl Default for ResultQuota {
    fn default() -> ResultQuota {
        ResultQuota {
            per_owner: crate::config::defaults::size(crate::config::defaults::MAX_RESULT_BYTES_PER_CLIENT),
            total: crate::config::defaults::size(crate::config::defaults::MAX_RESULT_BYTES),
        }
    }
}

/// Which bound of a [`ResultQuota`] a keep would pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaBound {
    /// The owner's own (`--max-result-bytes-per-client`).
    PerOwner,
    /// Everyone's together (`--max-result-bytes`).
    Total,
}

impl QuotaBound {
    /// The flag that sets it, so the refusal says what to raise.
    pub fn flag(self) -> &'static str {
        match self {
            QuotaBound::PerOwner => "--max-result-bytes-per-client",
            QuotaBound::Total => "--max-result-bytes",
        }
    }

    /// Whose results it counts, in words.
    pub fn whose(self) -> &'static str {
        match self {
            QuotaBound::PerOwner => "this client",
            QuotaBound::Total => "all clients",
        }
    }
}

/// A keep the quota refuses: which bound, its value, what it holds already and what the keep
/// would add (the store reports it as its `OverQuota` error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overrun {
    /// Which bound.
    pub bound: QuotaBound,
    /// Its value in bytes.
    pub limit: u64,
    /// The bytes kept already under it.
    pub kept: u64,
    /// The bytes this keep would add.
    pub size: u64,
}

impl ResultQuota {
    /// Whether `size` more bytes may be kept when `mine` are kept for the owner and `all` for
    /// everyone; the refusal names the bound passed (the owner's first).
    pub fn admit(&self, size: u64, mine: u64, all: u64) -> Result<(), Overrun> {
        let over = |bound, limit: u64, kept: u64| (kept.saturating_add(size) > limit).then_some(Overrun { bound, limit, kept, size });
        match over(QuotaBound::PerOwner, self.per_owner, mine).or_else(|| over(QuotaBound::Total, self.total, all)) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The bytes a keep of `parts` adds, as the quota counts them.
pub fn parts_size(parts: &[ResultPart]) -> u64 {
    parts.iter().map(|p| p.data.len() as u64).sum()
}

/// One piece of a result to keep: content block `part` of the result `id`.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultPart {
    /// Which piece of the result (a content block's index).
    pub part: u32,
    /// Text or base64.
    pub kind: PartKind,
    /// Its media type, shown when it is read.
    pub mime_type: Option<String>,
    /// The bytes, valid UTF-8 in both kinds.
    pub data: String,
}

/// One page of a kept part, as read back.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultPage {
    /// Text or base64.
    pub kind: PartKind,
    /// The part's media type.
    pub mime_type: Option<String>,
    /// Bytes of the whole part.
    pub size: u64,
    /// This page's number, from 0.
    pub page: u32,
    /// How many pages the part has.
    pub pages: u32,
    /// This page's bytes.
    pub data: String,
}

/// `data` cut into pages of at most `max` bytes, each ending on a boundary where it is valid on
/// its own: a character boundary for text, a multiple of four characters for base64. An empty
/// part has one empty page, so it can still be read.
pub fn pages(kind: PartKind, data: &str, max: usize) -> Vec<&str> {
    let step = match kind {
        PartKind::Text => max.max(4),
        PartKind::Blob => (max / 4).max(1) * 4,
    };
    let mut pages = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let mut end = step.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (page, tail) = rest.split_at(end);
        pages.push(page);
        rest = tail;
    }
    if pages.is_empty() {
        pages.push("");
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_pages_end_on_character_boundaries_and_join_to_the_whole() {
        let text = "aé€😀".repeat(1000);
        let cut = pages(PartKind::Text, &text, 7);
        assert!(cut.iter().all(|p| p.len() <= 7 && !p.is_empty()));
        assert_eq!(cut.concat(), text);
    }

    #[test]
    fn base64_pages_hold_whole_groups() {
        let data = "QUJD".repeat(10) + "QQ==";
        let cut = pages(PartKind::Blob, &data, 10);
        assert!(cut[..cut.len() - 1].iter().all(|p| p.len() == 8), "{cut:?}");
        assert_eq!(cut.concat(), data);
        assert_eq!(pages(PartKind::Text, "", 10), [""], "an empty part still has a page");
    }

    #[test]
    fn the_owners_bound_is_named_before_the_total() {
        let quota = ResultQuota { per_owner: 100, total: 150 };
        assert!(quota.admit(40, 60, 60).is_ok(), "exactly at both bounds is within them");
        let e = quota.admit(41, 60, 60).unwrap_err();
        assert_eq!(e, Overrun { bound: QuotaBound::PerOwner, limit: 100, kept: 60, size: 41 });
        let e = crate::tasks::StoreError::from(e);
        assert!(e.to_string().contains("--max-result-bytes-per-client"), "{e}");
        let e = quota.admit(10, 0, 145).unwrap_err();
        assert_eq!(e.bound, QuotaBound::Total);
        let e = crate::tasks::StoreError::from(e);
        assert!(e.to_string().contains("--max-result-bytes ("), "{e}");
    }
}
