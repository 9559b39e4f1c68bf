//! Unit tests of the export: a small trace linked and written, read back.

use super::*;
