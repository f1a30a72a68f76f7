/**
 * The receiver-URL rule (libs/domain/src/ReceiverAddress.ts; docs/decisions.md
 * "Webhooks"), checked against a table of the blocked ranges written here,
 * independently of the implementation's (ipaddr.js): every address of each
 * blocked range, in several spellings (dotted, one decimal number, hex,
 * octal, short forms, percent-encoded, and the IPv6 forms that carry an IPv4
 * address), is refused in a URL and among resolved addresses; a sample of
 * global unicast addresses is accepted. With insecure URLs allowed, http and
 * internal unicast addresses pass and unusable ones still do not.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Receiver from "@school/domain/ReceiverAddress"

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
