//! Named pipelines: the default ladder of `fit`, and presets for common needs.

use crate::pipeline::Pipeline;
use crate::steps::{Condition, DropThinking};

/// The default ladder of `fit`, lossless steps first, each rung run only while the history
/// is still over budget.
pub fn ladder() -> Pipeline {
    Pipeline::builder()
        .when(Condition::OverBudget, DropThinking::default())
        .build()
        .expect("the ladder's configuration is valid")
}
