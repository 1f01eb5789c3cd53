import Foundation
import HeraldCore
import HeraldNIO
import NIOCore
import Synchronization

extension APNsClient {
    /// Sends `notification` to each device token, `concurrency` requests in flight at once over the
    /// client's connections, at most `perSecond` started a second (0: as fast as answered); each
    /// push gets its own `apns-id`. `progress` gets the tally after every answer; the tally is
    /// returned once every push is answered (refusals and failures are counted, not thrown).
    public func send(
        _ notification: APNsNotification, to deviceTokens: [String], concurrency: Int, perSecond: Double = 0,
        progress: @Sendable (APNsBulkTally) -> Void = { _ in }
    ) async -> APNsBulkTally {
        var each = notification
        each.apnsID = nil
        // As fast as answered: the next push starts from the answer of the last, on its connection's loop.
        if perSecond <= 0,
            let run = try? APNsBulkRun(client: self, notification: each, tokens: deviceTokens, concurrency: concurrency)
        {
            return await run.run(progress: progress)
        }
        return await APNsBulkSend(concurrency: concurrency, perSecond: perSecond, clock: ContinuousClock())
            .run(deviceTokens, send: { [each] token in try await self.send(each, to: token) }, progress: progress)
    }
}

/// A bulk send without a task per push: each push's first attempt goes straight to the HTTP/2
/// client, and the answer that comes back on the connection's event loop starts the next push there,
/// with no hop between threads. A push whose first answer calls for another try (a retryable status,
/// an expired provider token, no answer) goes on as a single ``APNsClient/send(_:to:)`` would after
/// that answer: the same `apns-id`, deadline and retry policy, the first attempt counted.
final class APNsBulkRun: Sendable {
    let client: APNsClient
    let notification: APNsNotification
    let tokens: [String]
    let concurrency: Int
    let endpoint: HTTP2Endpoint
    let base: String
    /// The payload, once: every request shares its bytes.
    let payload: ByteBuffer
    private struct State {
        var next = 0
        var tally = APNsBulkTally()
        var finished: CheckedContinuation<APNsBulkTally, Never>?
        /// The caller's `progress`, held here only (never by a closure that outlives the run): it is
        /// let go before the run returns.
        var progress: (@Sendable (APNsBulkTally) -> Void)?
    }
    private let state = Mutex(State())

    init(client: APNsClient, notification: APNsNotification, tokens: [String], concurrency: Int) throws {
        self.client = client
        self.notification = notification
        self.tokens = tokens
        self.concurrency = max(1, concurrency)
        (endpoint, base) = try client.configuration.server.endpoint()
        payload = ByteBuffer(bytes: notification.payload)
    }

    /// Sends every push; `progress` gets the tally after each answer, one call at a time.
    func run(progress: @Sendable (APNsBulkTally) -> Void) async -> APNsBulkTally {
        if tokens.isEmpty { return APNsBulkTally() }
        return await withoutActuallyEscaping(progress) { progress in
            await withCheckedContinuation { continuation in
                state.withLock {
                    $0.finished = continuation
                    $0.progress = progress
                }
                for _ in 0..<min(concurrency, tokens.count) { startNext() }
            }
        }
    }

    /// Starts the next push that can go; pushes refused before they go (a malformed token, a key
    /// that cannot sign) are counted on the way, in a loop rather than by recursion.
    private func startNext() {
        while let index = claim() {
            let token = tokens[index]
            guard DeviceToken.isHex(token) else {
                let error = APNsClientError.invalidDeviceToken(token)
                if count(.init(token: token, result: .failure(error))) { return }
                continue
            }
            let apnsID = RandomUUID.lowercaseString()
            let headers: [(String, String)]
            do {
                headers = try client.headers(for: notification, apnsID: apnsID)
            } catch {
                if count(.init(token: token, result: .failure(error))) { return }
                continue
            }
            let deadline = NIODeadline.now() + TimeAmount(client.configuration.timeout)
            let request = HTTP2ClientRequest(
                path: base + "/3/device/" + token, headers: headers, body: payload, deadline: deadline)
            client.http.send(request, to: endpoint) { [self] result in
                answered(result, token: token, apnsID: apnsID, headers: headers, deadline: deadline)
            }
            return
        }
    }

    private func answered(
        _ result: Result<HTTP2ClientResponse, HTTP2ClientFailure>, token: String, apnsID: String,
        headers: [(String, String)], deadline: NIODeadline,
    ) {
        // The usual answer: only its status matters to the tally.
        if case .success(let response) = result, response.status == 200 {
            return record(.init(answer: "200"))
        }
        let (failure, renewed): ((any Error)?, Bool)
        switch client.verdict(result, apnsID: apnsID, attempts: 1, headers: headers, renewedToken: false) {
        case .delivered(let delivery): return record(.init(token: token, result: .success(delivery)))
        case .final(let error): return record(.init(token: token, result: .failure(error)))
        case .renewToken(let sent):
            client.tokens?.discard(sent)
            (failure, renewed) = (nil, true)
        case .retry(let error): (failure, renewed) = (error, false)
        }
        // Another try is due: the single send's way, with its retries, under the same apns-id.
        Task {
            let outcome: APNsBulkTally.Outcome
            do {
                let delivery = try await client.attempts(
                    notification, to: token, apnsID: apnsID, deadline: deadline, made: 1, failure: failure,
                    renewedToken: renewed)
                outcome = .init(token: token, result: .success(delivery))
            } catch {
                outcome = .init(token: token, result: .failure(error))
            }
            record(outcome)
        }
    }

    /// The next push's index, if any is left.
    private func claim() -> Int? {
        state.withLock { state in
            guard state.next < tokens.count else { return nil }
            defer { state.next += 1 }
            return state.next
        }
    }

    /// Counts an answer, then starts the next push.
    private func record(_ outcome: APNsBulkTally.Outcome, ) {
        if !count(outcome) { startNext() }
    }

    /// Counts an answer and tells `progress`; `true` once every push is answered (the run is over).
    private func count(_ outcome: APNsBulkTally.Outcome, ) -> Bool {
        let finished = state.withLock { state -> (CheckedContinuation<APNsBulkTally, Never>, APNsBulkTally)? in
            state.tally.add(outcome)
            state.progress?(state.tally)
            guard state.tally.done == tokens.count, let finished = state.finished else { return nil }
            state.finished = nil
            state.progress = nil
            return (finished, state.tally)
        }
        guard let (continuation, tally) = finished else { return false }
        continuation.resume(returning: tally)
        return true
    }
}
