/**
 * Who a request comes from, as both failed-authentication guards see it (the
 * public API's, apps/api/src/AuthFailureGuard.ts, and the back office's
 * sign-in throttle; docs/operations.md "Settings", `TRUST_PROXY`): the TCP
 * peer, or, when the peer is a trusted reverse proxy, the right-most
 * X-Forwarded-For entry that is not itself a trusted proxy. From anyone
 * else X-Forwarded-For and X-Forwarded-Proto are ignored: anyone can send them.
 * The address is grouped as `AuthFailures.clientOf` does (an IPv6 client by
 * its /64).
 */
import * as Option from "effect/Option"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import { AuthFailures } from "@school/domain"
import * as SettingKinds from "@school/runtime/SettingKinds"
import ipaddr from "ipaddr.js"
import type { IncomingMessage } from "node:http"
import * as Schema from "effect/Schema"

type Address = ipaddr.IPv4 | ipaddr.IPv6

/** A parsed address, IPv4-mapped IPv6 as IPv4; None when it is not an address. */
const parseAddress = (text: string): Option.Option<Address> => {
  const bare = text.trim().replace(/^\[(.*)\]$/u, "$1").split("%")[0] ?? ""
  return ipaddr.isValid(bare) ? Option.some(ipaddr.process(bare)) : Option.none()
}

/** `10.0.0.1, 192.168.0.0/16, fd00::/8`: each entry an address or a CIDR range; empty: none. */
export const parseTrustProxy = (text: string): Option.Option<ReadonlyArray<string>> => {
  const entries = text.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
  const valid = entries.every((entry) => entry.includes("/") ? ipaddr.isValidCIDR(entry) : ipaddr.isValid(entry))
  return valid ? Option.some(entries) : Option.none()
}

/** `TRUST_PROXY` (docs/operations.md "Settings"): the reverse proxies whose forwarding headers are believed. */
export const TRUST_PROXY = SettingKinds.make(
  "TRUST_PROXY",
  SettingKinds.kind(
    Schema.Array(Schema.String),
    "comma-separated IP addresses or CIDR ranges",
    parseTrustProxy
  ),
  []
)

/** The trusted proxies, parsed once: whether an address is one of them. */
export type Trusted = (address: Address) => boolean

export const trusted = (entries: ReadonlyArray<string>): Trusted => {
  const ranges = entries.map((entry): [Address, number] => {
    if (entry.includes("/")) {
      const [range, bits] = ipaddr.parseCIDR(entry)
      return range instanceof ipaddr.IPv6 && range.isIPv4MappedAddress()
        ? [range.toIPv4Address(), Math.max(0, bits - 96)]
        : [range, bits]
    }
    const address = ipaddr.process(entry)
    return [address, address.kind() === "ipv4" ? 32 : 128]
  })
  return (address) => ranges.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits))
}

/** A socket's peer: its address and the address's text as `clientAddress` answers it. */
interface Peer {
  readonly address: Address
  readonly text: string
}

/** Peer addresses parsed lately, by their socket's text: a client's requests come from the same few. */
const peers = new Map<string, Option.Option<Peer>>()
/** Entries kept at most; the map is emptied when full (a client from a new address costs one parse). */
const MAX_PEERS = 4096

/**
 * A socket's peer address (its `remoteAddress`: undefined once it has closed), parsed once per
 * address text: ipaddr.js's parse was ~1 kB allocated a request (docs/performance.md "The
 * request path"), and a keep-alive connection sends many.
 */
const parsedPeer = (remote: string | undefined): Option.Option<Peer> => {
  if (remote === undefined) return Option.none()
  const known = peers.get(remote)
  if (known !== undefined) return known
  const peer = Option.map(parseAddress(remote), (address): Peer => ({ address, text: address.toString() }))
  if (peers.size >= MAX_PEERS) peers.clear()
  peers.set(remote, peer)
  return peer
}

const peerOf = (request: HttpServerRequest.HttpServerRequest): Option.Option<Peer> =>
  parsedPeer(Option.getOrUndefined(request.remoteAddress))

const isTrustedPeer = (request: HttpServerRequest.HttpServerRequest, trust: Trusted) => {
  const peer = peerOf(request)
  return Option.isSome(peer) && trust(peer.value.address)
}

/** The client's address from the socket's (`peer`) and X-Forwarded-For, believed from a trusted proxy only. */
const addressFrom = (peer: Option.Option<Peer>, header: string | undefined, trust: Trusted): Option.Option<string> => {
  if (Option.isNone(peer)) return Option.none()
  if (header === undefined || !trust(peer.value.address)) return Option.some(peer.value.text)
  const hops = header.split(",")
  let nearest: Address = peer.value.address
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseAddress(hops[i] ?? "")
    // Not an address: what is left of it was written by the client; the hop after it is the answer.
    if (Option.isNone(hop)) break
    nearest = hop.value
    if (!trust(hop.value)) break
  }
  return Option.some(nearest.toString())
}

/** The client's address as a string, before grouping; None when the socket has none. */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest, trust: Trusted): Option.Option<string> =>
  addressFrom(peerOf(request), request.headers["x-forwarded-for"], trust)

/**
 * `clientAddress` of a request Effect has not wrapped yet, from Node's own
 * message (apps/api/src/Server.ts `EarlyRefusals`): the same socket address
 * and the same header, so the same answer.
 */
export const messageAddress = (message: IncomingMessage, trust: Trusted): Option.Option<string> =>
  addressFrom(parsedPeer(message.socket.remoteAddress), headerText(message.headers["x-forwarded-for"]), trust)

/** A header of Node's message as Effect's request has it (effect/http `Headers.fromInput`: repeats joined by ", "). */
export const headerText = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" || value === undefined ? value : value.join(", ")

/** The client a throttle counts: `clientAddress` grouped by `AuthFailures.clientOf`. */
export const clientKey = (request: HttpServerRequest.HttpServerRequest, trust: Trusted): string =>
  AuthFailures.clientOf(Option.getOrUndefined(clientAddress(request, trust)))

/** Whether the request came over TLS, or through a trusted proxy that says `X-Forwarded-Proto: https`. */
export const viaHttps = (request: HttpServerRequest.HttpServerRequest, trust: Trusted): boolean => {
  const source = request.source
  if ("socket" in source && typeof source.socket === "object" && source.socket !== null) {
    if ("encrypted" in source.socket && source.socket.encrypted === true) return true
  }
  return isTrustedPeer(request, trust) &&
    request.headers["x-forwarded-proto"]?.split(",")[0]?.trim().toLowerCase() === "https"
}

/** Whether the request's Host names a loopback address (`localhost`, 127.0.0.0/8, `::1`). */
export const loopbackHost = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const host = request.headers["host"]
  if (host === undefined) return false
  const name = (/^\[([^\]]*)\]/u.exec(host)?.[1] ?? host.replace(/:\d*$/u, "")).toLowerCase()
  if (name === "localhost" || name.endsWith(".localhost")) return true
  const address = parseAddress(name)
  return Option.isSome(address) && address.value.range() === "loopback"
}

/**
 * docs/back-office.md "Signing in": the session cookie is `Secure` over
 * HTTPS (`viaHttps`), and by default whenever the Host is not a loopback
 * address, so that only `npm start` on 127.0.0.1 or localhost gets a cookie
 * a browser sends over plain HTTP.
 */
export const secureCookie = (request: HttpServerRequest.HttpServerRequest, trust: Trusted): boolean =>
  viaHttps(request, trust) || !loopbackHost(request)
