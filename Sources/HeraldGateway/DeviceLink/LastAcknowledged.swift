/// The last few pushes a link saw acknowledged (a ring: no allocation once full), so that a
/// refusal arriving after its acknowledgement still knows the push's topic and origin.
struct LastAcknowledged {
    static let capacity = 32
    private var ring: [(apnsID: String, refusal: LinkRefusal)] = []
    private var next = 0

    mutating func append(_ apnsID: String, _ refusal: LinkRefusal) {
        let item = (apnsID, refusal)
        if ring.count < Self.capacity {
            ring.append(item)
        } else {
            ring[next] = item
        }
        next = (next + 1) % Self.capacity
    }

    /// What is remembered of `apnsID` (the newest, as a provider may reuse an `apns-id`).
    subscript(apnsID: String) -> LinkRefusal? {
        for k in 0..<ring.count {
            let index = (next - 1 - k + 2 * Self.capacity) % Self.capacity
            if ring[index].apnsID == apnsID { return ring[index].refusal }
        }
        return nil
    }
}
