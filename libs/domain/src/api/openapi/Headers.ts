/**
 * The headers the documents spell out beyond what HttpApi derives: the
 * Idempotency-Key of every write, with its rule, and the answers a repeat
 * replays (`Idempotent-Replayed`); `X-Request-Id` on every answer.
 */
import * as Idempotency from "../../Idempotency.ts"
import * as RequestId from "../../RequestId.ts"
import type { Adjustment, Header, OperationAdjustment, Parameter, SpecResponse } from "./Document.ts"
import { operations } from "./Document.ts"

/**
 * The answers a repeat can replay (docs/decisions.md "Idempotency"): what the
 * operation itself produced, its 2xx and its 409 and 422. Never 401, 403,
 * 413, 415, 429 or 5xx, which happen before the key is claimed or roll back.
 */
const REPLAYABLE = /^(2..|409|422)$/

const replayedHeader: Header = {
  description: Idempotency.REPLAYED_DESCRIPTION,
  required: false,
  schema: { type: "string", enum: ["true"] }
}

/** The Idempotency-Key header under its documented name, with its rule and its bounds. */
const idempotencyKey = (parameter: Parameter): Parameter =>
  parameter.in === "header" && parameter.name === "idempotency-key"
    ? {
      ...parameter,
      name: Idempotency.HEADER,
      description: Idempotency.KEY_DESCRIPTION,
      schema: { type: "string", minLength: 1, maxLength: Idempotency.MAX_KEY_LENGTH, pattern: "^[\\x20-\\x7E]+$" }
    }
    : parameter

const withReplayedHeader = (response: SpecResponse): SpecResponse => ({
  ...response,
  headers: { ...response.headers, [Idempotency.REPLAYED_HEADER]: replayedHeader }
})

/**
 * An operation adjustment for every write (docs/integrators.md "Writing";
 * docs/decisions.md "Idempotency"): the Idempotency-Key header as the
 * documents spell it, and `Idempotent-Replayed` on the answers a repeat
 * replays.
 */
export const documentIdempotencyKey: OperationAdjustment = (operation) => ({
  ...operation,
  parameters: operation.parameters.map(idempotencyKey),
  responses: Object.fromEntries(
    Object.entries(operation.responses).map(([status, response]) => [
      status,
      REPLAYABLE.test(status) ? withReplayedHeader(response) : response
    ])
  )
})

/**
 * Every answer of every operation carries `X-Request-Id`
 * (docs/operations.md "Request ids"), as HttpApi cannot declare a header on
 * every response.
 */
export const documentRequestId: Adjustment = (spec) => {
  for (const { operation } of operations(spec)) {
    for (const response of Object.values(operation.responses)) {
      response.headers = {
        ...response.headers,
        [RequestId.HEADER]: { description: RequestId.DESCRIPTION, required: true, schema: RequestId.SCHEMA }
      }
    }
  }
  return spec
}
