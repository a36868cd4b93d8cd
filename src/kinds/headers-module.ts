import { ApiError } from '../service/errors.js';
import { enabled, object, strings } from './fields.js';
import type { ModuleDef } from './types.js';

// RFC 9110 field names are tokens; values are visible characters, spaces and tabs (no CR, LF, NUL).
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const VALUE = /^[\t\x20-\x7e\x80-\u{10ffff}]*$/u;

function invalid(field: string, rule: string): ApiError {
  return new ApiError('ERR_VALIDATION', `${field}: ${rule}`);
}

/**
 * The request_headers and response_headers modules: the same rules, headers injected into the
 * request going upstream or the response going to the client. Names are stored in lower case
 * (HTTP names are case-insensitive) and must be unique ignoring case.
 */
export function headersModule(name: string): ModuleDef {
  return {
    name,
    request: object({
      enabled,
      add: { type: 'object', maxProperties: 100, additionalProperties: { type: 'string', maxBytes: 4096 } },
      remove: strings(100),
    }),
    defaults: { enabled: true, add: {}, remove: [] },
    reconcile: { normalize: { add: 'lowercase-keys', remove: 'lowercase-items' }, sets: ['remove'] },
    prepare(m) {
      // A Map: header names such as `__proto__` are plain names here, not object internals.
      const add = new Map<string, string>();
      for (const [header, value] of Object.entries(m.add as Record<string, string>)) {
        const lower = checkName(`${name}.add`, header);
        if (add.has(lower)) throw invalid(`${name}.add`, `header ${JSON.stringify(header)} is given twice (header names are case-insensitive)`);
        if (!VALUE.test(value)) throw invalid(`${name}.add.${header}`, 'a header value may not hold control characters such as CR, LF or NUL');
        add.set(lower, value);
      }
      const remove: string[] = [];
      (m.remove as string[]).forEach((header, i) => {
        const lower = checkName(`${name}.remove[${i}]`, header);
        if (remove.includes(lower)) throw invalid(`${name}.remove[${i}]`, `header ${JSON.stringify(header)} is listed twice (header names are case-insensitive)`);
        remove.push(lower);
      });
      m.add = Object.fromEntries(add);
      m.remove = remove;
    },
    responseOrder: ['enabled', 'add', 'remove'],
  };
}

function checkName(field: string, header: string): string {
  if (header.length > 256 || !TOKEN.test(header)) {
    throw invalid(field, `${JSON.stringify(header.slice(0, 100))} is not a valid HTTP header name (1-256 letters, digits and !#$%&'*+.^_\`|~-)`);
  }
  return header.toLowerCase();
}
