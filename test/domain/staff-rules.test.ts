/**
 * Property tests of who may change whom in the back office's staff
 * (docs/back-office.md "Staff", `mayChangeEmployee` of libs/domain/src/Staff.ts):
 * every pair of roles, as two people and as one. The rule is written here
 * from the doc's table, not from the code.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { Role } from "@school/domain/Sessions"
import { mayChangeEmployee } from "@school/domain/Staff"

const Id = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))

/** docs/back-office.md "Staff": nobody changes the owner; the owner anyone else; an administrator managers and teachers. */
const expected = (actor: Role, target: Role): boolean =>
  target !== "owner" && (actor === "owner" || (actor === "administrator" && (target === "manager" || target === "teacher")))

describe("mayChangeEmployee (docs/back-office.md \"Staff\")", () => {
  it.prop("two people: the table's answer for every pair of roles", [Role, Role, Id, Id], ([actor, target, a, b]) => {
    const actorId = a
    const targetId = a === b ? b + 1 : b
    assert.strictEqual(mayChangeEmployee({ id: actorId, role: actor }, { id: targetId, role: target }), expected(actor, target))
  })

  it.prop("nobody changes themselves, whatever their role", [Role, Id], ([role, id]) => {
    assert.isFalse(mayChangeEmployee({ id, role }, { id, role }))
  })

  it.prop("nobody changes the owner", [Role, Id, Id], ([actor, a, b]) => {
    assert.isFalse(mayChangeEmployee({ id: a, role: actor }, { id: b, role: "owner" }))
  })

  it("the whole table", () => {
    const roles: ReadonlyArray<Role> = ["owner", "administrator", "manager", "teacher"]
    const table = roles.map((actor) => roles.map((target) => mayChangeEmployee({ id: 1, role: actor }, { id: 2, role: target })))
    assert.deepStrictEqual(table, [
      [false, true, true, true],
      [false, false, true, true],
      [false, false, false, false],
      [false, false, false, false]
    ])
  })
})
