/**
 * End to end through the real processes (docs/integrators.md "Receiving webhooks"): POST
 * /leads on the API process, and the receiver gets `lead.created` from the
 * dispatcher process with the lead's id, name, phone and source, signed.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect, Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { rawClient } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { startApi, startDispatcher } from "../support/Processes.ts"
import { startReceiver } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const Delivered = Schema.Struct({
  event: Schema.Literal("lead.created"),
  account_id: Schema.Int,
  payload: Schema.Struct({ lead_id: Schema.Int, name: Schema.String, phone: Schema.String, source: Schema.String }),
  timestamp: Schema.String
})
const Created = Schema.Struct({
  data: Schema.Struct({ id: Schema.Int, name: Schema.String, phone: Schema.String, source: Schema.String })
})

const text = (value: unknown): string => typeof value === "string" ? value : ""

layer(TestDatabase.layer, { excludeTestServices: true })("end to end", (it) => {
  it.effect("POST /leads → the receiver gets lead.created with the same name, phone and source, signed", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const { schoolId } = yield* T.school("End to end school")
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 1]])
      const key = yield* Fixtures.key(schoolId, { scope: "write" })
      const receiver = yield* startReceiver()
      const sub = yield* T.subscription(schoolId, receiver.url, ["lead.created"])
      const port = yield* freePort
      yield* startApi(database.url, port)
      yield* startDispatcher(database.url, { WEBHOOK_ALLOW_INSECURE_URLS: "true" })

      const reply = yield* rawClient(`http://127.0.0.1:${port}`).post("/api/public/v1/leads", {
        key,
        idempotencyKey: "e2e-1",
        body: { name: "Anna Petrova", phone: "+7 (999) 123-45-67", source: "landing" }
      })
      assert.strictEqual(reply.status, 201, reply.text)
      const lead = Schema.decodeUnknownSync(Schema.fromJsonString(Created))(reply.text).data

      const [request] = yield* receiver.waitFor(1)
      const body = Schema.decodeUnknownSync(Schema.fromJsonString(Delivered))(request?.body ?? "")
      assert.deepStrictEqual(body.payload, { lead_id: lead.id, name: lead.name, phone: lead.phone, source: lead.source })
      assert.deepStrictEqual([lead.name, lead.phone, lead.source], ["Anna Petrova", "+7 (999) 123-45-67", "landing"])
      assert.strictEqual(body.account_id, schoolId)
      const raw = request?.raw ?? Buffer.alloc(0)
      const expected = createHmac("sha256", Buffer.from(sub.secret, "utf8")).update(raw).digest()
      assert.isTrue(timingSafeEqual(Buffer.from(text(request?.headers["x-service-signature"]), "hex"), expected))
      new Webhook(sub.secret).verify(raw.toString("utf8"), {
        "webhook-id": text(request?.headers["webhook-id"]),
        "webhook-timestamp": text(request?.headers["webhook-timestamp"]),
        "webhook-signature": text(request?.headers["webhook-signature"])
      })
    }), { timeout: 60_000 })
})
