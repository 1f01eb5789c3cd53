import Foundation
import PostgresNIO

/// The admin API's fault rules, shared by the nodes.
extension PostgresGatewayStore: FaultRuleStore {
    // Each change is announced on ``FaultChange/channel`` when it commits; every node then reads the
    // whole list again (rules are few).

    public func saveFaultRule(_ rule: FaultRule) async throws {
        let record = try records.encoder.encode(rule)
        try await transaction { connection in
            try await self.drain(
                """
                INSERT INTO fault_rule (id, record) VALUES (\(rule.id), \(record))
                ON CONFLICT (id) DO UPDATE SET record = excluded.record
                """, on: connection)
            try await self.notifyFaultRulesChanged(on: connection)
        }
    }

    public func deleteFaultRule(id: String) async throws -> Bool {
        try await transaction { connection in
            let gone = try await self.rows(
                "DELETE FROM fault_rule WHERE id = \(id) RETURNING id", as: String.self, on: connection)
            try await self.notifyFaultRulesChanged(on: connection)
            return !gone.isEmpty
        }
    }

    public func deleteAllFaultRules() async throws {
        try await transaction { connection in
            try await self.drain("DELETE FROM fault_rule", on: connection)
            try await self.notifyFaultRulesChanged(on: connection)
        }
    }

    /// Tells every node, when the transaction commits, to read the rules again.
    private func notifyFaultRulesChanged(on connection: PostgresConnection) async throws {
        try await drain("SELECT pg_notify(\(FaultChange.channel), '')", on: connection)
    }

    public func faultRules() async throws -> [FaultRule] {
        try await rows("SELECT record FROM fault_rule ORDER BY seq", as: Data.self).map {
            try records.decoder.decode(FaultRule.self, from: $0)
        }
    }
}
