/**
 * Where the documents' paths are served: the host that served the document
 * (a relative URL, resolved against the document's own address), and the
 * address `npm start` listens on (docs/operations.md "Settings": PORT, HOST).
 * The paths carry their prefix (`/api/public/v1/...`), so a server is a host.
 */
import type * as OpenApi from "effect/http-api/OpenApi"

export const SERVERS: ReadonlyArray<OpenApi.OpenAPISpecServer> = [
  { url: "/", description: "The host that serves this document" },
  { url: "http://127.0.0.1:3000", description: "npm start on this machine (HOST and PORT defaults)" }
]
