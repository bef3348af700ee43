//! Browsing the table one model per row: a model's entries at other providers folded under
//! the entry a bare name resolves to.
//!
//! The same model is listed by its maker and by dozens of resellers, gateways and clouds
//! (`claude-sonnet-4-5` has some 40 entries). Listing each entry buries the maker's; so
//! entries are grouped by what their bare name resolves to under the lookup rules, which
//! is the maker's entry where the maker lists the model.

use super::prefixes::without_bedrock_vendor;
use super::resolve::maker_of;
use super::{ModelInfo, Registry};

/// One row of a listing: a model, and its entries at other providers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Listing<'a> {
    /// The entry a bare name of the model resolves to: the maker's own where it lists it.
    pub model: &'a ModelInfo,
    /// Whether [`model`](Self::model) is the maker's own entry (`anthropic` for
    /// `claude-…`).
    pub first_party: bool,
    /// Entries of other providers (or other ids) whose bare name resolves to
    /// [`model`](Self::model), in table order. They may differ from it in window or
    /// price (a gateway that caps the window): `provider/id` picks one.
    pub elsewhere: Vec<&'a ModelInfo>,
}

impl<'a> Listing<'a> {
    /// A row of one entry, nothing folded into it.
    pub fn single(model: &'a ModelInfo) -> Listing<'a> {
        let first_party = maker_of(&model.id.to_lowercase())
            .is_some_and(|maker| model.provider.eq_ignore_ascii_case(maker));
        Listing { model, first_party, elsewhere: Vec::new() }
    }
}

impl Registry {
    /// The models of [`search`](Self::search)`(query)`, one row per model: an entry
    /// whose bare name (its id's last `/` segment; for Bedrock, without region and
    /// vendor) resolves to another matching entry is folded into that entry's row. Rows
    /// of the maker's own entries come first, then the others, each in table order.
    ///
    /// Cost: one lookup per matching entry (some 10 ms for the whole table in a debug
    /// build).
    pub fn browse(&self, query: &str) -> Vec<Listing<'_>> {
        let matching = self.search_indices(query);
        let mut is_match = vec![false; self.models.len()];
        for &i in &matching {
            is_match[i] = true;
        }
        let head_of = |i: usize| -> usize {
            let mut head = i;
            // A few steps reach the fixed point: a resolved entry resolves to itself but
            // for an override that renames it.
            for _ in 0..4 {
                let next = self.bare_resolution(head).filter(|&h| is_match[h]).unwrap_or(head);
                if next == head {
                    break;
                }
                head = next;
            }
            head
        };
        let mut rows: Vec<Option<Listing<'_>>> = vec![None; self.models.len()];
        let heads: Vec<usize> = matching.iter().map(|&i| head_of(i)).collect();
        for (&i, &head) in matching.iter().zip(&heads) {
            let model = &self.models[head];
            let row = rows[head].get_or_insert_with(|| Listing::single(model));
            if i != head {
                row.elsewhere.push(&self.models[i]);
            }
        }
        let mut rows: Vec<Listing<'_>> = rows.into_iter().flatten().collect();
        rows.sort_by_key(|row| !row.first_party);
        rows
    }

    /// Where the bare name of the model at `index` resolves, by index.
    fn bare_resolution(&self, index: usize) -> Option<usize> {
        let model = &self.models[index];
        let id = model.id.to_lowercase();
        let mut bare = id.rsplit('/').next().unwrap_or_default();
        if model.provider.eq_ignore_ascii_case("amazon-bedrock") {
            bare = without_bedrock_vendor(bare).unwrap_or(bare);
        }
        let found = self.resolve_lower(bare)?;
        Some(self.index_of(found.model))
    }

    /// The index of a model of this registry.
    fn index_of(&self, model: &ModelInfo) -> usize {
        // `models` is sorted by provider, then id, and no two share both.
        self.models
            .binary_search_by(|m| (&m.provider, &m.id).cmp(&(&model.provider, &model.id)))
            .expect("a model of this registry")
    }
}
