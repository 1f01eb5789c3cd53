import Foundation
import HeraldCore
import NIOCore
import NIOWebSocket
import Testing

@testable import HeraldGateway

/// One device's link as a value, driven the way `DeviceLinkHandler` drives it but with no channel
/// and no event loop: the test feeds events, the driver keeps the timers the actions schedule and,
/// as the test moves time on, fires those that come due, in order. The actions are kept for the
/// test to look at (``take()``).
struct LinkMachineDriver {
    typealias Action = DeviceLinkStateMachine.Action
    static let device = "phone"
    static let nonce = Data(repeating: 7, count: 32)
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
    static let startDate = Date(timeIntervalSince1970: 1_800_000_000)

    var machine: DeviceLinkStateMachine
    /// The event loop's time and the wall clock's, moving together.
    var now = Self.start
    var at: Date { Self.startDate.addingTimeInterval(Double((now - Self.start).nanoseconds) / 1e9) }
    /// When each of the link's timers is due, while scheduled.
    var wake: NIODeadline?
    var deadline: NIODeadline?
    var liveness: NIODeadline?
    var authentication: NIODeadline?
    /// Actions since the last ``take()``.
    var actions: [Action] = []
    /// Whether the connection is open (no close has been sent).
    var isOpen = true

    /// A link that has greeted the device (the challenge taken).
    init(
        acknowledgementTimeout: Duration = .seconds(2), qos: LinkQoS.Configuration = .init(batchWindow: .seconds(60)),
        idleTimeout: Duration? = nil, broadcasts: Bool = false, authenticationTimeout: Duration = .seconds(30)
    ) {
        var configuration = DeviceLinkConfiguration()
        configuration.authenticationTimeout = authenticationTimeout
        configuration.acknowledgementTimeout = acknowledgementTimeout
        configuration.qos = qos
        configuration.idleTimeout = idleTimeout
        machine = DeviceLinkStateMachine(configuration: configuration, broadcasts: broadcasts, nonce: Self.nonce)
        record(machine.added())
    }

    /// A link whose device has said hello, been authenticated, and had its backlog read (empty
    /// unless `backlog` is given); the actions up to here are taken.
    static func online(
        acknowledgementTimeout: Duration = .seconds(2), qos: LinkQoS.Configuration = .init(batchWindow: .seconds(60)),
        idleTimeout: Duration? = nil, broadcasts: Bool = false
    ) -> LinkMachineDriver {
        var link = LinkMachineDriver(
            acknowledgementTimeout: acknowledgementTimeout, qos: qos, idleTimeout: idleTimeout, broadcasts: broadcasts)
        link.receive(.hello(device: device, publicKey: nil, signature: Data([1])))
        link.authenticate()
        link.record(link.machine.backlogRead([], now: link.now, at: link.at, isRegistered: { _ in true }))
        _ = link.take()
        return link
    }

    /// The gateway accepted the device's hello.
    mutating func authenticate(generation: Int = 1) {
        let accepted = DeviceRecord(
            id: Self.device, publicKey: Data([4]), generation: generation, createdAt: Self.startDate)
        record(
            machine.authenticated(
                .success(.init(device: accepted, registrations: [], ticket: nil)), now: now, at: at))
    }

    mutating func record(_ new: [Action]) {
        for action in new {
            switch action {
            case .scheduleWake(let due): wake = due
            case .cancelWake: wake = nil
            case .scheduleDeadline(let due): deadline = due
            case .scheduleLiveness(let delay): liveness = now + delay
            case .scheduleAuthenticationDeadline(let due): authentication = due
            case .cancelAuthenticationDeadline: authentication = nil
            case .cancelTimers: (wake, deadline, liveness, authentication) = (nil, nil, nil, nil)
            case .close, .echoClose: isOpen = false
            default: break
            }
            actions.append(action)
        }
    }

    /// The actions since the last call.
    mutating func take() -> [Action] {
        defer { actions = [] }
        return actions
    }

    /// The notifications written since the last ``take()``, taking the actions.
    mutating func written() -> [LinkPush] {
        take().compactMap { if case .write(let push) = $0 { return push } else { return nil } }
    }

    /// The providers' answers since the last ``take()``, taking the actions.
    mutating func answered() -> [Action] {
        take().filter { if case .answer = $0 { true } else { false } }
    }

    /// The kinds of the frames written since the last ``take()``, taking the actions.
    mutating func outbound() -> [WebSocketOpcode] {
        take().compactMap {
            switch $0 {
            case .send, .write, .writeFrame: .text
            case .ping: .ping
            case .pong: .pong
            case .close, .echoClose: .connectionClose
            default: nil
            }
        }
    }

    /// A text frame from the device.
    mutating func receive(_ message: LinkMessage) {
        var data = ByteBuffer()
        data.writeBytes(message.encoded())
        receive(WebSocketFrame(fin: true, opcode: .text, data: data))
    }

    mutating func receive(_ frame: WebSocketFrame) {
        record(machine.received(frame, now: now, at: at))
    }

    /// The device acknowledges.
    mutating func acknowledge(_ ids: [String]) { receive(.ack(ids)) }

    /// A provider's push; its outcome is an ``Action/answer(_:_:)`` action with the push's ticket.
    mutating func offer(_ push: LinkPush, expiresIn: TimeInterval? = 3600, background: Bool = false) {
        let offer = LinkOffer(
            push: push, expiresAt: expiresIn.map { at.addingTimeInterval($0) }, background: background)
        record(machine.offer(offer, completion: { _ in }, now: now, at: at))
    }

    /// Moves time on; the timers that come due fire, in order.
    mutating func advance(by amount: TimeAmount) {
        let end = now + amount
        while let due = [wake, deadline, liveness, authentication].compactMap({ $0 }).filter({ $0 <= end }).min() {
            now = due
            if authentication == due {
                authentication = nil
                record(machine.authenticationDeadlineFired(at: at))
            } else if wake == due {
                wake = nil
                record(machine.wakeFired(now: now, at: at))
            } else if deadline == due {
                deadline = nil
                record(machine.deadlineFired(now: now))
            } else {
                liveness = nil
                record(machine.livenessFired(now: now, at: at))
            }
        }
        now = end
    }

    /// A provider's answer for ticket `ticket`, as an action to compare with.
    static func answer(_ ticket: Int, _ outcome: LinkOutcome) -> Action {
        .answer(DeviceLinkStateMachine.Completion(ticket: ticket, call: { _ in }), outcome)
    }

    /// The answers among `actions`, by ticket, in order.
    static func answers(_ actions: [Action]) -> [(ticket: Int, outcome: LinkOutcome)] {
        actions.compactMap { if case .answer(let c, let o) = $0 { return (c.ticket, o) } else { return nil } }
    }

    /// A push for the device.
    static func push(
        _ apnsID: String, priority: PushPriority = .immediate, topic: String = "com.example.app",
        pushType: PushType = .alert, body: String = #"{"aps":{"alert":"hi"}}"#
    ) -> LinkPush {
        LinkPush(
            apnsID: apnsID, topic: topic, token: DeviceToken(bytes: Array(repeating: 1, count: 32)),
            environment: .development, pushType: pushType, priority: priority, expiration: nil, collapseID: nil,
            payload: Data(body.utf8))
    }

    /// A push as the store holds it, accepted `receivedAt` seconds after the start.
    static func stored(_ apnsID: String, receivedAt: TimeInterval = 0, priority: PushPriority = .immediate)
        -> StoredPush
    {
        StoredPush(
            apnsID: apnsID, uniqueID: nil, deviceID: device, token: DeviceToken(bytes: Array(repeating: 1, count: 32)),
            environment: .development, topic: "com.example.app", pushType: .alert, priority: priority,
            collapseID: nil, expiresAt: startDate.addingTimeInterval(3600),
            receivedAt: startDate.addingTimeInterval(receivedAt), payload: Data(#"{"aps":{}}"#.utf8),
            contentAvailable: false)
    }
}
