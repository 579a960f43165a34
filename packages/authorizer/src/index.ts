export * as Acl from "./Acl.js"
export * as StandardAuthorizer from "./StandardAuthorizer.js"
export * as AclRules from "./AclRules.js"
