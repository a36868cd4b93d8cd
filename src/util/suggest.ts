import { closest, distance } from 'fastest-levenshtein';

/**
 * The candidate a mistyped word most likely meant, or undefined when none is close: a word that
 * differs only in case, else the nearest by edit distance, if at most a third of the word's
 * length (at least one edit, at most three) is changed. Further away, a suggestion misleads more
 * than it helps (`foo` is no typo of `bar`).
 */
export function suggest(word: string, candidates: Iterable<string>): string | undefined {
  const list = [...new Set(candidates)].filter((c) => c !== word);
  if (!list.length || !word) return undefined;
  const folded = list.find((c) => c.toLowerCase() === word.toLowerCase());
  if (folded !== undefined) return folded;
  const best = closest(word, list);
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  return distance(word, best) <= limit ? best : undefined;
}

/** ` (did you mean "x"?)`, or nothing: appended to a message about an unknown word. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const s = suggest(word, candidates);
  return s === undefined ? '' : ` (did you mean "${s}"?)`;
}
