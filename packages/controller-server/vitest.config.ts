import { unit } from "../../vitest.shared.js"
export default unit
