import Foundation

/// The answers of a send to many tokens so far: how many of each answer (`200`,
/// `410 Unregistered`, `no answer: …`) and the tokens to drop.
public struct APNsBulkTally: Sendable, Equatable {
    /// A token the provider should stop sending to (the service answered 410), and since when.
    public struct Drop: Sendable, Equatable {
        /// The device token.
        public var token: String
        /// The 410's reason (`Unregistered`, `ExpiredToken`).
        public var reason: String
        /// The 410's timestamp: when the token stopped being valid.
        public var at: Date?

        /// A token to drop.
        public init(token: String, reason: String, at: Date?) {
            self.token = token
            self.reason = reason
            self.at = at
        }
    }

    /// One push's answer, and the token to drop for a 410.
    public struct Outcome: Sendable, Equatable {
        /// `200`, `<status> <reason>`, or `no answer: <error>`.
        public var answer: String
        /// The token to drop, for a 410.
        public var drop: Drop?

        /// An outcome.
        public init(answer: String, drop: Drop? = nil) {
            self.answer = answer
            self.drop = drop
        }

        /// What a send to `token` came to: accepted, refused (``APNsError``) or unanswered.
        public init(token: String, result: Result<APNsDelivery, any Error>) {
            switch result {
            case .success:
                self.init(answer: "200")
            case .failure(let error as APNsError):
                self.init(
                    answer: "\(error.status) \(error.reason)",
                    drop: error.status == 410 ? Drop(token: token, reason: "\(error.reason)", at: error.timestamp) : nil
                )
            case .failure(let error):
                self.init(answer: "no answer: \(error)")
            }
        }
    }

    /// How many pushes were answered (or gave up).
    public private(set) var done = 0
    /// How many of each answer.
    public private(set) var answers: [String: Int] = [:]
    /// The tokens to drop, in the order their 410s came.
    public private(set) var drops: [Drop] = []

    /// An empty tally.
    public init() {}

    /// Whether every push was accepted.
    public var allAccepted: Bool { answers.keys.allSatisfy { $0 == "200" } }

    /// Counts one push's outcome.
    public mutating func add(_ outcome: Outcome) {
        done += 1
        answers[outcome.answer, default: 0] += 1
        if let drop = outcome.drop { drops.append(drop) }
    }
}

/// Paces sends to at most a number a second: each send is due one interval after the one before,
/// or at once when the sender fell behind. A value on the instants of any clock: the sender asks it
/// when the next send is due and waits on its own clock.
public struct APNsPacer<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// The time between two sends.
    public let interval: Duration
    private var next: Instant?

    /// A pacer for `perSecond` sends a second (more than 0; below one send in about 30 years, one
    /// in 30 years).
    public init(perSecond: Double) {
        interval = .nanoseconds(Int64(Swift.min(1e9 / perSecond, 1e18)))
    }

    /// When the next send is due, given the time `now`; the one after is due an interval later.
    public mutating func due(now: Instant) -> Instant {
        let due = Swift.max(next ?? now, now)
        next = due.advanced(by: interval)
        return due
    }
}

/// A send to many tokens: `concurrency` requests in flight at once, at most `perSecond` started a
/// second, the tally handed to `progress` after every answer. ``APNsClient/send(_:to:concurrency:perSecond:progress:)``
/// runs it with the client's `send`; tests run it with their own `send` and clock.
public struct APNsBulkSend<C: Clock>: Sendable where C.Duration == Duration {
    /// Requests in flight at once (at least 1).
    public var concurrency: Int
    /// At most this many sends started a second; 0 is no limit.
    public var perSecond: Double
    /// The clock the pacing waits on.
    public var clock: C

    /// A send of `concurrency` at a time, at most `perSecond` a second, paced on `clock`.
    public init(concurrency: Int, perSecond: Double, clock: C) {
        self.concurrency = max(concurrency, 1)
        self.perSecond = perSecond
        self.clock = clock
    }

    /// Sends to each token with `send`, and returns the tally once every one is answered.
    public func run(
        _ tokens: [String], send: @escaping @Sendable (String) async throws -> APNsDelivery,
        progress: @Sendable (APNsBulkTally) -> Void = { _ in }
    ) async -> APNsBulkTally {
        var pacer = perSecond > 0 ? APNsPacer<C.Instant>(perSecond: perSecond) : nil
        var tally = APNsBulkTally()
        await withTaskGroup(of: APNsBulkTally.Outcome.self) { group in
            var next = 0
            func addOne() async {
                let token = tokens[next]
                next += 1
                if pacer != nil {
                    let due = pacer!.due(now: clock.now)
                    try? await clock.sleep(until: due, tolerance: nil)
                }
                group.addTask {
                    do {
                        return .init(token: token, result: .success(try await send(token)))
                    } catch {
                        return .init(token: token, result: .failure(error))
                    }
                }
            }
            while next < min(concurrency, tokens.count) { await addOne() }
            while let outcome = await group.next() {
                tally.add(outcome)
                progress(tally)
                if next < tokens.count { await addOne() }
            }
        }
        return tally
    }
}
