/**
 * What the documents' `info` says beyond what `OpenApi.annotations` writes: whom
 * their readers contact (Effect's annotations have no `contact`).
 */
import type * as OpenApi from "effect/http-api/OpenApi"
import type { Adjustment } from "./Document.ts"

/** A contact of `info` (OpenAPI 3.1 "Contact Object"), which Effect's model of `info` leaves out. */
export interface Contact {
  readonly name: string
  readonly url?: string
  readonly email?: string
}

interface InfoWithContact extends OpenApi.OpenAPISpecInfo {
  contact?: Contact
}

/** `info.contact` of the document. */
export const documentContact = (contact: Contact): Adjustment => (spec) => {
  const info: InfoWithContact = spec.info
  info.contact = { ...contact }
  return spec
}

/**
 * The license of both documents: the service is not open source, and its terms are the school's
 * contract with the service, published nowhere else, so the SPDX form of a license without a
 * public text names it (`LicenseRef-`).
 */
export const LICENSE: OpenApi.OpenAPISpecLicense = { name: "Proprietary", identifier: "LicenseRef-Proprietary" }
