/// Shows what happens on the device: the terminal, a desktop, a web page.
public protocol Presenter: Sendable {
    /// Called for every log entry, in order.
    func show(_ entry: DeviceLogEntry)
}
