/**
 * The trace an outbox event belongs to (docs/operations.md "Traces"):
 * `outbox_events.traceparent`, the W3C `traceparent` of the span that wrote
 * the event (libs/persistence/src/Outbox.ts), NULL when no span was being
 * exported. The dispatcher reads it with the claim and the fan-out, in the
 * statements it already runs, and opens each delivery attempt's span under
 * it. It never reaches a receiver.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE outbox_events ADD COLUMN traceparent text`
]
