/**
 * The receiver-URL rule of webhook subscriptions (docs/back-office.md "Webhooks";
 * docs/decisions.md "Webhooks"), as pure functions: the back office applies
 * it when a subscription is created or changed, and the dispatcher applies
 * the same functions to every address a host resolves to at delivery time
 * (DNS rebinding). No I/O here: resolving a host name is the caller's job.
 *
 * - The URL: absolute, `https` (or `http` when insecure URLs are allowed,
 *   `WEBHOOK_ALLOW_INSECURE_URLS=true`), no credentials (`user:pass@`), at
 *   most MAX_URL_LENGTH characters. It is kept as WHATWG `URL` normalises it
 *   (`href`), which also turns every IPv4 spelling (`2130706433`, `0x7f.1`,
 *   `017700000001`, `127.1`, percent-encoded digits) into its dotted
 *   decimal form, so the address checked is the address connected to.
 * - An address is public only when it is global unicast. Everything else is
 *   refused: 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12,
 *   192.0.0/24, the documentation and benchmarking ranges, 192.168/16,
 *   224/4, 240/4, 255.255.255.255; `::`, `::1`, fe80::/10, fc00::/7,
 *   fec0::/10, multicast, the documentation and other special IPv6
 *   ranges, and anything outside 2000::/3. IPv6 forms that carry an IPv4
 *   address (IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64
 *   64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4 address they carry;
 *   Teredo and the local-use NAT64 prefix are refused outright. The range
 *   arithmetic is ipaddr.js's, not hand-written.
 * - With insecure URLs allowed (local development and tests), loopback,
 *   private and other internal unicast addresses are accepted; an address
 *   that can never be a receiver (unspecified, multicast, broadcast) is
 *   still refused.
 */
import ipaddr from "ipaddr.js"

/** docs/decisions.md "Webhooks": the longest receiver URL accepted. */
export const MAX_URL_LENGTH = 2048

/** Whether insecure receivers (http, internal addresses) are allowed: `WEBHOOK_ALLOW_INSECURE_URLS`. */
export interface Policy {
  readonly allowInsecure: boolean
}

/**
 * What an address is as a receiver: `public` (global unicast), `internal`
 * (unicast but not public: loopback, private, link-local, reserved…) or
 * `unusable` (never a unicast host: unspecified, multicast, broadcast, or not
 * an address at all). `range` names why (ipaddr.js's range name).
 */
export interface Classification {
  readonly kind: "public" | "internal" | "unusable"
  readonly range: string
}

const UNUSABLE_RANGES: ReadonlySet<string> = new Set(["unspecified", "multicast", "broadcast"])
/** Globally reachable IPv4 ranges ipaddr.js names separately from `unicast` (anycast services). */
const PUBLIC_IPV4_RANGES: ReadonlySet<string> = new Set(["unicast", "as112", "amt"])
const PUBLIC_IPV6_RANGES: ReadonlySet<string> = new Set(["unicast", "as112v6", "amt"])

/** Global unicast IPv6 space (RFC 4291 2.4): 2000::/3. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3")
/** IPv4-compatible IPv6 (deprecated, RFC 4291 2.5.5.1): ::/96. */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR("::/96")
/** NAT64 well-known prefix (RFC 6052): the IPv4 address is the last 32 bits. */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR("64:ff9b::/96")

const classifyV4 = (address: ipaddr.IPv4): Classification => {
  const range: string = address.range()
  return {
    kind: PUBLIC_IPV4_RANGES.has(range) ? "public" : UNUSABLE_RANGES.has(range) ? "unusable" : "internal",
    range
  }
}

/** The IPv4 address of 16-bit parts `high` and `low`. */
const v4Of = (high: number, low: number): ipaddr.IPv4 =>
  new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

/** The IPv4 address an IPv6 form carries, and the form's name; undefined when it carries none. */
const embeddedV4 = (address: ipaddr.IPv6): { readonly form: string; readonly v4: ipaddr.IPv4 } | undefined => {
  const [, p1 = 0, p2 = 0, , , , p6 = 0, p7 = 0] = address.parts
  const range: string = address.range()
  switch (range) {
    case "ipv4Mapped":
    case "rfc6145":
      return { form: range, v4: v4Of(p6, p7) }
    case "6to4":
      return { form: range, v4: v4Of(p1, p2) }
    default:
      if (address.match(NAT64_WELL_KNOWN)) return { form: "nat64", v4: v4Of(p6, p7) }
      // `::` and `::1` are in ::/96 too but are themselves unspecified and loopback.
      if (address.match(IPV4_COMPATIBLE) && range !== "unspecified" && range !== "loopback") {
        return { form: "ipv4Compatible", v4: v4Of(p6, p7) }
      }
      return undefined
  }
}

const classifyV6 = (address: ipaddr.IPv6): Classification => {
  const embedded = embeddedV4(address)
  if (embedded !== undefined) {
    const inner = classifyV4(embedded.v4)
    return { kind: inner.kind, range: `${embedded.form} ${embedded.v4.toString()} (${inner.range})` }
  }
  const range: string = address.range()
  if (UNUSABLE_RANGES.has(range)) return { kind: "unusable", range }
  return {
    kind: PUBLIC_IPV6_RANGES.has(range) && address.match(GLOBAL_UNICAST_V6) ? "public" : "internal",
    range: range === "unicast" && !address.match(GLOBAL_UNICAST_V6) ? "outside 2000::/3" : range
  }
}

/** Strips the brackets a URL puts around an IPv6 host. */
const unbracket = (host: string): string =>
  host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host

/**
 * What `address` is as a receiver. Any spelling ipaddr.js reads is accepted
 * (dotted, hex, octal or one-number IPv4; any IPv6 form, with or without
 * brackets); text that is not an address is `unusable`.
 */
export const classify = (address: string): Classification => {
  const text = unbracket(address.trim())
  if (!ipaddr.isValid(text)) return { kind: "unusable", range: "not an IP address" }
  const parsed = ipaddr.parse(text)
  return parsed.kind() === "ipv4" ? classifyV4(ipaddr.IPv4.parse(text)) : classifyV6(ipaddr.IPv6.parse(text))
}

/** True when `address` is a global unicast address. */
export const isPublicAddress = (address: string): boolean => classify(address).kind === "public"

/** Why `address` may not receive webhooks under `policy`; undefined when it may. */
export const addressRefusal = (address: string, policy: Policy): string | undefined => {
  const { kind, range } = classify(address)
  if (kind === "public") return undefined
  if (kind === "internal" && policy.allowInsecure) return undefined
  return `${unbracket(address.trim())} is not a public address (${range}); webhooks go to public addresses only`
}

/**
 * Why a host whose name resolved to `addresses` may not receive webhooks;
 * undefined when every address may (the dispatcher connects to one of
 * them, so each is checked). No address at all is a refusal too.
 */
export const resolvedRefusal = (host: string, addresses: ReadonlyArray<string>, policy: Policy): string | undefined => {
  if (addresses.length === 0) return `${host} resolves to no address`
  for (const address of addresses) {
    const refusal = addressRefusal(address, policy)
    if (refusal !== undefined) return `${host} resolves to ${refusal}`
  }
  return undefined
}

/** A receiver URL's host: a literal address (already checked) or a name the caller must resolve and check. */
export type Host =
  | { readonly _tag: "Address"; readonly address: string }
  | { readonly _tag: "Name"; readonly name: string }

export type ReceiverUrl =
  | { readonly _tag: "Valid"; readonly href: string; readonly host: Host }
  | { readonly _tag: "Invalid"; readonly message: string }

const invalid = (message: string): ReceiverUrl => ({ _tag: "Invalid", message })

/**
 * What the back office adds to the refusal of a receiver only insecure URLs
 * would allow (docs/integrators.md "Receiving webhooks on your machine"): the
 * CLI's local loop, which delivers on the operator's machine.
 */
export const localDevelopmentHint = (schoolId: number): string =>
  `To receive webhooks on your machine, run \`npm run cli -- webhooks listen --school ${schoolId} --forward-to http://127.0.0.1:4000/hook\`.`

/** Whether `text` is refused under `policy` only because insecure receivers (http, internal addresses) are not allowed. */
export const refusedAsInsecure = (text: string, policy: Policy): boolean =>
  !policy.allowInsecure && parseReceiverUrl(text, { allowInsecure: true })._tag === "Valid"

/**
 * Reads a receiver URL under `policy`: the normalised URL and its host, or
 * why it is refused. A literal address is checked here; a host name is
 * returned for the caller to resolve and check with `resolvedRefusal`.
 */
export const parseReceiverUrl = (text: string, policy: Policy): ReceiverUrl => {
  if (text.length > MAX_URL_LENGTH) return invalid(`Expected at most ${MAX_URL_LENGTH} characters`)
  if (!URL.canParse(text)) return invalid("Expected an absolute URL, e.g. https://example.com/webhooks")
  const url = new URL(text)
  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.allowInsecure)) {
    return invalid(policy.allowInsecure ? "Expected an https or http URL" : "Expected an https URL")
  }
  if (url.username !== "" || url.password !== "") return invalid("A receiver URL may not carry credentials (user:password@)")
  if (url.hostname === "") return invalid("Expected a URL with a host")
  if (url.href.length > MAX_URL_LENGTH) return invalid(`Expected at most ${MAX_URL_LENGTH} characters once normalised`)
  const host = unbracket(url.hostname)
  if (ipaddr.isValid(host)) {
    const refusal = addressRefusal(host, policy)
    return refusal === undefined ? { _tag: "Valid", href: url.href, host: { _tag: "Address", address: host } } : invalid(refusal)
  }
  // Not an address: a domain name (WHATWG already turned every numeric IPv4 spelling into dotted decimal).
  return { _tag: "Valid", href: url.href, host: { _tag: "Name", name: host } }
}
