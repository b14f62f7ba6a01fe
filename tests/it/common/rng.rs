//! Randomness for kill loops: xorshift64*, reproducible from a seed that an environment
//! variable replays.

/// The kills of a kill loop: `var` if it is set to a number (the long mode), else `default`.
pub fn kills_from_env(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: enough randomness for kill moments, reproducible from the seed.
pub struct Rng(pub u64);

impl Rng {
    /// The generator of `var`'s seed if set, else of the clock; prints the seed so that
    /// `VAR=seed` replays the run.
    pub fn from_env(var: &str) -> Rng {
        let seed = std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
                    | 1
            });
        eprintln!("{var}={seed} replays this run");
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
