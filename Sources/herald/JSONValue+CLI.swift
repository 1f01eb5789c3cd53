import HeraldCore

/// Reading the device API's answers, which the CLI prints or passes on without a type of its own.
extension JSONValue {
    /// The member `key`, if this is an object that has it.
    subscript(key: String) -> JSONValue? { objectValue?[key] }

    /// The value, if this is a boolean.
    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The strings of an array of strings.
    var strings: [String]? { arrayValue?.compactMap(\.stringValue) }

    /// The integers of an array of integers.
    var ints: [Int]? { arrayValue?.compactMap(\.intValue) }

    /// An array of strings.
    static func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }
}
