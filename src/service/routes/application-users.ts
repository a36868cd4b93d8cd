import { isDeepStrictEqual } from 'node:util';
import { applicationUser, providerKey, providerUrlKey } from '../../kinds/application-user.js';
import { requestSchema } from '../../kinds/schemas.js';
import type { Body, KindRuntimeConfig } from '../../kinds/types.js';
import { savepointDb, type Db } from '../../store/db.js';
import { isStorableText } from '../../util/text.js';
import { rfc3339 } from '../../util/time.js';
import { ApiError } from '../../contract/errors.js';
import { Resources, uniqueScope, type Caller } from '../writes/resources.js';
import { serviceValidator } from '../precompiled.js';
import { describeAjvError, findUnstorableText, problemMessage, type Validator } from '../../contract/validation.js';

/** One sign-in (or one imported user): who, through which provider, and when. */
export interface UserRecord {
  account_id: string;
  identity_provider: { name: string; url: string };
  provider_user_id: string;
  username?: string;
  email?: string;
  name?: string;
  last_login?: string;
  last_active?: string;
}

export type RecordOutcome = 'created' | 'updated' | 'unchanged';
export interface Recorded { outcome: RecordOutcome; user: Body }

/** The fields of a record are those of the kind's create request (precompiled: src/service/precompiled.ts). */
export const USER_FIELDS_SCHEMA = requestSchema(applicationUser, 'create');
let validator: Validator | undefined;
const validateFields = (fields: unknown) => (validator ??= serviceValidator(USER_FIELDS_SCHEMA))(fields);
const USER_FIELDS = Object.keys(applicationUser.fields);

export class UserRecordError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'UserRecordError';
  }
}

/** Every problem of every record, each named by its place (`users[3].email: …`). */
export function checkUserRecords(records: unknown[], label = 'users'): string[] {
  const problems: string[] = [];
  records.forEach((r, i) => {
    const at = records.length === 1 && label === '' ? '' : `${label}[${i}].`;
    if (typeof r !== 'object' || r === null || Array.isArray(r)) return void problems.push(`${at.slice(0, -1) || 'record'}: must be an object`);
    const { account_id, ...fields } = r as Record<string, unknown>;
    if (typeof account_id !== 'string' || !account_id) problems.push(`${at}account_id: is required`);
    if (!validateFields(fields)) {
      for (const e of validator!.errors ?? []) problems.push(at + problemMessage(describeAjvError(e)));
    }
    const bad = findUnstorableText(r);
    if (bad !== null) problems.push(`${at}${bad || 'record'}: text may not contain U+0000 or an unpaired UTF-16 surrogate`);
  });
  return problems;
}

/** The latest of two RFC 3339 times; activity times only move forward, so re-imports change nothing. */
function latest(a: unknown, b: unknown): string | undefined {
  const times = [a, b].filter((t): t is string => typeof t === 'string');
  if (!times.length) return undefined;
  return rfc3339(new Date(Math.max(...times.map((t) => Date.parse(t)))));
}

/**
 * Records application users, creating each or updating the one with the same provider URL and
 * provider user id in the account (the kind's per-account unique key). Idempotent: recording the
 * same data again changes nothing; `last_login` / `last_active` only move forward. `now` fills
 * them for a new user when the record does not give them.
 */
export class ApplicationUsers {
  private readonly resources: Resources;

  constructor(private readonly db: Db, private readonly config: KindRuntimeConfig = { vendorPrefix: 'service' }, private readonly baseUrl = '') {
    this.resources = new Resources(db, config);
  }

  async record(input: UserRecord, now = new Date()): Promise<Recorded> {
    const problems = checkUserRecords([input], '');
    if (problems.length) throw new UserRecordError(problems);
    const { rows } = await this.db.query('SELECT 1 FROM accounts WHERE id = $1', [input.account_id]);
    if (!rows.length) throw new UserRecordError([`account_id: account ${input.account_id} does not exist`]);
    return this.write(input, now);
  }

  /** Creates or updates one checked record (its fields valid, its account there). */
  private async write(input: UserRecord, now: Date): Promise<Recorded> {
    const caller: Caller = { accountId: input.account_id, baseUrl: this.baseUrl };
    // Two processes may record the same new user at once: the loser of the unique key updates.
    for (let attempt = 0; ; attempt++) {
      const existingId = await this.findId(input);
      if (existingId) return this.update(caller, existingId, input);
      try {
        const fields = this.fields(input);
        fields.last_login ??= rfc3339(now);
        fields.last_active ??= fields.last_login;
        return { outcome: 'created', user: await this.resources.create(applicationUser, caller, fields) };
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 'ERR_CONFLICT') || attempt > 2) throw err;
      }
    }
  }

  /**
   * Records many, all or nothing: every record is checked first (fields, text the database cannot
   * hold, accounts that exist) and every problem reported; then all are written in one transaction,
   * so a failure on the way (a database error) leaves none written either.
   */
  async import(records: unknown[], now = new Date()): Promise<Record<RecordOutcome, number> & { users: Body[] }> {
    if (!Array.isArray(records)) throw new UserRecordError(['the file must hold a JSON array of users']);
    const problems = checkUserRecords(records);
    const accounts = [...new Set(records.map((r) => (r as { account_id?: unknown } | null)?.account_id).filter((a): a is string => typeof a === 'string' && a !== '' && isStorableText(a)))];
    const { rows } = await this.db.query<{ id: string }>('SELECT id FROM accounts WHERE id = ANY($1::text[])', [accounts]);
    const known = new Set(rows.map((r) => r.id));
    records.forEach((r, i) => {
      const account = (r as { account_id?: unknown } | null)?.account_id;
      if (typeof account === 'string' && account !== '' && !known.has(account)) problems.push(`users[${i}].account_id: account ${account} does not exist`);
    });
    if (problems.length) throw new UserRecordError(problems);
    return this.db.tx(async (q) => {
      const inOne = new ApplicationUsers(savepointDb(q, this.db), this.config, this.baseUrl);
      const counts = { created: 0, updated: 0, unchanged: 0, users: [] as Body[] };
      for (const r of records as UserRecord[]) {
        const { outcome, user } = await inOne.write(r, now); // every record checked above
        counts[outcome]++;
        counts.users.push(user);
      }
      return counts;
    });
  }

  private fields(input: UserRecord): Body {
    const out: Body = {};
    for (const f of USER_FIELDS) if ((input as unknown as Body)[f] !== undefined) out[f] = (input as unknown as Body)[f];
    for (const t of ['last_login', 'last_active']) if (out[t] !== undefined) out[t] = rfc3339(out[t] as string);
    return out;
  }

  private async findId(input: UserRecord): Promise<string | null> {
    const scope = uniqueScope(applicationUser.uniques![0], { parent_id: null, account_id: input.account_id });
    const { rows } = await this.db.query<{ object_id: string }>(
      'SELECT object_id FROM unique_keys WHERE scope = $1 AND value = $2',
      [scope, providerKey(input as unknown as Body)],
    );
    return rows[0]?.object_id ?? null;
  }

  private async update(caller: Caller, id: string, input: UserRecord): Promise<Recorded> {
    const current = await this.resources.get(applicationUser, caller, id);
    const given = this.fields(input);
    delete given.provider_user_id; // the key: equal by construction, and immutable
    // The same provider URL spelled another way (`HTTPS://Accounts.Google.com/`) is the URL stored:
    // records of one user from two sources would otherwise rewrite it back and forth.
    const idp = given.identity_provider as { name: string; url: string } | undefined;
    const stored = current.identity_provider as { name: string; url: string } | undefined;
    if (idp && stored && providerUrlKey(idp.url) === providerUrlKey(stored.url)) given.identity_provider = { ...idp, url: stored.url };
    given.last_login = latest(current.last_login, given.last_login);
    given.last_active = latest(current.last_active, latest(given.last_active, given.last_login));
    // Compared as values: jsonb does not keep key order.
    const changes = Object.entries(given).filter(([k, v]) => v !== undefined && !isDeepStrictEqual(current[k], v));
    if (!changes.length) return { outcome: 'unchanged', user: current };
    return { outcome: 'updated', user: await this.resources.update(applicationUser, caller, id, Object.fromEntries(changes)) };
  }
}
