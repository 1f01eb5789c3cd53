import Foundation
import HeraldCore
import NIOCore

extension DeviceLinkStateMachine {
    /// What the link's handler does for an event, in the order given: writes, timers, the store's
    /// records, the work that runs off the event loop, logs, and the providers' answers.
    enum Action: Equatable {
        // MARK: Writes

        /// Writes a message and flushes (right before a close, the close frame's flush sends both).
        case send(LinkMessage)
        /// Writes a notification; ``flush`` follows once the turn's notifications are written.
        case write(LinkPush)
        /// Writes an already encoded message (a broadcast encoded once for all its subscribers).
        case writeFrame(ByteBuffer)
        /// Flushes once at the end of the event loop's turn, however many writes came before.
        case flush
        /// Sends a WebSocket ping (liveness) and flushes.
        case ping
        /// Answers a WebSocket ping with this data and flushes.
        case pong(ByteBuffer)
        /// Answers the device's close frame with this status code, then closes the connection.
        case echoClose(ByteBuffer)
        /// Sends a close frame with this status code, then closes the connection.
        case close(code: UInt16)
        /// Tells the first-bytes deadline that the device has done its part.
        case connectionEstablished

        // MARK: Timers (one of each kind per link)

        /// (Re)schedules the QoS wake-up at this event-loop time; then ``DeviceLinkStateMachine/wakeFired(now:at:)``.
        case scheduleWake(at: NIODeadline)
        /// Cancels the QoS wake-up.
        case cancelWake
        /// Schedules the acknowledgement deadline timer; then ``DeviceLinkStateMachine/deadlineFired(now:)``.
        case scheduleDeadline(at: NIODeadline)
        /// Schedules the liveness check; then ``DeviceLinkStateMachine/livenessFired(now:)``.
        case scheduleLiveness(in: TimeAmount)
        /// Schedules the deadline of the `hello`'s check; then
        /// ``DeviceLinkStateMachine/authenticationDeadlineFired(at:)``.
        case scheduleAuthenticationDeadline(at: NIODeadline)
        /// Cancels it (the check came back).
        case cancelAuthenticationDeadline
        /// Cancels every timer (the link closed).
        case cancelTimers

        // MARK: Work off the event loop, whose result comes back as an event

        /// Checks the signature and registers the device; then ``DeviceLinkStateMachine/authenticated(_:now:at:)``.
        case authenticate(device: String?, publicKey: Data?, signature: Data, nonce: Data)
        /// Checks a resumption ticket and its proof, on the event loop (it needs no store); then
        /// ``DeviceLinkStateMachine/resumed(_:now:at:)``.
        case resume(device: String, ticket: Data, proof: Data, nonce: Data)
        /// Carries out a device's request (register, unregister, reset...) and sends the answer.
        case perform(LinkMessage, device: String)
        /// Asks the broadcast hub for the subscription; then ``DeviceLinkStateMachine/subscribed(request:_:channels:_:)``.
        case subscribe(request: Int?, Subscription, channels: [String], at: Date)
        /// Tells the broadcast hub this link leaves these channels.
        case unsubscribe(channels: [String], environment: APNsEnvironment)
        /// Reads what the store holds for the device; then ``DeviceLinkStateMachine/backlogRead(_:now:at:isRegistered:)``.
        case readBacklog(device: String)

        // MARK: The registry of connected devices and the store

        /// Records the device as connected here (replacing its other link), and logs it.
        case attach(device: String, at: Date)
        /// Forgets the device's connection (unless another replaced it) and when it was last seen.
        case detach(device: String, at: Date)
        /// The device acknowledged a stored push: it leaves the store; the delivery log says so.
        case recordAcknowledged(LinkPush, device: String, deliveredAt: Date, acknowledgedAt: Date)
        /// The device refused a push it had acknowledged (the delivery log says why).
        case recordRefused(apnsID: String, device: String, reason: String, at: Date, refusal: LinkRefusal?)
        /// Stored pushes that have no one to go to any more (the app was removed, the device reset).
        case discard([StoredPush], device: String, at: Date)
        /// Answers a provider waiting for its push.
        case answer(Completion, LinkOutcome)

        // MARK: Logs

        /// The device was refused (`notice`).
        case logRefused(code: LinkErrorCode, message: String)
        /// The listener closed the connection, with the reason (listener log).
        case logClosed(reason: String)
        /// The device's link closed (`info`).
        case logDisconnected(device: String)
        /// The link backed up: the device does not read what was written to it (`notice`).
        case logBackedUp(device: String)
        /// The link caught up, and what it left unsent meanwhile (`notice`).
        case logCaughtUp(device: String, leftToStore: Int, broadcastsNotSent: Int)
    }

    /// A provider waiting for what becomes of its push: called once, on the link's event loop.
    struct Completion: Equatable {
        /// The link's number for the push (0 for one never taken).
        var ticket: Int
        /// Tells the provider.
        var waiter: any LinkWaiter

        /// Tells the provider what became of its push.
        func call(_ outcome: LinkOutcome) { waiter.linkOutcome(outcome) }

        /// Two completions are the same when they answer the same ticket (tests compare actions).
        static func == (a: Completion, b: Completion) -> Bool { a.ticket == b.ticket }
    }
}

extension DeviceLinkStateMachine.Action {
    /// Whether this writes a close frame and closes the connection.
    var isClose: Bool {
        switch self {
        case .close, .echoClose: true
        default: false
        }
    }
}
