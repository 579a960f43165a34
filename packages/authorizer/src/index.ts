export * as Acl from "./Acl.js"
export * as StandardAuthorizer from "./StandardAuthorizer.js"
