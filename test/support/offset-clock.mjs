// Shifts this process's clock by TEST_CLOCK_OFFSET_MS (loaded with `node --import`): a machine
// whose clock is wrong, for the dispatcher's clock check (test/dispatcher/clock.test.ts). Only the
// process it is loaded into is affected; the machine's clock is not touched.
const offset = Number(process.env.TEST_CLOCK_OFFSET_MS ?? "0")
const realNow = Date.now
Date.now = () => realNow() + offset
