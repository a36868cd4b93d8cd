import type { Position } from '../manifests/problems.js';

/**
 * Where in the file a place in a YAML string value is: CEL says where in the expression an error
 * is (an offset in the string as YAML read it), the loader where the value starts. Between them
 * lie the value's YAML form: quotes, escapes (`''`, `\"`), a block scalar's header and
 * indentation, folded lines. The string's characters are found in the source in order, skipping
 * what YAML added; a whitespace character of the string may be a line break and indentation there.
 * Exact for plain, quoted and literal (`|`) values on their lines; within a character or two in
 * folded text.
 */
export function positionInValue(text: string, value: Position, decoded: string, offset: number): Position {
  const starts = lineStarts(text);
  const at = (starts[value.line - 1] ?? 0) + value.col - 1;
  let pos = at;
  const first = text[at];
  if (first === '|' || first === '>') {
    const eol = text.indexOf('\n', at);
    pos = eol < 0 ? text.length : eol + 1;
  } else if (first === '\'' || first === '"') pos = at + 1;
  const end = Math.min(offset, decoded.length);
  for (let i = 0; i <= end && i < decoded.length; i++) {
    const c = decoded[i];
    if (/\s/.test(c)) {
      if (i === end) break;
      if (/\s/.test(text[pos] ?? '')) pos++;
      continue;
    }
    const found = text.indexOf(c, pos);
    if (found < 0) break;
    if (i === end) {
      pos = found;
      break;
    }
    pos = found + 1;
  }
  return positionAt(text, starts, pos, value.file);
}

function lineStarts(text: string): number[] {
  const out = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) out.push(i + 1);
  return out;
}

function positionAt(text: string, starts: number[], offset: number, file: string): Position {
  const o = Math.max(0, Math.min(offset, text.length));
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= o) lo = mid;
    else hi = mid - 1;
  }
  return { file, line: lo + 1, col: o - starts[lo] + 1 };
}
