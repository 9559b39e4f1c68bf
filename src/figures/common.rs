//! What every paper figure draws with: the kit's theme, layout and marks
//! (`crate::plot::common`) and this module's grouped, measured input.

pub use super::prepared::*;
pub use crate::plot::common::*;
