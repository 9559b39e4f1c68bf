//! A fixed-size set of bits: one per position (activities, correlation
//! ranks, launch calls, time blocks), 1/64 of the `Vec<bool>` it replaces.

/// `n` bits, all clear at first; positions past the end read as clear and
/// are ignored when set.
#[derive(Debug, Default, Clone)]
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    pub fn new(n: usize) -> Self {
        Bits(vec![0; n.div_ceil(64)])
    }

    pub fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Sets bit `i`; whether it was clear before (false past the end).
    pub fn insert(&mut self, i: usize) -> bool {
        let Some(w) = self.0.get_mut(i / 64) else {
            return false;
        };
        let bit = 1u64 << (i % 64);
        let fresh = *w & bit == 0;
        *w |= bit;
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_once_and_ignored_past_the_end() {
        let mut b = Bits::new(130);
        assert!(!b.get(129));
        assert!(b.insert(129));
        assert!(!b.insert(129), "already set");
        assert!(b.get(129) && !b.get(128) && !b.get(0));
        assert!(!b.insert(192), "past the end");
        assert!(!b.get(10_000));
    }
}
