import Foundation

/// A private connection to the D-Bus session bus through libdbus (`libdbus-1.so.3`), loaded when
/// the desktop presenter starts rather than linked: Herald builds without D-Bus headers, and a
/// machine without libdbus gets a clear error from `--presenter desktop` instead of a build failure.
/// Only what the freedesktop Notifications interface needs: method calls with strings, integers,
/// string arrays and `a{sv}` hints, their replies, and signals. Used from one thread at a time
/// (hence unchecked `Sendable`: the presenter opens it, then hands it to its thread for good).
final class DBusConnection: @unchecked Sendable {
    /// A D-Bus failure: libdbus's error name and message, or what could not be loaded.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// A value to send: the types the Notifications interface takes.
    enum Value {
        case string(String)
        case uint32(UInt32)
        case int32(Int32)
        case strings([String])
        /// `a{sv}`: each value a variant holding a string, a byte or a boolean.
        case hints([(String, Hint)])
    }

    enum Hint {
        case string(String)
        case byte(UInt8)
        case boolean(Bool)
    }

    /// A value received: what signals and replies of the interface carry.
    enum Received: Equatable {
        case string(String)
        case uint32(UInt32)
        case strings([String])
        case other
    }

    /// A signal popped from the connection.
    struct Signal {
        var interface: String
        var member: String
        var arguments: [Received]
    }

    private let library: Library
    private let connection: OpaquePointer

    /// Opens a private connection to the session bus (`DBUS_SESSION_BUS_ADDRESS`).
    init() throws(Failure) {
        library = try Library.load()
        var error = DBusErrorBox(library)
        guard let connection = library.busGetPrivate(0, error.pointer) else {
            throw Failure(description: "cannot connect to the session bus: \(error.text ?? "no bus")")
        }
        self.connection = connection
        // libdbus would otherwise end the whole process when the bus goes away.
        library.setExitOnDisconnect(connection, 0)
    }

    deinit {
        library.close(connection)
        library.connectionUnref(connection)
    }

    /// Receives the signals of `interface` from now on.
    func addMatch(_ rule: String) throws(Failure) {
        var error = DBusErrorBox(library)
        library.addMatch(connection, rule, error.pointer)
        if let text = error.text { throw Failure(description: "match \(rule): \(text)") }
    }

    /// Calls a method and waits (at most `timeout` ms) for its reply's arguments.
    func call(
        destination: String, path: String, interface: String, method: String, _ arguments: [Value],
        timeout: Int32 = 5000
    ) throws(Failure) -> [Received] {
        guard let message = library.newMethodCall(destination, path, interface, method) else {
            throw Failure(description: "\(method): out of memory")
        }
        defer { library.messageUnref(message) }
        var strings: [UnsafeMutablePointer<CChar>] = []
        defer { strings.forEach { free($0) } }
        let iterator = Iterator()
        library.iterInitAppend(message, iterator.pointer)
        for argument in arguments { append(argument, to: iterator, keeping: &strings) }
        var error = DBusErrorBox(library)
        guard let reply = library.sendWithReplyAndBlock(connection, message, timeout, error.pointer) else {
            throw Failure(description: "\(interface).\(method): \(error.text ?? "no reply")")
        }
        defer { library.messageUnref(reply) }
        return read(reply)
    }

    /// Waits up to `timeout` ms for traffic, then returns the signals that arrived; `nil` once the
    /// connection is gone (the bus stopped).
    func signals(waiting timeout: Int32) -> [Signal]? {
        guard library.readWrite(connection, timeout) != 0 else { return nil }
        var signals: [Signal] = []
        while let message = library.popMessage(connection) {
            defer { library.messageUnref(message) }
            // DBUS_MESSAGE_TYPE_SIGNAL
            guard library.messageGetType(message) == 4,
                let interface = library.messageGetInterface(message).map({ String(cString: $0) }),
                let member = library.messageGetMember(message).map({ String(cString: $0) })
            else { continue }
            signals.append(Signal(interface: interface, member: member, arguments: read(message)))
        }
        return signals
    }

    // MARK: - Marshalling

    private static let typeString = Int32(UInt8(ascii: "s"))
    private static let typeUInt32 = Int32(UInt8(ascii: "u"))
    private static let typeInt32 = Int32(UInt8(ascii: "i"))
    private static let typeArray = Int32(UInt8(ascii: "a"))
    private static let typeVariant = Int32(UInt8(ascii: "v"))
    private static let typeDictEntry = Int32(UInt8(ascii: "e"))
    private static let typeByte = Int32(UInt8(ascii: "y"))
    private static let typeBoolean = Int32(UInt8(ascii: "b"))

    private func append(_ value: Value, to iterator: Iterator, keeping strings: inout [UnsafeMutablePointer<CChar>]) {
        switch value {
        case .string(let text):
            appendString(text, to: iterator, keeping: &strings)
        case .uint32(var number):
            _ = library.iterAppendBasic(iterator.pointer, Self.typeUInt32, &number)
        case .int32(var number):
            _ = library.iterAppendBasic(iterator.pointer, Self.typeInt32, &number)
        case .strings(let texts):
            let array = Iterator()
            _ = library.iterOpenContainer(iterator.pointer, Self.typeArray, "s", array.pointer)
            for text in texts { appendString(text, to: array, keeping: &strings) }
            _ = library.iterCloseContainer(iterator.pointer, array.pointer)
        case .hints(let hints):
            let array = Iterator()
            _ = library.iterOpenContainer(iterator.pointer, Self.typeArray, "{sv}", array.pointer)
            for (key, hint) in hints {
                let entry = Iterator()
                _ = library.iterOpenContainer(array.pointer, Self.typeDictEntry, nil, entry.pointer)
                appendString(key, to: entry, keeping: &strings)
                let variant = Iterator()
                switch hint {
                case .string(let text):
                    _ = library.iterOpenContainer(entry.pointer, Self.typeVariant, "s", variant.pointer)
                    appendString(text, to: variant, keeping: &strings)
                case .byte(var byte):
                    _ = library.iterOpenContainer(entry.pointer, Self.typeVariant, "y", variant.pointer)
                    _ = library.iterAppendBasic(variant.pointer, Self.typeByte, &byte)
                case .boolean(let flag):
                    var value: UInt32 = flag ? 1 : 0
                    _ = library.iterOpenContainer(entry.pointer, Self.typeVariant, "b", variant.pointer)
                    _ = library.iterAppendBasic(variant.pointer, Self.typeBoolean, &value)
                }
                _ = library.iterCloseContainer(entry.pointer, variant.pointer)
                _ = library.iterCloseContainer(array.pointer, entry.pointer)
            }
            _ = library.iterCloseContainer(iterator.pointer, array.pointer)
        }
    }

    private func appendString(
        _ text: String, to iterator: Iterator, keeping strings: inout [UnsafeMutablePointer<CChar>]
    ) {
        // D-Bus strings are UTF-8 without NUL; libdbus copies the bytes the pointer points to.
        guard let copy = strdup(text.replacingOccurrences(of: "\0", with: "")) else { return }
        strings.append(copy)
        var pointer: UnsafePointer<CChar>? = UnsafePointer(copy)
        _ = library.iterAppendBasic(iterator.pointer, Self.typeString, &pointer)
    }

    private func read(_ message: OpaquePointer) -> [Received] {
        let iterator = Iterator()
        guard library.iterInit(message, iterator.pointer) != 0 else { return [] }
        var values: [Received] = []
        repeat {
            values.append(readOne(iterator))
        } while library.iterNext(iterator.pointer) != 0
        return values
    }

    private func readOne(_ iterator: Iterator) -> Received {
        switch library.iterGetArgType(iterator.pointer) {
        case Self.typeString:
            var pointer: UnsafePointer<CChar>?
            library.iterGetBasic(iterator.pointer, &pointer)
            return .string(pointer.map { String(cString: $0) } ?? "")
        case Self.typeUInt32:
            var number: UInt32 = 0
            library.iterGetBasic(iterator.pointer, &number)
            return .uint32(number)
        case Self.typeArray:
            let element = Iterator()
            library.iterRecurse(iterator.pointer, element.pointer)
            var texts: [String] = []
            while library.iterGetArgType(element.pointer) == Self.typeString {
                if case .string(let text) = readOne(element) { texts.append(text) }
                if library.iterNext(element.pointer) == 0 { break }
            }
            return .strings(texts)
        default:
            return .other
        }
    }

    /// A `DBusMessageIter`: an opaque struct of about 80 bytes that libdbus fills in; 256 is ample.
    private final class Iterator {
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 16)
        init() { pointer.initializeMemory(as: UInt8.self, repeating: 0, count: 256) }
        deinit { pointer.deallocate() }
    }

    /// A `DBusError` (two string pointers and flags: 32 bytes on 64-bit; 64 allocated).
    private struct DBusErrorBox {
        let library: Library
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)

        init(_ library: Library) {
            self.library = library
            pointer.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
            library.errorInit(pointer)
        }

        /// `name: message` when set (and frees it), else `nil`.
        var text: String? {
            mutating get {
                guard library.errorIsSet(pointer) != 0 else { return nil }
                let name = pointer.load(as: UnsafePointer<CChar>?.self).map { String(cString: $0) } ?? "error"
                let message =
                    pointer.load(fromByteOffset: MemoryLayout<UnsafeRawPointer>.size, as: UnsafePointer<CChar>?.self)
                    .map { String(cString: $0) } ?? ""
                library.errorFree(pointer)
                return "\(name): \(message)"
            }
        }
    }

    /// libdbus's functions, found with `dlsym`.
    private struct Library {
        typealias Raw = UnsafeMutableRawPointer
        var busGetPrivate: @convention(c) (Int32, Raw) -> OpaquePointer?
        var setExitOnDisconnect: @convention(c) (OpaquePointer, UInt32) -> Void
        var close: @convention(c) (OpaquePointer) -> Void
        var connectionUnref: @convention(c) (OpaquePointer) -> Void
        var addMatch: @convention(c) (OpaquePointer, UnsafePointer<CChar>, Raw) -> Void
        var newMethodCall:
            @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafePointer<CChar>) ->
                OpaquePointer?
        var messageUnref: @convention(c) (OpaquePointer) -> Void
        var iterInitAppend: @convention(c) (OpaquePointer, Raw) -> Void
        var iterAppendBasic: @convention(c) (Raw, Int32, UnsafeRawPointer) -> UInt32
        var iterOpenContainer: @convention(c) (Raw, Int32, UnsafePointer<CChar>?, Raw) -> UInt32
        var iterCloseContainer: @convention(c) (Raw, Raw) -> UInt32
        var sendWithReplyAndBlock: @convention(c) (OpaquePointer, OpaquePointer, Int32, Raw) -> OpaquePointer?
        var iterInit: @convention(c) (OpaquePointer, Raw) -> UInt32
        var iterGetArgType: @convention(c) (Raw) -> Int32
        var iterGetBasic: @convention(c) (Raw, Raw) -> Void
        var iterNext: @convention(c) (Raw) -> UInt32
        var iterRecurse: @convention(c) (Raw, Raw) -> Void
        var readWrite: @convention(c) (OpaquePointer, Int32) -> UInt32
        var popMessage: @convention(c) (OpaquePointer) -> OpaquePointer?
        var messageGetType: @convention(c) (OpaquePointer) -> Int32
        var messageGetInterface: @convention(c) (OpaquePointer) -> UnsafePointer<CChar>?
        var messageGetMember: @convention(c) (OpaquePointer) -> UnsafePointer<CChar>?
        var errorInit: @convention(c) (Raw) -> Void
        var errorIsSet: @convention(c) (Raw) -> UInt32
        var errorFree: @convention(c) (Raw) -> Void

        static func load() throws(Failure) -> Library {
            guard let handle = dlopen("libdbus-1.so.3", RTLD_NOW | RTLD_LOCAL) else {
                let reason = dlerror().map { String(cString: $0) } ?? "not found"
                throw Failure(description: "libdbus-1.so.3 cannot be loaded (install libdbus-1-3): \(reason)")
            }
            func symbol<T>(_ name: String, _: T.Type = T.self) throws(Failure) -> T {
                guard let address = dlsym(handle, name) else {
                    throw Failure(description: "libdbus-1.so.3 has no \(name)")
                }
                return unsafeBitCast(address, to: T.self)
            }
            return Library(
                busGetPrivate: try symbol("dbus_bus_get_private"),
                setExitOnDisconnect: try symbol("dbus_connection_set_exit_on_disconnect"),
                close: try symbol("dbus_connection_close"),
                connectionUnref: try symbol("dbus_connection_unref"),
                addMatch: try symbol("dbus_bus_add_match"),
                newMethodCall: try symbol("dbus_message_new_method_call"),
                messageUnref: try symbol("dbus_message_unref"),
                iterInitAppend: try symbol("dbus_message_iter_init_append"),
                iterAppendBasic: try symbol("dbus_message_iter_append_basic"),
                iterOpenContainer: try symbol("dbus_message_iter_open_container"),
                iterCloseContainer: try symbol("dbus_message_iter_close_container"),
                sendWithReplyAndBlock: try symbol("dbus_connection_send_with_reply_and_block"),
                iterInit: try symbol("dbus_message_iter_init"),
                iterGetArgType: try symbol("dbus_message_iter_get_arg_type"),
                iterGetBasic: try symbol("dbus_message_iter_get_basic"),
                iterNext: try symbol("dbus_message_iter_next"),
                iterRecurse: try symbol("dbus_message_iter_recurse"),
                readWrite: try symbol("dbus_connection_read_write"),
                popMessage: try symbol("dbus_connection_pop_message"),
                messageGetType: try symbol("dbus_message_get_type"),
                messageGetInterface: try symbol("dbus_message_get_interface"),
                messageGetMember: try symbol("dbus_message_get_member"),
                errorInit: try symbol("dbus_error_init"),
                errorIsSet: try symbol("dbus_error_is_set"),
                errorFree: try symbol("dbus_error_free"))
        }
    }
}
