//! Everything the figure files share, in one import: the look
//! ([`super::theme`]), where things go ([`super::layout`]), what is drawn
//! ([`super::marks`]) and the box-plot statistics ([`crate::stats`]).

pub use super::layout::*;
pub use super::marks::*;
pub use super::theme::*;
pub use crate::stats::{box_stats, quantile, upper_fence};
