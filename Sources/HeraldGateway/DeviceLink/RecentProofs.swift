import Foundation
import Synchronization

/// The proofs of the upgrade resumptions this gateway accepted lately (docs/security.md,
/// "Resuming in the upgrade request"): a request sent again is refused while its time is still
/// within ``DeviceLink/upgradeResumeWindow`` of the gateway's clock. A proof is an HMAC over the
/// request's own random key and time, so two devices' requests never share one; its first eight
/// bytes are kept.
///
/// Kept in two generations of `2 × window` each: a proof is remembered for at least that long
/// (a request is accepted only while its time is within the window, so a copy is late by less),
/// and a generation is forgotten whole, with no entry expired on its own.
final class RecentProofs: Sendable {
    private struct State {
        var current: Set<UInt64> = []
        var previous: Set<UInt64> = []
        var generationStarted: Int64
    }

    private let state: Mutex<State>
    /// How long a generation lasts, in seconds.
    let generation: Int64

    /// A memory that remembers each proof for at least `window × 2` seconds, starting at `now`.
    init(window: Int64, now: Int64) {
        self.generation = max(1, window * 2)
        self.state = Mutex(State(generationStarted: now))
    }

    /// Remembers `proof` at `now` (UNIX seconds); false if it was remembered already.
    func insert(_ proof: Data, now: Int64) -> Bool {
        let key = proof.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return state.withLock { state in
            if now - state.generationStarted >= generation {
                // A generation older than two spans holds nothing that may still be replayed.
                if now - state.generationStarted >= 2 * generation {
                    state.previous.removeAll(keepingCapacity: true)
                } else {
                    swap(&state.previous, &state.current)
                }
                state.current.removeAll(keepingCapacity: true)
                state.generationStarted = now
            }
            guard !state.previous.contains(key) else { return false }
            return state.current.insert(key).inserted
        }
    }
}
