import { describe, expect, it } from 'vitest';
import { redactDatabaseUrl } from '../../src/util/database-url.js';
import { redactUrl } from '../../src/store/postgres.js';

describe('PostgreSQL URLs as logs, messages and plans show them', () => {
  it('leave out the password of the user part and of every query parameter that can carry one', () => {
    const url = 'postgres://app:s3cret@db.example:5432/prod?sslmode=require&password=QPASS&sslpassword=KPASS&options=-c%20search_path%3Dx';
    const target = redactDatabaseUrl(url);
    expect(target).toBe('postgres://app@db.example:5432/prod?sslmode=require&options=-c+search_path%3Dx');
    for (const shown of [target, redactUrl(url)]) for (const secret of ['s3cret', 'QPASS', 'KPASS']) expect(shown).not.toContain(secret);
    expect(redactUrl(url)).toBe('postgres://app:***@db.example:5432/prod?sslmode=require&password=***&sslpassword=***&options=-c+search_path%3Dx');
    expect(redactDatabaseUrl('not a url')).toBe('postgres:(unparsable DATABASE_URL)');
    expect(redactDatabaseUrl('postgres://postgres@127.0.0.1:5432/test')).toBe('postgres://postgres@127.0.0.1:5432/test');
  });
});
