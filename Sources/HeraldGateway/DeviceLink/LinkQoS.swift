import Foundation
import HeraldCore
import NIOCore

/// When a connected device gets each notification (issue 3 §5, docs/device-link.md): a value
/// that takes arrivals and the current time and says what to send now and when to wake up. Its time
/// is the link's event-loop time (monotonic): the windows and the budget's period are durations.
///
/// - Priority 10 goes at once, and takes with it everything waiting (the radio is on anyway).
/// - Priority 5 waits up to ``Configuration/batchWindow`` for others to go with it.
/// - Priority 1 goes only with other traffic: a priority-10 push, a batch, or the backlog sent on
///   connect.
/// - Background pushes (`apns-push-type: background`) beyond ``Configuration/backgroundBudget``
///   per app in ``Configuration/backgroundPeriod`` are held back until the budget frees.
public struct LinkQoS: Sendable {
    /// The knobs.
    public struct Configuration: Sendable, Equatable {
        /// How long a priority-5 push may wait for company (0 = send at once).
        public var batchWindow: Duration = .seconds(1)
        /// Background pushes per app per period (Apple: 2–3 per hour).
        public var backgroundBudget: Int = 3
        /// The period of the background budget.
        public var backgroundPeriod: Duration = .seconds(3600)

        /// The defaults.
        public init(
            batchWindow: Duration = .seconds(1), backgroundBudget: Int = 3, backgroundPeriod: Duration = .seconds(3600)
        ) {
            self.batchWindow = batchWindow
            self.backgroundBudget = backgroundBudget
            self.backgroundPeriod = backgroundPeriod
        }
    }

    /// What the QoS needs to know about one notification.
    public struct Ticket: Sendable, Equatable {
        /// The caller's handle for it.
        public var id: Int
        /// `apns-priority`.
        public var priority: PushPriority
        /// The app (topic) it is for; the background budget is per app.
        public var topic: String
        /// Counts against the background budget.
        public var background: Bool

        /// Creates a ticket.
        public init(id: Int, priority: PushPriority, topic: String, background: Bool) {
            self.id = id
            self.priority = priority
            self.topic = topic
            self.background = background
        }
    }

    /// What to do now.
    public struct Output: Sendable, Equatable {
        /// Tickets to send now, in order.
        public var send: [Int] {
            get { only.map { [$0] } ?? many }
            set {
                only = nil
                many = newValue
            }
        }
        /// The usual case, held without an array: the ticket just submitted goes now, alone.
        public internal(set) var only: Int?
        private var many: [Int] = []
        /// When to call ``LinkQoS/wake(now:)`` next (`nil` = nothing is waiting on time).
        public var wakeAt: NIODeadline?

        /// The same tickets to send, in the same order, and the same wake-up.
        public static func == (a: Output, b: Output) -> Bool { a.send == b.send && a.wakeAt == b.wakeAt }
    }

    /// The configuration.
    public let configuration: Configuration
    /// ``Configuration/batchWindow`` and ``Configuration/backgroundPeriod`` on the event loop's
    /// clock, converted once.
    private let batchWindow: TimeAmount
    private let backgroundPeriod: TimeAmount
    var batch: [Ticket] = []
    var batchDeadline: NIODeadline?
    var riders: [Ticket] = []
    var held: [Ticket] = []
    var backgroundSent: [String: [NIODeadline]] = [:]

    /// A QoS with nothing waiting.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.batchWindow = TimeAmount(configuration.batchWindow)
        self.backgroundPeriod = TimeAmount(configuration.backgroundPeriod)
    }

    /// How many notifications are waiting.
    public var waiting: Int { batch.count + riders.count + held.count }

    /// A notification arrives.
    public mutating func submit(_ ticket: Ticket, now: NIODeadline) -> Output {
        var out = Output()
        if ticket.background {
            guard takeBackgroundSlot(ticket.topic, now: now) else {
                held.append(ticket)
                out.wakeAt = nextWake
                return out
            }
        }
        switch ticket.priority {
        case .immediate:
            sendNow(ticket.id, into: &out)
        case .normal where batchWindow <= .zero:
            sendNow(ticket.id, into: &out)
        case .normal:
            batch.append(ticket)
            if batchDeadline == nil { batchDeadline = now + batchWindow }
        case .low:
            riders.append(ticket)
        }
        out.wakeAt = nextWake
        return out
    }

    /// What was waiting when the device connected: sent together as one batch (priority-1 pushes
    /// ride along), except background pushes beyond the budget.
    public mutating func submitBacklog(_ tickets: [Ticket], now: NIODeadline) -> Output {
        var out = Output()
        for ticket in tickets {
            if ticket.background && !takeBackgroundSlot(ticket.topic, now: now) {
                held.append(ticket)
            } else {
                out.send.append(ticket.id)
            }
        }
        if !out.send.isEmpty { out.send += takeWaiting() }
        out.wakeAt = nextWake
        return out
    }

    /// Time has passed: a batch window may have closed, a background slot may have freed.
    public mutating func wake(now: NIODeadline) -> Output {
        var out = Output()
        var released: [Int] = []
        var stillHeld: [Ticket] = []
        for ticket in held {
            if takeBackgroundSlot(ticket.topic, now: now) {
                released.append(ticket.id)
            } else {
                stillHeld.append(ticket)
            }
        }
        held = stillHeld
        if let deadline = batchDeadline, deadline <= now {
            out.send = released + takeWaiting()
        } else if !released.isEmpty {
            out.send = released + takeWaiting()
        }
        out.wakeAt = nextWake
        return out
    }

    /// Forgets a ticket (its push expired or was replaced while waiting).
    public mutating func remove(_ id: Int) {
        batch.removeAll { $0.id == id }
        riders.removeAll { $0.id == id }
        held.removeAll { $0.id == id }
        if batch.isEmpty { batchDeadline = nil }
    }

    /// Everything still waiting, in no particular order (the link closes).
    public mutating func drain() -> [Int] {
        defer { held = [] }
        return takeWaiting() + held.map(\.id)
    }

    /// `id` and everything waiting to go with it.
    private mutating func sendNow(_ id: Int, into out: inout Output) {
        // The common case, on every push: nothing waiting, and no array at all.
        if batch.isEmpty && riders.isEmpty {
            out.only = id
        } else {
            out.send = [id] + takeWaiting()
        }
    }

    /// The batch and the riders (not held background pushes), which go now.
    private mutating func takeWaiting() -> [Int] {
        let ids = batch.map(\.id) + riders.map(\.id)
        batch = []
        riders = []
        batchDeadline = nil
        return ids
    }

    private mutating func takeBackgroundSlot(_ topic: String, now: NIODeadline) -> Bool {
        let since = now - backgroundPeriod
        var sent = backgroundSent[topic, default: []].filter { $0 > since }
        defer { backgroundSent[topic] = sent.isEmpty ? nil : sent }
        guard sent.count < configuration.backgroundBudget else { return false }
        sent.append(now)
        return true
    }

    /// The earliest time something waiting could go.
    var nextWake: NIODeadline? {
        // The common case, on every push: nothing held back.
        if held.isEmpty { return batchDeadline }
        var candidates: [NIODeadline] = []
        if let batchDeadline { candidates.append(batchDeadline) }
        for topic in Set(held.map(\.topic)) {
            if let oldest = backgroundSent[topic]?.min() {
                candidates.append(oldest + backgroundPeriod)
            }
        }
        return candidates.min()
    }
}
