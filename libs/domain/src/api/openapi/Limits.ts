/**
 * The documented limits of request bodies as JSON Schema keywords (`maxLength`, `minLength`,
 * `pattern`), where HttpApi cannot derive them: a text field is trimmed before its length is
 * checked (libs/domain/src/Text.ts), so its check is on the decoded side and the document, which
 * shows what is sent, loses it. The limits are the models' own constants, so they are written
 * once; the keywords are added to the document only, so what the API accepts and its 422
 * messages stay as they are. Lengths are counted after trimming: a body within these keywords is
 * within the limits (docs/integrators.md "Writing"; docs/back-office.md).
 */
import * as Leads from "../../Leads.ts"
import * as Phone from "../../Phone.ts"
import * as ReceiverAddress from "../../ReceiverAddress.ts"
import * as SchoolRecords from "../../SchoolRecords.ts"
import * as Staff from "../../Staff.ts"
import * as Text from "../../Text.ts"
import type { Adjustment } from "./Document.ts"
import { isJsonSchema, operations, resolveRef } from "./Document.ts"

/** The keywords a string property gains. */
export interface Limit {
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: string
}

/** Per operation (its `operationId`), per property of its request body. */
export type Limits = Readonly<Record<string, Readonly<Record<string, Limit>>>>

/**
 * A phone as the service reads it (libs/domain/src/Phone.ts): digits, `+ - ( )` and spaces, with
 * MIN_DIGITS to MAX_DIGITS digits, around it any white space (trimmed).
 */
export const PHONE_PATTERN =
  `^\\s*[+\\-() ]*(?:[0-9][+\\-() ]*){${Phone.MIN_DIGITS},${Phone.MAX_DIGITS}}\\s*$`

const phone: Limit = { maxLength: Text.PHONE_MAX, pattern: PHONE_PATTERN }
const requiredName: Limit = { minLength: 1, maxLength: Text.NAME_MAX }
const lead = {
  phone,
  name: { maxLength: Text.NAME_MAX },
  comment: { maxLength: Text.COMMENT_MAX },
  source: { maxLength: Text.SOURCE_MAX }
}

/** The public API's bodies (docs/integrators.md "Writing"). */
export const PUBLIC_LIMITS: Limits = {
  "leads.create": lead,
  "demoLessons.create": { comment: { maxLength: Text.COMMENT_MAX } }
}

/** The back office's bodies (docs/back-office.md). */
export const BACK_OFFICE_LIMITS: Limits = {
  "password.change": { new_password: { minLength: Staff.PASSWORD_MIN } },
  "employees.create": { name: requiredName, email: { minLength: 1, maxLength: Staff.EMAIL_MAX }, password: { minLength: Staff.PASSWORD_MIN } },
  "apiKeys.create": { name: requiredName },
  "webhooks.create": { url: { minLength: 1, maxLength: ReceiverAddress.MAX_URL_LENGTH } },
  "webhooks.update": { url: { minLength: 1, maxLength: ReceiverAddress.MAX_URL_LENGTH } },
  "reference.createFilial": { name: requiredName, address: { maxLength: SchoolRecords.ADDRESS_MAX } },
  "reference.createSubject": { name: requiredName },
  "reference.createProgram": { name: requiredName },
  "reference.createLevel": { name: requiredName },
  "reference.createGroup": { name: requiredName },
  "reference.createLesson": { topic: { maxLength: SchoolRecords.TOPIC_MAX } },
  "students.createStudent": {
    fio: requiredName,
    phone: { maxLength: Text.PHONE_MAX },
    email: { maxLength: SchoolRecords.EMAIL_MAX }
  },
  "leads.create": lead,
  "leads.createFunnel": { name: { minLength: 1, maxLength: Leads.TITLE_MAX } }
}

/** The string schema of a property: itself, or the string branch of `anyOf` (an optional, nullable field). */
const stringSchemaOf = (schema: unknown) => {
  if (!isJsonSchema(schema)) return undefined
  if (schema["type"] === "string") return schema
  const branches = schema["anyOf"]
  return Array.isArray(branches) ? branches.filter(isJsonSchema).find((branch) => branch["type"] === "string") : undefined
}

/** Each listed property of each listed operation's request body gains its keywords. */
export const documentLimits = (limits: Limits): Adjustment => (spec) => {
  const seen = new Set<string>()
  for (const { operation } of operations(spec)) {
    const own = limits[operation.operationId]
    if (own === undefined) continue
    seen.add(operation.operationId)
    const media = operation.requestBody?.content["application/json"]
    const body = media === undefined ? undefined : resolveRef(spec, media.schema)
    const properties = body?.["properties"]
    for (const [name, limit] of Object.entries(own)) {
      const target = stringSchemaOf(isJsonSchema(properties) ? properties[name] : undefined)
      if (target === undefined) throw new Error(`OpenAPI: ${operation.operationId} has no string body field ${name}`)
      Object.assign(target, limit)
    }
  }
  const missing = Object.keys(limits).filter((id) => !seen.has(id))
  if (missing.length > 0) throw new Error(`OpenAPI: no operation ${missing.join(", ")}`)
  return spec
}
