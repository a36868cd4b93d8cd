/**
 * CEL expressions as JavaScript closures, for the subset policies are written in: literals, the
 * rule variables, field access, `has()`, `!`, `&&`, `||`, `?:`, `==`/`!=` on values of one
 * primitive type, `<`/`<=`/`>`/`>=` on two ints, `in` a list of strings,
 * `size()`, `startsWith`/`endsWith`/`contains`, and the macros `all`/`exists` over a list.
 *
 * A closure gives what the library's interpreter (@marcbachmann/cel-js) gives, or `BAIL` when it
 * cannot be sure: an error (a missing field read without `has()`, an operator on the wrong
 * types), a value of a type it does not handle. The expression is then evaluated by the library,
 * which gives the value or the error its own way; the closure never makes an error of its own.
 * An expression with anything else in it (a macro, function or operator not listed) is not
 * compiled: the library evaluates it every time. test/reconciler/policy-fast.property.test.ts
 * compares the two on random objects.
 */

/** The library's AST node (index.d.ts `ASTNode`): `op`, `args`, and `meta.alternate` for macros. */
interface Node { op: string; args: unknown; meta?: { alternate?: { op: string } } }

/** The closure could not be sure of the value: the library evaluates the expression. */
export const BAIL: unique symbol = Symbol('bail');

type Vars = Record<string, unknown>;
/**
 * Where `object` is read from when the check has the object at hand (evaluate.ts `Subject`): its
 * fields one by one as the library's view of it has them, so no view of the whole object is made
 * for a closure that reads a few fields. Without one, `object` is the activation's.
 */
export interface ObjectSource {
  /** The view of the whole object (as `vars.object`). */
  object(): Record<string, unknown>;
  /** `object()[name]` when it is the view's own field, else undefined, made without the whole view. */
  viewField(name: string): unknown;
}
/** A compiled node: its value on the activation, the object's source, and the comprehension variables in scope. */
type Fn = (vars: Vars, src: ObjectSource | undefined, locals: unknown[]) => unknown;

/** The rule variables a closure reads from the activation, each with the check the library makes of its declared type. */
const VARIABLES: Record<string, (v: unknown) => boolean> = {
  object: isMap,
  live: isValue,
  action: (v) => typeof v === 'string',
  changes: (v) => Array.isArray(v) && v.every((x) => typeof x === 'string'),
};

/** A mapping as the library reads one (`valueTypeMatchers.map`, without `Map`: the library's own `Map` handling is left to it). */
function isMap(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object') return false;
  const c = (v as { constructor?: unknown }).constructor;
  return c === Object || c === undefined;
}

/** A value the library's `dyn` accepts without looking further: JSON's (bigint for int). */
function isValue(v: unknown): boolean {
  switch (typeof v) {
    case 'string': case 'bigint': case 'number': case 'boolean': return true;
    case 'object': return v === null || isMap(v) || (v as object).constructor === Array;
    default: return false;
  }
}

/** A field of a mapping, as `.` reads it: BAIL when absent (the library's error) or of another type. */
function field(m: unknown, key: string): unknown {
  if (!isMap(m) || !Object.hasOwn(m, key)) return BAIL;
  const v = m[key];
  return v !== undefined && isValue(v) ? v : BAIL;
}

/** No comprehension variable in scope (never written: a comprehension copies what it is given). */
const NO_LOCALS: unknown[] = [];

/** Compiles `ast` (checked by the library), or undefined when something in it is outside the subset. */
export function compileFast(ast: unknown): ((vars: Vars, src?: ObjectSource) => unknown) | undefined {
  const fn = node(ast as Node, []);
  if (!fn) return undefined;
  return (vars, src) => fn(vars, src, NO_LOCALS);
}

/** A field of `object` (the rule variable, not a comprehension's), read from the source when there is one. */
function objectField(key: string): Fn {
  return (vars, src) => {
    if (!src) return field(vars.object, key);
    const v = src.viewField(key);
    return v !== undefined && isValue(v) ? v : BAIL;
  };
}

/** Whether `n` is the rule variable `object` (not a comprehension variable so named). */
function isObjectVar(n: Node, scope: string[]): boolean {
  return n.op === 'id' && n.args === 'object' && !scope.includes('object');
}

function node(n: Node, scope: string[]): Fn | undefined {
  const a = n.args as unknown[];
  switch (n.op) {
    case 'value': {
      const v = n.args;
      return typeof v === 'string' || typeof v === 'bigint' || typeof v === 'boolean' || v === null || (typeof v === 'number' && !Number.isNaN(v)) ? () => v : undefined;
    }
    case 'id': {
      const name = n.args as string;
      const local = scope.lastIndexOf(name);
      if (local >= 0) return (_, __, l) => (isValue(l[local]) ? l[local] : BAIL);
      const check = VARIABLES[name];
      if (!check) return undefined;
      if (name === 'object') return (vars, src) => (src ? src.object() : isMap(vars.object) ? vars.object : BAIL);
      return (vars) => {
        const v = vars[name];
        return v !== undefined && check(v) ? v : BAIL;
      };
    }
    case '.': {
      const left = node(a[0] as Node, scope);
      const key = a[1];
      if (!left || typeof key !== 'string' || !dynOrMap((a[0] as Node & { checkedType?: unknown }).checkedType)) return undefined;
      if (isObjectVar(a[0] as Node, scope) && key !== '__proto__') return objectField(key);
      return (v, s, l) => field(left(v, s, l), key);
    }
    case 'list': {
      const items = compileAll(a as Node[], scope);
      if (!items) return undefined;
      return (v, s, l) => {
        const out = new Array<unknown>(items.length);
        for (let i = 0; i < items.length; i++) if ((out[i] = items[i](v, s, l)) === BAIL) return BAIL;
        return out;
      };
    }
    case '!_': {
      const x = node(n.args as Node, scope);
      if (!x) return undefined;
      return (v, s, l) => {
        const b = x(v, s, l);
        return typeof b === 'boolean' ? !b : BAIL;
      };
    }
    case '||':
    case '&&': {
      const left = node(a[0] as Node, scope);
      const right = node(a[1] as Node, scope);
      if (!left || !right) return undefined;
      // The library's: the left side decides when it is `stop`; else the right side when it is a
      // bool and the left one was too; a right side of `stop` decides whatever the left side was.
      const stop = n.op === '||';
      return (v, s, l) => {
        const x = left(v, s, l);
        if (x === stop) return stop;
        const y = right(v, s, l);
        if (y === stop) return stop;
        return x === !stop && y === !stop ? y : BAIL;
      };
    }
    case '?:': {
      const [c, t, f] = compileAll(a as Node[], scope) ?? [];
      if (!c || !t || !f) return undefined;
      return (v, s, l) => {
        const x = c(v, s, l);
        return x === true ? t(v, s, l) : x === false ? f(v, s, l) : BAIL;
      };
    }
    case '==':
    case '!=': {
      const [x, y] = compileAll(a as Node[], scope) ?? [];
      if (!x || !y) return undefined;
      const ne = n.op === '!=';
      return (v, s, l) => {
        const p = x(v, s, l);
        const q = y(v, s, l);
        // Values of one primitive type (not double: NaN and -0 are the library's to compare).
        const t = p === null ? 'null' : typeof p;
        if ((t !== 'string' && t !== 'boolean' && t !== 'bigint' && t !== 'null') || t !== (q === null ? 'null' : typeof q)) return BAIL;
        return (p === q) !== ne;
      };
    }
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const [x, y] = compileAll(a as Node[], scope) ?? [];
      if (!x || !y) return undefined;
      const op = n.op;
      return (v, s, l) => {
        const p = x(v, s, l);
        const q = y(v, s, l);
        if (typeof p !== 'bigint' || typeof q !== 'bigint') return BAIL;
        return op === '<' ? p < q : op === '<=' ? p <= q : op === '>' ? p > q : p >= q;
      };
    }
    case 'in': {
      const [x, y] = compileAll(a as Node[], scope) ?? [];
      if (!x || !y) return undefined;
      return (v, s, l) => {
        const p = x(v, s, l);
        const q = y(v, s, l);
        if (typeof p !== 'string' || !Array.isArray(q) || q.constructor !== Array) return BAIL;
        let found = false;
        for (let i = 0; i < q.length; i++) {
          if (typeof q[i] !== 'string') return BAIL;
          if (q[i] === p) found = true;
        }
        return found;
      };
    }
    case 'call': {
      const [name, args] = a as [string, Node[]];
      if (name === 'has' && args.length === 1) return has(args[0], scope);
      if (name === 'size' && args.length === 1) {
        const x = node(args[0], scope);
        return x && ((v, s, l) => size(x(v, s, l)));
      }
      return undefined;
    }
    case 'rcall': {
      const [name, receiver, args] = a as [string, Node, Node[]];
      if ((name === 'all' || name === 'exists') && args.length === 2 && args[0].op === 'id' && n.meta?.alternate?.op === 'comprehension') {
        const list = node(receiver, scope);
        const body = node(args[1], [...scope, args[0].args as string]);
        if (!list || !body) return undefined;
        const at = scope.length;
        const want = name === 'exists';
        // The library's: an element that gives `want` decides; an error (or a value not a bool)
        // on another is the result only when none decides.
        // The variables in scope in the body: this one after the enclosing ones (copied in at each
        // call; nothing keeps the list past it).
        const inner: unknown[] = [];
        return (v, s, l) => {
          const items = list(v, s, l);
          if (!Array.isArray(items) || items.constructor !== Array) return BAIL;
          let unsure = false;
          for (let i = 0; i < at; i++) inner[i] = l[i];
          for (let i = 0; i < items.length; i++) {
            inner[at] = items[i];
            const b = body(v, s, inner);
            if (b === want) return want;
            if (b !== !want) unsure = true;
          }
          return unsure ? BAIL : !want;
        };
      }
      if ((name === 'startsWith' || name === 'endsWith' || name === 'contains') && args.length === 1) {
        const r = node(receiver, scope);
        const x = node(args[0], scope);
        if (!r || !x) return undefined;
        return (v, s, l) => {
          const str = r(v, s, l);
          const t = x(v, s, l);
          if (typeof str !== 'string' || typeof t !== 'string') return BAIL;
          return name === 'startsWith' ? str.startsWith(t) : name === 'endsWith' ? str.endsWith(t) : str.includes(t);
        };
      }
      if (name === 'size' && args.length === 0) {
        const r = node(receiver, scope);
        return r && ((v, s, l) => size(r(v, s, l)));
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

function compileAll(ns: Node[], scope: string[]): Fn[] | undefined {
  const out: Fn[] = [];
  for (const n of ns) {
    const f = node(n, scope);
    if (!f) return undefined;
    out.push(f);
  }
  return out;
}

/** A checked type through which `.` reads a mapping's field as the library's `dyn` does (`map<string, dyn>`, `dyn`). */
function dynOrMap(t: unknown): boolean {
  const name = (t as { name?: string } | undefined)?.name;
  return name === 'dyn' || name === 'map<string, dyn>';
}

/** `size()`: a string's code points, a list's items, a mapping's keys (an int). */
function size(x: unknown): unknown {
  if (typeof x === 'string') return int(codePoints(x));
  if (Array.isArray(x) && x.constructor === Array) return int(x.length);
  if (isMap(x)) return int(Object.keys(x).length);
  return BAIL;
}

/** A string's code points (as `for…of` counts them: a lone surrogate is one), without an iterator. */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** Small ints made once (a bigint is an allocation). */
const INTS: bigint[] = Array.from({ length: 1024 }, (_, i) => BigInt(i));
function int(n: number): bigint {
  return n < INTS.length ? INTS[n] : BigInt(n);
}

/**
 * `has(a.b.c)`: whether the last field is there (a value, not undefined); every field before it
 * must be (the library's error otherwise: BAIL).
 */
function has(arg: Node, scope: string[]): Fn | undefined {
  const keys: string[] = [];
  let n = arg;
  while (n.op === '.') {
    const k = (n.args as unknown[])[1];
    if (typeof k !== 'string') return undefined;
    keys.unshift(k);
    n = (n.args as unknown[])[0] as Node;
  }
  if (n.op !== 'id' || !keys.length || keys.includes('__proto__')) return undefined;
  const last = keys.pop()!;
  if (isObjectVar(n, scope) && !keys.length) {
    // has(object.F): the source's field, without the whole view.
    return (v, s) => {
      if (!s) return hasField(v.object, last);
      const x = s.viewField(last);
      return x === undefined ? false : isValue(x) ? true : BAIL;
    };
  }
  const root = isObjectVar(n, scope) ? objectField(keys.shift()!) : node(n, scope);
  if (!root) return undefined;
  return (v, s, l) => {
    let m = root(v, s, l);
    for (let i = 0; i < keys.length; i++) {
      m = field(m, keys[i]);
      if (m === BAIL) return BAIL;
    }
    return hasField(m, last);
  };
}

/** The last step of `has()`: a mapping's own field, there when not undefined. */
function hasField(m: unknown, key: string): unknown {
  if (!isMap(m)) return BAIL;
  if (!Object.hasOwn(m, key)) return false;
  const x = m[key];
  return x === undefined ? false : isValue(x) ? true : BAIL;
}
