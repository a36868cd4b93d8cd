/**
 * A fast parser for the subset of YAML 1.2 that manifests are written in. For a text inside the
 * subset it returns the value of each document exactly as `parseAllDocuments(text, { uniqueKeys:
 * true })` and `doc.toJS()` of the `yaml` library give them (core schema, one entry per document,
 * `null` for an empty one); for anything else it bails out, and the caller parses the text with
 * the library, which also reports syntax errors with their positions. When in doubt it bails: a
 * bail-out costs time, a wrong value would be a wrong plan.
 *
 * The subset: `---` separators (a leading one too) and comments; block mappings and sequences
 * (`- key: v` compact mappings, `- - x`, sequences indented or not under a key); single-line plain
 * scalars resolved as the core schema does (null, booleans, ints in decimal, 0o and 0x, floats,
 * .inf and .nan); single-line single- and double-quoted scalars (every escape the library
 * knows); flow sequences and mappings closed on the line they open; literal block scalars `|`,
 * `|-`, `|+` as the value of a key or of a sequence entry.
 *
 * Bails on: tabs outside comments and block-scalar text, CR not followed by LF, control
 * characters, a byte-order mark, lone surrogates; directives, `...`, content on a `---` line;
 * anchors, aliases, tags, `?` and `:` keys, `>` folded scalars, block scalars with an indentation
 * indicator or standing on a line of their own, `|+` with no text, whitespace-only lines inside a
 * block scalar that are longer than its indentation; multi-line plain, quoted or flow scalars;
 * duplicate keys (also keys that differ as YAML but become the same JS key, `1` and `"1"`);
 * keys over 1,000 characters, plain keys ending in a space, flow keys that are collections, empty
 * flow entries and trailing commas, implicit pairs in flow sequences, flow-map entries without a
 * value; anything the library would reject or parse otherwise that the rules above do not cover.
 */

export type FastResult = { docs: unknown[] } | { bail: string };

/**
 * Whether the loader tries this parser first: `EDGEPLANE_YAML_FAST=0` turns it off, and every file
 * is parsed by the `yaml` library (slower; the same values). For a suspected parser bug.
 */
export function yamlFastEnabled(): boolean {
  return process.env.EDGEPLANE_YAML_FAST !== '0';
}

/** The values of the documents of `text`, or `undefined` when it is outside the subset. */
export function parseYamlFast(text: string): unknown[] | undefined {
  const r = parseYamlFastDetailed(text);
  return 'docs' in r ? r.docs : undefined;
}

/**
 * A document's source: its first line (0-based) and its text from there to the next document (a
 * document with the same text on the same line has the same value and the same positions).
 */
export interface DocSource { line: number; text: string }

/** As `parseYamlFast`, with each document's source (`null` documents have one too). */
export function parseYamlFastSources(text: string): { docs: unknown[]; sources: DocSource[] } | undefined {
  try {
    const p = new Parser(prepare(text));
    const docs = p.documents();
    return { docs, sources: p.sources };
  } catch (e) {
    if (e instanceof Bail || e instanceof RangeError) return undefined;
    throw e;
  }
}

/** As `parseYamlFast`, with the reason of a bail-out (for tests and diagnostics). */
export function parseYamlFastDetailed(text: string): FastResult {
  try {
    return { docs: new Parser(prepare(text)).documents() };
  } catch (e) {
    if (e instanceof Bail) return { bail: e.reason };
    if (e instanceof RangeError) return { bail: 'nested too deeply' }; // the call stack ran out
    throw e;
  }
}

/** Nesting the fast parser reads; deeper texts go to the library. Manifests nest a few levels. */
const MAX_DEPTH = 64;

class Bail {
  constructor(readonly reason: string) {}
}

function bail(reason: string): never {
  throw new Bail(reason);
}

const TAB = 9, LF = 10, SP = 32, BANG = 33, DQ = 34, HASH = 35, PCT = 37, AMP = 38, SQ = 39, STAR = 42, COMMA = 44,
  DASH = 45, DOT = 46, COLON = 58, GT = 62, QMARK = 63, AT = 64, LBRACK = 91, BSLASH = 92, RBRACK = 93, BTICK = 96,
  LBRACE = 123, PIPE = 124, RBRACE = 125;

// Characters YAML does not allow in a stream, or that the library treats specially (BOM, NEL, LS, PS).
const FORBIDDEN = /[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]/;

function prepare(text: string): string {
  if (FORBIDDEN.test(text)) bail('control character, byte-order mark or line separator');
  if (!(text as string & { isWellFormed(): boolean }).isWellFormed()) bail('lone surrogate');
  if (text.includes('\r')) {
    if (/\r(?!\n)/.test(text)) bail('CR not followed by LF');
    text = text.replaceAll('\r\n', '\n');
  }
  return text;
}

/**
 * Recently seen plain scalars of up to 40 characters and their values, in up to 256 slots chosen
 * by length and first and last character. Manifests repeat their keys and many values (`kind`,
 * `match_type: path_prefix`): a hit costs a comparison in the text instead of a new string, a
 * resolution and, for a key, V8 internalising the string once more. A short text (a policy file)
 * gets fewer slots: a plan's ten policy files made 80 kB of these lists.
 */
class ScalarCache {
  private readonly raw: (string | undefined)[];
  private readonly value: unknown[];
  private readonly mask: number;

  constructor(private readonly resolve: (s: string) => unknown, textLength: number) {
    let slots = 16;
    while (slots < 256 && slots * 16 < textLength) slots *= 2;
    this.raw = new Array(slots);
    this.value = new Array(slots);
    this.mask = slots - 1;
  }

  get(t: string, p: number, q: number): unknown {
    const len = q - p;
    if (len > 40) return this.resolve(t.slice(p, q));
    const slot = (len * 7 + t.charCodeAt(p) * 31 + t.charCodeAt(q - 1)) & this.mask;
    const raw = this.raw[slot];
    if (raw !== undefined && raw.length === len && t.startsWith(raw, p)) return this.value[slot];
    const s = t.slice(p, q);
    const v = this.resolve(s);
    this.raw[slot] = s;
    this.value[slot] = v;
    return v;
  }
}

/** Where a node stands: the document root, alone on the line after `key:` or `-`, after `- `, after `key: `. */
const enum At { Root, NextLine, SeqEntry, MapValue }

const BLOCK_STRIP = 1, BLOCK_KEEP = 2;

/** Characters a plain scalar may not start with (`-`, `?`, `:` only before a space). */
const INDICATOR = new Uint8Array(128);
for (const c of '-?:,[]{}#&*!|>\'"%@`') INDICATOR[c.charCodeAt(0)] = 1;

/** The characters a plain scalar goes on with in block context (a native scan: the first parse runs before the JIT has warmed up). */
const PLAIN_RUN = /(?:[^:\n ]|:(?=[^ \n])| (?!#))*/y;

class Parser {
  /** Where each line starts, and after the last the text's length + 1 (line i ends at starts[i + 1] - 1). */
  private readonly starts: Int32Array;
  /** Collections open around the one being read (`MAX_DEPTH` at most). */
  private depth = 0;
  private readonly lines: number;
  /** Lines holding a tab (only built when the text has one). */
  private readonly tabs: Uint8Array | undefined;
  /** Line after the node parsed last (may be blank or a comment). */
  private next = 0;
  /** Indentation of the line `content()` found; -1 for a `---` line or the end. */
  private ind = -1;
  /** Each document's source, in order (see `DocSource`). */
  readonly sources: DocSource[] = [];

  private readonly keys: ScalarCache;
  private readonly values: ScalarCache;

  constructor(private readonly t: string) {
    this.keys = new ScalarCache((s) => keyString(resolvePlain(s)), t.length);
    this.values = new ScalarCache(resolvePlain, t.length);
    // Counted first, so the list is made once at its length (a manifest directory has many lines).
    let lines = 1;
    for (let i = t.indexOf('\n'); i !== -1; i = t.indexOf('\n', i + 1)) lines++;
    const starts = (this.starts = new Int32Array(lines + 1));
    let k = 1;
    for (let i = t.indexOf('\n'); i !== -1; i = t.indexOf('\n', i + 1)) starts[k++] = i + 1;
    starts[lines] = t.length + 1;
    this.lines = lines;
    if (t.includes('\t')) {
      this.tabs = new Uint8Array(this.lines);
      let line = 0;
      for (let i = t.indexOf('\t'); i !== -1; i = t.indexOf('\t', i + 1)) {
        while (line + 1 < this.lines && this.starts[line + 1] <= i) line++;
        this.tabs[line] = 1;
      }
    }
  }

  /** First line from `i` that is neither blank nor a comment; sets `ind` (-1 for `---` and the end). */
  private content(i: number): number {
    const t = this.t;
    for (; i < this.lines; i++) {
      const s = this.starts[i], e = this.starts[i + 1] - 1;
      let p = s;
      while (p < e && t.charCodeAt(p) === SP) p++;
      if (p === e) continue;
      const c = t.charCodeAt(p);
      if (c === HASH) continue;
      if (c === TAB) bail('tab in indentation');
      if (p === s) {
        if (c === DASH && t.startsWith('---', s)) {
          if (s + 3 === e || t.charCodeAt(s + 3) === SP || t.charCodeAt(s + 3) === TAB) {
            this.ind = -1;
            return i;
          }
          bail('line starting with ---');
        }
        if (c === DOT && t.startsWith('...', s)) bail('document end marker or line starting with ...');
        if (c === PCT) bail('directive');
      }
      this.ind = p - s;
      return i;
    }
    this.ind = -1;
    return i;
  }

  documents(): unknown[] {
    const docs: unknown[] = [];
    let i = this.content(0);
    if (i < this.lines && this.ind !== -1) {
      docs.push(this.document(i));
      this.source(i);
      i = this.next;
    }
    while (i < this.lines) {
      // `i` is a `---` line: nothing but a comment may follow the marker.
      if (this.tabs !== undefined && this.tabs[i] === 1) bail('tab character');
      const e = this.starts[i + 1] - 1;
      let p = this.starts[i] + 3;
      while (p < e && this.t.charCodeAt(p) === SP) p++;
      if (p < e && this.t.charCodeAt(p) !== HASH) bail('content on a --- line');
      const j = this.content(i + 1);
      if (j >= this.lines || this.ind === -1) {
        docs.push(null);
        this.sources.push({ line: j, text: '' });
        i = j;
      } else {
        docs.push(this.document(j));
        this.source(j);
        i = this.next;
      }
    }
    return docs;
  }

  /** The source of the document read last, which starts at line `i`. */
  private source(i: number): void {
    const end = Math.min(this.next, this.lines);
    this.sources.push({ line: i, text: this.t.slice(this.starts[i], this.starts[end] - 1) });
  }

  private document(i: number): unknown {
    const value = this.node(i, this.ind, -1, At.Root);
    const j = this.content(this.next);
    if (j < this.lines && this.ind !== -1) bail('content after the document root');
    this.next = j;
    return value;
  }

  /**
   * The node starting at column `col` of line `i`, inside a collection indented `n` (-1 at the
   * root). Sets `next` to the line after it.
   */
  private node(i: number, col: number, n: number, at: At): unknown {
    // Deeper than any manifest goes: the library reads it (and says what is wrong), not this parser
    // (its values would be too deep for the library to find positions in, later).
    if (++this.depth > MAX_DEPTH) bail('nested too deeply');
    const value = this.nodeAt(i, col, n, at);
    this.depth--;
    return value;
  }

  private nodeAt(i: number, col: number, n: number, at: At): unknown {
    if (this.tabs !== undefined && this.tabs[i] === 1) bail('tab character');
    const t = this.t, s = this.starts[i], e = this.starts[i + 1] - 1, p = s + col;
    const c = t.charCodeAt(p);
    if (c === DASH && (p + 1 === e || t.charCodeAt(p + 1) === SP)) {
      if (at === At.MapValue) bail('sequence as an inline mapping value');
      return this.seq(i, col);
    }
    if (c === LBRACK || c === LBRACE) {
      const [value, q] = this.flow(p, e);
      this.rest(q, e);
      this.next = i + 1;
      return value;
    }
    if (c === PIPE) {
      if (at === At.Root || at === At.NextLine) bail('block scalar on a line of its own');
      return this.block(i, p, n);
    }
    if (c === DQ || c === SQ) {
      const [value, q] = this.quoted(p, e);
      if (q < e && t.charCodeAt(q) === COLON) {
        if (at === At.MapValue) bail('mapping as an inline mapping value');
        return this.map(i, col);
      }
      this.rest(q, e);
      this.next = i + 1;
      return value;
    }
    if (INDICATOR[t.charCodeAt(p)] === 1) this.plainStart(p, e);
    let q = this.scan(p);
    if (q < e && t.charCodeAt(q) === COLON) {
      if (at === At.MapValue) bail('mapping as an inline mapping value');
      return this.map(i, col, q);
    }
    while (t.charCodeAt(q - 1) === SP) q--;
    this.next = i + 1;
    return this.values.get(t, p, q);
  }

  private isEntry(i: number, n: number): boolean {
    const p = this.starts[i] + n, e = this.starts[i + 1] - 1;
    return this.t.charCodeAt(p) === DASH && (p + 1 === e || this.t.charCodeAt(p + 1) === SP);
  }

  private seq(i: number, n: number): unknown[] {
    const t = this.t, out: unknown[] = [];
    for (;;) {
      if (this.tabs !== undefined && this.tabs[i] === 1) bail('tab character');
      const s = this.starts[i], e = this.starts[i + 1] - 1;
      let p = s + n + 1;
      while (p < e && t.charCodeAt(p) === SP) p++;
      if (p === e || t.charCodeAt(p) === HASH) {
        const j = this.content(i + 1);
        if (j < this.lines && this.ind > n) out.push(this.node(j, this.ind, n, At.NextLine));
        else {
          out.push(null);
          this.next = j;
        }
      } else {
        out.push(this.node(i, p - s, n, At.SeqEntry));
      }
      const j = this.content(this.next);
      if (j >= this.lines || this.ind < n || (this.ind === n && !this.isEntry(j, n))) {
        this.next = j;
        return out;
      }
      if (this.ind > n) bail('bad indentation after a sequence entry');
      i = j;
    }
  }

  /** The mapping whose first key starts at column `n` of line `i` (`colon`: the offset of that key's `:`, when known). */
  private map(i: number, n: number, colon = -1): Record<string, unknown> {
    const t = this.t, out: Record<string, unknown> = {};
    for (;; colon = -1) {
      if (this.tabs !== undefined && this.tabs[i] === 1) bail('tab character');
      const s = this.starts[i], e = this.starts[i + 1] - 1, k0 = s + n;
      let key: string, p: number;
      const c = t.charCodeAt(k0);
      if (c === DQ || c === SQ) {
        [key, p] = this.quoted(k0, e);
        if (p === e || t.charCodeAt(p) !== COLON) bail('quoted scalar where a key is expected');
        p++;
        if (p < e && t.charCodeAt(p) !== SP) bail('no space after a quoted key');
      } else {
        if (c === DASH && (k0 + 1 === e || t.charCodeAt(k0 + 1) === SP)) bail('sequence entry where a key is expected');
        let k = colon;
        if (k === -1) {
          if (INDICATOR[t.charCodeAt(k0)] === 1) this.plainStart(k0, e);
          k = this.scan(k0);
          if (k === e || t.charCodeAt(k) !== COLON) bail('plain scalar where a key is expected');
        }
        if (t.charCodeAt(k - 1) === SP) bail('space before the : of a key');
        key = (this.keys.get(t, k0, k) as string);
        p = k + 1;
      }
      if (p - k0 > 1000) bail('key over 1,000 characters');
      while (p < e && t.charCodeAt(p) === SP) p++;
      let value: unknown;
      if (p === e || t.charCodeAt(p) === HASH) {
        const j = this.content(i + 1);
        if (j < this.lines && this.ind > n) value = this.node(j, this.ind, n, At.NextLine);
        else if (j < this.lines && this.ind === n && this.isEntry(j, n)) value = this.seq(j, n);
        else {
          value = null;
          this.next = j;
        }
      } else {
        value = this.node(i, p - s, n, At.MapValue);
      }
      setKey(out, key, value);
      const j = this.content(this.next);
      if (j >= this.lines || this.ind < n) {
        this.next = j;
        return out;
      }
      if (this.ind > n) bail('bad indentation after a mapping entry');
      i = j;
    }
  }

  /** A plain scalar may not start with an indicator (`-`, `?` and `:` only before a non-space). */
  private plainStart(p: number, e: number) {
    const c = this.t.charCodeAt(p);
    switch (c) {
      case DASH: case QMARK: case COLON: {
        const n = p + 1 < e ? this.t.charCodeAt(p + 1) : SP;
        if (n === SP) bail(`plain scalar starting with ${this.t[p]}`);
        return;
      }
      case COMMA: case LBRACK: case RBRACK: case LBRACE: case RBRACE: case HASH: case AMP:
      case STAR: case BANG: case PIPE: case GT: case SQ: case DQ: case PCT: case AT: case BTICK:
        bail(`plain scalar starting with ${this.t[p]}`);
    }
  }

  /**
   * Where a plain scalar starting at `p` stops in block context: at the `:` of `: ` or of a `:`
   * ending the line (it was a key), at the space of ` #` (a comment follows), or at the end of the line.
   */
  private scan(p: number): number {
    PLAIN_RUN.lastIndex = p;
    PLAIN_RUN.test(this.t);
    return PLAIN_RUN.lastIndex;
  }

  /** Only spaces and a comment may follow a scalar or flow collection on its line. */
  private rest(p: number, e: number) {
    const p0 = p;
    while (p < e && this.t.charCodeAt(p) === SP) p++;
    if (p === e || (this.t.charCodeAt(p) === HASH && p > p0)) return;
    bail('unexpected text after a value');
  }

  /** A quoted scalar opening at `p` and closing on the same line: its value and the offset after it. */
  private quoted(p: number, e: number): [string, number] {
    const t = this.t;
    if (t.charCodeAt(p) === SQ) {
      let out = '';
      let from = p + 1;
      for (;;) {
        const q = t.indexOf("'", from);
        if (q === -1 || q >= e) bail('multi-line single-quoted scalar');
        if (q + 1 < e && t.charCodeAt(q + 1) === SQ) {
          out += t.slice(from, q + 1);
          from = q + 2;
          continue;
        }
        return [out + t.slice(from, q), q + 1];
      }
    }
    let out = '';
    let from = p + 1;
    for (let q = from; ; q++) {
      if (q >= e) bail('multi-line double-quoted scalar');
      const c = t.charCodeAt(q);
      if (c === DQ) return [out + t.slice(from, q), q + 1];
      if (c !== BSLASH) continue;
      out += t.slice(from, q);
      if (q + 1 >= e) bail('escaped line break in a double-quoted scalar');
      const x = t[q + 1];
      const simple = ESCAPES[x];
      if (simple !== undefined) {
        out += simple;
        q += 1;
      } else if (x === 'x' || x === 'u' || x === 'U') {
        const len = x === 'x' ? 2 : x === 'u' ? 4 : 8;
        const hex = t.slice(q + 2, q + 2 + len);
        if (q + 2 + len > e || !/^[0-9a-fA-F]+$/.test(hex)) bail('bad escape in a double-quoted scalar');
        const code = parseInt(hex, 16);
        if (code > 0x10ffff) bail('bad escape in a double-quoted scalar');
        out += String.fromCodePoint(code);
        q += 1 + len;
      } else {
        bail('unknown escape in a double-quoted scalar');
      }
      from = q + 1;
    }
  }

  /** A flow collection opening at `p` and closing on the same line: its value and the offset after it. */
  private flow(p: number, e: number): [unknown, number] {
    if (++this.depth > MAX_DEPTH) bail('nested too deeply');
    const r = this.flowAt(p, e);
    this.depth--;
    return r;
  }

  private flowAt(p: number, e: number): [unknown, number] {
    const t = this.t;
    const open = t.charCodeAt(p);
    p = this.skip(p + 1, e);
    if (open === LBRACK) {
      const out: unknown[] = [];
      if (t.charCodeAt(p) === RBRACK) return [out, p + 1];
      for (;;) {
        let v: unknown;
        [v, p] = this.flowItem(p, e);
        out.push(v);
        p = this.skip(p, e);
        const c = t.charCodeAt(p);
        if (c === RBRACK) return [out, p + 1];
        if (c !== COMMA) bail('unexpected text in a flow sequence');
        p = this.skip(p + 1, e);
        if (t.charCodeAt(p) === RBRACK) bail('trailing comma in a flow sequence');
      }
    }
    const out: Record<string, unknown> = {};
    if (t.charCodeAt(p) === RBRACE) return [out, p + 1];
    for (;;) {
      if (p >= e) bail('multi-line flow mapping');
      let key: string;
      const c = t.charCodeAt(p);
      if (c === DQ || c === SQ) {
        [key, p] = this.quoted(p, e);
      } else {
        if (INDICATOR[t.charCodeAt(p)] === 1) this.plainStart(p, e);
        const p0 = p;
        p = this.flowPlainEnd(p, e);
        key = (this.keys.get(t, p0, p) as string);
      }
      if (t.charCodeAt(p) !== COLON || p + 1 >= e || t.charCodeAt(p + 1) !== SP) bail('flow mapping entry without ": "');
      p = this.skip(p + 1, e);
      const vc = t.charCodeAt(p);
      if (vc === COMMA || vc === RBRACE) bail('flow mapping entry without a value');
      let v: unknown;
      [v, p] = this.flowItem(p, e);
      setKey(out, key, v);
      p = this.skip(p, e);
      const d = t.charCodeAt(p);
      if (d === RBRACE) return [out, p + 1];
      if (d !== COMMA) bail('unexpected text in a flow mapping');
      p = this.skip(p + 1, e);
      if (t.charCodeAt(p) === RBRACE) bail('trailing comma in a flow mapping');
    }
  }

  private skip(p: number, e: number): number {
    while (p < e && this.t.charCodeAt(p) === SP) p++;
    if (p >= e) bail('multi-line flow collection');
    return p;
  }

  /** A value inside a flow collection; a `:` right after it (an implicit pair) bails. */
  private flowItem(p: number, e: number): [unknown, number] {
    const t = this.t;
    const c = t.charCodeAt(p);
    let v: unknown;
    if (c === LBRACK || c === LBRACE) [v, p] = this.flow(p, e);
    else if (c === DQ || c === SQ) [v, p] = this.quoted(p, e);
    else {
      if (INDICATOR[t.charCodeAt(p)] === 1) this.plainStart(p, e);
      const n = t.charCodeAt(p + 1);
      if ((c === DASH || c === QMARK || c === COLON) && (n === COMMA || n === RBRACK || n === RBRACE || n === LBRACK || n === LBRACE)) bail(`${t[p]} in a flow collection`);
      const p0 = p;
      p = this.flowPlainEnd(p, e);
      v = this.values.get(t, p0, p);
    }
    // Keys of flow mappings are read by `flow`: a `:` here makes a pair in a sequence or a nested mapping.
    let q = p;
    while (q < e && t.charCodeAt(q) === SP) q++;
    if (q < e && t.charCodeAt(q) === COLON) bail('implicit pair in a flow collection');
    return [v, p];
  }

  /** End (trailing spaces excluded) of a plain scalar in flow context starting at `p`. */
  private flowPlainEnd(p: number, e: number): number {
    const t = this.t;
    for (; ; p++) {
      if (p >= e) bail('multi-line flow collection');
      const c = t.charCodeAt(p);
      if (c === COMMA || c === LBRACK || c === RBRACK || c === LBRACE || c === RBRACE) break;
      if (c === COLON) {
        const n = p + 1 < e ? t.charCodeAt(p + 1) : SP;
        if (n === SP || n === COMMA || n === LBRACK || n === RBRACK || n === LBRACE || n === RBRACE) break;
      } else if (c === SP && p + 1 < e && t.charCodeAt(p + 1) === HASH) bail('comment inside a flow collection');
    }
    while (t.charCodeAt(p - 1) === SP) p--;
    return p;
  }

  /** A literal block scalar whose `|` is at offset `p` of line `i`, in a collection indented `n`. */
  private block(i: number, p: number, n: number): string {
    const t = this.t, e = this.starts[i + 1] - 1;
    let chomp = 0;
    p++;
    const h = t.charCodeAt(p);
    if (h === DASH) (chomp = BLOCK_STRIP), p++;
    else if (h === 0x2b) (chomp = BLOCK_KEEP), p++;
    if (p < e) {
      if (t.charCodeAt(p) !== SP) bail('block scalar header with an indentation indicator or other text');
      while (p < e && t.charCodeAt(p) === SP) p++;
      if (p < e && t.charCodeAt(p) !== HASH) bail('block scalar header with other text');
    }
    // The first line with text sets the indentation; it must be deeper than the collection's.
    let j = i + 1, first = -1, indent = 0, leadBlank = 0;
    for (; j < this.lines; j++) {
      const s = this.starts[j], le = this.starts[j + 1] - 1;
      let q = s;
      while (q < le && t.charCodeAt(q) === SP) q++;
      if (q === le) {
        leadBlank = Math.max(leadBlank, q - s);
        continue;
      }
      if (t.charCodeAt(q) === TAB) bail('tab in the indentation of a block scalar');
      if (q - s > n) (first = j), (indent = q - s);
      break;
    }
    if (first === -1) {
      if (chomp === BLOCK_KEEP) bail('|+ block scalar without text');
      this.next = j;
      return '';
    }
    if (leadBlank > indent) bail('block scalar with more-indented leading blank lines');
    let out = '\n'.repeat(first - i - 1) + t.slice(this.starts[first] + indent, (this.starts[first + 1] - 1));
    let last = first, blanks = 0;
    for (j = first + 1; j < this.lines; j++) {
      const s = this.starts[j], le = this.starts[j + 1] - 1;
      let q = s;
      while (q < le && t.charCodeAt(q) === SP) q++;
      if (q === le) {
        if (q - s > indent) bail('whitespace-only line longer than the block scalar indentation');
        blanks++;
        continue;
      }
      if (q - s < indent) {
        if (t.charCodeAt(q) === TAB) bail('tab in the indentation of a block scalar');
        break;
      }
      out += '\n'.repeat(blanks + 1) + t.slice(s + indent, le);
      blanks = 0;
      last = j;
    }
    this.next = j;
    if (chomp === BLOCK_STRIP) return out;
    if (chomp === 0) return out + '\n';
    // Keep: one line break per line after the last line of text (the text's last line has none of its own).
    const breaks = j - last - (j === this.lines ? 1 : 0);
    return out + '\n'.repeat(Math.max(1, breaks));
  }
}

const ESCAPES: Record<string, string | undefined> = Object.assign(Object.create(null) as Record<string, string>, {
  '0': '\0', a: '\x07', b: '\b', e: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', N: '\u0085', _: '\u00a0',
  L: '\u2028', P: '\u2029', ' ': ' ', '"': '"', '/': '/', '\\': '\\',
});

/** A JS object key as the library's `toJS` makes it from a key's value. */
function keyString(v: unknown): string {
  return v === null ? '' : String(v);
}

function setKey(out: Record<string, unknown>, key: string, value: unknown) {
  // Values are never `undefined`: a defined one is a duplicate key, or a name the object
  // inherits (`toString`, `__proto__`), which the library makes an own property.
  if (out[key] !== undefined) {
    if (Object.prototype.hasOwnProperty.call(out, key)) bail('duplicate key');
    Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    out[key] = value;
  }
}

// The `yaml` library's core schema, in its order (src/schema/core).
const NULL = /^(?:~|[Nn]ull|NULL)?$/;
const BOOL = /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/;
const INT_OCT = /^0o[0-7]+$/;
const INT = /^[-+]?[0-9]+$/;
const INT_HEX = /^0x[0-9a-fA-F]+$/;
const FLOAT_NAN = /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;
const FLOAT_EXP = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/;
const FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/;

/** The value of a plain scalar under the core schema, exactly as the `yaml` library resolves it. */
export function resolvePlain(s: string): unknown {
  const c = s.charCodeAt(0);
  if ((c >= 0x30 && c <= 0x39) || c === DOT || c === 0x2b || c === DASH) {
    if (INT.test(s)) return parseInt(s, 10);
    if (INT_OCT.test(s)) return parseInt(s.substring(2), 8);
    if (INT_HEX.test(s)) return parseInt(s.substring(2), 16);
    if (FLOAT_NAN.test(s)) return s.slice(-3).toLowerCase() === 'nan' ? NaN : c === DASH ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
    if (FLOAT_EXP.test(s) || FLOAT.test(s)) return parseFloat(s);
    return s;
  }
  if (s === '') return null;
  // Only null and the booleans start with a letter; `~` is null.
  if (s.length <= 5 && (c === 0x6e || c === 0x4e || c === 0x74 || c === 0x54 || c === 0x66 || c === 0x46 || c === 0x7e)) {
    if (NULL.test(s)) return null;
    if (BOOL.test(s)) return c === 0x74 || c === 0x54;
  }
  return s;
}
