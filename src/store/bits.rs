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

    /// The first set bit at or after `from`, if any.
    pub fn next_set(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut word = self.0.get(w)? & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
            w += 1;
            word = *self.0.get(w)?;
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.0.capacity() * 8
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

    #[test]
    fn next_set_finds_the_first_at_or_after() {
        let mut b = Bits::new(300);
        for i in [0, 63, 64, 200] {
            b.insert(i);
        }
        assert_eq!(b.next_set(0), Some(0));
        assert_eq!(b.next_set(1), Some(63));
        assert_eq!(b.next_set(64), Some(64));
        assert_eq!(b.next_set(65), Some(200), "across empty words");
        assert_eq!(b.next_set(201), None);
        assert_eq!(b.next_set(10_000), None, "past the end");
    }
}
