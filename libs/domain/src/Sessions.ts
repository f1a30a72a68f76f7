/**
 * The back office's staff sessions as rules, without I/O (docs/decisions.md
 * "Back-office sessions"): the token's shape and hash, the default lifetime
 * (SESSION_TTL), the roles, and how long repeated failed logins for one
 * e-mail must wait.
 */
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import { hash, randomBytes } from "node:crypto"

/** SESSION_TTL's default (docs/operations.md "Settings"). */
export const DEFAULT_TTL: Duration.Duration = Duration.hours(12)

/** The cookie that carries the token, and the path it is sent on. */
export const COOKIE_NAME = "crm_session"
export const COOKIE_PATH = "/api/crm"

/**
 * docs/decisions.md "Back-office sessions": the methods that change nothing,
 * which the cookie's cross-site request forgery check lets through.
 */
export const SAFE_METHODS: ReadonlyArray<string> = ["GET", "HEAD", "OPTIONS"]

/** The roles of docs/back-office.md. */
export const Role = Schema.Literals(["owner", "administrator", "manager", "teacher"])
export type Role = typeof Role.Type

/** A new token: 32 random bytes, base64url (43 characters). */
export const generateToken = (): string => randomBytes(32).toString("base64url")

/** What is stored of a token: its SHA-256 (a 256-bit random token needs no slow hash). */
export const hashToken = (token: string): Uint8Array => hash("sha256", token, "buffer")

/** A token as a client sends it: base64url, 43 characters; anything else is not looked up. */
export const isTokenShaped = (token: string): boolean => /^[A-Za-z0-9_-]{43}$/u.test(token)

/**
 * docs/decisions.md "Back-office sessions": failed logins for one e-mail.
 * The first FREE_FAILURES cost nothing; after that, each failure makes the
 * next attempt wait 1 s, doubling per further failure, at most 60 s. A
 * success forgets them.
 */
export const FREE_FAILURES = 5
export const FIRST_DELAY_MS = 1_000
export const MAX_DELAY_MS = 60_000

/** How long after the last failure the next attempt must wait, given `failures` in a row. */
export const loginDelayMs = (failures: number): number =>
  failures < FREE_FAILURES
    ? 0
    : Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(failures - FREE_FAILURES, 16))

/** Milliseconds still to wait before another attempt may be tried (0: try now). */
export const loginWaitMs = (failures: number, lastFailedAtMs: number, nowMs: number): number =>
  Math.max(0, lastFailedAtMs + loginDelayMs(failures) - nowMs)

/**
 * Who may call what (docs/back-office.md "Roles"): full access is owner and
 * administrator; the lead section adds manager; some calls add a role of
 * their own (students and payments: manager; attendance: teacher).
 */
export type Access = ReadonlyArray<Role>
export const ANY_EMPLOYEE: Access = ["owner", "administrator", "manager", "teacher"]
export const FULL_ACCESS: Access = ["owner", "administrator"]
export const LEAD_SECTION: Access = ["owner", "administrator", "manager"]
export const FULL_ACCESS_OR_MANAGER: Access = LEAD_SECTION
export const FULL_ACCESS_OR_TEACHER: Access = ["owner", "administrator", "teacher"]
/** Webhook subscriptions are managed by the owner or an administrator only (docs/back-office.md "Roles"). */
export const OWNER_OR_ADMINISTRATOR: Access = FULL_ACCESS
