/**
 * Owns resolving a webhook receiver's host and checking every address it
 * resolves to (docs/decisions.md "Webhooks": the receiver-URL rule, checked
 * when a subscription is saved and again at delivery time against DNS
 * rebinding). The rule itself is pure, in libs/domain/src/ReceiverAddress.ts;
 * this is the one place that does the I/O around it, for the back office's
 * URL check (apps/api/src/http/backoffice/Webhooks.ts `checkUrl`) and the
 * dispatcher's receiver client (libs/runtime/src/Receiver.ts), which
 * connects only to the addresses returned here.
 *
 * A host is refused (`HostRefused`) for one of four reasons:
 * - `does_not_resolve`: the name has no address (NXDOMAIN, no record of
 *   either family): the receiver's doing;
 * - `blocked_address`: an address it resolves to is not allowed by the rule;
 * - `resolver_unavailable`: our resolver failed (`EAI_AGAIN`, `EAI_FAIL`,
 *   `ESERVFAIL`, a refused or silent DNS server, this process out of
 *   descriptors or memory, which `getaddrinfo` reports as a name that does
 *   not exist: `systemLookup` tells them apart): ours, not the receiver's;
 * - `timed_out`: our resolver did not answer within the time-out: ours too.
 * `ownResolverFailure` says which codes are ours; `isOurs` which refusals.
 *
 * The resolver is `dns.lookup` (`getaddrinfo`: /etc/hosts, then DNS, as
 * every other program on the host), every address, in the order given.
 * Tests inject their own (`Lookup`, `lookupFrom`, `lookupOfAddresses`).
 */
import * as ReceiverAddress from "@school/domain/ReceiverAddress"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { LookupAddress } from "node:dns"
import { lookup } from "node:dns/promises"
import * as Fs from "node:fs"
import { isIP } from "node:net"

/** How long a receiver host's resolution may take before it is `timed_out`. */
export const RESOLVE_TIMEOUT = Duration.seconds(5)

/** Why a receiver host gets no request. */
export class HostRefused extends Schema.TaggedError<HostRefused>()("HostRefused", {
  host: Schema.String,
  reason: Schema.Literals(["does_not_resolve", "blocked_address", "resolver_unavailable", "timed_out"]),
  /** The resolver's error code when there is one (`ENOTFOUND`, `EAI_AGAIN`, …). */
  code: Schema.optional(Schema.String),
  /** Why, in a sentence a school can read (the back office shows it as `fields.url`). */
  message: Schema.String
}) {}

/** Every address of a host name, or why there is none. */
export type Lookup = (host: string) => Effect.Effect<ReadonlyArray<LookupAddress>, HostRefused>

/**
 * Resolver error codes that mean the name has no address: the receiver's
 * doing. `dns.lookup` reports NXDOMAIN and "no address of that family" as
 * ENOTFOUND; the others are the same answers in c-ares's or getaddrinfo's
 * own words.
 */
const NO_SUCH_NAME: ReadonlySet<string> = new Set(["ENOTFOUND", "ENODATA", "EAI_NONAME", "EAI_NODATA", "EAI_ADDRFAMILY"])

/**
 * Whether a resolver's error `code` is a failure on our side (the resolver
 * unreachable, refusing, failing or silent; this process short of
 * descriptors or memory) rather than an answer about the receiver's name.
 * Every code but a negative answer (NO_SUCH_NAME) is ours: `EAI_AGAIN`,
 * `EAI_FAIL`, `ESERVFAIL`, `ECONNREFUSED`, `ETIMEOUT`, `EREFUSED`,
 * `EMFILE`, …; no code at all is not.
 */
export const ownResolverFailure = (code: string | undefined): boolean =>
  code !== undefined && code !== "" && !NO_SUCH_NAME.has(code)

/** Whether a refusal is our failure (retry soon) rather than the receiver's (an attempt used up). */
export const isOurs = (refusal: HostRefused): boolean =>
  refusal.reason === "resolver_unavailable" || refusal.reason === "timed_out"

/** The refusal a resolver error with `code` stands for (the back office's messages). */
export const refusalOfCode = (host: string, code: string | undefined): HostRefused =>
  ownResolverFailure(code)
    ? new HostRefused({
      host,
      reason: "resolver_unavailable",
      code,
      message: `${host} could not be resolved (${code}); try again`
    })
    : new HostRefused({
      host,
      reason: "does_not_resolve",
      ...(code === undefined || code === "" ? {} : { code }),
      message: `${host} does not resolve`
    })

/** A Node system error's `code` (`ENOTFOUND`, `EMFILE`, …), when it has one; the receiver client reads it too. */
export const codeOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined

/** A `Lookup` from a promise-returning resolver that rejects with Node's coded errors, as `dns.lookup` does. */
export const lookupFrom = (resolve: (host: string) => Promise<ReadonlyArray<LookupAddress>>): Lookup => (host) =>
  Effect.tryPromise({ try: () => resolve(host), catch: (error) => refusalOfCode(host, codeOf(error)) })

/**
 * Whether this process has no descriptor left (EMFILE, or the system none,
 * ENFILE): one is opened and closed again to find out.
 */
const descriptorsExhausted = (): string | undefined => {
  try {
    Fs.closeSync(Fs.openSync("/dev/null", "r"))
    return undefined
  } catch (error) {
    const code = codeOf(error)
    return code === "EMFILE" || code === "ENFILE" ? code : undefined
  }
}

/**
 * The system resolver (`getaddrinfo`): every address, in the order it gives
 * them. `getaddrinfo` out of descriptors cannot read /etc/hosts or open a
 * socket to the DNS server, and says ENOTFOUND as for a name that does not
 * exist: a negative answer is checked against that, and is ours when no
 * descriptor is left.
 */
export const systemLookup: Lookup = (host) =>
  Effect.tryPromise({
    try: () => lookup(host, { all: true, verbatim: true }),
    catch: (error) => {
      const code = codeOf(error)
      const starved = code !== undefined && NO_SUCH_NAME.has(code) ? descriptorsExhausted() : undefined
      return refusalOfCode(host, starved ?? code)
    }
  })

/**
 * A `Lookup` from a resolver that answers with address texts and fails
 * with a sentence (the back office's injectable `Resolve`): the sentence
 * is the refusal's message, as a name that does not resolve.
 */
export const lookupOfAddresses =
  (resolve: (host: string) => Effect.Effect<ReadonlyArray<string>, string>): Lookup => (host) =>
    resolve(host).pipe(
      Effect.map((addresses) => addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }))),
      Effect.mapError((message) => new HostRefused({ host, reason: "does_not_resolve", message }))
    )

/** `lookup` bounded by `timeout`: a resolver that has not answered by then is `timed_out`. */
export const within = (resolve: Lookup, timeout: Duration.Input): Lookup => (host) =>
  Effect.timeoutOrElse(resolve(host), {
    duration: timeout,
    orElse: () =>
      Effect.fail(new HostRefused({ host, reason: "timed_out", message: `${host} could not be resolved in time; try again` }))
  })

export interface ReceiverHostsOptions {
  /** WEBHOOK_ALLOW_INSECURE_URLS: internal addresses accepted (development and tests only). */
  readonly allowInsecureUrls: boolean
  /** How long resolution may take (default RESOLVE_TIMEOUT). */
  readonly timeout?: Duration.Input
  /** The resolver (default `systemLookup`). */
  readonly lookup?: Lookup
}

export interface ReceiverHostsShape {
  /**
   * Every address `host` resolves to, each one allowed by the rule, in the
   * resolver's order; a literal address is checked and returned as is.
   * Fails with why not. Connect only to these.
   */
  readonly resolve: (host: string) => Effect.Effect<ReadonlyArray<LookupAddress>, HostRefused>
}

/** What a host text is: a name to resolve, or a literal address allowed (as itself) or refused. */
type Literal =
  | { readonly _tag: "Name" }
  | { readonly _tag: "Allowed"; readonly addresses: ReadonlyArray<LookupAddress> }
  | { readonly _tag: "Refused"; readonly message: string }

/** Host texts whose verdict is kept; past it the map starts again empty. */
const MAX_LITERALS = 4096

/** The service, built directly (the back office builds one per check with its injectable resolver). */
export const make = (options: ReceiverHostsOptions): ReceiverHostsShape => {
  const policy: ReceiverAddress.Policy = { allowInsecure: options.allowInsecureUrls }
  const resolveName = within(options.lookup ?? systemLookup, options.timeout ?? RESOLVE_TIMEOUT)
  const checked = (host: string, addresses: ReadonlyArray<LookupAddress>) => {
    if (addresses.length === 0) {
      return Effect.fail(new HostRefused({ host, reason: "does_not_resolve", message: `${host} resolves to no address` }))
    }
    const refusal = ReceiverAddress.resolvedRefusal(host, addresses.map((entry) => entry.address), policy)
    return refusal === undefined
      ? Effect.succeed(addresses)
      : Effect.fail(new HostRefused({ host, reason: "blocked_address", message: refusal }))
  }
  // A literal address's verdict depends on the address and the policy alone: judged once per address
  // text (every attempt to such a receiver asked again before). A name is resolved and checked every time.
  const literals = new Map<string, Literal>()
  const literalOf = (bare: string): Literal => {
    const known = literals.get(bare)
    if (known !== undefined) return known
    const family = isIP(bare)
    const refusal = family === 0 ? undefined : ReceiverAddress.addressRefusal(bare, policy)
    const literal: Literal = family === 0
      ? { _tag: "Name" }
      : refusal === undefined
      ? { _tag: "Allowed", addresses: [{ address: bare, family }] }
      : { _tag: "Refused", message: refusal }
    if (literals.size >= MAX_LITERALS) literals.clear()
    literals.set(bare, literal)
    return literal
  }
  return {
    resolve: Effect.fn("ReceiverHosts.resolve")(function*(host: string) {
      const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
      const literal = literalOf(bare)
      if (literal._tag === "Refused") {
        return yield* new HostRefused({ host: bare, reason: "blocked_address", message: literal.message })
      }
      if (literal._tag === "Allowed") return literal.addresses
      return yield* checked(host, yield* resolveName(host))
    })
  }
}

export class ReceiverHosts extends Context.Service<ReceiverHosts, ReceiverHostsShape>()("school/runtime/ReceiverHosts") {
  static readonly layer = (options: ReceiverHostsOptions): Layer.Layer<ReceiverHosts> =>
    Layer.succeed(ReceiverHosts, ReceiverHosts.of(make(options)))
}
