/**
 * docker-compose.yml (docs/operations.md
 * "Container image"). There is no Docker engine here, so:
 *
 * - the file is validated against the Compose Specification's JSON schema
 *   (test/ops/compose-spec.json, vendored: see test/ops/README.md), with ajv;
 * - `composeProblems` makes the checks the schema cannot: one image, built
 *   once (one service with `build:` names it, migrate, api and dispatcher run
 *   it), start order (postgres healthy → migrate completed → api,
 *   dispatcher), health checks on /health/ready at each process's port, the
 *   API's port published and no other (not PostgreSQL's, not the
 *   dispatcher's, not a metrics port), the postgres volume declared, every
 *   command a file the image has, every variable set a documented setting;
 * - a second test breaks the file in each of those ways and sees each check
 *   fail, so none of them passes vacuously.
 *
 * That the commands and health checks actually run is test/ops/image.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ajv } from "ajv"
import { Effect } from "effect"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import {
  argv,
  type ComposeFile,
  documentedSettings,
  inImage,
  loadCompose,
  nodeCommand,
  parseDockerfile,
  publishedTargets,
  readRepoFile,
  type Service,
  serviceEnv,
  stageEnv,
  stages
} from "./support.ts"

const schema: unknown = JSON.parse(readRepoFile("test/ops/compose-spec.json"))

const validator = () => {
  // Strict mode, but for strictTypes (the schema leaves "type": "object" implicit beside
  // additionalProperties) and with union types allowed ("type": ["boolean", "string"]). Its
  // "$schema" is https://json-schema.org/draft-07/schema, an id ajv knows only with "http" and a
  // "#": ajv's own draft-07 meta-schema is registered under it, so the schema is checked too.
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, allowUnionTypes: true })
  const draft7: unknown = JSON.parse(Fs.readFileSync(createRequire(import.meta.url).resolve("ajv/dist/refs/json-schema-draft-07.json"), "utf8"))
  if (typeof draft7 !== "object" || draft7 === null || typeof schema !== "object" || schema === null) throw new Error("not a schema")
  ajv.addMetaSchema({ ...draft7, $id: "https://json-schema.org/draft-07/schema" })
  return ajv.compile<ComposeFile>(schema)
}

const image = () => {
  const all = stages(parseDockerfile(readRepoFile("Dockerfile")))
  const last = all[all.length - 1]
  if (last === undefined) throw new Error("Dockerfile: no stage")
  return { env: stageEnv(last) }
}

/** Where `condition` of `service.depends_on[on]` says, or undefined. */
const dependsOn = (service: Service, on: string): string | undefined => {
  const deps = service.depends_on
  if (deps === undefined) return undefined
  if (Array.isArray(deps)) return (deps as ReadonlyArray<string>).includes(on) ? "service_started" : undefined
  const entry = (deps as Readonly<Record<string, { readonly condition?: string }>>)[on]
  return entry === undefined ? undefined : entry.condition ?? "service_started"
}

/** The checks the Compose schema cannot make; [] when the file is right. */
const composeProblems = (compose: ComposeFile): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const { services } = compose
  const settings = documentedSettings()
  const imageEnv = image().env
  for (const name of ["postgres", "migrate", "api", "dispatcher"]) {
    if (services[name] === undefined) problems.push(`no service ${name}`)
  }
  const postgres = services["postgres"]
  if (postgres !== undefined) {
    if (argv(postgres.healthcheck?.test).length === 0) problems.push("postgres: no health check")
    const named = (postgres.volumes ?? []).map((volume) =>
      typeof volume === "string" ? volume.split(":")[0] ?? "" : volume.source ?? ""
    ).filter((source) => /^[A-Za-z0-9][\w.-]*$/.test(source))
    if (named.length === 0) problems.push("postgres: no named volume for its data")
    for (const volume of named) {
      if (compose.volumes === undefined || !(volume in compose.volumes)) problems.push(`postgres: volume ${volume} is not declared under volumes`)
    }
  }
  // The image: built by one service, which names it; the processes run it (docs/operations.md "Container image").
  const builders = Object.entries(services).filter(([, service]) => service.build !== undefined)
  if (builders.length !== 1) problems.push(`the image is built by ${builders.length} services (${builders.map(([name]) => name).join(", ")}), not once`)
  const builtImage = builders[0]?.[1].image
  if (builders[0] !== undefined && builtImage === undefined) problems.push(`${builders[0][0]}: builds the image without naming it (image:)`)
  const ofImage = (service: Service) => service.build !== undefined || (builtImage !== undefined && service.image === builtImage)
  for (const name of ["migrate", "api", "dispatcher"]) {
    const service = services[name]
    if (service !== undefined && !ofImage(service)) problems.push(`${name}: does not run the image the file builds (${builtImage ?? "none"})`)
  }
  const migrate = services["migrate"]
  if (migrate !== undefined) {
    if (dependsOn(migrate, "postgres") !== "service_healthy") problems.push("migrate: does not wait for postgres service_healthy")
    if (migrate.restart !== undefined && migrate.restart !== "no") problems.push(`migrate: restart ${migrate.restart} (a one-shot)`)
    if (argv(migrate.command).join(" ") !== "node apps/cli/src/migrate.ts") problems.push("migrate: command is not node apps/cli/src/migrate.ts")
  }
  const ports = { api: "PORT", dispatcher: "DISPATCHER_PORT" } as const
  for (const [name, service] of Object.entries(services)) {
    if (!ofImage(service)) continue
    // This repository's image: a command of the image, documented settings only.
    const command = argv(service.command)
    const { file } = nodeCommand(command)
    if (command[0] !== "node" || file === undefined) {
      problems.push(`${name}: command ${JSON.stringify(command)} is not node <file>`)
    } else if (!inImage(file)) {
      problems.push(`${name}: command names ${file}, which is not in the image`)
    }
    for (const variable of Object.keys(serviceEnv(service))) {
      if (!settings.has(variable)) problems.push(`${name}: ${variable} is not a setting in docs/operations.md "Settings"`)
    }
    if (name !== "migrate" && dependsOn(service, "migrate") !== "service_completed_successfully") {
      problems.push(`${name}: does not wait for migrate service_completed_successfully`)
    }
  }
  for (const [name, setting] of Object.entries(ports)) {
    const service = services[name]
    if (service === undefined) continue
    const port = serviceEnv(service)[setting] ?? imageEnv[setting]
    if (port === undefined) problems.push(`${name}: ${setting} is set neither here nor in the image`)
    else if (name === "api" && !publishedTargets(service).includes(Number(port))) problems.push(`${name}: does not publish ${setting} ${port}`)
    const test = argv(service.healthcheck?.test).join(" ")
    if (!test.includes("/health/ready")) problems.push(`${name}: health check does not ask /health/ready`)
    if (!test.includes(`process.env.${setting}`) && !test.includes(`:${port}/`)) problems.push(`${name}: health check does not ask ${setting}`)
  }
  // Only the API's port leaves compose's network: not PostgreSQL's, not the dispatcher's health routes, not /metrics.
  const apiPort = Number((services["api"] === undefined ? undefined : serviceEnv(services["api"])["PORT"]) ?? imageEnv["PORT"])
  for (const [name, service] of Object.entries(services)) {
    for (const target of publishedTargets(service)) {
      if (!(name === "api" && target === apiPort)) problems.push(`${name}: publishes ${target} (only the API's PORT is published)`)
    }
  }
  // The processes' DATABASE_URL names the postgres service, with its user, password and database.
  const pg = postgres === undefined ? {} : serviceEnv(postgres)
  for (const [name, service] of Object.entries(services)) {
    const url = serviceEnv(service)["DATABASE_URL"]
    if (!ofImage(service) || url === undefined) continue
    const parsed = new URL(url)
    const expected = `postgres://${pg["POSTGRES_USER"]}:${pg["POSTGRES_PASSWORD"]}@postgres:5432/${pg["POSTGRES_DB"]}`
    if (`${parsed.protocol}//${parsed.username}:${parsed.password}@${parsed.host}${parsed.pathname}` !== expected) {
      problems.push(`${name}: DATABASE_URL ${url} is not the postgres service's database (${expected})`)
    }
  }
  for (const variable of Object.keys(imageEnv)) {
    if (!settings.has(variable)) problems.push(`Dockerfile: ENV ${variable} is not a setting in docs/operations.md "Settings"`)
  }
  return problems
}

const mutated = (change: (compose: { services: Record<string, Record<string, unknown>>; volumes?: Record<string, unknown> }) => void): ComposeFile => {
  const copy = structuredClone(loadCompose()) as { services: Record<string, Record<string, unknown>>; volumes?: Record<string, unknown> }
  change(copy)
  return copy as unknown as ComposeFile
}

describe("docker-compose.yml", () => {
  it.effect("is valid against the Compose Specification's JSON schema", () =>
    Effect.sync(() => {
      const validate = validator()
      const valid = validate(loadCompose())
      assert.isTrue(valid, JSON.stringify(validate.errors, null, 2))
      // The schema can fail: a misspelt key, a wrong type.
      assert.isFalse(validate(mutated((c) => (c.services["api"]!["healthchek"] = {}))))
      assert.isFalse(validate(mutated((c) => (c.services["api"]!["ports"] = "3000:3000"))))
      assert.isFalse(validate(mutated((c) => (c.services["migrate"]!["depends_on"] = { postgres: { condition: "healthy" } }))))
    }))

  it.effect("one image built once, starts in order, checks health on /health/ready, publishes only the API's port, sets only documented settings", () =>
    Effect.sync(() => {
      const validate = validator()
      const compose = loadCompose()
      if (!validate(compose)) return assert.fail(JSON.stringify(validate.errors))
      const problems = composeProblems(compose)
      assert.deepStrictEqual(problems, [], problems.join("\n"))
    }))

  it.effect("each of those checks fails on a file broken its way", () =>
    Effect.sync(() => {
      const broken: ReadonlyArray<[string, ComposeFile]> = [
        ["api: does not wait for migrate service_completed_successfully", mutated((c) => (c.services["api"]!["depends_on"] = { migrate: { condition: "service_started" } }))],
        ["dispatcher: does not wait for migrate", mutated((c) => delete c.services["dispatcher"]!["depends_on"])],
        ["migrate: does not wait for postgres service_healthy", mutated((c) => (c.services["migrate"]!["depends_on"] = ["postgres"]))],
        ["postgres: no health check", mutated((c) => delete c.services["postgres"]!["healthcheck"])],
        ["postgres: volume pgdata is not declared", mutated((c) => delete c.volumes)],
        ["postgres: no named volume", mutated((c) => delete c.services["postgres"]!["volumes"])],
        ["api: health check does not ask /health/ready", mutated((c) => (c.services["api"]!["healthcheck"] = { test: ["CMD", "node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/health/live')"] }))],
        ["dispatcher: health check does not ask DISPATCHER_PORT", mutated((c) => (c.services["dispatcher"]!["healthcheck"] = { test: ["CMD", "node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/health/ready')"] }))],
        ["dispatcher: publishes 3001", mutated((c) => (c.services["dispatcher"]!["ports"] = ["3001:3001"]))],
        ["postgres: publishes 5432", mutated((c) => (c.services["postgres"]!["ports"] = ["127.0.0.1:5432:5432"]))],
        ["api: publishes 9464", mutated((c) => (c.services["api"]!["ports"] = ["3000:3000", "9464:9464"]))],
        ["api: does not publish PORT", mutated((c) => (c.services["api"]!["ports"] = ["8080:8080"]))],
        ["the image is built by 3 services", mutated((c) => {
          c.services["api"]!["build"] = "."
          c.services["dispatcher"]!["build"] = "."
        })],
        ["the image is built by 0 services", mutated((c) => delete c.services["migrate"]!["build"])],
        ["migrate: builds the image without naming it", mutated((c) => delete c.services["migrate"]!["image"])],
        ["dispatcher: does not run the image the file builds", mutated((c) => (c.services["dispatcher"]!["image"] = "node:24-slim"))],
        ["api: command names apps/api/src/server.ts", mutated((c) => (c.services["api"]!["command"] = ["node", "apps/api/src/server.ts"]))],
        ["migrate: command names bench/run.ts, which is not in the image", mutated((c) => (c.services["migrate"]!["command"] = ["node", "bench/run.ts"]))],
        ["api: DB_URL is not a setting", mutated((c) => ((c.services["api"]!["environment"] as Record<string, string>)["DB_URL"] = "x"))],
        ["dispatcher: DATABASE_URL", mutated((c) => ((c.services["dispatcher"]!["environment"] as Record<string, string>)["DATABASE_URL"] = "postgres://school:school@localhost:5432/school"))],
        ["no service dispatcher", mutated((c) => delete c.services["dispatcher"])]
      ]
      for (const [expected, compose] of broken) {
        const problems = composeProblems(compose)
        assert.isTrue(problems.some((problem) => problem.startsWith(expected)), `${expected}: got ${JSON.stringify(problems)}`)
      }
    }))
})
