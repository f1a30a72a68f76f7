/** The union of the back office's errors and its guard, derived from its table (BackOfficeErrors.ts). */
import * as BackOfficeErrors from "./BackOfficeErrors.ts"
import * as ErrorTable from "./ErrorTable.ts"

export type BackOfficeError = ErrorTable.ErrorOf<typeof BackOfficeErrors>
export const isBackOfficeError = ErrorTable.guard(BackOfficeErrors)
