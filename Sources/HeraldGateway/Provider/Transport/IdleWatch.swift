import NIOCore

/// A provider connection's idle timeout (`--idle-timeout`): when the connection was last active,
/// and a timer that looks again when it could next have been quiet for the whole timeout. The
/// handler that owns it says what counts as busy and what to do once the connection is idle. Its
/// time is the connection's event-loop time (monotonic, virtual in tests).
struct IdleWatch {
    private let timeout: TimeAmount?
    private var lastActivity = NIODeadline.distantPast
    private var timer: Scheduled<Void>?
    private var loop: (any EventLoop)?
    private var fire: (@Sendable () -> Void)?

    /// A watch for `timeout` (`nil`: never idle, nothing scheduled).
    init(timeout: TimeAmount?) { self.timeout = timeout }

    /// Whether a timer is armed: only then is activity worth recording (reading the clock).
    var isWatching: Bool { timer != nil }

    /// Starts watching; `fire` runs on `loop` when the timer is due and should call
    /// ``quietLongEnough(at:busy:)``.
    mutating func start(at now: NIODeadline, on loop: any EventLoop, fire: @escaping @Sendable () -> Void) {
        guard let timeout else { return }
        self.loop = loop
        self.fire = fire
        lastActivity = now
        arm(in: timeout)
    }

    /// Something happened on the connection.
    mutating func touch(at now: NIODeadline) { lastActivity = now }

    /// Stops watching (the connection goes, or is closing anyway).
    mutating func stop() {
        timer?.cancel()
        timer = nil
        fire = nil
        loop = nil
    }

    /// When the timer fires: whether the connection has been quiet for the whole timeout (`busy`
    /// counts as activity now). If not, the timer is armed again for when it next could be.
    mutating func quietLongEnough(at now: NIODeadline, busy: Bool) -> Bool {
        timer = nil
        guard let timeout, fire != nil else { return false }
        if busy { lastActivity = now }
        let quiet = now - lastActivity
        if quiet >= timeout { return true }
        arm(in: timeout - quiet)
        return false
    }

    private mutating func arm(in delay: TimeAmount) {
        guard let loop, let fire else { return }
        timer = loop.scheduleTask(in: delay, fire)
    }
}

/// A connection handler with an idle watch: what the provider API's HTTP/2 and HTTP/1.1 handlers and
/// the binary interface's share.
protocol IdleWatching: AnyObject {
    var idle: IdleWatch { get set }
    /// Called on the connection's loop when the watch's timer is due; closes the connection when it
    /// has been quiet long enough (``IdleWatch/quietLongEnough(at:busy:)``).
    func checkIdle()
}

extension IdleWatching {
    /// Starts the watch on the connection's loop (from `handlerAdded`).
    func startIdleWatch(_ context: ChannelHandlerContext) {
        let bound = NIOLoopBound<any IdleWatching>(self, eventLoop: context.eventLoop)
        idle.start(at: context.eventLoop.now, on: context.eventLoop) { bound.value.checkIdle() }
    }
}
