import { integration } from "../../vitest.shared.js"
export default integration
