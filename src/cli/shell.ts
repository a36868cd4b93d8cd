/** A word as one POSIX shell word, so a printed command can be pasted as it is (`My Stack`, `it's`, `HTTPSEdge/shop-*`). */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
