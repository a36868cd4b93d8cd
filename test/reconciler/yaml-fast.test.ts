import { isUtf8 } from 'node:buffer';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { parseAllDocuments, stringify, type ToStringOptions } from 'yaml';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { writeManifests } from '../../bench/reconcile-manifests.js';
import { loadManifests, parseSource, parseWithLibrary, yamlLibrary, type SourceDoc } from '../../src/reconciler/manifests/load.js';
import { resolveSecrets } from '../../src/reconciler/manifests/secrets.js';
import { validateManifests } from '../../src/reconciler/manifests/validate.js';
import { parseYamlFast, parseYamlFastDetailed, resolvePlain } from '../../src/reconciler/manifests/yaml-fast/parser.js';
import { planFromState } from '../helpers/plan-lists.js';
import { buildDesired } from '../../src/reconciler/plan/desired.js';
import { renderJson } from '../../src/reconciler/render/json.js';
import { renderMarkdown } from '../../src/reconciler/render/markdown.js';
import { renderText } from '../../src/reconciler/render/text.js';
import { ROOT } from '../helpers/cli.js';
import { cleanupDirs, EXAMPLE_ENV, EXAMPLES, tempDir } from '../helpers/reconcile.js';

// Counts the library parses `load.ts` makes, on the library object it loads (the spy calls
// through to the real function).
const parses = vi.spyOn(yamlLibrary(), 'parseAllDocuments');
const libraryParses = () => parses.mock.calls.length;
beforeEach(() => parses.mockClear());
afterAll(() => {
  parses.mockRestore(); // the files after this one in the worker parse with the library itself
  cleanupDirs();
});

/** What the loader got from the library before the fast path: each document's `toJS()`, or 'error'. */
function library(text: string): unknown[] | 'error' {
  const docs = parseAllDocuments(text, { prettyErrors: false, uniqueKeys: true });
  const all = Array.isArray(docs) ? docs : [];
  if (all.some((d) => d.errors.length)) return 'error';
  try {
    return all.map((d) => d.toJS({ maxAliasCount: 100 }));
  } catch {
    return 'error';
  }
}

/** Values compared with key order, prototypes, -0 and NaN made visible to `toEqual`. */
function canon(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canon);
  if (typeof v === 'number') return { number: Object.is(v, -0) ? '-0' : String(v) };
  if (v && typeof v === 'object') {
    return { plainObject: Object.getPrototypeOf(v) === Object.prototype, entries: Object.entries(v).map(([k, x]) => [k, canon(x)]) };
  }
  return v;
}

function expectSame(text: string) {
  const fast = parseYamlFastDetailed(text);
  expect(fast, text).not.toHaveProperty('bail');
  expect(canon((fast as { docs: unknown[] }).docs), text).toEqual(canon(library(text)));
}

/** Every YAML file of the repository (examples, scenarios, fixtures, CI example). */
function repoYamlFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith('.') || ['node_modules', 'state', 'scratch'].includes(e.name)) continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(e.name)) out.push(p);
    }
  };
  walk(ROOT);
  return out.sort();
}

/** The YAML blocks of the documentation. */
function docBlocks(): { name: string; text: string }[] {
  const out: { name: string; text: string }[] = [];
  for (const f of ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((d) => d.endsWith('.md')).map((d) => join('docs', d))]) {
    const md = readFileSync(join(ROOT, f), 'utf8');
    let i = 0;
    for (const m of md.matchAll(/```ya?ml\n([\s\S]*?)```/g)) out.push({ name: `${f} block ${++i}`, text: m[1] });
  }
  return out;
}

/** The reconciler benchmark's manifests, at a small size. */
function benchFiles(): string[] {
  const dir = tempDir('edgeplane-yaml-bench-');
  const pems = ['rsa-ca.pem', 'rsa-ca-2.pem', 'ec-ca.pem'].map((f) => readFileSync(join(ROOT, 'test', 'fixtures', 'certs', f), 'utf8'));
  writeManifests(dir, { edges: 150, routesPerEdge: 5, cas: 3, backends: 4 }, pems, 't');
  return readdirSync(dir).map((f) => join(dir, f));
}

const ALL_FILES = repoYamlFiles();
/** Files that are not UTF-8 never reach a parser (`readManifest` refuses them): the encoding fixtures. */
const NOT_UTF8 = ALL_FILES.filter((f) => !isUtf8(readFileSync(f)));
const FILES = ALL_FILES.filter((f) => !NOT_UTF8.includes(f));
const BROKEN = FILES.filter((f) => library(readFileSync(f, 'utf8')) === 'error');

describe('fast YAML parser: the repository\'s YAML', () => {
  it('finds the YAML files to compare', () => {
    expect(FILES.length).toBeGreaterThan(35);
    expect(FILES.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['examples/full/https-edge.yaml', 'examples/ci/github-workflow.yml', 'test/scenarios/no-changes/manifests/all.yaml']));
    expect(BROKEN.map((f) => relative(ROOT, f))).toEqual([
      'test/fixtures/manifests/invalid/yaml-aliases/alias-bomb.yaml',
      'test/fixtures/manifests/invalid/yaml-aliases/unresolved.yaml',
      'test/fixtures/manifests/invalid/yaml-syntax/broken.yaml',
    ]);
    expect(NOT_UTF8.map((f) => relative(ROOT, f))).toEqual(['test/fixtures/manifests/invalid/encoding/latin1.yaml', 'test/fixtures/manifests/invalid/encoding/utf16.yaml']);
  });

  it.each(FILES.filter((f) => !BROKEN.includes(f)).map((f) => [relative(ROOT, f), f]))('%s: same values as the library, without bailing out', (_, f) => {
    expectSame(readFileSync(f, 'utf8'));
  });

  it('bails out on a file with a syntax error (the library reports it)', () => {
    for (const f of BROKEN) expect(parseYamlFast(readFileSync(f, 'utf8'))).toBeUndefined();
  });

  it.each(docBlocks().map((b) => [b.name, b.text]))('%s: same values as the library, without bailing out', (_, text) => {
    expectSame(text);
  });

  it('the benchmark manifests: same values as the library, without bailing out', () => {
    const files = benchFiles();
    expect(files.length).toBeGreaterThan(3);
    for (const f of files) expectSame(readFileSync(f, 'utf8'));
  });
});

describe('fast YAML parser: plain scalars resolve as in the core schema', () => {
  // [plain scalar, value]; each one is also checked against the library, as a value and as a key.
  const cases: [string, unknown][] = [
    ['~', null], ['null', null], ['Null', null], ['NULL', null], ['nULL', 'nULL'], ['nil', 'nil'],
    ['true', true], ['True', true], ['TRUE', true], ['tRUE', 'tRUE'], ['false', false], ['False', false], ['FALSE', false],
    ['yes', 'yes'], ['no', 'no'], ['on', 'on'], ['off', 'off'], ['y', 'y'], ['n', 'n'],
    ['0', 0], ['-0', -0], ['+0', 0], ['+1', 1], ['-17', -17], ['007', 7], ['08', 8], ['1_000', '1_000'], ['1,000', '1,000'],
    ['12345678901234567890', 12345678901234567000],
    ['0o17', 15], ['0o8', '0o8'], ['+0o7', '+0o7'], ['-0o7', '-0o7'], ['0o', '0o'], ['0O17', '0O17'],
    ['0x1F', 31], ['0x1f', 31], ['0X1F', '0X1F'], ['-0x1', '-0x1'], ['0x', '0x'], ['0b1', '0b1'],
    ['1.', 1], ['.5', 0.5], ['-.5', -0.5], ['+.5', 0.5], ['1.0', 1], ['0.10', 0.1], ['1.2.3', '1.2.3'], ['.', '.'],
    ['1e3', 1000], ['1E+3', 1000], ['1.e3', 1000], ['.5e-1', 0.05], ['-1e3', -1000], ['.e3', '.e3'], ['1e', '1e'], ['e3', 'e3'],
    ['1e400', Infinity], ['-1e400', -Infinity], ['0.1e-400', 0],
    ['.inf', Infinity], ['.Inf', Infinity], ['.INF', Infinity], ['-.inf', -Infinity], ['+.inf', Infinity], ['.iNF', '.iNF'],
    ['.nan', NaN], ['.NaN', NaN], ['.NAN', NaN], ['-.nan', '-.nan'], ['.Nan', '.Nan'], ['NaN', 'NaN'], ['Infinity', 'Infinity'],
    ['1:20', '1:20'], ['2001-12-14', '2001-12-14'], ['1 000', '1 000'], ['-', undefined], ['--', '--'], ['-a', '-a'], ['---', '---'],
    ['a#b', 'a#b'], ['\u00a0x', '\u00a0x'], ['x\u00a0', 'x\u00a0'], ['é', 'é'], ['🙂', '🙂'],
  ];
  it.each(cases.filter(([, v]) => v !== undefined))('%j → %j', (s, value) => {
    expect(canon(resolvePlain(s))).toEqual(canon(value));
    expectSame(`- ${s}\n`);
    expectSame(`a: ${s}\n`);
    expectSame(`[${s}]\n`);
    if (s !== '---') expectSame(`${s}: v\n`);
  });
});

describe('fast YAML parser: structures it handles as the library does', () => {
  const cases = [
    '', '# only a comment\n', '\n\n', '---\n', '---\n---\n', 'a: 1\n---\n', '---\na: 1', 'a: 1\n---\n---\nb: 1', '# c\n---\na: 1',
    'a: 1\n---\n# c\n', 'a: 1\n--- # c\nb: 2', 'hello', '"quoted root"', '[a, b]', '{}', 'a :b', 'a:b',
    '  a: 1\n  b:\n  - x\n  c: 2', 'a:\n- x\n- y\nb: 1', 'a:\n  - x\nb:\n    c: 1', '- a: 1\n  b: 2\n- c', '- - a\n  - b\n- - c',
    '-\n- b\n-   c: 1\n    d: 2', '- a:\n  - x\n  b: 1', '- a:\n- x', 'a:\n  # comment\n  b: 1 # trailing\n# c\nc: # c\n  d',
    'a: # c\n', 'a:\nb:', 'a: b]', 'a: b, c', 'a: ${{ x }}', 'a: "x" # c', "a: 'it''s'", 'a: \'\'', 'a: ""', "'a': b", '"a": b', '"a b": c',
    'a: x # c # d', 'a:  b  ', 'a b: c', 'a#b: c', '-1: x', '__proto__: 1', 'toString: 1\nconstructor: 2', '<<: {a: 1}',
    'a: [b,c]', 'a: [b , c]', 'a: [ ]', 'a: { }', 'a: [https://x.com]', 'a: {u: https://x.com}', 'a: [a:b]', 'a: [a#c]',
    'a: {b: [c, {d: e}], "f": \'g\'}', 'a: [1, 0x10, .inf, ~, true, "1"]', '{a: 1, 1: a}',
    'a: "\\x41\\u00e9\\U0001F600\\n\\t\\\\\\"\\/\\ \\_\\N\\L\\P\\0\\a\\b\\e\\f\\r\\v"', 'a: "\\ud83d\\ude00"',
    'a: |\n  x\n\n\nb: 1', 'a: |+\n  x\n\n\nb: 1', 'a: |+\n  x\n\n# c\n\nb: 1', 'a: |+\n  x\n\n', 'a: |+\n  x\n\n---\nb: 1',
    'a: |+\n  x', 'a: |+\n  x\n  \n\n  ', 'a: |\n\n\nb: 1', 'a: |-\n  x\n  \n  y\n\n', 'a: |\n  x\n\n  \n', 'a: |-\n', 'a: |-\n\n',
    'a: |\nb: 1', 'a: |  \n  x', 'a: | # c\n  x', 'a: |\n  # not a comment\n  x', 'a: |\n\n  x\n',
    '- |\n x\n', 'a:\n- |\n x\n', '- a: |\n   x\n', '- - |\n   x\n', 'a: |\n# c\nb: 1\n', 'a:\n  b: |\n   x\n',
    'a: |\n  x\t\n  \ty\n', 'a: |\n  -----BEGIN-----\n  AAAA\n  -----END-----\nb: 1', '- |+\n  x\n\n- y',
    'a:\r\n  - b\r\n  - |\r\n    x\r\n\r\n', '# tab\tin comment\na: 1',
  ];
  it.each(cases)('%j', (text) => expectSame(text));
});

describe('fast YAML parser: bails out (the library parses) on', () => {
  const long = 'k'.repeat(1001);
  const cases: [string, string, RegExp][] = [
    ['a tab in indentation', 'a:\n\tb: 1', /tab/],
    ['a tab in a value', 'a: b\tc', /tab/],
    ['a tab before a block scalar\'s text', 'a: |\n\tx', /tab/],
    ['CR alone', 'a: 1\rb: 2', /CR/],
    ['a control character', 'a: \x01', /control/],
    ['a byte-order mark', '\ufeffa: 1', /byte-order/],
    ['a line separator', 'a: b\u2028c', /line separator/],
    ['a directive', '%YAML 1.2\n---\na: 1', /directive/],
    ['a document end marker', 'a: 1\n...\n', /document end/],
    ['content on a --- line', '--- a: 1', /--- line/],
    ['a --- that is not a separator', '---a: 1', /---/],
    ['an anchor', 'a: &x 1', /starting with &/],
    ['an alias', 'a: *x', /starting with \*/],
    ['a tag', 'a: !!str 1', /starting with !/],
    ['a ? key', '? a\n: b', /starting with \?/],
    ['a : key', ': b', /starting with :/],
    ['a - value', 'a: -', /sequence as an inline/],
    ['a reserved indicator', 'a: @x', /starting with @/],
    ['a folded block scalar', 'a: >\n  x', /starting with >/],
    ['a block scalar with an indentation indicator', 'a: |2\n   x', /indentation indicator/],
    ['a block scalar on its own line', 'a:\n  |\n   x', /own/],
    ['a root block scalar', '|\n  x', /own/],
    ['|+ without text', 'a: |+\n\nb: 1', /without text/],
    ['a whitespace-only line longer than the block indentation', 'a: |\n  x\n    \n  y', /whitespace-only/],
    ['more-indented leading blank lines', 'a: |\n    \n  x', /leading blank/],
    ['a multi-line plain scalar', 'a: b\n  c', /indentation/],
    ['a multi-line plain root scalar', 'a\nb', /after the document root/],
    ['a multi-line double-quoted scalar', 'a: "b\n  c"', /multi-line double/],
    ['a multi-line single-quoted scalar', "a: 'b\n  c'", /multi-line single/],
    ['an escaped line break', 'a: "b\\\n  c"', /escaped line break/],
    ['an unknown escape', 'a: "\\q"', /unknown escape/],
    ['a short \\x escape', 'a: "\\x4"', /bad escape/],
    ['a code point beyond Unicode', 'a: "\\U00110000"', /bad escape/],
    ['a multi-line flow collection', 'a: [b,\n  c]', /multi-line flow/],
    ['a comment in a flow collection', 'a: [b #c\n]', /comment inside a flow/],
    ['a trailing comma', 'a: [b, ]', /trailing comma/],
    ['an implicit pair in a flow sequence', 'a: [b: c]', /implicit pair/],
    ['a flow mapping entry without a value', 'a: {b}', /without ": "/],
    ['a flow mapping value left empty', 'a: {b: , c: d}', /without a value/],
    ['a flow collection as a key', '[a]: b', /after a value/],
    ['text after a flow collection', 'a: [b] c', /after a value/],
    ['a duplicate key', 'a: 1\na: 2', /duplicate/],
    ['keys that become the same JS key', "1: a\n'1': b", /duplicate/],
    ['null and empty keys', "~: a\n'': b", /duplicate/],
    ['a duplicate key in a flow mapping', 'a: {b: 1, b: 2}', /duplicate/],
    ['a duplicate __proto__ key', '__proto__: 1\n__proto__: 2', /duplicate/],
    ['a key over 1,000 characters', `${long}: v`, /1,000/],
    ['a space before the colon of a key', 'a : b', /space before/],
    ['a quoted key without a space after the colon', "'a':b", /no space/],
    ['a mapping on the line of its key', 'a: b: c', /inline mapping value/],
    ['a sequence on the line of its key', 'a: - b', /sequence as an inline/],
    ['bad indentation', 'a:\n    b: 1\n  c: 2', /indentation/],
    ['a sequence entry where a key is expected', 'a: 1\n- b', /sequence entry where a key/],
    ['a scalar where a key is expected', 'a: 1\nb', /where a key is expected/],
    ['an unclosed flow sequence', 'name: [unclosed\nbackends: []', /multi-line flow/],
    ['a quoted scalar followed by text', "a: 'x' y", /after a value/],
    ['a comment not separated by a space', 'a: "x"#c', /after a value/],
    ['nesting deeper than the call stack', `${'['.repeat(20000)}${']'.repeat(20000)}`, /nested too deeply/],
  ];
  it.each(cases)('%s', (_, text, reason) => {
    const r = parseYamlFastDetailed(text);
    expect(r).toEqual({ bail: expect.stringMatching(reason) });
  });
});

// ——— property: the fast parser gives the library's values or bails out, never something else ———

// 500 runs per property by default; EDGEPLANE_PROPERTY_RUNS scales them as it does the other property
// tests, whose default is 12 (EDGEPLANE_PROPERTY_RUNS=120 → 5,000 runs).
const SCALE = process.env.EDGEPLANE_PROPERTY_RUNS ? Number(process.env.EDGEPLANE_PROPERTY_RUNS) / 12 : 1;
const RUNS = Math.max(1, Math.round(500 * SCALE));
/** Up to 10 ms a run on a busy machine (the default 500 take about 1 s). */
const TIMEOUT = 30_000 + RUNS * 10;

const piece = fc.constantFrom(
  ': ', ' #', '#', '"', "'", ' ', '  ', '-', '- ', '?', '? ', ':', '1e3', '0x10', '0o7', '1_000', '+1', '.5', '.inf', '.nan', '-0', '007',
  'true', 'False', '~', 'null', 'NULL', 'é', '日', '🙂', '\n', '\n\n', ' \n', '\t', '\\', '{', '}', '[', ']', ',', '|', '>', '&', '*',
  '!', '%', '@', '`', 'a', 'Z', '0', '9', '.', '---', '...', '\u00a0', '\r', '\x07', '\u2028', 'https://x.com', '${{ x }}',
);
const text = fc.oneof(
  { weight: 3, arbitrary: fc.array(piece, { maxLength: 6 }).map((a) => a.join('')) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-z][a-z0-9_-]{0,10}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', 'yes', 'on', '1.0', '0.10', '1e400', '12345678901234567890', 'NaN', '0b1', '2001-12-14', '1:20', '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n') },
);
const leaf = fc.oneof(text, text, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', maxDepth: 4 }, leaf, tie('seq'), tie('map')),
  seq: fc.array(tie('value'), { maxLength: 4 }),
  map: fc.dictionary(text, tie('value'), { maxKeys: 5 }),
}));
const options: fc.Arbitrary<ToStringOptions> = fc.record({
  indent: fc.constantFrom(2, 4),
  indentSeq: fc.boolean(),
  defaultStringType: fc.constantFrom('PLAIN', 'PLAIN', 'QUOTE_DOUBLE', 'QUOTE_SINGLE', 'BLOCK_LITERAL', 'BLOCK_FOLDED'),
  defaultKeyType: fc.constantFrom(null, 'PLAIN', 'QUOTE_DOUBLE', 'QUOTE_SINGLE'),
  blockQuote: fc.constantFrom(true, false, 'literal', 'folded', 'keep'),
  lineWidth: fc.constantFrom(0, 20, 80),
  minContentWidth: fc.constantFrom(0, 20),
  flowCollectionPadding: fc.boolean(),
  collectionStyle: fc.constantFrom('any', 'any', 'block', 'flow'),
  doubleQuotedAsJSON: fc.boolean(),
  singleQuote: fc.constantFrom(null, true, false),
}) as fc.Arbitrary<ToStringOptions>;
/** Comments, blank lines and trailing comments put anywhere (inside block scalars too: both parsers must agree there as well). */
const edit = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('comment', 'blank', 'trailing'),
  indent: fc.nat({ max: 8 }),
  comment: fc.constantFrom('#', '# c', '# a: b', '# - x', '#\t"tab"', '# ---'),
});

function yamlText(docs: unknown[], opts: ToStringOptions, lead: boolean, edits: { at: number; kind: string; indent: number; comment: string }[], crlf: boolean): string | undefined {
  let out: string;
  try {
    out = (lead ? '---\n' : '') + docs.map((d) => stringify(d, opts)).join('---\n');
  } catch {
    return undefined; // an option combination the library refuses
  }
  const lines = out.split('\n');
  for (const e of edits) {
    const at = e.at % (lines.length + 1);
    if (e.kind === 'comment') lines.splice(at, 0, ' '.repeat(e.indent) + e.comment);
    else if (e.kind === 'blank') lines.splice(at, 0, ' '.repeat(e.indent % 3));
    else if (at < lines.length) lines[at] += ` ${e.comment}`;
  }
  out = lines.join('\n');
  return crlf ? out.replaceAll('\n', '\r\n') : out;
}

/** Hand-written-looking YAML: random lines of random kinds at random indentation, most of them wrong somewhere. */
const soupKey = fc.constantFrom('a', 'b', 'c', 'd', 'kind', '"a"', "'b'", '"c d"', '1', '0x1', '~', 'true', 'a b', '-x', '?x', ':x', 'a#b', '__proto__', '<<');
const soupScalar = fc.constantFrom(
  'x', 'y z', '1', '-1', '0x1f', '0o7', '1e3', '.5', '.inf', 'true', 'False', '~', 'null', '"q"', "'s'", '"a\\"b"', "'it''s'", '""', "''",
  'a: b', 'a #c', 'a#c', '#c', '[x]', '[x, y]', '[]', '{}', '{a: b}', '{a: [1, {b: c}]}', '[a, [b, {c: d}]]', 'x]', 'x}', '[x', '{a',
  '-', '- x', '-x', '--', '---', '|', '|-', '>', '&a x', '*a', '!t x', '@x', '%x', '`x', 'http://x', 'a:b', 'a :b', '"\\x41\\u00e9"', '"\\q"',
  '"x" y', "'x'#c", 'é', '🙂', '\u00a0x', 'x\t', 'x ',
);
const soupLine = fc.tuple(fc.nat({ max: 6 }), fc.oneof(
  soupKey.chain((k) => soupScalar.map((v) => `${k}: ${v}`)),
  soupKey.map((k) => `${k}:`),
  soupScalar.map((v) => `- ${v}`),
  fc.constant('-'),
  fc.tuple(soupKey, soupScalar).map(([k, v]) => `- ${k}: ${v}`),
  soupKey.map((k) => `- ${k}:`),
  soupScalar.map((v) => `- - ${v}`),
  fc.tuple(soupKey, fc.constantFrom('|', '|-', '|+', '| # c', '|2', '>')).map(([k, h]) => `${k}: ${h}`),
  fc.constantFrom('- |', '- |-', '- |+'),
  soupScalar,
  fc.constantFrom('# c', '#', '', '', '---', '--- # c', '...', 'text line', '  ', '\t'),
)).map(([n, l]) => (l === '---' || l.startsWith('--- ') ? l : ' '.repeat(n) + l));

describe('fast YAML parser: property', () => {
  it(`gives the library's values for random documents the library wrote, or bails out (${RUNS} runs)`, () => {
    const counts = { same: 0, bail: 0, skipped: 0 };
    const reasons = new Map<string, number>();
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 3 }), options, fc.boolean(), fc.array(edit, { maxLength: 3 }), fc.boolean(), (docs, opts, lead, edits, crlf) => {
        const t = yamlText(docs, opts, lead, edits, crlf && edits.length === 0);
        if (t === undefined) return void counts.skipped++;
        const lib = library(t);
        const fast = parseYamlFastDetailed(t);
        if ('bail' in fast) {
          counts.bail++;
          reasons.set(fast.bail, (reasons.get(fast.bail) ?? 0) + 1);
          return;
        }
        expect(lib, `the library rejects what the fast parser accepted:\n${t}`).not.toBe('error');
        expect(canon(fast.docs), t).toEqual(canon(lib));
        counts.same++;
      }),
      { numRuns: RUNS },
    );
    // The comparison means something only if the fast path is taken often.
    expect(counts.same, JSON.stringify({ counts, reasons: [...reasons] })).toBeGreaterThan(RUNS * 0.3);
  }, TIMEOUT);

  it(`gives the library's values for hand-written-looking YAML, or bails out (${RUNS} runs)`, () => {
    let same = 0;
    fc.assert(
      fc.property(fc.array(soupLine, { minLength: 1, maxLength: 12 }), fc.boolean(), (lines, finalNewline) => {
        const t = lines.join('\n').replaceAll('\\t', '\t').replaceAll('\\u00a0', '\u00a0') + (finalNewline ? '\n' : '');
        const fast = parseYamlFastDetailed(t);
        if ('bail' in fast) return;
        const lib = library(t);
        expect(lib, `the library rejects what the fast parser accepted:\n${t}`).not.toBe('error');
        expect(canon(fast.docs), t).toEqual(canon(lib));
        same++;
      }),
      { numRuns: RUNS },
    );
    expect(same).toBeGreaterThan(RUNS * 0.05);
  }, TIMEOUT);

  it(`never bails out on manifests written as export writes them (${RUNS} runs)`, () => {
    const manifest = fc.record({
      kind: fc.constantFrom('HTTPSEdge', 'FailoverBackend', 'CertificateAuthority'),
      name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
      description: fc.string({ maxLength: 40 }),
      metadata: fc.json({ maxDepth: 1 }),
      protect: fc.boolean(),
      ca_pem: fc.constantFrom('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n', 'x\n\ny\n'),
      hostports: fc.array(fc.stringMatching(/^[a-z]{1,8}\.example\.com:443$/), { maxLength: 3 }),
      routes: fc.array(fc.record({ name: fc.stringMatching(/^[a-z]{1,8}$/), match: fc.constantFrom('/', '/api/', '/a b'), circuit_breaker: fc.record({ error_threshold_percentage: fc.double({ min: 0, max: 1, noNaN: true }), tripped_duration: fc.nat() }), compression: fc.constant(null).map(() => ({})), remove: fc.array(fc.string({ maxLength: 10 }), { maxLength: 2 }) }), { maxLength: 3 }),
    }, { requiredKeys: ['kind', 'name'] });
    fc.assert(
      fc.property(fc.array(manifest, { minLength: 1, maxLength: 4 }), (docs) => {
        const t = docs.map((d) => stringify(d, { lineWidth: 0, blockQuote: 'literal' })).join('---\n');
        const fast = parseYamlFastDetailed(t);
        // Strings with control characters are written with escapes the subset covers; tabs and
        // whitespace-only lines inside block scalars are the only way out.
        if ('bail' in fast) expect(fast.bail, t).toMatch(/tab|whitespace-only|leading blank/);
        else expect(canon(fast.docs), t).toEqual(canon(library(t)));
      }),
      { numRuns: RUNS },
    );
  }, TIMEOUT);
});

// ——— the loader: fast path first, positions from the library only when asked ———

/** Every path in a value, each with and without `key`. */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  const out = [at];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...at, i])));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  return out;
}

describe('loading manifests', () => {
  it.each(FILES.map((f) => [relative(ROOT, f), f]))('%s: documents, problems and every position as the library alone gives them', (_, f) => {
    const text = readFileSync(f, 'utf8');
    const fast = parseSource('m.yaml', text);
    const lib = parseWithLibrary('m.yaml', text);
    const shape = (r: { docs: SourceDoc[] }) => r.docs.map((d) => ({ file: d.file, index: d.index, value: canon(d.value) }));
    expect(shape(fast)).toEqual(shape(lib));
    expect(fast.problems).toEqual(lib.problems);
    fast.docs.forEach((d, i) => {
      for (const p of [...paths(d.value), ['nope'], [...paths(d.value).at(-1)!, 'nope', 3]]) {
        for (const key of [false, true]) expect(d.locate(p, { key }), JSON.stringify(p)).toEqual(lib.docs[i].locate(p, { key }));
      }
    });
  });

  it('is turned off by EDGEPLANE_YAML_FAST=0: every file goes to the library, with the same values', () => {
    const text = readFileSync(join(EXAMPLES, 'full', 'certificate-authorities.yaml'), 'utf8');
    const fast = parseSource('cas.yaml', text).docs.map((d) => d.value);
    expect(libraryParses()).toBe(0);
    process.env.EDGEPLANE_YAML_FAST = '0';
    try {
      expect(parseSource('cas.yaml', text).docs.map((d) => d.value)).toEqual(fast);
      expect(libraryParses()).toBe(1);
    } finally {
      delete process.env.EDGEPLANE_YAML_FAST;
    }
  });

  it('parses a fast-path file with the library only on the first position asked for', () => {
    const text = readFileSync(join(EXAMPLES, 'full', 'certificate-authorities.yaml'), 'utf8');
    const { docs } = parseSource('cas.yaml', text);
    expect(docs).toHaveLength(2);
    expect(libraryParses()).toBe(0);
    expect(docs[1].locate(['ca_pem'])).toEqual({ file: 'cas.yaml', line: 32, col: 9 });
    expect(docs[0].locate(['name'], { key: true })).toEqual({ file: 'cas.yaml', line: 3, col: 1 });
    expect(docs[1].locate(['protect'])).toEqual({ file: 'cas.yaml', line: 31, col: 10 });
    expect(docs[1].locate(['protect'], { key: true })).toEqual({ file: 'cas.yaml', line: 31, col: 1 });
    expect(libraryParses()).toBe(1);
  });

  it('a file outside the subset is parsed by the library at once, with its errors', () => {
    const r = parseSource('x.yaml', 'a: &x 1\nb: *x\n---\nname: [unclosed\n');
    expect(libraryParses()).toBe(1);
    expect(r.docs.map((d) => d.value)).toEqual([{ a: 1, b: 1 }]);
    expect(r.docs[0].locate(['b'])).toEqual({ file: 'x.yaml', line: 2, col: 4 });
    expect(r.problems).toEqual([{ file: 'x.yaml', line: 5, col: 1, severity: 'error', path: '', rule: 'yaml', message: expect.stringContaining('Flow sequence') }]);
    expect(libraryParses()).toBe(1);
  });

  it('validating, planning and rendering valid manifests never parses them with the library; a position read later does', async () => {
    const loaded = loadManifests(join(EXAMPLES, 'full'));
    const v = validateManifests(loaded.docs, { stack: 'full-example', strict: true });
    expect([...loaded.problems, ...v.problems]).toEqual([]);
    const r = await planFromState({ root: join(EXAMPLES, 'full'), stack: 'full-example', strict: true, env: EXAMPLE_ENV, cwd: ROOT }, {}, 'embedded:test');
    expect(r.problems).toEqual([]);
    expect(r.plan!.steps.length).toBeGreaterThan(10);
    for (const render of [renderText, renderMarkdown, renderJson]) expect(render(r.plan!).length).toBeGreaterThan(100);
    expect(libraryParses()).toBe(0);
    const s = resolveSecrets(v.objects, 'full-example', { env: EXAMPLE_ENV, cwd: ROOT });
    const desired = buildDesired(v.objects, s.secrets);
    expect(libraryParses()).toBe(0);
    const route = desired.find((d) => d.identity === 'HTTPSEdge/shop/routes/admin')!;
    expect(route.source).toEqual({ file: relative(process.cwd(), join(EXAMPLES, 'full', 'https-edge.yaml')), line: 44, col: 5 });
    expect(route.source).toBe(route.source);
    expect(libraryParses()).toBe(1);
  });

  it('a literal secret records its place (which needs the positions)', () => {
    const dir = tempDir('edgeplane-yaml-lit-');
    const text = 'kind: HTTPSEdge\nname: web\nhostports: ["a.example.com:443"]\nroutes:\n  - name: r\n    match_type: path_prefix\n    match: /\n    webhook_verification: { provider: github, secret: "s3cret" }\n';
    const loaded = parseSource(join(dir, 'e.yaml'), text);
    const v = validateManifests(loaded.docs, { stack: 's' });
    const s = resolveSecrets(v.objects, 's', { env: {}, cwd: dir });
    expect([...s.secrets.values()].map((x) => x.source)).toEqual([{ literal: `${join(dir, 'e.yaml')}:8:55` }]);
  });
});

describe('deeply nested documents', () => {
  const nested = (n: number, flow: boolean) => `kind: FailoverBackend\nname: x\nbackends: []\nx: ${flow ? '['.repeat(n) + ']'.repeat(n) : '\n' + Array.from({ length: n }, (_, i) => `${'  '.repeat(i + 1)}- `).join('\n') + '1'}\n`;

  it('past 64 levels go to the library, which reads them the same', () => {
    for (const flow of [true, false]) {
      const text = nested(80, flow);
      expect(parseYamlFastDetailed(text)).toEqual({ bail: 'nested too deeply' });
      const fast = parseYamlFastDetailed(nested(60, flow));
      expect('docs' in fast).toBe(true);
      const viaSource = parseSource('deep.yaml', text);
      expect(viaSource.problems).toEqual([]);
      expect(viaSource.docs[0].value).toEqual(parseAllDocuments(text)[0].toJS());
    }
  });

  it('nesting too deep for the library is a problem at its place, not a crash of validate', () => {
    const r = parseSource('deep.yaml', nested(1500, true));
    expect(r.docs).toEqual([]);
    expect(r.problems).toEqual([expect.objectContaining({ rule: 'yaml', line: 4, message: expect.stringContaining('nests too deeply to be read') })]);
  });
});
