//! Unit tests of `ops` on small synthetic traces and the real fixtures.
