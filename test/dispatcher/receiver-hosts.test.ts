/**
 * The one "resolve a receiver host and check every address" service
 * (libs/runtime/src/ReceiverHosts.ts; docs/decisions.md "Webhooks": the
 * receiver URL rule, checked at delivery time against DNS rebinding), with
 * injected resolvers: a host resolving to a private address (alone, or
 * beside a public one) is blocked; a literal address is checked without a
 * lookup; NXDOMAIN is the receiver's (`does_not_resolve`); our resolver
 * failing (EAI_AGAIN, EAI_FAIL, ESERVFAIL, ECONNREFUSED from the DNS server,
 * out of descriptors) or silent is ours. Then with a real resolver (c-ares,
 * Node's `dns.Resolver`) against a DNS server on loopback that answers
 * NXDOMAIN or SERVFAIL, and against a port where none listens: the codes
 * Node gives are classified as above.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as ReceiverHosts from "@school/runtime/ReceiverHosts"
import * as Dgram from "node:dgram"
import type { LookupAddress } from "node:dns"
import { Resolver } from "node:dns/promises"

const STRICT = { allowInsecureUrls: false } as const

/** A resolver that knows a few names; any other name is NXDOMAIN, as `dns.lookup` reports it. */
const KNOWN: Readonly<Record<string, ReadonlyArray<string>>> = {
  "hooks.example.test": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
  "internal.example.test": ["10.0.0.5"],
  "rebind.example.test": ["93.184.215.14", "192.168.1.1"],
  "mapped.example.test": ["::ffff:127.0.0.1"],
  "loopback.example.test": ["127.0.0.1"],
  "empty.example.test": []
}

const coded = (code: string): Error => Object.assign(new Error(`getaddrinfo ${code}`), { code })

const fakeLookup = ReceiverHosts.lookupFrom(async (host) => {
  const known = KNOWN[host]
  if (known === undefined) throw coded("ENOTFOUND")
  return known.map((address): LookupAddress => ({ address, family: address.includes(":") ? 6 : 4 }))
})

/** A resolver that fails every lookup with `code`. */
const failing = (code: string) =>
  ReceiverHosts.lookupFrom(() => Promise.reject(coded(code)))

const refusalOf = <A>(effect: Effect.Effect<A, ReceiverHosts.HostRefused>) =>
  Effect.gen(function*() {
    const result = yield* Effect.result(effect)
    if (Result.isSuccess(result)) return assert.fail(`expected a refusal, got ${JSON.stringify(result.success)}`)
    return result.failure
  })

describe("ReceiverHosts", () => {
  const hosts = ReceiverHosts.make({ ...STRICT, lookup: fakeLookup })

  it.live("a name resolving to public addresses only: every address, in the resolver's order", () =>
    Effect.gen(function*() {
      const addresses = yield* hosts.resolve("hooks.example.test")
      assert.deepStrictEqual(addresses, [
        { address: "93.184.215.14", family: 4 },
        { address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 }
      ])
    }))

  it.live("a name resolving to a private address is blocked, also beside a public one (rebinding)", () =>
    Effect.gen(function*() {
      for (const host of ["internal.example.test", "rebind.example.test", "mapped.example.test", "loopback.example.test"]) {
        const refusal = yield* refusalOf(hosts.resolve(host))
        assert.strictEqual(refusal.reason, "blocked_address", host)
        assert.isFalse(ReceiverHosts.isOurs(refusal), host)
      }
      const rebind = yield* refusalOf(hosts.resolve("rebind.example.test"))
      assert.include(rebind.message, "192.168.1.1")
      assert.include(rebind.message, "is not a public address")
    }))

  it.live("a literal address is checked without a lookup", () =>
    Effect.gen(function*() {
      const never = ReceiverHosts.make({ ...STRICT, lookup: () => Effect.die("no lookup for a literal address") })
      assert.deepStrictEqual(yield* never.resolve("93.184.215.14"), [{ address: "93.184.215.14", family: 4 }])
      assert.deepStrictEqual(yield* never.resolve("[2606:2800:21f:cb07:6820:80da:af6b:8b2c]"), [
        { address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 }
      ])
      assert.strictEqual((yield* refusalOf(never.resolve("10.1.2.3"))).reason, "blocked_address")
      assert.strictEqual((yield* refusalOf(never.resolve("[::1]"))).reason, "blocked_address")
    }))

  it.live("insecure URLs allowed: loopback and private addresses pass; unusable ones do not", () =>
    Effect.gen(function*() {
      const insecure = ReceiverHosts.make({ allowInsecureUrls: true, lookup: fakeLookup })
      assert.deepStrictEqual(yield* insecure.resolve("loopback.example.test"), [{ address: "127.0.0.1", family: 4 }])
      assert.deepStrictEqual(yield* insecure.resolve("internal.example.test"), [{ address: "10.0.0.5", family: 4 }])
      assert.strictEqual((yield* refusalOf(insecure.resolve("0.0.0.0"))).reason, "blocked_address")
    }))

  it.live("NXDOMAIN and a name with no address are the receiver's", () =>
    Effect.gen(function*() {
      const nx = yield* refusalOf(hosts.resolve("nowhere.example.test"))
      assert.strictEqual(nx.reason, "does_not_resolve")
      assert.strictEqual(nx.code, "ENOTFOUND")
      assert.strictEqual(nx.message, "nowhere.example.test does not resolve")
      assert.isFalse(ReceiverHosts.isOurs(nx))
      const empty = yield* refusalOf(hosts.resolve("empty.example.test"))
      assert.strictEqual(empty.reason, "does_not_resolve")
      assert.isFalse(ReceiverHosts.isOurs(empty))
    }))

  it.live("our resolver failing is ours, with the back office's message", () =>
    Effect.gen(function*() {
      for (const code of ["EAI_AGAIN", "EAI_FAIL", "ESERVFAIL", "ECONNREFUSED", "ETIMEOUT", "EREFUSED", "EMFILE"]) {
        const refusal = yield* refusalOf(ReceiverHosts.make({ ...STRICT, lookup: failing(code) }).resolve("hooks.example.test"))
        assert.strictEqual(refusal.reason, "resolver_unavailable", code)
        assert.strictEqual(refusal.code, code)
        assert.strictEqual(refusal.message, `hooks.example.test could not be resolved (${code}); try again`)
        assert.isTrue(ReceiverHosts.isOurs(refusal), code)
      }
    }))

  it.live("a resolver that does not answer in time is ours (timed_out)", () =>
    Effect.gen(function*() {
      const silent = ReceiverHosts.make({ ...STRICT, timeout: "50 millis", lookup: () => Effect.never })
      const refusal = yield* refusalOf(silent.resolve("hooks.example.test"))
      assert.strictEqual(refusal.reason, "timed_out")
      assert.strictEqual(refusal.message, "hooks.example.test could not be resolved in time; try again")
      assert.isTrue(ReceiverHosts.isOurs(refusal))
    }))

  it("ownResolverFailure: every code but a negative answer is ours; no code is not", () => {
    for (const code of ["EAI_AGAIN", "EAI_FAIL", "EAI_SYSTEM", "EAI_MEMORY", "ESERVFAIL", "ECONNREFUSED", "ETIMEOUT", "EMFILE", "ENFILE"]) {
      assert.isTrue(ReceiverHosts.ownResolverFailure(code), code)
    }
    for (const code of ["ENOTFOUND", "ENODATA", "EAI_NONAME", "EAI_NODATA", "EAI_ADDRFAMILY", "", undefined]) {
      assert.isFalse(ReceiverHosts.ownResolverFailure(code), String(code))
    }
  })

  it.live("lookupOfAddresses: an address-text resolver's sentence is the refusal's message", () =>
    Effect.gen(function*() {
      const fromTexts = ReceiverHosts.make({
        ...STRICT,
        lookup: ReceiverHosts.lookupOfAddresses((host) =>
          host === "hooks.example.test" ? Effect.succeed(["93.184.215.14", "::1"]) : Effect.fail(`${host} does not resolve`)
        )
      })
      const blocked = yield* refusalOf(fromTexts.resolve("hooks.example.test"))
      assert.strictEqual(blocked.reason, "blocked_address")
      assert.include(blocked.message, "::1 is not a public address")
      const missing = yield* refusalOf(fromTexts.resolve("nowhere.example.test"))
      assert.strictEqual(missing.message, "nowhere.example.test does not resolve")
    }))
})

/** DNS response codes (RFC 1035 4.1.1). */
const RCODE = { SERVFAIL: 2, NXDOMAIN: 3 } as const

/** A DNS server on 127.0.0.1 answering every query with `rcode` and no record. */
const dnsServer = (rcode: number) =>
  Effect.acquireRelease(
    Effect.callback<Dgram.Socket>((resume) => {
      const socket = Dgram.createSocket("udp4")
      socket.on("message", (query, peer) => {
        if (query.length < 12) return
        const answer = Buffer.from(query)
        // QR (a response), the query's opcode and RD kept, RA; the code; no answer, authority or additional record.
        answer[2] = 0x80 | ((query[2] ?? 0) & 0x79)
        answer[3] = 0x80 | rcode
        answer.writeUInt16BE(0, 6)
        answer.writeUInt16BE(0, 8)
        answer.writeUInt16BE(0, 10)
        socket.send(answer, peer.port, peer.address)
      })
      socket.bind(0, "127.0.0.1", () => resume(Effect.succeed(socket)))
    }),
    (socket) =>
      Effect.callback<void>((resume) => {
        socket.close(() => resume(Effect.void))
      })
  )

/** A UDP port on 127.0.0.1 where nothing listens (bound, then closed). */
const deadPort = Effect.callback<number>((resume) => {
  const socket = Dgram.createSocket("udp4")
  socket.bind(0, "127.0.0.1", () => {
    const { port } = socket.address()
    socket.close(() => resume(Effect.succeed(port)))
  })
})

/** A `Lookup` over a c-ares resolver asking `server` (IPv4 records). */
const aresLookup = (server: string) => {
  const resolver = new Resolver({ timeout: 200, tries: 1 })
  resolver.setServers([server])
  return ReceiverHosts.lookupFrom(async (host) =>
    (await resolver.resolve4(host)).map((address): LookupAddress => ({ address, family: 4 }))
  )
}

describe("ReceiverHosts with a real resolver", () => {
  it.live("NXDOMAIN from the DNS server is the receiver's", () =>
    Effect.gen(function*() {
      const server = yield* dnsServer(RCODE.NXDOMAIN)
      const hosts = ReceiverHosts.make({ ...STRICT, lookup: aresLookup(`127.0.0.1:${server.address().port}`) })
      const refusal = yield* refusalOf(hosts.resolve("hooks.example.test"))
      assert.strictEqual(refusal.code, "ENOTFOUND")
      assert.strictEqual(refusal.reason, "does_not_resolve")
      assert.isFalse(ReceiverHosts.isOurs(refusal))
    }))

  it.live("SERVFAIL from the DNS server is ours", () =>
    Effect.gen(function*() {
      const server = yield* dnsServer(RCODE.SERVFAIL)
      const hosts = ReceiverHosts.make({ ...STRICT, lookup: aresLookup(`127.0.0.1:${server.address().port}`) })
      const refusal = yield* refusalOf(hosts.resolve("hooks.example.test"))
      assert.strictEqual(refusal.code, "ESERVFAIL")
      assert.strictEqual(refusal.reason, "resolver_unavailable")
      assert.isTrue(ReceiverHosts.isOurs(refusal))
    }))

  it.live("no DNS server listening (refused or silent) is ours", () =>
    Effect.gen(function*() {
      const port = yield* deadPort
      const hosts = ReceiverHosts.make({ ...STRICT, lookup: aresLookup(`127.0.0.1:${port}`) })
      const refusal = yield* refusalOf(hosts.resolve("hooks.example.test"))
      assert.include(["ECONNREFUSED", "ETIMEOUT"], refusal.code)
      assert.strictEqual(refusal.reason, "resolver_unavailable")
      assert.isTrue(ReceiverHosts.isOurs(refusal))
    }))
})
