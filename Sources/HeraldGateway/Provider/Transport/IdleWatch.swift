import NIOCore

/// A connection's idle timeout (`--idle-timeout`) as a value: when the connection was last active,
/// and whether a timer is armed to look again. It schedules nothing itself: its owner arms a timer
/// for the delay it is told and reports back when it fires. Its time is the connection's event-loop
/// time (monotonic, virtual in tests), given with every call.
struct IdleDeadline {
    /// What the timer found when it fired.
    enum Check: Equatable {
        /// Quiet for the whole timeout: the owner closes the connection.
        case idle
        /// Not yet: arm the timer again for this long.
        case lookAgain(in: TimeAmount)
        /// Not watching (no timeout, or stopped): nothing to do.
        case notWatching
    }

    let timeout: TimeAmount?
    private var lastActivity = NIODeadline.distantPast
    private var watching = false
    /// Whether a timer is armed: only then is activity worth recording (reading the clock).
    private(set) var isWatching = false

    /// A deadline for `timeout` (`nil`: never idle, nothing to arm).
    init(timeout: TimeAmount?) { self.timeout = timeout }

    /// Starts watching at `now`: the delay to arm the timer with, or `nil` when there is no timeout.
    mutating func start(at now: NIODeadline) -> TimeAmount? {
        guard let timeout else { return nil }
        watching = true
        isWatching = true
        lastActivity = now
        return timeout
    }

    /// Something happened on the connection.
    mutating func touch(at now: NIODeadline) { lastActivity = now }

    /// Stops watching (the connection goes, or is closing anyway); the owner cancels its timer.
    mutating func stop() {
        watching = false
        isWatching = false
    }

    /// The timer fired at `now`: whether the connection has been quiet for the whole timeout
    /// (`busy` counts as activity now), or when to look again.
    mutating func timerFired(at now: NIODeadline, busy: Bool) -> Check {
        isWatching = false
        guard let timeout, watching else { return .notWatching }
        if busy { lastActivity = now }
        let quiet = now - lastActivity
        if quiet >= timeout { return .idle }
        isWatching = true
        return .lookAgain(in: timeout - quiet)
    }
}

/// An ``IdleDeadline`` with its timer: for the handlers that keep their state inline (the provider
/// API's HTTP/1.1 handler and the binary interface's). The handler that owns it says what counts as
/// busy and what to do once the connection is idle.
struct IdleWatch {
    private var deadline: IdleDeadline
    private var timer: Scheduled<Void>?
    private var loop: (any EventLoop)?
    private var fire: (@Sendable () -> Void)?

    /// A watch for `timeout` (`nil`: never idle, nothing scheduled).
    init(timeout: TimeAmount?) { self.deadline = IdleDeadline(timeout: timeout) }

    /// Whether a timer is armed: only then is activity worth recording (reading the clock).
    var isWatching: Bool { timer != nil }

    /// Starts watching; `fire` runs on `loop` when the timer is due and should call
    /// ``quietLongEnough(at:busy:)``.
    mutating func start(at now: NIODeadline, on loop: any EventLoop, fire: @escaping @Sendable () -> Void) {
        guard let delay = deadline.start(at: now) else { return }
        self.loop = loop
        self.fire = fire
        timer = loop.scheduleTask(in: delay, fire)
    }

    /// Something happened on the connection.
    mutating func touch(at now: NIODeadline) { deadline.touch(at: now) }

    /// Stops watching (the connection goes, or is closing anyway).
    mutating func stop() {
        timer?.cancel()
        timer = nil
        fire = nil
        loop = nil
        deadline.stop()
    }

    /// When the timer fires: whether the connection has been quiet for the whole timeout (`busy`
    /// counts as activity now). If not, the timer is armed again for when it next could be.
    mutating func quietLongEnough(at now: NIODeadline, busy: Bool) -> Bool {
        timer = nil
        switch deadline.timerFired(at: now, busy: busy) {
        case .idle:
            return true
        case .notWatching:
            return false
        case .lookAgain(let delay):
            if let loop, let fire { timer = loop.scheduleTask(in: delay, fire) }
            return false
        }
    }
}

/// A connection handler with an idle watch: what the provider API's HTTP/1.1 handler and the binary
/// interface's share.
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
