/**
 * Sample events (docs/integrators.md "Receiving webhooks on your machine"):
 * what `webhooks trigger` sends, one per catalog event, its payload the
 * first `examples` annotation of the event's payload schema
 * (libs/domain/src/Events.ts), so a new event type has a sample without a
 * line here. A sample's delivery body carries `"sample":true` at the top
 * level (libs/domain/src/WebhookSignature.ts `deliveryBody`).
 */
import * as Schema from "effect/Schema"
import { type EventName, payloads } from "./Events.ts"

/** The sample payload of `event`, as the JSON text the outbox stores (the schema's first example, encoded). */
export const samplePayloadJson = (event: EventName): string => {
  const schema: Schema.Codec<unknown, unknown> = payloads[event]
  const example = Schema.resolveAnnotations(schema)?.examples?.[0]
  if (example === undefined) throw new Error(`the payload schema of ${event} has no examples annotation`)
  return JSON.stringify(Schema.encodeUnknownSync(schema)(example))
}
