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

interface Branch<K, V> {
  readonly kind: 2
  readonly children: ReadonlyArray<Child<K, V> | undefined>
}

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

const emptyBranch: Branch<never, never> = { kind: 2, children: [] }

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

const withChild = <K, V>(branch: Branch<K, V>, index: number, child: Child<K, V> | undefined): Branch<K, V> => {
  const children = branch.children.slice()
  children[index] = child
  return { kind: 2, children }
}

/** A branch holding two children of different hashes from `shift` on. */
const split = <K, V>(a: Leaf<K, V> | Bucket<K, V>, b: Leaf<K, V>, shift: number): Branch<K, V> => {
  const ia = (a.hash >>> shift) & MASK
  const ib = (b.hash >>> shift) & MASK
  const children: Array<Child<K, V> | undefined> = []
  if (ia === ib) children[ia] = split(a, b, shift + BITS)
  else {
    children[ia] = a
    children[ib] = b
  }
  return { kind: 2, children }
}

const insert = <K, V>(branch: Branch<K, V>, leaf: Leaf<K, V>, shift: number): Branch<K, V> => {
  const index = (leaf.hash >>> shift) & MASK
  const child = branch.children[index]
  if (child === undefined) return withChild(branch, index, leaf)
  switch (child.kind) {
    case 0:
      if (child.key === leaf.key) return withChild(branch, index, leaf)
      if (child.hash === leaf.hash) return withChild(branch, index, { kind: 1, hash: leaf.hash, leaves: [child, leaf] })
      return withChild(branch, index, split(child, leaf, shift + BITS))
    case 1:
      if (child.hash === leaf.hash) {
        const leaves = child.leaves.filter((l) => l.key !== leaf.key)
        leaves.push(leaf)
        return withChild(branch, index, { kind: 1, hash: leaf.hash, leaves })
      }
      return withChild(branch, index, split(child, leaf, shift + BITS))
    case 2:
      return withChild(branch, index, insert(child, leaf, shift + BITS))
  }
}

const remove = <K, V>(branch: Branch<K, V>, hash: number, key: K, shift: number): Branch<K, V> => {
  const index = (hash >>> shift) & MASK
  const child = branch.children[index]
  if (child === undefined) return branch
  switch (child.kind) {
    case 0:
      return child.key === key ? withChild(branch, index, undefined) : branch
    case 1: {
      const leaves = child.leaves.filter((l) => l.key !== key)
      return withChild(branch, index, leaves.length === 1 ? leaves[0] : { kind: 1, hash, leaves })
    }
    case 2:
      return withChild(branch, index, remove(child, hash, key, shift + BITS))
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
    let map = PersistentMap.empty<K, V>()
    for (const [k, v] of entries) map = map.set(k, v)
    return map
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
      return new PersistentMap(insert(this.#root, leaf, 0), this.#size, this.#next)
    }
    const leaf: Leaf<K, V> = { kind: 0, hash, seq: this.#next, key, value }
    return new PersistentMap(insert(this.#root, leaf, 0), this.#size + 1, this.#next + 1)
  }

  delete(key: K): PersistentMap<K, V> {
    const hash = hashOf(key)
    if (find(this.#root, hash, key) === undefined) return this
    return new PersistentMap(remove(this.#root, hash, key, 0), this.#size - 1, this.#next)
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
