//! The clock a sampling loop reads and sleeps on: the real CLOCK_MONOTONIC, or a
//! deterministic simulation used for reproducible tests and snapshots.

use rtlab_sys::clock::SleepOutcome;

/// The two calls a periodic sampling loop makes. Implementations must not allocate.
pub trait WakeClock: Send {
    fn now_ns(&mut self) -> u64;
    fn sleep_until_ns(&mut self, deadline_ns: u64) -> rtlab_sys::Result<SleepOutcome>;
}

/// CLOCK_MONOTONIC with absolute `clock_nanosleep`.
#[derive(Debug, Default, Clone, Copy)]
pub struct MonotonicClock;

impl WakeClock for MonotonicClock {
    #[inline]
    fn now_ns(&mut self) -> u64 {
        rtlab_sys::clock::monotonic_ns()
    }

    #[inline]
    fn sleep_until_ns(&mut self, deadline_ns: u64) -> rtlab_sys::Result<SleepOutcome> {
        rtlab_sys::clock::sleep_until_monotonic_ns(deadline_ns)
    }
}

/// [`SimulatedClock::with_scale`] of latencies as drawn, per mille.
pub const UNSCALED: u32 = 1000;

/// A virtual clock: sleeping jumps to the deadline plus a pseudo-random latency drawn from
/// a fixed seed, so a run is identical every time. Latencies are mostly a few µs with a
/// long tail, and about one wake-up in 400 is a "hypervisor" spike of 1 to 3 periods that
/// produces overruns, so every code path of the loop is exercised.
#[derive(Debug, Clone)]
pub struct SimulatedClock {
    now_ns: u64,
    period_ns: u64,
    state: u64,
    scale_permille: u32,
}

impl SimulatedClock {
    pub fn new(seed: u64, stream: u64, period_ns: u64) -> Self {
        let mut clock = Self { now_ns: 1_000_000_000, period_ns, state: seed, scale_permille: UNSCALED };
        // Mix the stream (the CPU) in through the generator so streams are unrelated.
        clock.state = clock.next_u64() ^ stream.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03);
        clock.state = clock.next_u64();
        clock
    }

    /// Every latency (body, tail and spikes) times `permille`/1000: a slower or faster
    /// simulated "kernel" with the same stream of draws, so that two scales of one seed
    /// differ by the scale alone.
    pub fn with_scale(mut self, permille: u32) -> Self {
        self.scale_permille = permille;
        self
    }

    /// splitmix64: tiny, well-known, and stable across crate versions, which a snapshot
    /// needs (a `rand` upgrade could change the stream).
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn next_latency_ns(&mut self) -> u64 {
        let latency = self.next_unscaled_latency_ns();
        if self.scale_permille == UNSCALED {
            return latency;
        }
        (latency as u128 * self.scale_permille as u128 / UNSCALED as u128).min(u64::MAX as u128) as u64
    }

    fn next_unscaled_latency_ns(&mut self) -> u64 {
        let r = self.next_u64();
        let uniform = (r >> 11) as f64 / (1u64 << 53) as f64;
        if r % 400 == 7 {
            // Spike: between 1 and 3 periods late.
            return self.period_ns + (uniform * 2.0 * self.period_ns as f64) as u64;
        }
        // Base 1.5 µs plus an exponential tail with mean 2 µs.
        1_500 + (-(1.0 - uniform).ln() * 2_000.0) as u64
    }
}

impl WakeClock for SimulatedClock {
    fn now_ns(&mut self) -> u64 {
        self.now_ns
    }

    fn sleep_until_ns(&mut self, deadline_ns: u64) -> rtlab_sys::Result<SleepOutcome> {
        let latency = self.next_latency_ns();
        self.now_ns = self.now_ns.max(deadline_ns) + latency;
        Ok(SleepOutcome::Expired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulation_is_deterministic_and_never_early() {
        let mut a = SimulatedClock::new(42, 0, 1_000_000);
        let mut b = SimulatedClock::new(42, 0, 1_000_000);
        let mut deadline = a.now_ns() + 1_000_000;
        for _ in 0..10_000 {
            a.sleep_until_ns(deadline).unwrap();
            b.sleep_until_ns(deadline).unwrap();
            assert_eq!(a.now_ns(), b.now_ns());
            assert!(a.now_ns() >= deadline);
            deadline += 1_000_000;
        }
    }

    #[test]
    fn a_scale_multiplies_every_latency_of_the_same_draws() {
        let mut plain = SimulatedClock::new(42, 0, 1_000_000);
        let mut slower = SimulatedClock::new(42, 0, 1_000_000).with_scale(1500);
        for _ in 0..10_000 {
            let (a, b) = (plain.next_latency_ns(), slower.next_latency_ns());
            assert_eq!(b, a * 3 / 2, "{a} scaled by 1.5");
        }
    }

    #[test]
    fn streams_differ() {
        let mut a = SimulatedClock::new(42, 0, 1_000_000);
        let mut b = SimulatedClock::new(42, 1, 1_000_000);
        let first: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let second: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert!(first.iter().all(|v| !second.contains(v)));
    }
}
