/**
 * The JSON log line's fast path (libs/runtime/src/Logging.ts `plainLine`)
 * writes exactly what Effect's structured logger and general JSON formatter
 * write (`structuredLine`), for any message, annotations and spans it
 * takes; and it declines (`undefined`) every line it cannot write that way,
 * which then goes the general way.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Logger, Schema } from "effect"
import { spawn } from "node:child_process"
import { plainLine, structuredLine } from "@school/runtime/Logging"

const Value = Schema.Union([Schema.String, Schema.Number, Schema.Boolean])
const Annotations = Schema.Record(Schema.String, Value)
const Labels = Schema.Array(Schema.String)
const Message = Schema.Union([Schema.String, Schema.Array(Schema.String)])

/** Both lines of one log call made with these annotations and spans. */
const bothLines = (
  message: unknown,
  annotations: Readonly<Record<string, unknown>>,
  labels: ReadonlyArray<string>,
  cause?: Cause.Cause<unknown>
) =>
  Effect.suspend(() => {
    const lines: Array<{ readonly plain: string | undefined; readonly structured: string }> = []
    const logger = Logger.make((options) => {
      lines.push({ plain: plainLine(options, "api"), structured: structuredLine(options, "api") })
    })
    let logged: Effect.Effect<void> = Effect.logInfo(...(Array.isArray(message) ? message : [message]))
    if (cause !== undefined) logged = Effect.logError("failed", cause)
    for (const label of labels) logged = Effect.withLogSpan(logged, label)
    return logged.pipe(
      Effect.annotateLogs(annotations),
      Effect.provideService(Logger.CurrentLoggers, new Set([logger])),
      Effect.map(() => lines)
    )
  })

describe("the JSON log line", () => {
  it.effect.prop(
    "the fast path writes the general formatter's text for string messages and primitive annotations",
    [Message, Annotations, Labels],
    ([message, annotations, labels]) =>
      Effect.gen(function*() {
        const lines = yield* bothLines(message, annotations, labels)
        assert.strictEqual(lines.length, 1)
        const [line] = lines
        if (line === undefined) return assert.fail("no line")
        if ("__proto__" in annotations || labels.includes("__proto__")) return
        assert.isDefined(line.plain)
        assert.strictEqual(line.plain, line.structured)
      }),
    { arbitrary: { runs: 500 } }
  )

  it.effect("an access line as the API writes it", () =>
    Effect.gen(function*() {
      const lines = yield* bothLines("GET /api/public/v1/students 200 1.25ms", {
        request_id: "x6w2yFq0i3vV8d9kQZr1wA",
        "http.method": "GET",
        "http.route": "/api/public/v1/students",
        "http.status": 200,
        "http.duration_ms": 1.25,
        school_id: 7
      }, [])
      const [line] = lines
      assert.isDefined(line?.plain)
      assert.strictEqual(line?.plain, line?.structured)
      const parsed: unknown = JSON.parse(line?.plain ?? "")
      assert.deepInclude(parsed, { message: "GET /api/public/v1/students 200 1.25ms", level: "INFO", service: "api" })
    }))

  it.effect("declines what it cannot write the same way: a failure, an object, a non-primitive annotation", () =>
    Effect.gen(function*() {
      const failed = yield* bothLines("x", {}, [], Cause.fail(new Error("boom")))
      assert.isUndefined(failed[0]?.plain)
      assert.include(failed[0]?.structured ?? "", "boom")
      const withObject = yield* bothLines(["ready", { port: 3001 }], {}, [])
      assert.isUndefined(withObject[0]?.plain)
      assert.include(withObject[0]?.structured ?? "", `"fields":{"port":3001}`)
      const withBigint = yield* bothLines("x", { n: 10n }, [])
      assert.isUndefined(withBigint[0]?.plain)
      assert.include(withBigint[0]?.structured ?? "", `"annotations":{"n":`)
    }))
})

/** Runs a module's text in a child Node (the repository's TypeScript, as the processes load it) and answers its stderr. */
const stderrOf = (source: string) =>
  Effect.promise(() =>
    new Promise<{ readonly stderr: string; readonly code: number | null }>((resolve, reject) => {
      const child = spawn(process.execPath, ["--input-type=module", "-e", source], { cwd: process.cwd() })
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString("utf8")
      })
      child.on("error", reject)
      child.on("close", (code) => resolve({ stderr, code }))
    })
  )

describe("JSON lines on stderr", () => {
  const logging = new URL("../../libs/runtime/src/Logging.ts", import.meta.url).href
  const prelude = `
    import { Effect, Logger } from "effect"
    import { flushLogs, jsonLine, perTick } from ${JSON.stringify(logging)}
    const log = (text) => Effect.runSync(Effect.logInfo(text).pipe(
      Effect.provideService(Logger.CurrentLoggers, new Set([perTick(jsonLine("cli"))]))))
  `

  it.effect("a tick's lines come out in order, before a line the process writes itself after flushLogs", () =>
    Effect.gen(function*() {
      const { code, stderr } = yield* stderrOf(`${prelude}
        log("one"); log("two"); log("three")
        flushLogs()
        process.stderr.write("error: the last line\\n")
      `)
      assert.strictEqual(code, 0)
      const lines = stderr.trimEnd().split("\n")
      assert.deepStrictEqual(lines.slice(0, 3).map((line) => JSON.parse(line).message), ["one", "two", "three"])
      assert.strictEqual(lines[3], "error: the last line")
      assert.strictEqual(lines.length, 4)
    }))

  it.effect("lines still waiting when the process exits are written", () =>
    Effect.gen(function*() {
      const { code, stderr } = yield* stderrOf(`${prelude}
        log("before exit")
        process.exit(3)
      `)
      assert.strictEqual(code, 3)
      assert.strictEqual(JSON.parse(stderr.trim()).message, "before exit")
    }))
})
