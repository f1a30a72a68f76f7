/**
 * The `peer` anchor: GET /students and GET /students/{id} written
 * plainly on Fastify + `pg`, the way an integrator's team would write them
 * without our stack. Same job as the API: look the key up by its prefix and
 * compare the SHA-256 of the secret in constant time, then the list and its
 * total (two statements, sent together), or the student and their active
 * groups; the same JSON. Same pool size as the API (10). No logger, no
 * response schema: Fastify's defaults.
 *
 * Env: DATABASE_URL, PORT, HOST.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify"
import { createHash, timingSafeEqual } from "node:crypto"
import pg from "pg"

const BASE = "/api/public/v1"
const KEY = /^Bearer svc_([a-z0-9]{8})_([A-Za-z0-9]{32})$/

const pool = new pg.Pool({ connectionString: process.env["DATABASE_URL"], max: 10 })

const unauthorized = (reply: FastifyReply, reason: string, message: string) =>
  reply.code(401).send({ error: { code: "unauthorized", message, fields: { reason } } })

declare module "fastify" {
  interface FastifyRequest {
    schoolId: number
  }
}

const authenticate = async (request: FastifyRequest, reply: FastifyReply) => {
  const match = KEY.exec(request.headers.authorization ?? "")
  if (match === null) {
    return unauthorized(reply, "missing_or_malformed_key", "Send the header 'Authorization: Bearer svc_<prefix>_<secret>'.")
  }
  const { rows } = await pool.query<{
    school_id: number
    secret_hash: Buffer
    revoked: boolean
    expired: boolean
  }>(
    `SELECT k.school_id, k.secret_hash, k.revoked_at IS NOT NULL AS revoked,
            coalesce(k.expires_at <= now(), false) AS expired
     FROM api_key_prefixes p
     JOIN api_keys k ON k.school_id = p.school_id AND k.prefix = p.prefix
     WHERE p.prefix = $1`,
    [match[1]]
  )
  const key = rows[0]
  const presented = createHash("sha256").update(match[2]!).digest()
  if (key === undefined || key.secret_hash.length !== presented.length || !timingSafeEqual(key.secret_hash, presented)) {
    return unauthorized(reply, "unknown_key", "The API key is not known.")
  }
  if (key.revoked) return unauthorized(reply, "revoked_key", "The API key has been revoked.")
  if (key.expired) return unauthorized(reply, "expired_key", "The API key has expired.")
  request.schoolId = key.school_id
}

const STUDENT_COLUMNS = `id, fio, phone, email, balance_kopecks, filial_id,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at,
  to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS updated_at`

interface StudentRow {
  id: number
  fio: string
  phone: string
  email: string
  balance_kopecks: string
  filial_id: number
  created_at: string
  updated_at: string | null
}

const student = (row: StudentRow) => ({ ...row, balance_kopecks: Number(row.balance_kopecks) })

const app = Fastify({ logger: false })
app.decorateRequest("schoolId", 0)
app.addHook("onRequest", authenticate)

app.get<{ Querystring: { page: number; per_page: number; updated_since?: string } }>(`${BASE}/students`, {
  schema: {
    querystring: {
      type: "object",
      properties: {
        page: { type: "integer", minimum: 1, default: 1 },
        per_page: { type: "integer", minimum: 1, maximum: 100, default: 20 },
        updated_since: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}T.*(Z|[+-]\\d{2}:\\d{2})$" }
      }
    }
  }
}, async (request) => {
  const { page, per_page, updated_since } = request.query
  const filter = updated_since === undefined ? "school_id = $1" : "school_id = $1 AND updated_at >= $2::timestamptz"
  const params: Array<unknown> = updated_since === undefined ? [request.schoolId] : [request.schoolId, updated_since]
  const [count, rows] = await Promise.all([
    pool.query<{ total: number }>(`SELECT count(*)::int AS total FROM students WHERE ${filter}`, params),
    pool.query<StudentRow>(
      `SELECT ${STUDENT_COLUMNS} FROM students WHERE ${filter}
       ORDER BY id LIMIT ${per_page} OFFSET ${(page - 1) * per_page}`,
      params
    )
  ])
  return {
    data: rows.rows.map((row) => ({ ...student(row), active_groups: null })),
    meta: { page, per_page, total: count.rows[0]?.total ?? 0 }
  }
})

app.get<{ Params: { id: number } }>(`${BASE}/students/:id`, {
  schema: { params: { type: "object", properties: { id: { type: "integer", minimum: 1, maximum: 2147483647 } } } }
}, async (request, reply) => {
  const { rows } = await pool.query<StudentRow>(
    `SELECT ${STUDENT_COLUMNS} FROM students WHERE school_id = $1 AND id = $2`,
    [request.schoolId, request.params.id]
  )
  const found = rows[0]
  if (found === undefined) {
    return reply.code(404).send({ error: { code: "not_found", message: `Student ${request.params.id} not found.` } })
  }
  const groups = await pool.query(
    `SELECT g.id AS group_id, g.name AS group_name, g.filial_id, e.id AS enrollment_id,
            to_char(e.enrolled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS enrolled_at
     FROM enrollments e JOIN groups g ON g.school_id = e.school_id AND g.id = e.group_id
     WHERE e.school_id = $1 AND e.student_id = $2 AND e.ended_at IS NULL
     ORDER BY e.id`,
    [request.schoolId, request.params.id]
  )
  return { data: { ...student(found), active_groups: groups.rows } }
})

const shutdown = () => {
  void app.close().then(() => pool.end()).then(() => process.exit(0))
}
process.once("SIGTERM", shutdown)
process.once("SIGINT", shutdown)

await app.listen({ port: Number(process.env["PORT"] ?? 3001), host: process.env["HOST"] ?? "127.0.0.1" })
