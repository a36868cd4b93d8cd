import { isUtf8 } from 'node:buffer';
import fp from 'fastify-plugin';
import { ApiError } from '../../contract/errors.js';
import { MAX_BODY_DEPTH } from '../../contract/limits.js';
import { findUnstorableText } from '../../contract/validation.js';
import { nestsDeeperThan } from '../../util/text.js';

/**
 * JSON only; a body-less request that still names a content type (GET, DELETE) is accepted. Any
 * other type is refused (415) by fastify, mapped to the API's error by the errors plugin.
 */
export const jsonBodyPlugin = fp(async (app) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, raw, done) => {
    const bytes = raw as Buffer;
    // A compressed body would be read as its compressed bytes, and another charset as UTF-8: refused.
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      return done(new ApiError('ERR_UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${JSON.stringify(encoding.slice(0, 50))} is not supported: send the body uncompressed`), undefined);
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(req.headers['content-type'] ?? '')?.[1];
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      return done(new ApiError('ERR_UNSUPPORTED_MEDIA_TYPE', `charset ${JSON.stringify(charset.slice(0, 50))} is not supported: JSON is sent as UTF-8`), undefined);
    }
    if (bytes.length === 0) return done(null, undefined);
    // Decoding would turn bytes that are not UTF-8 into U+FFFD and store that: refused instead.
    if (!isUtf8(bytes)) return done(new ApiError('ERR_INVALID_JSON', 'body is not valid UTF-8 (JSON is sent as UTF-8)'), undefined);
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      // V8 quotes the input around the error ("Unexpected token 'S', \"…\" is not valid JSON"): a
      // secret in the body would come back in the error, and go to logs. The message without it.
      const why = (err as Error).message.replace(/, (?:\.\.\.)?".*$/s, '');
      return done(new ApiError('ERR_INVALID_JSON', `body is not valid JSON: ${why}`), undefined);
    }
    if (nestsDeeperThan(body, MAX_BODY_DEPTH)) {
      return done(new ApiError('ERR_VALIDATION', `body: arrays and objects nest more than ${MAX_BODY_DEPTH} levels deep (no field of the API is that deep)`), undefined);
    }
    const bad = findUnstorableText(body);
    if (bad !== null) {
      return done(new ApiError('ERR_VALIDATION', `${bad.slice(0, 200) || 'body'}: text may not contain U+0000 or an unpaired UTF-16 surrogate (\\ud800–\\udfff)`), undefined);
    }
    done(null, body);
  });
}, { name: 'edgeplane-json-body', dependencies: ['edgeplane-errors'] });
