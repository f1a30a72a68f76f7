/**
 * The operator CLI (docs/operations.md "Operator CLI"), `npm run cli -- <command>`:
 *
 *   schools create --name NAME --plan PLAN --owner-email EMAIL --owner-password PASSWORD [--owner-name NAME] [--json]
 *   schools set-plan --school ID --plan PLAN [--json]
 *   keys create --school ID --scope read|write [--name NAME] [--expires-at ISO] [--json]
 *   keys revoke --school ID --key-id ID [--json]
 *   demo seed [--json]
 *   webhooks listen --school ID --forward-to URL [--events a,b] [--json]
 *   webhooks trigger --subscription ID --event EVENT [--json]
 *
 * Against DATABASE_URL. When it is unset, against the embedded PostgreSQL of
 * `npm start` (data in DATA_DIR, default .data/postgres): the running one if
 * `npm start` is up, else started for the command (migrations applied) and
 * stopped after it.
 *
 * With --json, stdout carries exactly one JSON document; logs go to stderr.
 * A bad argument is one line on stderr and exit 2; a refused operation (e-mail
 * taken, no such school or key, a plan below Extended for a key, no
 * database) one line and exit 1.
 */
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as CliError from "effect/cli/CliError"
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { expiryProblem, Scope } from "@school/domain/ApiKey"
import { PASSWORD_MAX, PASSWORD_MIN } from "@school/domain/Staff"
import * as Ids from "@school/domain/Ids"
import { NAME_MAX } from "@school/domain/Text"
import { toUtc } from "@school/domain/Timestamps"
import { keysNeedPlanMessage } from "@school/domain/Plans"
import { seedDemo } from "@school/persistence/DemoSeed"
import { runMain } from "@school/runtime/Main"
import { hashPassword } from "@school/runtime/Passwords"
import {
  createSchool,
  issueApiKeyOnPlan,
  MAIN_FUNNEL_STATUSES,
  revokeApiKey,
  setPlan
} from "@school/persistence/Schools"
import * as Settings from "@school/runtime/Settings"
import { flushLogs } from "@school/runtime/Logging"
import { CliSettings } from "./CliSettings.ts"
import { Database } from "./Database.ts"
import { webhooksCommand } from "./WebhookCommands.ts"

const PLANS = ["basic", "economy", "standard", "extended", "pro", "none"] as const

const json = Flag.Boolean("json").pipe(
  Flag.withDefault(false),
  Flag.withDescription("Print exactly one JSON document on stdout")
)
const plan = Flag.Literals("plan", PLANS).pipe(
  Flag.withDescription("basic, economy, standard, extended, pro, or none (no plan)")
)
const toPlan = (value: typeof PLANS[number]) => value === "none" ? null : value

const nonEmpty = (name: string) =>
  Flag.String(name).pipe(Flag.filter((value) => value.trim() !== "", () => `--${name} must not be empty`))

const Email = Schema.String.pipe(
  Schema.check(Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: "expected an e-mail address" }))
)

const schoolFlag = Flag.Int("school").pipe(
  Flag.filterMap((id) => Ids.SchoolId.makeOption(id), () => "--school must be a positive school id"),
  Flag.withDescription("School id")
)

/** A bad argument found only when the command runs (an expiry already past): exit 2, like any bad argument. */
class InvalidArgument extends Schema.TaggedError<InvalidArgument>()("InvalidArgument", {
  flag: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `--${this.flag}: ${this.problem}`
  }
}

/** Prints the result: the JSON document, or a line for a person. */
const output = (asJson: boolean, value: object, line: string) =>
  Console.log(asJson ? JSON.stringify(value, null, 2) : line)

const create = Command.make(
  "create",
  {
    name: nonEmpty("name").pipe(Flag.withDescription("School name")),
    plan,
    ownerEmail: Flag.String("owner-email").pipe(Flag.withSchema(Email), Flag.withDescription("Owner's login e-mail")),
    ownerPassword: Flag.String("owner-password").pipe(
      // The back office's rule for every staff password (docs/back-office.md "Staff").
      Flag.filter(
        (value) => [...value].length >= PASSWORD_MIN && [...value].length <= PASSWORD_MAX,
        () => `--owner-password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`
      ),
      Flag.withDescription(`Owner's password, at least ${PASSWORD_MIN} characters (stored scrypt-hashed)`)
    ),
    ownerName: Flag.String("owner-name").pipe(Flag.optional, Flag.withDescription("Owner's name (default: Owner)")),
    json
  },
  Effect.fn(function*(input) {
    const created = yield* createSchool({
      name: input.name.trim(),
      plan: toPlan(input.plan),
      owner: {
        name: Option.getOrElse(input.ownerName, () => "Owner").trim() || "Owner",
        email: input.ownerEmail,
        passwordHash: yield* hashPassword(input.ownerPassword)
      }
    }).pipe(Effect.provide(Database.layer))
    yield* output(
      input.json,
      created,
      `school ${created.school_id} created: owner ${created.owner_id}, main funnel ${created.main_funnel_id} (${
        MAIN_FUNNEL_STATUSES.map((s) => s.name).join(", ")
      })`
    )
  })
).pipe(Command.withDescription("Create a school with its owner and main funnel"))

const setPlanCommand = Command.make(
  "set-plan",
  {
    school: schoolFlag,
    plan,
    json
  },
  Effect.fn(function*(input) {
    yield* setPlan(input.school, toPlan(input.plan)).pipe(Effect.provide(Database.layer))
    yield* output(
      input.json,
      { school_id: input.school, plan: toPlan(input.plan) },
      `school ${input.school}: plan ${input.plan}`
    )
  })
).pipe(Command.withDescription("Change a school's plan"))

/** The name a key gets when `--name` is not given. */
const DEFAULT_KEY_NAME = "operator"

const keysCreate = Command.make(
  "create",
  {
    school: schoolFlag,
    scope: Flag.Literals("scope", Scope.literals).pipe(Flag.withDescription("read, or write (which can also read)")),
    name: Flag.String("name").pipe(
      Flag.filter(
        (value) => value.trim() !== "" && value.trim().length <= NAME_MAX,
        () => `--name must be 1 to ${NAME_MAX} characters`
      ),
      Flag.optional,
      Flag.withDescription(`What the key is for (default: ${DEFAULT_KEY_NAME})`)
    ),
    expiresAt: Flag.String("expires-at").pipe(
      Flag.optional,
      Flag.withDescription("When the key stops working: ISO 8601 with an offset, in the future (default: never)")
    ),
    json
  },
  Effect.fn(function*(input) {
    let expiresAt: string | null = null
    if (Option.isSome(input.expiresAt)) {
      const problem = expiryProblem(input.expiresAt.value, yield* Clock.currentTimeMillis)
      if (problem !== undefined) return yield* new InvalidArgument({ flag: "expires-at", problem })
      expiresAt = toUtc(input.expiresAt.value) ?? null
    }
    // The same plan rule as the back office's POST /api-keys (docs/back-office.md "API keys").
    const issued = yield* issueApiKeyOnPlan(input.school, {
      name: Option.getOrElse(input.name, () => DEFAULT_KEY_NAME).trim(),
      scope: input.scope,
      expiresAt
    }).pipe(Effect.provide(Database.layer))
    yield* output(
      input.json,
      { id: issued.id, key: issued.key, scope: issued.scope, prefix: issued.prefix },
      `${issued.key}\n  key ${issued.id} of school ${input.school}, ${issued.scope} scope, ${
        issued.expires_at === null ? "never expires" : `expires ${issued.expires_at}`
      }; shown only now: store it safely`
    )
  })
).pipe(Command.withDescription("Issue an API key (the school's plan must be Extended or Pro); prints the whole key once"))

const keysRevoke = Command.make(
  "revoke",
  {
    school: schoolFlag,
    keyId: Flag.Int("key-id").pipe(
      Flag.filterMap((id) => Ids.ApiKeyId.makeOption(id), () => "--key-id must be a positive key id"),
      Flag.withDescription("The key's id (as keys create printed it)")
    ),
    json
  },
  Effect.fn(function*(input) {
    const revoked = yield* revokeApiKey(input.school, input.keyId).pipe(Effect.provide(Database.layer))
    yield* output(
      input.json,
      { id: revoked.id, school_id: input.school, prefix: revoked.prefix, revoked_at: revoked.revoked_at },
      `key ${revoked.id} (svc_${revoked.prefix}_…) of school ${input.school} revoked at ${revoked.revoked_at}`
    )
  })
).pipe(Command.withDescription("Revoke an API key: it answers revoked_key from then on"))

const seed = Command.make(
  "seed",
  { json },
  Effect.fn(function*(input) {
    const demo = yield* seedDemo(hashPassword).pipe(Effect.provide(Database.layer))
    yield* output(
      input.json,
      demo,
      [
        `demo school ${demo.school_id} created`,
        `  owner login: ${demo.owner.email} / ${demo.owner.password}`,
        `  read key:    ${demo.keys.read}`,
        `  write key:   ${demo.keys.write}`
      ].join("\n")
    )
  })
).pipe(Command.withDescription("Create another demo school (plan pro) with data and a read and a write key"))

const cli = Command.make("cli").pipe(
  Command.withDescription("School service operator commands"),
  Command.withSubcommands([
    Command.make("schools").pipe(
      Command.withDescription("Schools"),
      Command.withSubcommands([create, setPlanCommand])
    ),
    Command.make("keys").pipe(
      Command.withDescription("API keys for the public API"),
      Command.withSubcommands([keysCreate, keysRevoke])
    ),
    Command.make("demo").pipe(
      Command.withDescription("Demo data"),
      Command.withSubcommands([seed])
    ),
    webhooksCommand
  ])
)

/** A line of the CLI's own on stderr, after the log lines still waiting (libs/runtime/src/Logging.ts). */
const writeError = (line: string) => {
  flushLogs()
  process.stderr.write(line)
}

const oneLine = (text: string) => text.split("\n").map((line) => line.trim()).filter((line) => line !== "").join("; ")

const usageError = (message: string | undefined) =>
  Effect.sync(() => {
    if (message !== undefined) writeError(`error: ${oneLine(message)}\n`)
    process.exitCode = 2
  })

/** Help and version as usual (stdout); a bad invocation is one line on stderr, without the help page. */
const presenter = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.sync(() =>
        writeError(`error: ${oneLine(event.errors.map((error) => error.message).join("; "))} (see --help)\n`)
      )
      : CliOutput.defaultPresenter.present(event)
})

const refused = (message: string) =>
  Effect.sync(() => {
    writeError(`error: ${oneLine(message)}\n`)
    process.exitCode = 1
  })

const program = Command.runWith(cli, { version: "1.0.0" })(process.argv.slice(2)).pipe(
  // Help asked for (or a command without a subcommand): printed, exit 0.
  // Help because of bad arguments: the presenter printed the line, exit 2.
  Effect.catchTag("ShowHelp", (help) => help.errors.length === 0 ? Effect.void : usageError(undefined)),
  Effect.catchIf(CliError.isCliError, (error) => usageError(error.message)),
  Effect.catchTag("InvalidArgument", (error) => usageError(error.message)),
  // The operator's line for each domain error (libs/domain/src/DomainErrors.ts).
  Effect.catchTags({
    PlanTooLow: (error) => refused(`school ${error.schoolId}: ${keysNeedPlanMessage(error.plan)}`),
    EmailTaken: (error) => refused(`the login e-mail ${error.email} is already taken`),
    SchoolNotFound: (error) => refused(`no school with id ${error.schoolId}`),
    ListenerLimitReached: (error) =>
      refused(`school ${error.schoolId} has ${error.limit} listeners open already, the most it may have; stop one (Ctrl-C) first`),
    ApiKeyNotFound: (error) => refused(`school ${error.schoolId} has no API key with id ${error.keyId}`),
    SubscriptionNotFound: (error) => refused(`no webhook subscription with id ${error.subscriptionId}`),
    DatabaseStartError: (error) => refused(error.message)
  }),
  Effect.catchTag("SqlError", (error) => refused(`cannot reach the database: ${error.message}`)),
  Effect.provide([NodeServices.layer, presenter]),
  Effect.provide(Settings.layer(CliSettings, "cli"))
)

runMain(program)
