import Foundation
import HeraldCore
import NIOCore

extension DeviceLinkStateMachine {
    // MARK: Notifications going down

    /// A provider's push for the device, its actions appended to `actions` (the link's handler
    /// passes the same array for every push, so that a push allocates none): written now, or held
    /// by the QoS (the provider is told `hold` and the router stores it), or refused when the device
    /// is not online.
    mutating func offer(
        _ offer: LinkOffer, waiter: any LinkWaiter, now: NIODeadline, at: Date, into actions: inout [Action]
    ) {
        guard deviceID != nil else {
            actions.append(.answer(Completion(ticket: 0, waiter: waiter), .notAcknowledged(deliveredAt: nil)))
            return
        }
        let id = takeTicket()
        let entry = Entry(
            ticket: id, push: offer.push, expiresAt: offer.expiresAt,
            origin: .direct(Completion(ticket: id, waiter: waiter)))
        if backedUp {
            // Not taken into the QoS either: the store holds it until the device catches up.
            leave(entry, into: &actions)
            return
        }
        guard offer.expiresAt != nil else {
            // Expiration 0: one attempt, now, whatever the priority; it is never stored to wait.
            write(entry, now: now, at: at, into: &actions)
            actions.append(.flush)
            return
        }
        let ticket = LinkQoS.Ticket(
            id: id, priority: offer.push.priority, topic: offer.push.topic, background: offer.background)
        let output = qos.submit(ticket, now: now)
        if output.only == id {
            // The usual case, sent at once and alone: it need not pass through `queued`.
            write(entry, now: now, at: at, into: &actions)
            actions.append(.flush)
            scheduleWake(output.wakeAt, into: &actions)
            return
        }
        queued[id] = entry
        if !output.send.contains(id) {
            // It waits: the router stores it now, and its acknowledgement will remove it.
            queued[id]?.origin = .stored
            actions.append(.answer(Completion(ticket: id, waiter: waiter), .hold))
        }
        apply(output, now: now, at: at, into: &actions)
    }

    /// The QoS wake-up came: a batch window closed, or a background slot freed.
    mutating func wakeFired(now: NIODeadline, at: Date) -> [Action] {
        wakeAt = nil
        if backedUp {
            // Nothing would be written: what the QoS holds waits (it is stored) and is asked for
            // once the link catches up, so that no background slot goes to a push not sent.
            wakeMissed = true
            return []
        }
        var actions: [Action] = []
        apply(qos.wake(now: now), now: now, at: at, into: &actions)
        return actions
    }

    /// The link caught up: the QoS wake-up it let pass is made now.
    mutating func missedWake(now: NIODeadline, at: Date, into actions: inout [Action]) {
        guard wakeMissed else { return }
        wakeMissed = false
        apply(qos.wake(now: now), now: now, at: at, into: &actions)
    }

    // MARK: Stored notifications

    /// The backlog is read: it goes down with whatever was stored meanwhile, oldest first.
    /// `isRegistered` says whether a push's registration is still live.
    mutating func backlogRead(
        _ pending: [StoredPush], now: NIODeadline, at: Date, isRegistered: (StoredPush) -> Bool
    ) -> [Action] {
        backlogLoaded = true
        var all = pending
        if !storedWaiting.isEmpty {
            all += storedWaiting
            storedWaiting = []
            var seen = Set<String>()
            all = all.filter { seen.insert($0.apnsID).inserted }
            // Stable: pushes accepted in the same instant keep the store's order.
            all = all.enumerated().sorted { ($0.element.receivedAt, $0.offset) < ($1.element.receivedAt, $1.offset) }
                .map(\.element)
        }
        return submitStored(all, now: now, at: at, isRegistered: isRegistered)
    }

    /// Pushes the router stored while this link was up (its commit landed after the device was
    /// attached, or the link held them): sent now, unless the link already has them.
    mutating func offerStored(
        _ pushes: [StoredPush], now: NIODeadline, at: Date, isRegistered: (StoredPush) -> Bool
    ) -> [Action] {
        guard deviceID != nil else { return [] }
        if backedUp {
            // They are in the store: read again once the device catches up.
            storeHasMore = true
            return []
        }
        if !backlogLoaded {
            storedWaiting += pushes
            return []
        }
        return submitStored(pushes, now: now, at: at, isRegistered: isRegistered)
    }

    /// Queues stored pushes for the device, skipping those it has or has just acknowledged.
    mutating func submitStored(
        _ pending: [StoredPush], now: NIODeadline, at: Date, isRegistered: (StoredPush) -> Bool
    ) -> [Action] {
        guard let device = deviceID else { return [] }
        if backedUp {
            // They stay in the store, and are read again once the link catches up.
            storeHasMore = true
            return []
        }
        var tickets: [LinkQoS.Ticket] = []
        if queuedIDs == nil { queuedIDs = Set(queued.values.map(\.push.apnsID)) }
        let waiting = queuedIDs ?? []
        var void: [StoredPush] = []
        for stored in pending
        where awaiting[stored.apnsID] == nil && !waiting.contains(stored.apnsID)
            && !recentlyAcknowledged.contains(stored.apnsID)
        {
            guard isRegistered(stored) else {
                // The app was removed or the device reset since: the push has no one to go to.
                void.append(stored)
                continue
            }
            let ticket = LinkQoS.Ticket(
                id: takeTicket(), priority: stored.priority, topic: stored.topic,
                background: stored.pushType == .background)
            queued[ticket.id] = Entry(
                ticket: ticket.id, push: stored.linkPush, expiresAt: stored.expiresAt, origin: .stored)
            tickets.append(ticket)
        }
        var actions: [Action] = []
        if !void.isEmpty { actions.append(.discard(void, device: device, at: at)) }
        if tickets.isEmpty { return actions }
        apply(qos.submitBacklog(tickets, now: now), now: now, at: at, into: &actions)
        return actions
    }

    // MARK: Acknowledgements

    /// What the link knows of a push the device refuses: it is still awaiting its acknowledgement
    /// (the device reports a refusal first) or was acknowledged lately.
    func refusal(of apnsID: String) -> LinkRefusal? {
        if let entry = awaiting[apnsID] { return Self.refusal(entry) }
        return lastAcknowledged[apnsID]
    }

    static func refusal(_ entry: Entry) -> LinkRefusal {
        var fromStorage = false
        if case .stored = entry.origin { fromStorage = true }
        return LinkRefusal(
            topic: entry.push.topic, pushType: entry.push.pushType, fromStorage: fromStorage,
            uniqueID: entry.push.uniqueID)
    }

    /// The device acknowledged these `apns-id`s.
    mutating func acknowledge(_ ids: [String], at: Date) -> [Action] {
        guard let device = deviceID else { return [] }
        var actions: [Action] = []
        for id in ids {
            guard let entry = awaiting.removeValue(forKey: id) else { continue }
            acknowledged(entry, device: device, at: at, into: &actions)
            if !awaitingMore.isEmpty, let more = awaitingMore.removeValue(forKey: id) {
                for entry in more { acknowledged(entry, device: device, at: at, into: &actions) }
            }
        }
        return actions
    }

    private mutating func acknowledged(_ entry: Entry, device: String, at: Date, into actions: inout [Action]) {
        let deliveredAt = entry.deliveredAt ?? at
        if let slot = entry.deadlineSlot { deadlines.settle(slot) }
        lastAcknowledged.append(entry.push.apnsID, Self.refusal(entry))
        switch entry.origin {
        case .direct(let completion):
            actions.append(.answer(completion, .acknowledged(deliveredAt: deliveredAt, acknowledgedAt: at)))
        case .stored:
            recentlyAcknowledged.insert(entry.push.apnsID)
            actions.append(
                .recordAcknowledged(entry.push, device: device, deliveredAt: deliveredAt, acknowledgedAt: at))
        }
    }

    /// The acknowledgement deadline timer came: pushes whose deadline passed are answered.
    mutating func deadlineFired(now: NIODeadline) -> [Action] {
        deadlineScheduled = false
        var actions: [Action] = []
        for due in deadlines.expired(now: now) {
            acknowledgementTimedOut(apnsID: due.apnsID, ticket: due.ticket, into: &actions)
        }
        // Deadlines close behind this one are taken together, a little later (see
        // ``AcknowledgementDeadlines``), instead of one timer per push under load.
        scheduleDeadline(afterFiringAt: now, into: &actions)
        return actions
    }

    /// The device did not answer in time: the provider's answer cannot wait any longer, so the push
    /// is stored; a late acknowledgement still removes it.
    private mutating func acknowledgementTimedOut(apnsID: String, ticket: Int, into actions: inout [Action]) {
        if let entry = awaiting[apnsID], entry.ticket == ticket {
            guard case .direct(let completion) = entry.origin else { return }
            awaiting[apnsID]?.origin = .stored
            actions.append(.answer(completion, .notAcknowledged(deliveredAt: entry.deliveredAt)))
            return
        }
        guard var more = awaitingMore[apnsID], let i = more.firstIndex(where: { $0.ticket == ticket }),
            case .direct(let completion) = more[i].origin
        else { return }
        more[i].origin = .stored
        awaitingMore[apnsID] = more
        actions.append(.answer(completion, .notAcknowledged(deliveredAt: more[i].deliveredAt)))
    }

    // MARK: Writing

    private mutating func apply(_ output: LinkQoS.Output, now: NIODeadline, at: Date, into actions: inout [Action]) {
        if !output.send.isEmpty {
            for id in output.send {
                guard let entry = queued.removeValue(forKey: id) else { continue }
                write(entry, now: now, at: at, into: &actions)
            }
            actions.append(.flush)
        }
        scheduleWake(output.wakeAt, into: &actions)
    }

    /// Writes one notification (the caller flushes) and starts waiting for its acknowledgement.
    private mutating func write(_ entry: consuming Entry, now: NIODeadline, at: Date, into actions: inout [Action]) {
        if let expiresAt = entry.expiresAt, expiresAt <= at {
            // Expired while it waited; the store's purge logs it.
            if case .direct(let completion) = entry.origin {
                actions.append(.answer(completion, .notAcknowledged(deliveredAt: nil)))
            }
            return
        }
        if backedUp {
            leave(entry, into: &actions)
            return
        }
        actions.append(.write(entry.push))
        entry.deliveredAt = at
        if case .direct = entry.origin {
            entry.deadlineSlot = deadlines.written(apnsID: entry.push.apnsID, ticket: entry.ticket, now: now)
            scheduleDeadline(into: &actions)
        }
        let apnsID = entry.push.apnsID
        if awaiting[apnsID] == nil {
            awaiting[apnsID] = consume entry
        } else {
            awaitingMore[apnsID, default: []].append(consume entry)
        }
    }

    /// A notification the link does not write because it is backed up: a provider's push goes to
    /// the store (or, with expiration 0, is discarded: its one attempt found the device not
    /// reading); a stored one stays there, and the backlog is read again once the link catches up.
    private mutating func leave(_ entry: consuming Entry, into actions: inout [Action]) {
        leftToStore += 1
        switch entry.origin {
        case .direct(let completion):
            actions.append(.answer(completion, .backedUp))
        case .stored:
            storeHasMore = true
        }
    }

    private mutating func scheduleWake(_ at: NIODeadline?, into actions: inout [Action]) {
        if let current = wakeAt, let at, current == at { return }
        let scheduled = wakeAt != nil
        wakeAt = at
        if let at {
            actions.append(.scheduleWake(at: at))
        } else if scheduled {
            actions.append(.cancelWake)
        }
    }

    /// Arms the deadline timer, unless it is armed: for the next deadline, or (just after it fired
    /// at `firedAt`) no sooner than the deadlines' coalescing time.
    private mutating func scheduleDeadline(afterFiringAt firedAt: NIODeadline? = nil, into actions: inout [Action]) {
        let next = if let firedAt { deadlines.next(afterFiringAt: firedAt) } else { deadlines.next }
        guard !deadlineScheduled, let next else { return }
        deadlineScheduled = true
        actions.append(.scheduleDeadline(at: next))
    }

    private mutating func takeTicket() -> Int {
        nextTicket += 1
        return nextTicket
    }
}

extension StoredPush {
    /// The stored push as it goes down the link.
    var linkPush: LinkPush {
        LinkPush(
            apnsID: apnsID, uniqueID: uniqueID, topic: topic, token: token, environment: environment,
            pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID, payload: payload)
    }
}
