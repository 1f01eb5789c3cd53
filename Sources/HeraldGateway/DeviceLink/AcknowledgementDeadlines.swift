import NIOCore

/// When each push written to a device stops waiting for its acknowledgement: a value, driven by the
/// link's event-loop time. Every push waits the same time, so deadlines come in the order pushes were
/// written: one queue and one timer per link instead of a timer per push.
///
/// Under load a deadline comes every few microseconds, so a timer armed for the very next one would
/// fire once per push. After it fires, the timer is armed no sooner than ``coalescing`` later: the
/// deadlines that come meanwhile are taken together, at most that late. The first deadline after a
/// quiet spell is kept exactly.
struct AcknowledgementDeadlines {
    /// One push written and waiting.
    struct Waiting: Equatable {
        var apnsID: String
        /// The link's own number for the push (an `apns-id` may be reused).
        var ticket: Int
        var at: NIODeadline
        /// Acknowledged meanwhile (``settle(_:)``): its deadline passes without a look.
        var settled = false
    }

    /// How long a push waits.
    let timeout: TimeAmount
    private var queue: [Waiting] = []
    private var head = 0
    /// How many deadlines were dropped from the front of `queue` (or all of it) so far: a deadline's
    /// slot, `removed` plus its place in `queue`, names it for as long as the link lives.
    private var removed = 0

    /// How late a deadline may be taken when deadlines come close together: a twentieth of the
    /// timeout, at most 10 ms (at the default 2 s timeout, the timer fires at most 100 times a
    /// second however many pushes wait).
    let coalescing: TimeAmount

    init(timeout: TimeAmount) {
        self.timeout = timeout
        coalescing = min(.milliseconds(10), .nanoseconds(timeout.nanoseconds / 20))
    }

    /// A push was written at `now`; returns its deadline's slot, for ``settle(_:)``.
    @discardableResult
    mutating func written(apnsID: String, ticket: Int, now: NIODeadline) -> Int {
        queue.append(Waiting(apnsID: apnsID, ticket: ticket, at: now + timeout))
        return removed + queue.count - 1
    }

    /// The push of this slot was acknowledged: ``expired(now:)`` will not hand its deadline over, so
    /// the link need not look it up by its `apns-id` (under load, every push's deadline comes after
    /// its acknowledgement). A slot already taken, or of a deadline forgotten, is ignored.
    mutating func settle(_ slot: Int) {
        let i = slot - removed
        if i >= head, i < queue.count { queue[i].settled = true }
    }

    /// The earliest deadline still to come: when the link's timer should fire.
    var next: NIODeadline? { head < queue.count ? queue[head].at : nil }

    /// When the timer should fire next after it fired at `now`: the earliest deadline still to come,
    /// but not before ``coalescing`` has passed.
    func next(afterFiringAt now: NIODeadline) -> NIODeadline? {
        next.map { max($0, now + coalescing) }
    }

    /// How many deadlines are still to come.
    var count: Int { queue.count - head }

    /// Takes the deadlines that have come by `now`, oldest first, but those settled. (Whether each
    /// push was acknowledged meanwhile is still the link's to know: a deadline not settled may
    /// belong to a push acknowledged, and passes without effect.)
    mutating func expired(now: NIODeadline) -> [Waiting] {
        var due: [Waiting] = []
        while head < queue.count, queue[head].at <= now {
            if !queue[head].settled { due.append(queue[head]) }
            head += 1
        }
        if head > 1024 && head * 2 > queue.count {
            queue.removeFirst(head)
            removed += head
            head = 0
        }
        return due
    }

    /// Forgets every deadline (the link closed).
    mutating func removeAll() {
        removed += queue.count
        queue = []
        head = 0
    }
}
