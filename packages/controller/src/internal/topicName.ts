/** Kafka's rules for topic names, shared by the modules that take one from a request. */

export const MAX_NAME_LENGTH = 249

/** Why a topic name is illegal (Kafka's message), or null when it is legal. */
export const validateTopicName = (name: string): string | null => {
  if (name.length === 0) return "Topic name is illegal, it can't be empty"
  if (name === "." || name === "..") return 'Topic name cannot be "." or ".."'
  if (name.length > MAX_NAME_LENGTH)
    return `Topic name is illegal, it can't be longer than ${MAX_NAME_LENGTH} characters, topic name: ${name}`
  if (!/^[a-zA-Z0-9._-]+$/.test(name))
    return `Topic name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`
  return null
}
