/**
 * Text PostgreSQL cannot hold in `text` or `jsonb`: U+0000, and an unpaired UTF-16 surrogate (JSON
 * and URLs can carry both). A query given such text fails with an error of its own, so it is
 * stopped before it reaches the database.
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function isStorableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}
