/**
 * How an API declares its errors: a module whose every export is one row,
 * made here, is that API's error table (libs/domain/src/PublicErrors.ts for
 * the public API). A row is a tagged error class that carries everything
 * about the error, so adding an error is adding one row:
 *
 * - its HTTP status (`httpApiStatus`, so HttpApi answers with it) and wire
 *   code, as `Row.status` and `Row.code`;
 * - its message shape: `message` and optional `fields` (docs/integrators.md
 *   "Responses and errors"), plus the response headers a row made by
 *   `rowWithHeaders` carries (`headers`);
 * - `Row.envelope`, the schema endpoints and middleware declare: it encodes
 *   the error as the envelope `{ error: { code, message, fields? } }` (and
 *   its headers), so OpenAPI shows the real response and `HttpApiClient`
 *   decodes it back to the class;
 * - `error.encode()`, the same envelope as status, headers and body, for
 *   responses written outside HttpApi (one function in apps/api builds them).
 *
 * `ErrorOf<typeof Table>` is the union of a table's errors and
 * `guard(Table)` recognises them.
 *
 * The envelope is the table's choice: `row` and `rowWithHeaders` make the
 * public API's (`{ error: { code, message, fields? } }`);
 * `rowsWith(Envelope)` makes the same rows with another envelope, as the
 * back office's `{ success: false, code, message, fields? }`
 * (libs/domain/src/BackOfficeErrors.ts).
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"

/** `fields` values: a string, or a list of strings for validation messages (docs/integrators.md "Responses and errors"). */
export const ErrorFields = Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)]))
export type ErrorFields = typeof ErrorFields.Type

/** The message shape every row shares. */
const Body = {
  message: Schema.String,
  fields: Schema.optionalKey(ErrorFields)
}

interface ErrorBody {
  readonly message: string
  readonly fields?: ErrorFields
}

/** An error as a response: what `encode()` gives. */
export interface Encoded {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** The envelope, ready for `JSON.stringify`. */
  readonly body: unknown
}

/** Response headers a row carries: each a codec from its value to the header's text. */
export type HeaderFields = { readonly [name: string]: Schema.Codec<unknown, string> }

/**
 * How a table writes an error on the wire: the envelope's schema for one
 * code, the envelope of one error, and the message shape read back from it.
 */
export interface Envelope {
  readonly schema: <Code extends string>(code: Code) => Schema.Codec<EnvelopeBody, EnvelopeBody>
  readonly body: (code: string, error: ErrorBody) => EnvelopeBody
  readonly read: (envelope: EnvelopeBody) => ErrorBody
}

/** An envelope as its schema decodes it (each envelope knows its own shape). */
export type EnvelopeBody = { readonly [key: string]: unknown }

const bodyOf = ({ message, fields }: ErrorBody): ErrorBody => fields === undefined ? { message } : { message, fields }

/** The public API's envelope, `{ error: { code, message, fields? } }`; `fields` only when there are any (docs/integrators.md "Responses and errors"). */
export const PublicEnvelope: Envelope = {
  schema: (code) =>
    Schema.Struct({
      error: Schema.Struct({
        code: Schema.Literal(code),
        message: Schema.String,
        fields: Schema.optionalKey(ErrorFields)
      })
    }),
  body: (code, error) => ({ error: { code, ...bodyOf(error) } }),
  read: (envelope) => bodyOf(Schema.decodeUnknownSync(PublicShape)(envelope).error)
}
const PublicShape = Schema.Struct({ error: Schema.Struct(Body) })

/** The back office's envelope (docs/back-office.md "Answers and errors"): `{ success: false, code, message, fields? }`. */
export const BackOfficeEnvelope: Envelope = {
  schema: (code) =>
    Schema.Struct({
      success: Schema.Literal(false),
      code: Schema.Literal(code),
      message: Schema.String,
      fields: Schema.optionalKey(ErrorFields)
    }),
  body: (code, error) => ({ success: false, code, ...bodyOf(error) }),
  read: (envelope) => bodyOf(Schema.decodeUnknownSync(Schema.Struct(Body))(envelope))
}

/** The two row makers of a table whose errors use `envelope`. */
export const rowsWith = (envelope: Envelope) => {
  /** A row whose response is the envelope alone. */
  const row = <const Tag extends string, const Code extends string>(tag: Tag, status: number, code: Code) => {
    class Row extends Schema.TaggedError<Row>()(tag, Body, { httpApiStatus: status }) {
      static readonly status = status
      static readonly code = code
      encode(): Encoded {
        return { status, headers: {}, body: Schema.encodeSync(schema)(this) }
      }
    }
    const schema = envelope.schema(code).pipe(
      Schema.decodeTo(
        Schema.toType(Row),
        SchemaTransformation.transform({
          decode: (encoded) => new Row(envelope.read(encoded)),
          encode: (error: Row) => envelope.body(code, error)
        })
      )
    )
    return Object.assign(Row, { envelope: schema })
  }

  /**
   * A row whose response also carries headers (docs/integrators.md "Limits": a 429's
   * `Retry-After`): the error's `headers` hold their values, and the contract
   * declares them, so OpenAPI documents them and the client decodes them.
   */
  const rowWithHeaders = <const Tag extends string, const Code extends string, const H extends HeaderFields>(
    tag: Tag,
    status: number,
    code: Code,
    headers: H
  ) => {
    const Headers = Schema.Struct(headers)
    class Row extends Schema.TaggedError<Row>()(tag, { ...Body, headers: Schema.toType(Headers) }, {
      httpApiStatus: status
    }) {
      static readonly status = status
      static readonly code = code
      encode(): Encoded {
        const encoded = Schema.encodeSync(schema)(this)
        return { status, headers: encoded.headers, body: encoded.body }
      }
    }
    const decodeRow = Schema.decodeSync(Row)
    const body = envelope.schema(code).pipe(HttpApiSchema.status(status)).annotate({ identifier: `${tag}Encoded` })
    const schema = Row.pipe(HttpApiSchema.encodeToWithHeaders({ body, headers }, {
      decode: ({ body, headers }) => decodeRow({ _tag: tag, ...envelope.read(body), headers }),
      encode: (error) => ({ body: envelope.body(code, error), headers: error.headers })
    }))
    return Object.assign(Row, { envelope: schema })
  }
  return { row, rowWithHeaders }
}

/** The public API's row makers (PublicErrors.ts). */
export const { row, rowWithHeaders } = rowsWith(PublicEnvelope)

/** What every row's class has. */
interface AnyRow {
  new(...args: ReadonlyArray<never>): { readonly _tag: string; encode(): Encoded }
  readonly status: number
  readonly code: string
}

/** The errors of a table (a module of rows, imported as a namespace). */
export type ErrorOf<Table extends Record<string, AnyRow>> = InstanceType<Table[keyof Table]>

/** Whether a failure of unknown type (what a middleware sees) is one of a table's errors. */
export const guard = <Table extends Record<string, AnyRow>>(table: Table) => {
  const rows = Object.values(table)
  return (u: unknown): u is ErrorOf<Table> => rows.some((Row) => u instanceof Row)
}
