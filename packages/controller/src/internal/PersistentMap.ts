/**
 * An immutable map with structural sharing, read through the `ReadonlyMap` interface: `set` and
 * `delete` return a new map in O(log₃₂ n) that shares all but one path of the old one, so replaying
 * one record into a state of 100,000 topics copies no map. Iteration follows insertion order, as a
 * `Map`'s does (a key set again keeps its place), so every reader of the state sees what it saw before.
 *
 * A hash array mapped trie (32-way) over string and number keys; the insertion order is a sequence
 * number per entry, sorted once per version on its first iteration.
 */

type Key = string | number

interface Leaf<K, V> {
  readonly kind: 0
  readonly hash: number
  /** Insertion order: the place a key took when it was first set. */
  readonly seq: number
  readonly key: K
  readonly value: V
}

/** Leaves whose keys hash alike. */
interface Bucket<K, V> {
  readonly kind: 1
  readonly hash: number
  readonly leaves: ReadonlyArray<Leaf<K, V>>
}

/** A branch owned by a transient (`owner`) may be changed in place by it; any other is copied first. */
interface Branch<K, V> {
  readonly kind: 2
  readonly owner: Owner | undefined
  readonly children: Array<Child<K, V> | undefined>
}

/** The identity of one transient's edits. */
type Owner = object

type Child<K, V> = Leaf<K, V> | Bucket<K, V> | Branch<K, V>

const BITS = 5
const MASK = 31

const hashOf = (key: Key): number => {
  if (typeof key === "number") {
    if (Number.isInteger(key) && key >= -0x80000000 && key <= 0x7fffffff) return Math.imul(key | 0, 0x9e3779b1)
    return hashOf(String(key))
  }
  // FNV-1a
  let h = 0x811c9dc5
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  return h
}

const emptyBranch: Branch<never, never> = { kind: 2, owner: undefined, children: [] }

const find = <K, V>(branch: Branch<K, V>, hash: number, key: K): Leaf<K, V> | undefined => {
  let node: Child<K, V> | undefined = branch
  let shift = 0
  for (;;) {
    if (node === undefined) return undefined
    switch (node.kind) {
      case 0:
        return node.key === key ? node : undefined
      case 1:
        return node.hash === hash ? node.leaves.find((l) => l.key === key) : undefined
      case 2:
        node = node.children[(hash >>> shift) & MASK]
        shift += BITS
    }
  }
}

const withChild = <K, V>(
  branch: Branch<K, V>,
  index: number,
  child: Child<K, V> | undefined,
  owner: Owner | undefined
): Branch<K, V> => {
  if (owner !== undefined && branch.owner === owner) {
    branch.children[index] = child
    return branch
  }
  const children = branch.children.slice()
  children[index] = child
  return { kind: 2, owner, children }
}

/** A branch holding two children of different hashes from `shift` on. */
const split = <K, V>(
  a: Leaf<K, V> | Bucket<K, V>,
  b: Leaf<K, V>,
  shift: number,
  owner: Owner | undefined
): Branch<K, V> => {
  const ia = (a.hash >>> shift) & MASK
  const ib = (b.hash >>> shift) & MASK
  const children: Array<Child<K, V> | undefined> = []
  if (ia === ib) children[ia] = split(a, b, shift + BITS, owner)
  else {
    children[ia] = a
    children[ib] = b
  }
  return { kind: 2, owner, children }
}

const insert = <K, V>(
  branch: Branch<K, V>,
  leaf: Leaf<K, V>,
  shift: number,
  owner: Owner | undefined
): Branch<K, V> => {
  const index = (leaf.hash >>> shift) & MASK
  const child = branch.children[index]
  if (child === undefined) return withChild(branch, index, leaf, owner)
  switch (child.kind) {
    case 0:
      if (child.key === leaf.key) return withChild(branch, index, leaf, owner)
      if (child.hash === leaf.hash)
        return withChild(branch, index, { kind: 1, hash: leaf.hash, leaves: [child, leaf] }, owner)
      return withChild(branch, index, split(child, leaf, shift + BITS, owner), owner)
    case 1:
      if (child.hash === leaf.hash) {
        const leaves = child.leaves.filter((l) => l.key !== leaf.key)
        leaves.push(leaf)
        return withChild(branch, index, { kind: 1, hash: leaf.hash, leaves }, owner)
      }
      return withChild(branch, index, split(child, leaf, shift + BITS, owner), owner)
    case 2:
      return withChild(branch, index, insert(child, leaf, shift + BITS, owner), owner)
  }
}

const remove = <K, V>(
  branch: Branch<K, V>,
  hash: number,
  key: K,
  shift: number,
  owner: Owner | undefined
): Branch<K, V> => {
  const index = (hash >>> shift) & MASK
  const child = branch.children[index]
  if (child === undefined) return branch
  switch (child.kind) {
    case 0:
      return child.key === key ? withChild(branch, index, undefined, owner) : branch
    case 1: {
      const leaves = child.leaves.filter((l) => l.key !== key)
      return withChild(branch, index, leaves.length === 1 ? leaves[0] : { kind: 1, hash, leaves }, owner)
    }
    case 2:
      return withChild(branch, index, remove(child, hash, key, shift + BITS, owner), owner)
  }
}

const collect = <K, V>(node: Child<K, V>, out: Array<Leaf<K, V>>): void => {
  switch (node.kind) {
    case 0:
      out.push(node)
      return
    case 1:
      out.push(...node.leaves)
      return
    case 2:
      for (const c of node.children) if (c !== undefined) collect(c, out)
  }
}

const bySeq = (a: Leaf<unknown, unknown>, b: Leaf<unknown, unknown>): number => a.seq - b.seq

export class PersistentMap<K extends Key, V> implements ReadonlyMap<K, V> {
  // Private fields: equality of two maps (in tests) compares their entries, not how they were built.
  readonly #root: Branch<K, V>
  readonly #size: number
  readonly #next: number
  /** The entries in insertion order, built on the first iteration of this version. */
  #ordered: ReadonlyArray<Leaf<K, V>> | undefined

  private constructor(root: Branch<K, V>, size: number, next: number) {
    this.#root = root
    this.#size = size
    this.#next = next
  }

  static empty<K extends Key, V>(): PersistentMap<K, V> {
    return new PersistentMap<K, V>(emptyBranch, 0, 0)
  }

  static from<K extends Key, V>(entries: Iterable<readonly [K, V]>): PersistentMap<K, V> {
    const map = PersistentMap.empty<K, V>().transient()
    for (const [k, v] of entries) map.set(k, v)
    return map.persistent()
  }

  /** The map itself when it already is one, else a persistent copy of it. */
  static of<K extends Key, V>(map: ReadonlyMap<K, V>): PersistentMap<K, V> {
    return map instanceof PersistentMap ? map : PersistentMap.from(map)
  }

  get size(): number {
    return this.#size
  }

  get(key: K): V | undefined {
    return find(this.#root, hashOf(key), key)?.value
  }

  has(key: K): boolean {
    return find(this.#root, hashOf(key), key) !== undefined
  }

  set(key: K, value: V): PersistentMap<K, V> {
    const hash = hashOf(key)
    const existing = find(this.#root, hash, key)
    if (existing !== undefined) {
      if (existing.value === value) return this
      const leaf: Leaf<K, V> = { kind: 0, hash, seq: existing.seq, key, value }
      return new PersistentMap(insert(this.#root, leaf, 0, undefined), this.#size, this.#next)
    }
    const leaf: Leaf<K, V> = { kind: 0, hash, seq: this.#next, key, value }
    return new PersistentMap(insert(this.#root, leaf, 0, undefined), this.#size + 1, this.#next + 1)
  }

  delete(key: K): PersistentMap<K, V> {
    const hash = hashOf(key)
    if (find(this.#root, hash, key) === undefined) return this
    return new PersistentMap(remove(this.#root, hash, key, 0, undefined), this.#size - 1, this.#next)
  }

  /** A transient copy: changed in place (without copying what it already copied) until `persistent()`. */
  transient(): TransientMap<K, V> {
    return new TransientMap(this.#root, this.#size, this.#next, this)
  }

  /** @internal */
  static fromParts<K extends Key, V>(root: Branch<K, V>, size: number, next: number): PersistentMap<K, V> {
    return new PersistentMap(root, size, next)
  }

  #inOrder(): ReadonlyArray<Leaf<K, V>> {
    if (this.#ordered === undefined) {
      const out: Array<Leaf<K, V>> = []
      collect(this.#root, out)
      this.#ordered = out.sort(bySeq)
    }
    return this.#ordered
  }

  *keys(): MapIterator<K> {
    for (const e of this.#inOrder()) yield e.key
  }

  *entries(): MapIterator<[K, V]> {
    for (const e of this.#inOrder()) yield [e.key, e.value]
  }

  *values(): MapIterator<V> {
    for (const e of this.#inOrder()) yield e.value
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries()
  }

  forEach(f: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const e of this.#inOrder()) f.call(thisArg, e.value, e.key, this)
  }

  get [Symbol.toStringTag](): string {
    return "PersistentMap"
  }
}

/**
 * A map being built: the edits of one batch (a replay of many records) change the branches this
 * transient already copied in place, so a batch allocates one path per key it touches, not one per
 * edit. `persistent()` freezes what it holds; later edits copy again, so a map once returned never
 * changes.
 */
export class TransientMap<K extends Key, V> {
  #root: Branch<K, V>
  #size: number
  #next: number
  #owner: Owner = {}
  /** What `persistent()` returns while nothing changed since it last ran. */
  #frozen: PersistentMap<K, V> | undefined

  constructor(root: Branch<K, V>, size: number, next: number, frozen?: PersistentMap<K, V>) {
    this.#root = root
    this.#size = size
    this.#next = next
    this.#frozen = frozen
  }

  get size(): number {
    return this.#size
  }

  get(key: K): V | undefined {
    return find(this.#root, hashOf(key), key)?.value
  }

  has(key: K): boolean {
    return find(this.#root, hashOf(key), key) !== undefined
  }

  set(key: K, value: V): void {
    const hash = hashOf(key)
    const existing = find(this.#root, hash, key)
    if (existing !== undefined) {
      if (existing.value === value) return
      this.#frozen = undefined
      this.#root = insert(this.#root, { kind: 0, hash, seq: existing.seq, key, value }, 0, this.#owner)
      return
    }
    this.#frozen = undefined
    this.#root = insert(this.#root, { kind: 0, hash, seq: this.#next++, key, value }, 0, this.#owner)
    this.#size++
  }

  delete(key: K): void {
    const hash = hashOf(key)
    if (find(this.#root, hash, key) === undefined) return
    this.#frozen = undefined
    this.#root = remove(this.#root, hash, key, 0, this.#owner)
    this.#size--
  }

  persistent(): PersistentMap<K, V> {
    if (this.#frozen !== undefined) return this.#frozen
    // A new owner: the branches handed out are never changed in place again.
    this.#owner = {}
    this.#frozen = PersistentMap.fromParts(this.#root, this.#size, this.#next)
    return this.#frozen
  }
}
