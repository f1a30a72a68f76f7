/**
 * The receiver-URL rule (libs/domain/src/ReceiverAddress.ts; docs/decisions.md
 * "Webhooks"), checked against a table of the blocked ranges written here,
 * independently of the implementation's (ipaddr.js): every address of each
 * blocked range, in several spellings (dotted, one decimal number, hex,
 * octal, short forms, percent-encoded, and the IPv6 forms that carry an IPv4
 * address), is refused in a URL and among resolved addresses; a sample of
 * global unicast addresses is accepted. With insecure URLs allowed, http and
 * internal unicast addresses pass and unusable ones still do not.
 *
 * Then against ipaddr.js's own range classification, as an oracle: over
 * generated IPv4 and IPv6 addresses (random bits under prefixes drawn to
 * hit every special range and its edges), written in every spelling a URL
 * host can take (dotted, one decimal/hex/octal number, `127.1` and
 * `0x7f.0.1` short forms, mixed radixes per part, a trailing dot,
 * percent-encoded; IPv6 compressed at every zero run, expanded, upper case,
 * with the last 32 bits dotted, so `::ffff:a.b.c.d` and its hex form,
 * bracketed, with and without a port), the rule refuses exactly what
 * `ipaddr.parse(x).range()` (with its IPv4-mapped handling) does not call
 * `unicast`, for the secure policy, and exactly what it calls unspecified,
 * multicast or broadcast with insecure URLs allowed; in URLs, and as
 * resolved addresses. Where the rule deliberately differs from ipaddr.js
 * (anycast ranges accepted; the other IPv4-carrying IPv6 forms judged by
 * their IPv4; IPv6 outside 2000::/3 refused), the oracle says so in one
 * named step each (DIFFERENCES), and one test shows each on an example.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Receiver from "@school/domain/ReceiverAddress"
import ipaddr from "ipaddr.js"

const STRICT: Receiver.Policy = { allowInsecure: false }
const INSECURE: Receiver.Policy = { allowInsecure: true }

/** The blocked IPv4 ranges as [first octets, prefix length]: docs/decisions.md "Webhooks". */
const BLOCKED_V4: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
]

const v4Number = (dotted: string): number => dotted.split(".").reduce((n, octet) => n * 256 + Number(octet), 0)
const dotted = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".")
const inV4 = (n: number, [base, prefix]: readonly [string, number]) =>
  prefix === 0 || Math.floor(n / 2 ** (32 - prefix)) === Math.floor(v4Number(base) / 2 ** (32 - prefix))
const isBlockedV4 = (n: number) => BLOCKED_V4.some((range) => inV4(n, range))

const hex16 = (n: number) => n.toString(16)

/** The spellings of one IPv4 address as a URL host: every one WHATWG URL reads as that address. */
const v4Spellings = (n: number): ReadonlyArray<string> => {
  const [a = 0, b = 0, c = 0, d = 0] = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]
  return [
    dotted(n),
    String(n), // one decimal number: http://2130706433/
    `0x${n.toString(16)}`, // one hex number
    `0${n.toString(8)}`, // one octal number: http://017700000001/
    `0x${a.toString(16)}.0x${b.toString(16)}.0x${c.toString(16)}.0x${d.toString(16)}`,
    `0${a.toString(8)}.0${b.toString(8)}.0${c.toString(8)}.0${d.toString(8)}`,
    `${a}.${(n & 0xffffff)}`, // a.b form: http://127.1/
    `0x${a.toString(16)}.${n & 0xffffff}`, // http://0x7f.1/
    `${a}.${b}.${(n & 0xffff)}`,
    [...dotted(n)].map((ch) => `%${ch.charCodeAt(0).toString(16)}`).join(""), // percent-encoded
    // IPv6 forms that carry it.
    `[::ffff:${dotted(n)}]`,
    `[::ffff:${hex16(n >>> 16)}:${hex16(n & 0xffff)}]`,
    `[0:0:0:0:0:ffff:${dotted(n)}]`,
    `[::ffff:0:${dotted(n)}]`, // IPv4-translated (RFC 6145)
    `[64:ff9b::${dotted(n)}]`, // NAT64 (RFC 6052)
    `[2002:${hex16(n >>> 16)}:${hex16(n & 0xffff)}::1]`, // 6to4
    `[2002:${hex16(n >>> 16)}:${hex16(n & 0xffff)}:ffff:1:2:3:4]`
  ].concat(
    // IPv4-compatible (::a.b.c.d), except where it would be :: or ::1 themselves (blocked anyway).
    n > 1 ? [`[::${dotted(n)}]`, `[::${hex16(n >>> 16)}:${hex16(n & 0xffff)}]`] : []
  )
}

/** The blocked IPv6 ranges: [prefix as 8 groups, prefix length]. */
const BLOCKED_V6: ReadonlyArray<readonly [ReadonlyArray<number>, number]> = [
  [[0, 0, 0, 0, 0, 0, 0, 0], 128], // ::
  [[0, 0, 0, 0, 0, 0, 0, 1], 128], // ::1
  [[0xfe80, 0, 0, 0, 0, 0, 0, 0], 10], // link-local
  [[0xfec0, 0, 0, 0, 0, 0, 0, 0], 10], // site-local (deprecated)
  [[0xfc00, 0, 0, 0, 0, 0, 0, 0], 7], // unique local
  [[0xff00, 0, 0, 0, 0, 0, 0, 0], 8], // multicast
  [[0x2001, 0x0db8, 0, 0, 0, 0, 0, 0], 32], // documentation
  [[0x3fff, 0, 0, 0, 0, 0, 0, 0], 20], // documentation (RFC 9637)
  [[0x2001, 0, 0, 0, 0, 0, 0, 0], 32], // Teredo
  [[0x0064, 0xff9b, 0x0001, 0, 0, 0, 0, 0], 48], // local-use NAT64
  [[0x0100, 0, 0, 0, 0, 0, 0, 0], 64], // discard
  [[0x4000, 0, 0, 0, 0, 0, 0, 0], 2], // outside 2000::/3
  [[0x8000, 0, 0, 0, 0, 0, 0, 0], 2],
  [[0xc000, 0, 0, 0, 0, 0, 0, 0], 3]
]

/** `bytes` (16) with the first `prefix` bits of `base` over them, as 8 groups. */
const inRange = (base: ReadonlyArray<number>, prefix: number, bytes: Uint8Array): ReadonlyArray<number> => {
  const groups: Array<number> = []
  for (let i = 0; i < 8; i++) {
    const random = ((bytes[2 * i] ?? 0) << 8) | (bytes[2 * i + 1] ?? 0)
    const bits = Math.max(0, Math.min(16, prefix - 16 * i))
    const mask = bits === 0 ? 0 : (0xffff << (16 - bits)) & 0xffff
    groups.push(((base[i] ?? 0) & mask) | (random & ~mask & 0xffff))
  }
  return groups
}

const v6Spellings = (groups: ReadonlyArray<number>): ReadonlyArray<string> => {
  const full = groups.map(hex16).join(":")
  const padded = groups.map((g) => g.toString(16).padStart(4, "0")).join(":")
  const upper = full.toUpperCase()
  return [`[${full}]`, `[${padded}]`, `[${upper}]`]
}

const V4 = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2 ** 32 - 1 }))
const Bytes16 = Schema.Uint8Array.check(Schema.isMinLength(16), Schema.isMaxLength(16))
const RangeIndex = (ranges: ReadonlyArray<unknown>) => Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: ranges.length - 1 }))

/** An address of the range, from a random number. */
const v4InRange = (n: number, [base, prefix]: readonly [string, number]) => {
  const size = 2 ** (32 - prefix)
  return (Math.floor(v4Number(base) / size) * size) + (n % size)
}

const refusedUrl = (host: string, policy = STRICT) => {
  const parsed = Receiver.parseReceiverUrl(`https://${host}/hook`, policy)
  return parsed._tag === "Invalid"
}

describe("ReceiverAddress", () => {
  it.prop(
    "every address of every blocked IPv4 range, in every spelling, is refused in a URL and when resolved",
    { n: V4, range: RangeIndex(BLOCKED_V4) },
    ({ n, range }) => {
      const address = v4InRange(n, BLOCKED_V4[range] ?? ["0.0.0.0", 8])
      assert.isTrue(isBlockedV4(address))
      assert.isFalse(Receiver.isPublicAddress(dotted(address)))
      for (const spelling of v4Spellings(address)) {
        assert.isTrue(refusedUrl(spelling), `https://${spelling}/ was accepted (${dotted(address)})`)
      }
      assert.isDefined(Receiver.resolvedRefusal("hooks.example.com", ["93.184.215.14", dotted(address)], STRICT))
      assert.isDefined(Receiver.resolvedRefusal("hooks.example.com", [`::ffff:${dotted(address)}`], STRICT))
    },
    { arbitrary: { runs: 400 } }
  )

  it.prop(
    "every address of every blocked IPv6 range, in several spellings, is refused",
    { bytes: Bytes16, range: RangeIndex(BLOCKED_V6) },
    ({ bytes, range }) => {
      const [base = [], prefix = 128] = BLOCKED_V6[range] ?? []
      const groups = inRange(base, prefix, bytes)
      for (const spelling of v6Spellings(groups)) {
        assert.isTrue(refusedUrl(spelling), `https://${spelling}/ was accepted`)
        assert.isFalse(Receiver.isPublicAddress(spelling.slice(1, -1)), spelling)
      }
      assert.isDefined(Receiver.resolvedRefusal("h.example.com", ["2a00:1450:4001:82a::200e", groups.map(hex16).join(":")], STRICT))
    },
    { arbitrary: { runs: 400 } }
  )

  it.prop(
    "a sample of global unicast IPv4 addresses, in every spelling, is accepted",
    { n: V4 },
    ({ n }) => {
      if (isBlockedV4(n)) return
      for (const spelling of v4Spellings(n)) {
        const parsed = Receiver.parseReceiverUrl(`https://${spelling}/hook`, STRICT)
        assert.strictEqual(parsed._tag, "Valid", `https://${spelling}/ was refused`)
      }
      assert.isTrue(Receiver.isPublicAddress(dotted(n)))
      assert.isUndefined(Receiver.resolvedRefusal("h.example.com", [dotted(n), `::ffff:${dotted(n)}`], STRICT))
    },
    { arbitrary: { runs: 400 } }
  )

  it.prop(
    "a sample of global unicast IPv6 addresses (2400::/6 to 2e00::/7) is accepted",
    { bytes: Bytes16 },
    ({ bytes }) => {
      const groups = inRange([0x2400, 0, 0, 0, 0, 0, 0, 0], 6, bytes)
      for (const spelling of v6Spellings(groups)) {
        assert.strictEqual(Receiver.parseReceiverUrl(`https://${spelling}/`, STRICT)._tag, "Valid", spelling)
      }
      assert.isUndefined(Receiver.resolvedRefusal("h.example.com", [groups.map(hex16).join(":")], STRICT))
    }
  )

  it("the spellings of the decisions: http://2130706433/, http://0x7f.1/, http://017700000001/ are 127.0.0.1", () => {
    for (const url of ["http://2130706433/", "http://0x7f.1/", "http://017700000001/", "http://127.1/"]) {
      assert.strictEqual(new URL(url).hostname, "127.0.0.1")
      const strict = Receiver.parseReceiverUrl(url, STRICT)
      assert.strictEqual(strict._tag, "Invalid")
      const https = Receiver.parseReceiverUrl(url.replace("http:", "https:"), STRICT)
      assert.strictEqual(https._tag, "Invalid")
      if (https._tag === "Invalid") assert.include(https.message, "127.0.0.1 is not a public address")
      // Insecure URLs allowed: loopback is a receiver (local development), stored as normalised.
      assert.deepStrictEqual(Receiver.parseReceiverUrl(url, INSECURE), {
        _tag: "Valid",
        href: "http://127.0.0.1/",
        host: { _tag: "Address", address: "127.0.0.1" }
      })
    }
  })

  it("the URL: https only unless insecure URLs are allowed, no credentials, at most 2048 characters, absolute", () => {
    const message = (url: string, policy = STRICT) => {
      const parsed = Receiver.parseReceiverUrl(url, policy)
      return parsed._tag === "Invalid" ? parsed.message : undefined
    }
    assert.strictEqual(message("http://93.184.215.14/hook"), "Expected an https URL")
    assert.isUndefined(message("http://93.184.215.14/hook", INSECURE))
    assert.strictEqual(message("ftp://93.184.215.14/hook", INSECURE), "Expected an https or http URL")
    assert.include(message("https://user:pass@hooks.example.com/") ?? "", "credentials")
    assert.include(message("https://user@hooks.example.com/") ?? "", "credentials")
    assert.include(message("https://:pass@hooks.example.com/", INSECURE) ?? "", "credentials")
    assert.include(message("hooks.example.com/webhooks") ?? "", "absolute URL")
    assert.include(message("/webhooks") ?? "", "absolute URL")
    assert.include(message("https://") ?? "", "absolute URL")
    const long = `https://hooks.example.com/${"a".repeat(Receiver.MAX_URL_LENGTH)}`
    assert.include(message(long) ?? "", "2048")
    const exact = `https://hooks.example.com/${"a".repeat(Receiver.MAX_URL_LENGTH - "https://hooks.example.com/".length)}`
    assert.isUndefined(message(exact))
  })

  it("a host name is returned to be resolved, normalised as WHATWG URL does", () => {
    assert.deepStrictEqual(Receiver.parseReceiverUrl("https://Hooks.Example.COM:443/In?x=1", STRICT), {
      _tag: "Valid",
      href: "https://hooks.example.com/In?x=1",
      host: { _tag: "Name", name: "hooks.example.com" }
    })
    assert.deepStrictEqual(Receiver.parseReceiverUrl("https://localhost:8443/", STRICT), {
      _tag: "Valid",
      href: "https://localhost:8443/",
      host: { _tag: "Name", name: "localhost" }
    })
  })

  it("resolved addresses: every one is checked, none at all is refused, insecure allows internal ones", () => {
    assert.include(Receiver.resolvedRefusal("localhost", ["127.0.0.1", "::1"], STRICT) ?? "", "localhost resolves to 127.0.0.1")
    assert.isUndefined(Receiver.resolvedRefusal("localhost", ["127.0.0.1", "::1"], INSECURE))
    assert.include(Receiver.resolvedRefusal("void.example", [], INSECURE) ?? "", "resolves to no address")
    assert.isDefined(Receiver.resolvedRefusal("multi.example", ["224.0.0.1"], INSECURE))
    assert.isUndefined(Receiver.resolvedRefusal("hooks.example.com", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"], STRICT))
  })

  it("with insecure URLs allowed, internal unicast passes; unspecified, multicast and broadcast never do", () => {
    for (const host of ["127.0.0.1", "10.1.2.3", "192.168.1.10", "[::1]", "[fe80::1]", "[fd00::5]", "169.254.169.254"]) {
      assert.strictEqual(Receiver.parseReceiverUrl(`http://${host}:8080/`, INSECURE)._tag, "Valid", host)
      assert.strictEqual(Receiver.parseReceiverUrl(`https://${host}:8080/`, STRICT)._tag, "Invalid", host)
    }
    for (const host of ["0.0.0.0", "0", "224.0.0.1", "255.255.255.255", "[::]", "[ff02::1]", "[::ffff:224.0.0.1]"]) {
      assert.strictEqual(Receiver.parseReceiverUrl(`http://${host}/`, INSECURE)._tag, "Invalid", host)
    }
  })

  it("classify names the range, and text that is not an address is unusable", () => {
    assert.deepStrictEqual(Receiver.classify("10.0.0.1"), { kind: "internal", range: "private" })
    assert.deepStrictEqual(Receiver.classify("::ffff:127.0.0.1").kind, "internal")
    assert.include(Receiver.classify("::ffff:127.0.0.1").range, "127.0.0.1")
    assert.deepStrictEqual(Receiver.classify("8.8.8.8"), { kind: "public", range: "unicast" })
    assert.deepStrictEqual(Receiver.classify("hooks.example.com"), { kind: "unusable", range: "not an IP address" })
    assert.deepStrictEqual(Receiver.classify("2130706433").kind, "internal")
    assert.deepStrictEqual(Receiver.classify("0x7f.1").kind, "internal")
  })
})

// ---------------------------------------------------------------------------
// The rule against ipaddr.js's own range classification
// ---------------------------------------------------------------------------

/** What an address is as a receiver, by the oracle: public, internal (unicast, not public) or never a host. */
type Verdict = "public" | "internal" | "unusable"

/** ipaddr.js's range names of addresses that are never a unicast host. */
const NEVER_A_HOST: ReadonlySet<string> = new Set(["unspecified", "multicast", "broadcast"])

/**
 * The rule's deliberate differences from "anything ipaddr.js does not call
 * `unicast` is refused" (docs/decisions.md "Webhook subscriptions"). Each is
 * one step of the oracle below, and "the differences, as named" checks one
 * example of each.
 */
const DIFFERENCES = {
  /** The anycast service ranges ipaddr.js names apart from `unicast` are global unicast: accepted. */
  anycast: { v4: new Set(["as112", "amt"]), v6: new Set(["as112v6", "amt"]) },
  /**
   * IPv6 forms that carry an IPv4 address are judged by the IPv4 address
   * (ipaddr.js unwraps only IPv4-mapped, `ipaddr.process`; it calls the
   * others `rfc6145`, `rfc6052`, `6to4`, or `unicast` for IPv4-compatible).
   * The prefixes are written here, not taken from ipaddr.js.
   */
  carriedV4: "IPv4-translated ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16, IPv4-compatible ::/96",
  /** ipaddr.js calls `unicast` all IPv6 outside its special ranges; only 2000::/3 is global unicast. */
  outside2000: "IPv6 outside 2000::/3 is refused"
  // Not a difference, though each carries an IPv4 address: Teredo 2001::/32 and the local-use NAT64
  // prefix 64:ff9b:1::/48 are refused outright, as ipaddr.js's `teredo` and `rfc6052` say, never judged
  // by the address inside.
} as const

type Octets = readonly [number, number, number, number]
type Groups = readonly [number, number, number, number, number, number, number, number]

const v4FromGroups = (high: number, low: number): Octets => [high >> 8, high & 0xff, low >> 8, low & 0xff]

const oracleV4 = (octets: Octets): Verdict => {
  const range: string = new ipaddr.IPv4([...octets]).range()
  if (range === "unicast" || DIFFERENCES.anycast.v4.has(range)) return "public"
  return NEVER_A_HOST.has(range) ? "unusable" : "internal"
}

/** DIFFERENCES.carriedV4: the IPv4 address an IPv6 form other than IPv4-mapped carries, from its bits. */
const carriedV4 = (g: Groups): Octets | undefined => {
  const zero = (from: number, to: number) => g.slice(from, to).every((group) => group === 0)
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return v4FromGroups(g[6], g[7]) // IPv4-translated
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4FromGroups(g[6], g[7]) // NAT64
  if (g[0] === 0x2002) return v4FromGroups(g[1], g[2]) // 6to4
  if (zero(0, 6) && !(g[6] === 0 && g[7] <= 1)) return v4FromGroups(g[6], g[7]) // IPv4-compatible, but not :: and ::1
  return undefined
}

const oracleV6 = (groups: Groups): Verdict => {
  const address = new ipaddr.IPv6([...groups])
  // ipaddr.js's own IPv4-mapped handling (what ipaddr.process unwraps).
  if (address.isIPv4MappedAddress()) return oracleV4(v4FromGroups(groups[6], groups[7]))
  const carried = carriedV4(groups)
  if (carried !== undefined) return oracleV4(carried)
  const range: string = address.range()
  if (DIFFERENCES.anycast.v6.has(range)) return "public"
  if (NEVER_A_HOST.has(range)) return "unusable"
  if (range !== "unicast") return "internal"
  // DIFFERENCES.outside2000
  return (groups[0] & 0xe000) === 0x2000 ? "public" : "internal"
}

/** Whether the oracle refuses a verdict under a policy. */
const oracleRefuses = (verdict: Verdict, policy: Receiver.Policy): boolean =>
  policy.allowInsecure ? verdict === "unusable" : verdict !== "public"

// Generation: random bits under a prefix, the prefixes chosen to hit every range and its edges often.
// (Which prefixes are drawn decides nothing: the oracle judges every address.)

/** IPv4 prefixes to draw from: the special ranges, their neighbours, anycast, and anything at all. */
const V4_PREFIXES: ReadonlyArray<readonly [Octets, number]> = [
  [[0, 0, 0, 0], 0],
  [[0, 0, 0, 0], 0],
  [[0, 0, 0, 0], 8],
  [[0, 0, 0, 0], 32],
  [[1, 0, 0, 0], 8],
  [[9, 0, 0, 0], 8],
  [[10, 0, 0, 0], 8],
  [[11, 0, 0, 0], 8],
  [[100, 63, 0, 0], 16],
  [[100, 64, 0, 0], 10],
  [[100, 128, 0, 0], 16],
  [[126, 0, 0, 0], 8],
  [[127, 0, 0, 0], 8],
  [[128, 0, 0, 0], 8],
  [[169, 253, 0, 0], 16],
  [[169, 254, 0, 0], 16],
  [[169, 255, 0, 0], 16],
  [[172, 15, 0, 0], 16],
  [[172, 16, 0, 0], 12],
  [[172, 32, 0, 0], 16],
  [[192, 0, 0, 0], 23],
  [[192, 31, 196, 0], 24],
  [[192, 52, 193, 0], 24],
  [[192, 88, 98, 0], 23],
  [[192, 167, 0, 0], 16],
  [[192, 168, 0, 0], 16],
  [[192, 169, 0, 0], 16],
  [[192, 175, 48, 0], 24],
  [[198, 17, 0, 0], 16],
  [[198, 18, 0, 0], 15],
  [[198, 20, 0, 0], 16],
  [[198, 51, 100, 0], 24],
  [[203, 0, 113, 0], 24],
  [[223, 0, 0, 0], 8],
  [[224, 0, 0, 0], 4],
  [[240, 0, 0, 0], 4],
  [[255, 255, 255, 254], 31]
]

const octetsNumber = ([a, b, c, d]: Octets): number => ((a * 256 + b) * 256 + c) * 256 + d
const octetsOf = (n: number): Octets => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]

/** The address of prefix `index` whose free bits are those of `random`. */
const drawV4 = (index: number, random: Octets): Octets => {
  const [base, prefix] = V4_PREFIXES[index % V4_PREFIXES.length] ?? [[0, 0, 0, 0], 0]
  const size = 2 ** (32 - prefix)
  return octetsOf(Math.floor(octetsNumber(base) / size) * size + (octetsNumber(random) % size))
}

/** IPv6 shapes to draw from: `r` random groups, `o` a drawn IPv4 address. */
const V6_SHAPES: ReadonlyArray<(r: Groups, o: Octets) => ReadonlyArray<number>> = [
  (r) => r, // anything
  (r) => [0x2000 | (r[0] & 0x1fff), ...r.slice(1)], // 2000::/3
  (r) => [0x2400 | (r[0] & 0x03ff), ...r.slice(1)],
  (_, o) => [0, 0, 0, 0, 0, 0xffff, (o[0] << 8) | o[1], (o[2] << 8) | o[3]], // IPv4-mapped
  (_, o) => [0, 0, 0, 0, 0xffff, 0, (o[0] << 8) | o[1], (o[2] << 8) | o[3]], // IPv4-translated
  (_, o) => [0x64, 0xff9b, 0, 0, 0, 0, (o[0] << 8) | o[1], (o[2] << 8) | o[3]], // NAT64
  (r, o) => [0x64, 0xff9b, 1, r[3], r[4], r[5], (o[0] << 8) | o[1], (o[2] << 8) | o[3]], // local-use NAT64
  (r, o) => [0x2002, (o[0] << 8) | o[1], (o[2] << 8) | o[3], ...r.slice(3)], // 6to4
  (_, o) => [0, 0, 0, 0, 0, 0, (o[0] << 8) | o[1], (o[2] << 8) | o[3]], // IPv4-compatible
  (r) => [0, 0, 0, 0, 0, 0, 0, r[7] & 3], // ::, ::1, ::2, ::3
  (r) => [0, 0, 0, 0, r[4] & 1 ? 0xffff : 0, r[5] & 1 ? 0xffff : r[5] & 0xf, r[6], r[7]], // near the IPv4 forms
  (r) => [0x2001, 0, ...r.slice(2)], // Teredo
  (r) => [0x2001, r[1] & 0x1ff, ...r.slice(2)], // 2001::/23
  (r) => [0x2001, r[1] & 0x3f, r[2] & 0x1ff, ...r.slice(3)], // benchmarking, AMT, AS112, ORCHID…
  (r) => [0x2001, 4, 0x112, ...r.slice(3)], // AS112
  (r) => [0x2620, 0x4f, 0x8000, ...r.slice(3)], // AS112
  (r) => [0x2001, 0xdb8, ...r.slice(2)], // documentation
  (r) => [0x3fff, r[1] & 0x1fff, ...r.slice(2)], // documentation (RFC 9637) and next to it
  (r) => [0xfe80 | (r[0] & 0x7f), ...r.slice(1)], // link-local and site-local
  (r) => [0xfc00 | (r[0] & 0x3ff), ...r.slice(1)], // unique local and next to it
  (r) => [0xff00 | (r[0] & 0xff), ...r.slice(1)], // multicast
  (r) => [0x100, 0, 0, r[3] & 1, ...r.slice(4)], // discard
  (r) => [0x5f00, ...r.slice(1)], // segment routing
  (r) => [r[0] & 0x1fff, ...r.slice(1)] // below 2000::/3
]

const drawV6 = (shape: number, random: Groups, v4: Octets): Groups => {
  const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0] = (V6_SHAPES[shape % V6_SHAPES.length] ?? ((r) => r))(random, v4)
  return [a, b, c, d, e, f, g, h]
}

// Spellings, written here (not by WHATWG URL nor ipaddr.js).

/** One IPv4 part in a radix: 0 decimal, 1 hexGroup (`0x`), 2 hexGroup (`0X`, leading zeros), 3 octal (`0…`). */
const inRadix = (value: number, radix: number): string => {
  switch (radix % 4) {
    case 1:
      return `0x${value.toString(16)}`
    case 2:
      return `0X${value.toString(16).toUpperCase().padStart(4, "0")}`
    case 3:
      return `0${value.toString(8)}`
    default:
      return value.toString(10)
  }
}

/**
 * Every spelling of an IPv4 address a URL host can take: 1 to 4 parts (the
 * last part holds the remaining bytes: `127.1`, `127.0.1`), each part in a
 * radix from `radixes`, plus the fixed forms (one number in each radix,
 * dotted with a trailing dot, percent-encoded).
 */
const v4UrlSpellings = (octets: Octets, radixes: Octets): ReadonlyArray<string> => {
  const dotted = octets.join(".")
  const parts = (count: number, radixOf: (i: number) => number) => {
    const head = octets.slice(0, count - 1).map((octet, i) => inRadix(octet, radixOf(i)))
    const rest = octets.slice(count - 1).reduce((value, octet) => value * 256 + octet, 0)
    return [...head, inRadix(rest, radixOf(count - 1))].join(".")
  }
  const spellings = [dotted, `${dotted}.`, [...dotted].map((ch) => `%${ch.charCodeAt(0).toString(16)}`).join("")]
  for (const count of [1, 2, 3, 4]) {
    for (const radix of [0, 1, 2, 3]) spellings.push(parts(count, () => radix))
    spellings.push(parts(count, (i) => radixes[i] ?? 0))
  }
  return spellings
}

const hexGroup = (group: number) => group.toString(16)

/** The RFC 5952 form: the longest run of two or more zero groups (the first of equals) as `::`, lower case. */
const rfc5952 = (groups: ReadonlyArray<number>): string => {
  let best = { start: -1, length: 0 }
  for (let i = 0; i < groups.length;) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < groups.length && groups[j] === 0) j++
    if (j - i > best.length) best = { start: i, length: j - i }
    i = j
  }
  return best.length < 2 ? groups.map(hexGroup).join(":") : compress(groups, best.start, best.length)
}

/** `groups` with the zero run `[start, start + length)` written `::`. */
const compress = (groups: ReadonlyArray<number>, start: number, length: number): string =>
  `${groups.slice(0, start).map(hexGroup).join(":")}::${groups.slice(start + length).map(hexGroup).join(":")}`

/** Every zero run of `groups` (each maximal run, and its first group alone). */
const zeroRuns = (groups: ReadonlyArray<number>): ReadonlyArray<readonly [number, number]> => {
  const runs: Array<readonly [number, number]> = []
  for (let i = 0; i < groups.length;) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < groups.length && groups[j] === 0) j++
    runs.push([i, j - i])
    if (j - i > 1) runs.push([i, 1])
    i = j
  }
  return runs
}

/** The last 32 bits as dotted decimal after the first six groups written `head`. */
const withDottedTail = (head: string, groups: Groups): string => {
  const tail = v4FromGroups(groups[6], groups[7]).join(".")
  return head.endsWith(":") ? `${head}${tail}` : `${head}:${tail}`
}

/**
 * Every spelling of an IPv6 address (unbracketed): compressed (RFC 5952,
 * and every zero run as `::`), expanded with and without leading zeros,
 * upper case, and the last 32 bits as dotted decimal (so IPv4-mapped reads
 * `::ffff:a.b.c.d` as well as `::ffff:hhhh:hhhh`).
 */
const v6Texts = (groups: Groups): ReadonlyArray<string> => {
  const six = groups.slice(0, 6)
  const spellings = [
    rfc5952(groups),
    groups.map(hexGroup).join(":"),
    groups.map((g) => hexGroup(g).padStart(4, "0")).join(":"),
    rfc5952(groups).toUpperCase(),
    ...zeroRuns(groups).map(([start, length]) => compress(groups, start, length)),
    withDottedTail(six.map(hexGroup).join(":"), groups),
    withDottedTail(rfc5952(six).includes("::") ? rfc5952(six) : six.map(hexGroup).join(":"), groups),
    ...zeroRuns(six).map(([start, length]) => withDottedTail(compress(six, start, length), groups)),
    withDottedTail(six.map((g) => hexGroup(g).padStart(4, "0").toUpperCase()).join(":"), groups)
  ]
  return [...new Set(spellings)]
}

/** What the rule says of a URL with this host: refused or not. */
const urlRefused = (host: string, policy: Receiver.Policy): boolean => {
  const scheme = policy.allowInsecure ? "http" : "https"
  return Receiver.parseReceiverUrl(`${scheme}://${host}/hook`, policy)._tag === "Invalid"
}

const Octet = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 255 }))
const Hextet = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0xffff }))
const OctetsArb = Schema.Tuple([Octet, Octet, Octet, Octet])
const GroupsArb = Schema.Tuple([Hextet, Hextet, Hextet, Hextet, Hextet, Hextet, Hextet, Hextet])
const Radix = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 }))
const V4Prefix = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: V4_PREFIXES.length - 1 }))
const V6Shape = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: V6_SHAPES.length - 1 }))

/** A public address to resolve next to the one judged (it changes nothing). */
const PUBLIC_V4 = "93.184.215.14"
const PUBLIC_V6 = "2a00:1450:4001:82a::200e"

describe("ReceiverAddress against ipaddr.js's range classification", () => {
  it.prop(
    "IPv4: in every URL spelling and as a resolved address, refused exactly when ipaddr.js does not call it unicast (anycast aside)",
    { prefix: V4Prefix, random: OctetsArb, radixes: Schema.Tuple([Radix, Radix, Radix, Radix]) },
    ({ prefix, random, radixes }) => {
      const octets = drawV4(prefix, random)
      const dotted = octets.join(".")
      const verdict = oracleV4(octets)
      for (const policy of [STRICT, INSECURE]) {
        const refused = oracleRefuses(verdict, policy)
        const why = `${dotted} is ${verdict} (ipaddr.js: ${new ipaddr.IPv4([...octets]).range()}), insecure ${policy.allowInsecure}`
        for (const spelling of v4UrlSpellings(octets, radixes)) {
          assert.strictEqual(new URL(`https://${spelling}/`).hostname, dotted, spelling)
          assert.strictEqual(urlRefused(spelling, policy), refused, `${spelling}: ${why}`)
          assert.strictEqual(urlRefused(`${spelling}:8443`, policy), refused, `${spelling}:8443: ${why}`)
        }
        assert.strictEqual(Receiver.addressRefusal(dotted, policy) !== undefined, refused, why)
        assert.strictEqual(Receiver.resolvedRefusal("h.example.com", [PUBLIC_V4, dotted], policy) !== undefined, refused, why)
        assert.strictEqual(Receiver.resolvedRefusal("h.example.com", [dotted, PUBLIC_V6], policy) !== undefined, refused, why)
      }
      assert.strictEqual(Receiver.isPublicAddress(dotted), verdict === "public")
    },
    { arbitrary: { runs: 1000 } }
  )

  it.prop(
    "IPv6: in every spelling, bracketed in a URL and as a resolved address, refused exactly when the oracle says",
    { shape: V6Shape, random: GroupsArb, v4Prefix: V4Prefix, v4Random: OctetsArb },
    ({ shape, random, v4Prefix, v4Random }) => {
      const groups = drawV6(shape, random, drawV4(v4Prefix, v4Random))
      const canonical = rfc5952(groups)
      const verdict = oracleV6(groups)
      const texts = v6Texts(groups)
      for (const policy of [STRICT, INSECURE]) {
        const refused = oracleRefuses(verdict, policy)
        const why = `${canonical} is ${verdict} (ipaddr.js: ${new ipaddr.IPv6([...groups]).range()}), insecure ${policy.allowInsecure}`
        for (const text of texts) {
          assert.strictEqual(new URL(`https://[${text}]/`).hostname, `[${canonical}]`, text)
          assert.strictEqual(urlRefused(`[${text}]`, policy), refused, `[${text}]: ${why}`)
        }
        assert.strictEqual(urlRefused(`[${canonical}]:8443`, policy), refused, `[${canonical}]:8443: ${why}`)
        // Resolved addresses come as a resolver writes them (RFC 5952, or expanded).
        for (const text of [canonical, texts[2] ?? canonical]) {
          assert.strictEqual(Receiver.addressRefusal(text, policy) !== undefined, refused, `${text}: ${why}`)
          assert.strictEqual(Receiver.resolvedRefusal("h.example.com", [PUBLIC_V6, text], policy) !== undefined, refused, why)
        }
      }
      // Under the secure policy every text spelling, the dotted-tail ones included, is judged alike.
      for (const text of texts) {
        assert.strictEqual(Receiver.addressRefusal(text, STRICT) !== undefined, verdict !== "public", text)
      }
      assert.strictEqual(Receiver.isPublicAddress(canonical), verdict === "public")
    },
    { arbitrary: { runs: 1000 } }
  )

  it("the differences from ipaddr.js, as named (docs/decisions.md \"Webhook subscriptions\")", () => {
    const range = (text: string): string => ipaddr.parse(text).range()
    const accepted = (host: string) => assert.isFalse(urlRefused(host, STRICT), host)
    const refused = (host: string) => assert.isTrue(urlRefused(host, STRICT), host)
    // DIFFERENCES.anycast: ipaddr.js names them apart, the rule accepts them.
    assert.deepStrictEqual(["192.175.48.1", "192.31.196.1", "192.52.193.1", "2001:4:112::1", "2001:3::1"].map(range), [
      "as112",
      "as112",
      "amt",
      "as112v6",
      "amt"
    ])
    for (const host of ["192.175.48.1", "192.31.196.1", "192.52.193.1", "[2001:4:112::1]", "[2001:3::1]"]) accepted(host)
    // DIFFERENCES.carriedV4: judged by the IPv4 address inside, whatever ipaddr.js calls the IPv6 form.
    assert.deepStrictEqual(["::ffff:0:808:808", "64:ff9b::808:808", "2002:808:808::1", "::808:808"].map(range), [
      "rfc6145",
      "rfc6052",
      "6to4",
      "unicast"
    ])
    for (const host of ["[::ffff:0:8.8.8.8]", "[64:ff9b::8.8.8.8]", "[2002:808:808::1]", "[::8.8.8.8]"]) accepted(host)
    for (const host of ["[::ffff:0:10.0.0.1]", "[64:ff9b::127.0.0.1]", "[2002:a9fe:a9fe::1]", "[::192.168.0.1]"]) refused(host)
    // DIFFERENCES.outside2000: ipaddr.js says unicast, the rule refuses.
    assert.deepStrictEqual(["1::1", "4000::1", "c000::1"].map(range), ["unicast", "unicast", "unicast"])
    for (const host of ["[1::1]", "[4000::1]", "[c000::1]"]) refused(host)
    // Not a difference: Teredo and local-use NAT64 carrying a public IPv4 address are refused outright.
    assert.deepStrictEqual(["2001:0:808:808::", "64:ff9b:1::808:808"].map(range), ["teredo", "rfc6052"])
    for (const host of ["[2001:0:808:808::]", "[2001::f7f7:f7f7]", "[64:ff9b:1::8.8.8.8]"]) refused(host)
  })
})
